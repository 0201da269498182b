"""``omnieval serve [SUITE.yaml ...]``: run suites on their cron schedules with Prefect."""

from __future__ import annotations

import argparse
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from omnieval.errors import ConfigError

if TYPE_CHECKING:
    from omnieval.config import SuiteConfig


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "serve",
        help="run suites on their schedules (cron from each suite, default 02:00 UTC)",
        description=(
            "Serve each suite's flow as a Prefect deployment on its cron schedule (schedule.cron, "
            "default '0 2 * * *' UTC) until interrupted (Ctrl-C or SIGTERM). With PREFECT_API_URL set, "
            "that server is used. Otherwise a persistent local Prefect server is started on 127.0.0.1 "
            "(its database in <PREFECT_HOME>/server/, PREFECT_HOME defaulting to .prefect) or, when one "
            "is already running there, reused; it stops when the last serve using it stops (one killed "
            "outright: OMNIEVAL_SERVE_ORPHAN_S, default 30 s, later unless a new serve adopts it). A "
            "restart keeps the scheduled runs, runs an interrupted night again and cancels runs waiting "
            "with other suite files (docs/nightly.md). With --night "
            "the suites run one after another as one night on one schedule and leave one record, "
            "runs/nights/<date>/night.json and night.html, one MLflow run and one notification "
            "(omnieval night prints it)."
        ),
    )
    parser.add_argument(
        "suites", type=Path, nargs="*", default=[Path("pipelines/nightly.yaml")], metavar="SUITE"
    )
    parser.add_argument(
        "--night",
        action="store_true",
        help=(
            "serve the suites as one night: one deployment (omnieval-night) that runs them one after "
            "another, in the order given, on one schedule (--cron, default the first suite's "
            "schedule.cron), then writes the night record and sends one notification"
        ),
    )
    parser.add_argument(
        "--cron",
        default=None,
        help="the night's cron (with --night; default the first suite's schedule.cron)",
    )
    parser.add_argument(
        "--timezone",
        default=None,
        help="time zone of --cron and of the night's date (with --night; default the first suite's)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help="port of the local Prefect server when serve starts one (default: a free port)",
    )
    parser.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    from omnieval.cli import _checks

    # Every argument before the Prefect server starts or is looked for (exit 2, nothing written).
    for flag in ("--cron", "--timezone"):
        _checks.needs(flag, getattr(args, flag[2:]) is not None, "--night", args.night)
    _check_cron(args.cron)
    _check_timezone(args.timezone)
    if args.port is not None and not 0 <= args.port <= 65535:
        raise ConfigError(f"--port: {args.port} is not a port; expected 1-65535 (0: any free port)")
    suites = [(_checks.suite_file("SUITE", path), path.resolve()) for path in args.suites]
    names = [config.suite for config, _ in suites]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ConfigError(
            f"SUITE: suite name(s) given twice: {', '.join(repeated)}; each suite is one deployment"
        )
    from omnieval.flows import prepare_prefect_env

    _ctrl_c_stops()
    prepare_prefect_env()
    server = None
    if os.environ.get("PREFECT_API_URL"):
        api_url = os.environ["PREFECT_API_URL"]
        print(f"Prefect server: {api_url} (PREFECT_API_URL)", flush=True)
    else:
        from omnieval.flows import acquire_server, server_folder

        folder = server_folder()
        print(f"Prefect server: looking for a running one in {folder} ...", flush=True)
        # Importing Prefect's runner and the flow takes seconds; do it while the server starts.
        # Joined before Prefect is used here: two threads importing Prefect at once can see one of
        # its modules half-initialized.
        preload = threading.Thread(target=_preload, name="omnieval-preload", daemon=True)
        preload.start()
        server = acquire_server(names + ([NIGHT] if args.night else []), folder=folder, port=args.port)
        preload.join()
        api_url = server.api_url
        how = "started" if server.started else "reusing the running"
        print(
            f"Prefect server: {how} local server (pid {server.pid}) at {api_url}; "
            f"UI http://127.0.0.1:{server.port}",
            flush=True,
        )
        if args.port and args.port != server.port:
            print(f"  (--port {args.port} not used: the running server keeps port {server.port})", flush=True)
        os.environ["PREFECT_API_URL"] = api_url
    night = _night_schedule(args, suites[0][0]) if args.night else None
    if night is not None:
        others = [c.suite for c, _ in suites if (c.schedule.cron, c.schedule.timezone) != night]
        if others:
            print(f"  (the night runs on {night[0]} {night[1]}; schedule of {', '.join(others)} not used)")
    try:
        _serve(suites, api_url, night=night)
    finally:
        if server is not None and server.release():
            print(f"Prefect server (pid {server.pid}) stopped", flush=True)
    return 0


def _ctrl_c_stops() -> None:
    """Make SIGINT (Ctrl-C, ``kill -INT``) stop ``serve`` even when it was started with SIGINT ignored.

    A shell script's background job (``omnieval serve ... &``) and some launchers start it with
    SIGINT ignored, and Python then leaves it ignored: ``serve`` went on serving for as long as one
    cared to wait (90 s seen) while SIGTERM stopped it in seconds. A scheduler has nothing to finish
    when asked to stop, so ``serve`` takes SIGINT back: Python's handler raises KeyboardInterrupt,
    which ``asyncio.run`` turns into stopping the runner, and the server is released on the way out.
    """
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


NIGHT = "(night)"
"""What the server record lists for a ``serve --night`` beside its suites: one night per project."""


def _night_schedule(args: argparse.Namespace, first: SuiteConfig) -> tuple[str, str]:
    """The night's (cron, time zone): the options, else the first suite's schedule."""
    return args.cron or first.schedule.cron, args.timezone or first.schedule.timezone


def _check_cron(cron: str | None) -> None:
    if cron is not None and len(cron.split()) not in (5, 6):
        raise ConfigError(f"--cron {cron!r}: expected five fields, e.g. '0 2 * * *'")


def _check_timezone(timezone: str | None) -> None:
    if timezone is None:
        return
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"--timezone {timezone!r}: not a known time zone (e.g. UTC, Europe/Paris)"
        ) from None


def _preload() -> None:
    import importlib

    for module in (
        "prefect.runner",
        "prefect.client.orchestration",
        "omnieval.flows.nightly",
        "omnieval.flows.night",
    ):
        try:
            importlib.import_module(module)
        except Exception:  # the import in the main thread reports it properly
            return


def _serve(suites: list[tuple[SuiteConfig, Path]], api_url: str, *, night: tuple[str, str] | None) -> None:
    import asyncio

    from prefect.settings import PREFECT_API_URL, temporary_settings

    from omnieval.flows import serve_night, serve_suites

    def announce(line: str) -> None:
        print(line, flush=True)

    with temporary_settings(updates={PREFECT_API_URL: api_url}):
        print("serving (Ctrl-C stops):", flush=True)
        if night is None:
            asyncio.run(serve_suites(suites, announce=announce))
        else:
            cron, timezone = night
            asyncio.run(serve_night(suites, cron=cron, timezone=timezone, announce=announce))
