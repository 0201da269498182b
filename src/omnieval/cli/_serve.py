"""``omnieval serve SUITE.yaml``: serve the suite's nightly schedule with Prefect."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "serve",
        help="serve the nightly schedule (cron from the suite, default 02:00 UTC)",
        description=(
            "Serve the nightly flow as a Prefect deployment with the suite's cron schedule "
            "(schedule.cron, default '0 2 * * *' UTC) until interrupted. Point PREFECT_API_URL at a "
            "Prefect server to see runs in its UI; without one a temporary local server is used."
        ),
    )
    parser.add_argument("suite", type=Path, nargs="?", default=Path("pipelines/nightly.yaml"))
    parser.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    from omnieval.config import load_suite
    from omnieval.runner import load_flow_module, prepare_prefect_env

    config = load_suite(args.suite)
    print(
        f"serving suite {config.suite}: cron '{config.schedule.cron}' ({config.schedule.timezone}); Ctrl-C stops"
    )
    prepare_prefect_env()
    load_flow_module("nightly").serve(str(args.suite))
    return 0
