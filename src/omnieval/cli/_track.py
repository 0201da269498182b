"""``omnieval track RUN ...``: upload run folders kept while the tracking server was unreachable."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from omnieval.errors import DataError


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "track",
        help="upload a run kept on disk because the tracking server could not be reached",
        description=(
            "When `omnieval run` cannot reach the tracking server (MLFLOW_TRACKING_URI) after MLflow's "
            "retries with backoff, the run still finishes its folder (runs/<suite>/local-<time>-<hex>, "
            "with tracking_pending.json) and exits 1 naming it. `omnieval track RUN` logs that folder "
            "once the server answers: the parent, system and analysis runs with their metrics, "
            "dataset inputs, artifacts, verdict tags, gate results and judge verdict traces, as the run "
            "would have; the folder then moves to runs/<suite>/<MLflow run id>. RUN is a kept run "
            "folder or its name (searched under --runs-dir/*/). Exit code 2 when RUN is not a kept run, "
            "1 when the server still cannot be reached (the folder is left as it was)."
        ),
    )
    parser.add_argument("run", nargs="+", help="kept run folder(s), or their names (local-...)")
    parser.add_argument(
        "--runs-dir", type=Path, default=Path("runs"), help="where to look for a name (default: runs)"
    )
    parser.add_argument("--json", action="store_true", help="print {uploaded: [{from, run_id, run_folder}]}")
    parser.set_defaults(func=_handle)


def kept_folder(run: str, runs_dir: Path) -> Path:
    """The folder RUN names: a path, or a folder name under ``runs_dir/<suite>/``.

    Raises:
        DataError: nothing of that name, or several suites hold one.
    """
    as_path = Path(run)
    if as_path.is_dir():
        return as_path
    found = sorted(p for p in runs_dir.glob(f"*/{run}") if p.is_dir()) if "/" not in run else []
    if len(found) == 1:
        return found[0]
    if found:
        raise DataError(f"{run!r} names several run folders: {', '.join(map(str, found))} (give the path)")
    raise DataError(f"run {run!r} not found (give a kept run folder, or its name under {runs_dir}/<suite>/)")


def _handle(args: argparse.Namespace) -> int:
    from omnieval.stages.track import upload_pending

    folders = [kept_folder(run, args.runs_dir) for run in args.run]
    uploaded = []
    for folder in folders:
        outcome = upload_pending(folder)
        uploaded.append(
            {"from": str(folder), "run_id": outcome.run_id, "run_folder": str(outcome.run_folder)}
        )
        if not args.json:
            print(f"{folder} -> MLflow run {outcome.run_id}; run folder {outcome.run_folder}")
    if args.json:
        print(json.dumps({"uploaded": uploaded}, indent=2))
    return 0
