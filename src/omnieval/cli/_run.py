"""``omnieval run SUITE.yaml``: the nightly flow, in this process, no Prefect server needed."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "run",
        help="run a suite end to end (validate, generate, metrics, judges, report, MLflow)",
        description=(
            "Run the suite's Prefect flow in this process: validate and gate the dataset, generate "
            "candidates for every system, compute metrics, run the judge panels, aggregate, analyse, "
            "write the run folder and log to MLflow. Unchanged work is reused from the content cache. "
            "Exit code 2 when a data gate fails; with --fail-on-regression, 3 when the verdict against "
            "the previous run is NO-GO (docs/nightly.md)."
        ),
    )
    parser.add_argument("suite", type=Path, help="suite config, e.g. pipelines/nightly.yaml")
    parser.add_argument("--json", action="store_true", help="print the run summary as JSON")
    parser.add_argument(
        "--runner",
        choices=("default", "dask"),
        default=None,
        help=(
            "task runner: 'default' runs every task in this process; 'dask' runs the per-shard tasks "
            "(generate, metrics per system, judge shards) on a Dask LocalCluster, or on the scheduler "
            "at the suite's execution.address (default: the suite's execution.runner; docs/scale.md)"
        ),
    )
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 3 when the run's comparison with the previous run says NO-GO (after everything is written)",
    )
    parser.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    from omnieval.cli import _checks

    # Before the Prefect server starts (it writes .prefect/ here): a bad suite leaves nothing behind.
    _checks.suite_file("SUITE", args.suite)
    from omnieval.runner import run_suite

    started = time.monotonic()
    summary = run_suite(args.suite, runner=args.runner)
    summary["seconds"] = round(time.monotonic() - started, 1)
    if not summary.get("regression"):
        from omnieval.compare import regression_verdict

        summary["regression"] = regression_verdict(summary["run_folder"])
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        folder = summary["run_folder"]
        print(f"run {summary['run_id']} finished in {summary['seconds']} s")
        print(f"  run folder: {folder}")
        print(f"  report:     {summary['report']}")
        print(f"  viewer:     omnieval view {folder}  (serves {summary.get('viewer', 'instances.html')})")
        verdict = summary.get("regression") or "none (regression.json missing)"
        print(f"  verdict:    {verdict}  (regression.json in the run folder)")
        server = os.environ.get("MLFLOW_TRACKING_URI", "")
        if server.startswith(("http://", "https://")):
            from omnieval.tracking import without_password

            print(f"  MLflow:     {without_password(server)}  (MLFLOW_TRACKING_URI)")
        else:
            print("  MLflow:     make ui, then open http://127.0.0.1:5000")
    if args.fail_on_regression and summary.get("regression") == "NO-GO":
        print(
            "regression: NO-GO against the previous run; exit code 3 (--fail-on-regression)", file=sys.stderr
        )
        return 3
    return 0
