"""Find and read run folders (FORMATS.md section 4) for ``omnieval compare``.

A RUN argument is a run folder path, an MLflow run id (the parent run's id is the folder's name; a
system or analysis child run id is found through the folders' ``mlflow.json``; as a last resort the
MLflow store's ``omnieval.run_folder`` tag), or ``latest`` / ``previous`` of a suite. A run is
*successful* when its folder holds ``leaderboard.json``, ``scores.parquet``, ``lineage.json`` and
``mlflow.json`` (the track stage writes ``mlflow.json`` last). Runs of a suite are ordered by the
time their ``lineage.json`` was written (the track stage writes it first), then by name;
``latest`` is the last successful one (:func:`latest_run`, for every command taking a RUN).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.compare._folders import SUCCESS_FILES as SUCCESS_FILES
from omnieval.compare._folders import is_successful as is_successful
from omnieval.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

REQUIRED_FILES: tuple[str, ...] = ("lineage.json", "scores.parquet")
"""What a comparison reads; a folder lacking one cannot be compared."""
DATASET_MANIFEST = "dataset.manifest.json"
"""The dataset fingerprint manifest, copied into the run folder by the nightly comparison."""
REGRESSION_FILE = "regression.json"
DRIFT_FILE = "drift.json"

_RUN_ID = re.compile(r"^[0-9a-f]{6,32}$")


@dataclass(frozen=True)
class RunFolder:
    """What a comparison reads from one run folder.

    Attributes:
        folder: The run folder.
        run_id: The MLflow parent run id (``lineage.json``'s ``run_id``, else the folder's name).
        suite: The suite name from lineage (None when it is not recorded).
        benchmark: The benchmark of the scores table.
        lineage: ``lineage.json``.
        scores: ``scores.parquet``.
        mlflow: ``mlflow.json`` when present.
        manifest: The dataset fingerprint manifest when the folder has one.
        drift: ``drift.json`` when present (judge drift check of the run).
        resolved_config: ``config.resolved.yaml`` when present.
    """

    folder: Path
    run_id: str
    suite: str | None
    benchmark: str
    lineage: dict[str, Any]
    scores: pd.DataFrame
    mlflow: dict[str, Any] | None = None
    manifest: dict[str, Any] | None = None
    drift: dict[str, Any] | None = None
    resolved_config: dict[str, Any] | None = field(default=None, repr=False)

    def describe(self) -> dict[str, Any]:
        """``{"run_id", "folder", "suite", "benchmark"}`` for the comparison document."""
        return {
            "run_id": self.run_id,
            "folder": str(self.folder),
            "suite": self.suite,
            "benchmark": self.benchmark,
        }


def _read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read: {exc}") from None
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise DataError(f"{path}: expected a JSON object")
    return doc


def _optional_json(path: Path) -> dict[str, Any] | None:
    return _read_json(path) if path.is_file() else None


def read_run(folder: Path | str) -> RunFolder:
    """Read a run folder's comparison inputs; raise :class:`DataError` naming the file on bad input."""
    import pandas as pd

    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"run folder {folder} does not exist")
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        raise DataError(f"run folder {folder} lacks {', '.join(missing)}; it cannot be compared")
    lineage = _read_json(folder / "lineage.json")
    try:
        scores = pd.read_parquet(folder / "scores.parquet")
    except Exception as exc:  # pyarrow raises several unrelated types for a broken file
        raise DataError(f"{folder / 'scores.parquet'}: cannot read the scores table: {exc}") from None
    if "benchmark" not in scores.columns or scores.empty:
        raise DataError(f"{folder / 'scores.parquet'}: empty or without a benchmark column")
    names = sorted({str(b) for b in scores["benchmark"].unique()})
    if len(names) != 1:
        raise DataError(f"{folder / 'scores.parquet'}: holds several benchmarks {names}")
    resolved = None
    config_path = folder / "config.resolved.yaml"
    if config_path.is_file():
        import yaml

        try:
            loaded = yaml.safe_load(config_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise DataError(f"{config_path}: cannot read: {exc}") from None
        resolved = loaded if isinstance(loaded, dict) else None
    return RunFolder(
        folder=folder,
        run_id=str(lineage.get("run_id") or folder.name),
        suite=lineage.get("suite"),
        benchmark=names[0],
        lineage=lineage,
        scores=scores,
        mlflow=_optional_json(folder / "mlflow.json"),
        manifest=_optional_json(folder / DATASET_MANIFEST),
        drift=_optional_json(folder / DRIFT_FILE),
        resolved_config=resolved,
    )


def suite_runs(runs_dir: Path, suite: str | None, *, exclude: Path | None = None) -> list[Path]:
    """Successful run folders of ``suite`` (of every suite when None), oldest first (see the module
    docstring for the order)."""
    runs_dir = Path(runs_dir)
    if suite is not None:
        roots = [runs_dir / suite]
    else:
        roots = sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []
    skip = exclude.resolve() if exclude is not None else None
    folders = [
        p
        for root in roots
        if root.is_dir()
        for p in root.iterdir()
        if p.is_dir() and is_successful(p) and (skip is None or p.resolve() != skip)
    ]
    return sorted(folders, key=run_age)


def run_age(folder: Path) -> tuple[float, str]:
    """Sort key of a run folder, older first: when its ``lineage.json`` was written (the track
    stage writes it first), then its name. The order of ``latest`` / ``previous`` and of a
    comparison's baseline (the older run)."""
    lineage = Path(folder) / "lineage.json"
    return (lineage.stat().st_mtime if lineage.is_file() else 0.0, Path(folder).name)


def find_run_by_id(spec: str, runs_dir: Path) -> Path | None:
    """The run folder (``<runs_dir>/<suite>/<run_id>/`` holding ``lineage.json``) whose run id is
    ``spec`` or starts with it: the one resolver of run ids and their prefixes for every command
    that names a run.

    An exact run id wins over longer ids it is a prefix of. None when no run matches (or ``spec``
    cannot be a folder name).

    Raises:
        DataError: ``spec`` is a prefix of several runs' ids (and none's whole id); lists them.
    """
    if not spec or spec in (".", "..") or "/" in spec or "\\" in spec:
        return None
    runs_dir = Path(runs_dir)
    folders = (
        sorted(p.parent for p in runs_dir.glob("*/*/lineage.json") if p.parent.name.startswith(spec))
        if runs_dir.is_dir()
        else []
    )
    exact = [p for p in folders if p.name == spec]
    matches = exact or folders
    if len(matches) == 1:
        return matches[0]
    if not matches:
        return None
    shown = ", ".join(f"{p.name} ({p})" for p in matches[:_LISTED])
    more = f" and {len(matches) - _LISTED} more" if len(matches) > _LISTED else ""
    raise DataError(
        f"run id {'' if exact else 'prefix '}{spec!r} is ambiguous under {runs_dir}: it names "
        f"{len(matches)} runs: {shown}{more}; give more of the id or the run folder"
    )


_LISTED = 20
"""At most this many matches are named in an ambiguous-prefix message."""


def latest_run(runs_dir: Path, suite: str | None = None) -> Path:
    """The newest successful run folder of ``suite`` (of any suite when None): what ``latest`` means
    to every command that takes a RUN (``omnieval compare``, ``omnieval lineage``).

    A folder whose run never finished (no ``mlflow.json``, the track stage's last file) is never
    ``latest``, however new.

    Raises:
        DataError: No successful run is there.
    """
    runs = suite_runs(runs_dir, suite)
    if not runs:
        where = Path(runs_dir) / suite if suite else Path(runs_dir)
        whose = f"suite {suite!r}" if suite else "any suite"
        raise DataError(
            f"no successful run of {whose} under {where} (a successful run folder holds "
            f"{', '.join(SUCCESS_FILES)}); 'latest' needs one"
        )
    return runs[-1]


def _by_child_run(runs_dir: Path, run_id: str) -> Path | None:
    for path in Path(runs_dir).glob("*/*/mlflow.json"):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        children = [*(doc.get("systems") or {}).values(), *(doc.get("analyses") or {}).values()]
        if run_id in children:
            return path.parent
    return None


def resolve_run(spec: str, *, runs_dir: Path = Path("runs"), suite: str | None = None) -> Path:
    """The run folder a RUN argument names.

    Args:
        spec: A folder path, a run id or a unique start of one (:func:`find_run_by_id`), an
            MLflow child run id, ``latest`` (:func:`latest_run`) or ``previous``.
        runs_dir: Where run folders live (``runs/<suite>/<run_id>``).
        suite: The suite ``latest`` / ``previous`` refer to (``latest`` without one: of any suite).

    Raises:
        DataError: Nothing matches, the match is ambiguous, ``previous`` without a suite, or not
            enough successful runs.
    """
    runs_dir = Path(runs_dir)
    if spec == "latest":
        return latest_run(runs_dir, suite)
    if spec == "previous":
        if not suite:
            raise DataError(f"{spec!r} needs a suite: pass --suite NAME or --suite SUITE.yaml")
        runs = suite_runs(runs_dir, suite)
        if len(runs) < 2:
            raise DataError(
                f"suite {suite!r} has {len(runs)} successful run(s) under {runs_dir / suite}; "
                f"{spec!r} needs 2"
            )
        return runs[-2]
    as_path = Path(spec)
    if as_path.is_dir():
        return as_path
    found = find_run_by_id(spec, runs_dir)
    if found is not None:
        return found
    if _RUN_ID.match(spec):
        child = _by_child_run(runs_dir, spec)
        if child is not None:
            return child
        from omnieval.compare._mlflow import run_folder_from_mlflow

        found = run_folder_from_mlflow(spec)
        if found is not None and found.is_dir():
            return found
        from omnieval.compare._mlflow import fetch_run_folder, tracking_server

        if tracking_server() is not None:  # a run another machine made: its folder from the server
            return fetch_run_folder(spec, runs_dir)
    raise DataError(
        f"unknown run {spec!r}: not a folder, nor a run id under {runs_dir} or in the MLflow store "
        "(give a run folder, an MLflow run id, 'latest' or 'previous')"
    )


BASELINE_RULES: tuple[str, ...] = ("older", "first", "second")
"""``omnieval compare --baseline``: the older run (default), or RUN_A / RUN_B as given."""


def order_runs(
    first: RunFolder, second: RunFolder, baseline: str = "older"
) -> tuple[RunFolder, RunFolder, str]:
    """``(baseline, candidate, why)`` of two runs named in the order ``first``, ``second``.

    ``older``: the run written first (:func:`run_age`) is the baseline, whatever order the runs
    were named in (``compare latest previous`` compares the latest with the one before it);
    ``first`` / ``second``: the run named there is the baseline. ``why`` says which rule chose it,
    for the output.

    Raises:
        ValueError: ``baseline`` is not one of :data:`BASELINE_RULES`.
    """
    if baseline == "first":
        return first, second, "RUN_A as given (--baseline first)"
    if baseline == "second":
        return second, first, "RUN_B as given (--baseline second)"
    if baseline != "older":
        raise ValueError(f"baseline must be one of {', '.join(BASELINE_RULES)}; got {baseline!r}")
    if run_age(second.folder) < run_age(first.folder):
        return (
            second,
            first,
            "the older run; RUN_A, named first, is the newer (--baseline first keeps the order given)",
        )
    return first, second, "the older run (--baseline older)"
