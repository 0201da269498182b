"""``omnieval team up|down|status``: the team's shared servers (docs/team.md)."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

TEAM_DIR_ENV = "OMNIEVAL_TEAM_DIR"


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "team",
        help="start, stop or show the team's shared PostgreSQL, MLflow (with accounts), Prefect and Dask",
        description=(
            "Team mode (docs/team.md): 'up' starts a PostgreSQL cluster, an MLflow tracking server on it "
            "that serves artifacts and requires accounts (admin, evaluator, viewer), a Prefect server on "
            "the same PostgreSQL and a Dask scheduler with workers, on 127.0.0.1 unless --host says "
            "otherwise, and prints the variables to export; 'down' stops all of it; 'status' says what "
            "runs where. Data and 0600 credentials files live in --dir."
        ),
    )
    actions = parser.add_subparsers(dest="team_action", metavar="ACTION", required=True)
    folder_help = f"the team folder (default: ${TEAM_DIR_ENV} or ./team)"

    up = actions.add_parser(
        "up",
        help="start whatever is not running and print the variables to export",
        description="Start PostgreSQL, MLflow (basic-auth), Prefect and Dask; reuse what already runs.",
    )
    up.add_argument("--dir", type=Path, default=None, help=folder_help)
    up.add_argument(
        "--host", default="127.0.0.1", help="address MLflow, Prefect and Dask bind (default 127.0.0.1)"
    )
    up.add_argument(
        "--postgres-port",
        type=int,
        default=None,
        help="PostgreSQL's port on 127.0.0.1 (default: the team folder's last, else 5433)",
    )
    up.add_argument(
        "--mlflow-port",
        type=int,
        default=None,
        help="MLflow's port (default: the team folder's last, else 5000)",
    )
    up.add_argument(
        "--prefect-port",
        type=int,
        default=None,
        help="Prefect's port (default: the team folder's last, else 4200)",
    )
    up.add_argument(
        "--dask-port",
        type=int,
        default=None,
        help="the Dask scheduler's port (default: the team folder's last, else 8786)",
    )
    up.add_argument("--dask-workers", type=int, default=2, help="local Dask worker processes (2; 0 for none)")
    up.add_argument("--no-dask", action="store_true", help="start no Dask scheduler or workers")
    up.add_argument(
        "--as",
        dest="account",
        choices=("evaluator", "viewer", "admin"),
        default="evaluator",
        help="whose credentials file the printed exports name (evaluator)",
    )
    up.add_argument("--json", action="store_true", help="print the state as JSON")
    up.set_defaults(func=_up)

    down = actions.add_parser(
        "down",
        help="stop every server of the team folder",
        description="Stop Dask, Prefect, MLflow, then PostgreSQL.",
    )
    down.add_argument("--dir", type=Path, default=None, help=folder_help)
    down.add_argument("--json", action="store_true", help="print what was stopped as JSON")
    down.set_defaults(func=_down)

    status = actions.add_parser(
        "status", help="what runs where", description="Each server: running or not, pid, address."
    )
    status.add_argument("--dir", type=Path, default=None, help=folder_help)
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.set_defaults(func=_status)


def _folder(args: argparse.Namespace, *, must_exist: bool) -> Path:
    from omnieval.errors import ConfigError

    folder = args.dir if args.dir is not None else Path(os.environ.get(TEAM_DIR_ENV) or "team")
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--dir: {folder} is a file; give a folder")
    if must_exist and not folder.is_dir():
        raise ConfigError(f"--dir: {folder} does not exist (no team was started there)")
    return folder


def _port(flag: str, value: int) -> int:
    from omnieval.errors import ConfigError

    if not 1 <= value <= 65535:
        raise ConfigError(f"{flag}: {value} is not a TCP port (1-65535)")
    return value


def _up(args: argparse.Namespace) -> int:
    from omnieval.errors import ConfigError
    from omnieval.team import TeamConfig, read_state, up

    folder = _folder(args, must_exist=False)
    # Ports not given: the ones this team folder's servers took last time, else the defaults.
    last = (read_state(folder) or {}).get("config", {}) if folder.is_dir() else {}
    defaults = TeamConfig()
    ports = {}
    for flag in ("--postgres-port", "--mlflow-port", "--prefect-port", "--dask-port"):
        key = flag[2:].replace("-", "_")
        given = getattr(args, key)
        ports[flag] = _port(flag, given if given is not None else int(last.get(key, getattr(defaults, key))))
    if len(set(ports.values())) < len(ports):
        raise ConfigError(f"{', '.join(ports)}: give four different ports, got {sorted(ports.values())}")
    if args.dask_workers < 0:
        raise ConfigError(f"--dask-workers: {args.dask_workers} is negative")
    config = TeamConfig(
        folder=folder,
        host=args.host,
        postgres_port=ports["--postgres-port"],
        mlflow_port=ports["--mlflow-port"],
        prefect_port=ports["--prefect-port"],
        dask_port=ports["--dask-port"],
        dask=not args.no_dask,
        dask_workers=args.dask_workers,
    )
    started = time.monotonic()
    state = up(config)
    state["seconds"]["total"] = round(time.monotonic() - started, 1)
    if args.json:
        print(json.dumps(state, indent=2))
        return 0
    print(f"team up in {state['seconds']['total']} s ({state['folder']})")
    _print_services(state)
    print("\n# export these where omnieval runs (bash):")
    for name, value in state["urls"].items():
        print(f"export {name}={value}")
    print(f"export OMNIEVAL_MLFLOW_CREDENTIALS={state['accounts'][args.account]}")
    print(
        "# accounts (0600 files, passwords never printed): "
        + ", ".join(f"{name}: {path}" for name, path in state["accounts"].items())
    )
    if state.get("urls", {}).get("DASK_SCHEDULER_ADDRESS"):
        print("# then: omnieval run SUITE.yaml --runner dask   (docs/team.md)")
    return 0


def _print_services(state: dict[str, Any]) -> None:
    for name, entry in state["services"].items():
        where = entry.get("port") or entry.get("count")
        print(f"  {name:15s} pid {entry.get('pid')}  {'port' if entry.get('port') else 'workers'} {where}")


def _down(args: argparse.Namespace) -> int:
    from omnieval.team import down

    folder = _folder(args, must_exist=True)
    stopped = down(folder)
    if args.json:
        print(json.dumps(stopped, indent=2))
    else:
        ran = [name for name, was in stopped.items() if was]
        print(f"team down ({folder}): stopped {', '.join(ran) if ran else 'nothing (nothing was running)'}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from omnieval.team import status

    folder = _folder(args, must_exist=True)
    report = status(folder)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"team folder {report['folder']}")
    for name, entry in report["services"].items():
        state = "running" if entry["running"] else "stopped"
        print(f"  {name:15s} {state:8s} pid {entry['pid'] or '-'}  {entry['address'] or '-'}")
    for name, path in report["accounts"].items():
        print(f"  account {name:9s} {path}")
    return 0
