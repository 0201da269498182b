"""The MLflow calls the comparison needs: find a run's folder, tag a run with its verdict, log
each test's minimum detectable effect (``regression.<system>.<component>.mde``).

Kept in one small module (mlflow imported inside each function) so the lead can move it under
:mod:`omnieval.tracking`, the package that owns MLflow, without touching the comparison logic.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omnieval.tracking.candidates import CandidateManifest, SystemCandidates

RUN_FOLDER_TAG = "omnieval.run_folder"
REGRESSION_TAG = "omnieval.regression"
RUN_ARTIFACTS = "run"
"""Where the track stage uploads the whole run folder among the parent run's artifacts."""
FETCHED_FILE = "fetched.json"
"""Written into a run folder fetched from the tracking server: which run, from where, when."""


def _store_exists() -> bool:
    # Looking a run up must not create an empty local store as a side effect.
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return True
    from omnieval.tracking import DEFAULT_STORE

    return (DEFAULT_STORE / "mlflow.db").is_file()


def run_folder_from_mlflow(run_id: str) -> Path | None:
    """The run folder recorded on an MLflow run (or on its parent) by the ``omnieval.run_folder`` tag."""
    if not _store_exists():
        return None
    try:
        from mlflow.tracking import MlflowClient

        from omnieval.tracking import tracking_uri

        client = MlflowClient(tracking_uri())
        run = client.get_run(run_id)
        tags = run.data.tags
        if RUN_FOLDER_TAG not in tags and "mlflow.parentRunId" in tags:
            tags = client.get_run(tags["mlflow.parentRunId"]).data.tags
    except Exception:  # an unknown id or an unreachable store both mean "not found here"
        return None
    folder = tags.get(RUN_FOLDER_TAG)
    return Path(folder) if folder else None


def set_run_tags(run_id: str, tags: Mapping[str, str]) -> None:
    """Set tags on an existing MLflow run (the suite's parent run)."""
    from mlflow.tracking import MlflowClient

    from omnieval.tracking import tracking_uri

    client = MlflowClient(tracking_uri())
    for key, value in tags.items():
        client.set_tag(run_id, key, value)


_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_\-. /]")


def regression_metrics(document: Mapping[str, Any]) -> dict[str, float]:
    """``regression.<system>.<component>.mde`` for every compared cell of a comparison document.

    Characters MLflow refuses in a metric name become ``_``; cells without a finite ``mde`` (a
    component in one run only, no paired instance) are left out rather than logged as NaN, so a
    metric's history holds only real values.

    Example:
        >>> regression_metrics({"systems": {"a": {"judge.text": {"mde": 0.5}, "wer": {"mde": None}}}})
        {'regression.a.judge.text.mde': 0.5}
    """
    out: dict[str, float] = {}
    for system, cells in (document.get("systems") or {}).items():
        for component, cell in cells.items():
            value = cell.get("mde") if isinstance(cell, Mapping) else None
            if isinstance(value, int | float) and math.isfinite(value):
                name = _UNSAFE_NAME.sub("_", f"regression.{system}.{component}.mde")
                out[name] = float(value)
    return out


def log_regression_metrics(run_id: str, document: Mapping[str, Any]) -> dict[str, float]:
    """Log :func:`regression_metrics` of ``document`` on an existing MLflow run; return what was logged."""
    import time

    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    from omnieval.tracking import tracking_uri

    metrics = regression_metrics(document)
    if metrics:
        stamp = int(time.time() * 1000)
        client = MlflowClient(tracking_uri())
        items = [Metric(k, v, stamp, 0) for k, v in metrics.items()]
        for start in range(0, len(items), 1000):  # MLflow's log_batch limit per call
            client.log_batch(run_id, metrics=items[start : start + 1000])
    return metrics


def tracking_server() -> str | None:
    """The tracking server's URI when ``MLFLOW_TRACKING_URI`` names one (``http(s)://``), else None
    (the embedded store: runs of other machines cannot be there). None also while a run folder is
    written without the server (``omnieval.tracking.pending.offline``)."""
    from omnieval.tracking.pending import is_offline

    if is_offline():
        return None
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    return uri if uri.startswith(("http://", "https://")) else None


def _shown(uri: str) -> str:
    from omnieval.security import redact

    return redact(uri)


def previous_run_on_server(experiment: str, suite: str, run_id: str | None, runs_dir: Path) -> Path | None:
    """The suite's previous finished run on the tracking server, whichever machine ran it, as a
    local run folder (fetched into ``<runs_dir>/<suite>/<run_id>`` when this machine lacks it); None
    when no server is configured or the server holds no earlier run of the suite.

    "Previous" is the latest parent run of ``suite`` in ``experiment`` that finished (status
    FINISHED, not marked ``omnieval.failed``) and started before ``run_id`` (the run being written).

    Raises:
        DataError: the server cannot be reached or the run's folder cannot be fetched (named).
    """
    server = tracking_server()
    if server is None:
        return None
    from mlflow.tracking import MlflowClient

    from omnieval.errors import DataError
    from omnieval.tracking import tracking_uri

    try:
        client = MlflowClient(tracking_uri())
        found = client.get_experiment_by_name(experiment)
        if found is None:
            return None
        started = client.get_run(run_id).info.start_time if run_id else None
        runs = client.search_runs(
            [found.experiment_id],
            filter_string=(
                f"tags.`omnieval.suite` = '{suite}' and tags.`omnieval.kind` = 'suite' "
                "and attributes.status = 'FINISHED'"
            ),
            order_by=["attributes.start_time DESC"],
            max_results=50,
        )
    except Exception as exc:  # unreachable, refused, a bad answer: the verdict says so
        raise DataError(
            f"cannot look the previous run up on the tracking server {_shown(server)}: {exc}"
        ) from None
    for run in runs:
        if run.info.run_id == run_id or "omnieval.failed" in run.data.tags:
            continue
        if started is not None and run.info.start_time is not None and run.info.start_time > started:
            continue
        return fetch_run_folder(run.info.run_id, Path(runs_dir))
    return None


def fetch_run_folder(run_id: str, runs_dir: Path) -> Path:
    """The run folder of the tracking server's run ``run_id`` on this machine: the folder its
    ``omnieval.run_folder`` tag names when it is here and complete, else a copy of the run's uploaded
    folder (artifacts under ``run/``) in ``<runs_dir>/<suite>/<run_id>`` with ``mlflow.json`` rebuilt from the
    server, ``fetched.json`` saying where it came from, and its ``lineage.json`` dated when the run
    started (so ``previous``/``latest`` order it among local runs as it ran).

    Raises:
        DataError: the run has no complete folder among its artifacts, or the fetch failed.
    """
    import json
    import shutil
    import tempfile
    from datetime import UTC, datetime

    from mlflow.artifacts import download_artifacts
    from mlflow.tracking import MlflowClient

    from omnieval.compare._folders import is_successful
    from omnieval.errors import DataError
    from omnieval.tracking import tracking_uri

    uri = tracking_uri()
    client = MlflowClient(uri)
    try:
        run = client.get_run(run_id)
    except Exception as exc:
        raise DataError(f"run {run_id} is not on the tracking server {_shown(uri)}: {exc}") from None
    local = run.data.tags.get(RUN_FOLDER_TAG)
    if local and is_successful(Path(local)) and Path(local).name == run_id:
        return Path(local)
    target = Path(runs_dir) / run.data.tags.get("omnieval.suite", "fetched") / run_id
    if is_successful(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".fetch-{run_id}-") as scratch:
        try:
            download_artifacts(run_id=run_id, artifact_path=RUN_ARTIFACTS, dst_path=scratch, tracking_uri=uri)
            children = client.search_runs(
                [run.info.experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'"
            )
        except Exception as exc:
            raise DataError(f"cannot fetch run {run_id}'s folder from {_shown(uri)}: {exc}") from None
        folder = Path(scratch) / RUN_ARTIFACTS
        systems = {
            c.data.tags["omnieval.system"]: c.info.run_id
            for c in children
            if "omnieval.system" in c.data.tags
        }
        (folder / "mlflow.json").write_text(
            json.dumps({"parent": run_id, "systems": systems, "analyses": {}})
        )
        (folder / FETCHED_FILE).write_text(
            json.dumps(
                {
                    "run_id": run_id,
                    "tracking_uri": _shown(uri),
                    "run_folder_elsewhere": local,
                    "fetched": datetime.now(UTC).isoformat(timespec="seconds"),
                },
                indent=2,
            )
        )
        if not is_successful(folder):
            raise DataError(
                f"run {run_id} on {_shown(uri)} has no complete run folder among its artifacts "
                f"({RUN_ARTIFACTS}/ lacks leaderboard.json, scores.parquet or lineage.json)"
            )
        if run.info.start_time is not None:
            stamp = run.info.start_time / 1000
            os.utime(folder / "lineage.json", (stamp, stamp))
        if target.exists():  # an incomplete earlier copy
            shutil.rmtree(target)
        os.replace(folder, target)
    return target


FETCHED_CANDIDATES = "fetched_candidates"
"""Folder of a fetched run folder holding the candidate manifest and the imported systems'
candidates fetched from the server for re-judging (``fetched_candidates/<system>/...``)."""


@dataclass(frozen=True)
class FetchedCandidates:
    """Where a fetched run's candidates are on this machine, and how they got there.

    Attributes:
        roots: Per system, the folder its candidates are judged from.
        sources: Per system, the ``rejudge.candidates`` entry: ``source`` (``run_folder``: copied
            into the run folder fetched from ``run/``; ``server``: an imported system's files
            fetched from ``candidates/blobs``), ``files``, ``bytes``, ``downloaded`` (files fetched
            now; 0 when an earlier copy checked out) and ``verified`` (against the run's manifest).
        run_id: The server's run.
        tracking_uri: The server (credentials masked).
        note: Why the copied candidates are unverified (no manifest), else None.
    """

    roots: dict[str, Path]
    sources: dict[str, dict[str, Any]]
    run_id: str
    tracking_uri: str
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The ``rejudge.candidates`` block."""
        out: dict[str, Any] = {
            "fetched_from": {"run_id": self.run_id, "tracking_uri": self.tracking_uri},
            "systems": {s: dict(v) for s, v in self.sources.items()},
        }
        if self.note:
            out["note"] = self.note
        return out


def fetched_from(folder: Path) -> dict[str, Any] | None:
    """The ``fetched.json`` of a run folder fetched from a tracking server (None for a local run)."""
    import json

    path = Path(folder) / FETCHED_FILE
    if not path.is_file():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"run_id": Path(folder).name, "tracking_uri": "(unreadable fetched.json)"}
    return document if isinstance(document, dict) else {"run_id": Path(folder).name}


def _mismatches(folder: Path, entry: SystemCandidates) -> list[str]:
    """How ``folder`` differs from a manifest entry (files missing, changed or extra); empty when equal."""
    from omnieval.tracking import candidate_table

    table = candidate_table(folder) if folder.is_dir() else None
    have = {} if table is None else dict(zip(table.frame["path"], table.frame["sha256"], strict=True))
    want = {f.path: f.sha256 for f in entry.files}
    out = [f"{p} missing" for p in sorted(set(want) - set(have))]
    out += [
        f"{p} has SHA-256 {have[p][:12]}, the run logged {want[p][:12]}"
        for p in sorted(want)
        if p in have and have[p] != want[p]
    ]
    out += [f"{p} is not in the run's manifest" for p in sorted(set(have) - set(want))]
    return out


def _manifest(folder: Path, run_id: str, uri: str) -> tuple[CandidateManifest | None, str | None]:
    """The run's candidate manifest (cached in ``fetched_candidates/manifest.json``), or None and why."""
    from mlflow.artifacts import download_artifacts
    from mlflow.tracking import MlflowClient
    from pydantic import ValidationError

    from omnieval.errors import DataError
    from omnieval.tracking.candidates import CANDIDATES_ARTIFACTS, MANIFEST_NAME, CandidateManifest

    cached = folder / FETCHED_CANDIDATES / MANIFEST_NAME
    if not cached.is_file():
        try:
            listed = {
                Path(a.path).name for a in MlflowClient(uri).list_artifacts(run_id, CANDIDATES_ARTIFACTS)
            }
            if MANIFEST_NAME not in listed:
                return None, (
                    f"run {run_id} has no {CANDIDATES_ARTIFACTS}/{MANIFEST_NAME} among its artifacts "
                    "(tracked before candidates were logged, or without a tracking server, or their upload failed)"
                )
            cached.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=cached.parent, prefix=".manifest-") as scratch:
                local = download_artifacts(
                    run_id=run_id,
                    artifact_path=f"{CANDIDATES_ARTIFACTS}/{MANIFEST_NAME}",
                    dst_path=scratch,
                    tracking_uri=uri,
                )
                os.replace(local, cached)
        except Exception as exc:
            raise DataError(
                f"cannot fetch run {run_id}'s candidate manifest from {_shown(uri)}: {exc}"
            ) from None
    try:
        manifest = CandidateManifest.model_validate_json(cached.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        cached.unlink(missing_ok=True)  # fetched again next time
        raise DataError(f"{cached}: not a candidate manifest ({str(exc).splitlines()[0]})") from None
    if manifest.run_id != run_id:
        raise DataError(f"{cached} is run {manifest.run_id}'s manifest, not run {run_id}'s")
    return manifest, None


FETCH_WORKERS = 8
"""Blobs downloaded at once (one request each; the server answers them in parallel)."""


def _fetch_imported(folder: Path, run_id: str, uri: str, system: str, entry: SystemCandidates) -> int:
    """Fetch an imported system's files from ``candidates/blobs`` into ``fetched_candidates/<system>``,
    each checked against its SHA-256; return how many were downloaded (0: an earlier copy checks out).

    Raises:
        DataError: a blob is missing, unreadable or not the bytes its name says.
    """
    import hashlib
    from concurrent.futures import ThreadPoolExecutor

    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
    from mlflow.tracking import MlflowClient

    from omnieval.errors import DataError
    from omnieval.tracking import no_artifact_progress_bar

    target = folder / FETCHED_CANDIDATES / system
    if target.is_dir() and not _mismatches(target, entry):
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        # One artifact repository for every blob: a `runs:/` download per blob would look the run
        # (and its logged models) up again each time.
        repo = get_artifact_repository(MlflowClient(uri).get_run(run_id).info.artifact_uri, tracking_uri=uri)
    except Exception as exc:
        raise DataError(f"{system}: cannot reach run {run_id}'s artifacts on {_shown(uri)}: {exc}") from None
    # Content-addressed: one download per distinct content, whatever number of files share it.
    wanted = {file.sha256: file for file in entry.files}
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".fetch-{system}-") as scratch:
        blobs, tree = Path(scratch) / "blobs", Path(scratch) / "tree"
        blobs.mkdir()

        def fetch_one(sha: str) -> str | None:
            """Download one blob into ``blobs/<sha>``; the problem with it, or None."""
            file = wanted[sha]
            try:
                scratch_dir = blobs / ".download" / sha
                scratch_dir.mkdir(parents=True)
                local = Path(repo.download_artifacts(file.blob_path, dst_path=str(scratch_dir)))  # type: ignore[no-untyped-call]
            except Exception as exc:
                return f"{system}: cannot fetch {file.path} ({file.blob_path}) from {_shown(uri)}: {exc}"
            found = hashlib.sha256(local.read_bytes()).hexdigest()
            if found != sha:
                return f"{system}: {file.blob_path} on {_shown(uri)} has SHA-256 {found[:12]}, not {sha[:12]}"
            os.replace(local, blobs / sha)
            return None

        with no_artifact_progress_bar(), ThreadPoolExecutor(max_workers=FETCH_WORKERS) as pool:
            problems = [p for p in pool.map(fetch_one, sorted(wanted)) if p is not None]
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            raise DataError(problems[0] + more)
        for file in entry.files:
            placed = tree / file.path
            placed.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(blobs / file.sha256, placed)
        tree.mkdir(exist_ok=True)  # a system with no file at all is an empty folder, as it was
        if target.exists():  # an incomplete or stale earlier copy
            shutil.rmtree(target)
        os.replace(tree, target)
    return len(wanted)


def fetch_candidates(folder: Path, systems: Sequence[str]) -> FetchedCandidates:
    """The candidates of ``systems`` in a run folder fetched from the tracking server, ready to judge.

    A system whose candidates were copied into the run folder is judged from the fetched folder's
    ``candidates/<system>``; an ``import`` system (whose ``IMPORTED.json`` names a folder on the
    machine that ran it, never read here) from its files fetched from the run's
    ``candidates/blobs``. Both are checked file by file against the run's candidate manifest; without
    a manifest (a run tracked before it was logged) copied candidates are used unverified (said in
    :attr:`FetchedCandidates.note`) and imported ones are missing.

    Raises:
        DataError: naming every system whose candidates are missing or differ from the manifest.
    """
    from omnieval.errors import DataError
    from omnieval.tracking import tracking_uri

    folder = Path(folder)
    fetched = fetched_from(folder) or {}
    run_id = str(fetched.get("run_id") or folder.name)
    shown = str(fetched.get("tracking_uri") or "the tracking server")
    server = tracking_server()
    manifest: CandidateManifest | None = None
    why: str | None = None
    if server is None:
        why = f"no tracking server is configured here (MLFLOW_TRACKING_URI); run A came from {shown}"
    else:
        manifest, why = _manifest(folder, run_id, tracking_uri())
        shown = _shown(server)
    roots: dict[str, Path] = {}
    sources: dict[str, dict[str, Any]] = {}
    missing: list[str] = []
    for system in systems:
        kept = folder / "candidates" / system
        entry = manifest.systems.get(system) if manifest is not None else None
        pointer = kept / "IMPORTED.json"
        if pointer.is_file():
            if entry is None or entry.imported_from is None:
                missing.append(
                    f"{system}: imported from {_imported_from(kept)} on the machine that ran it, "
                    f"and not on {shown}: "
                    + (why or f"the run's manifest has no imported entry for {system}")
                )
                continue
            try:
                downloaded = _fetch_imported(folder, run_id, tracking_uri(), system, entry)
            except DataError as exc:
                missing.append(str(exc))
                continue
            roots[system] = folder / FETCHED_CANDIDATES / system
            sources[system] = {"source": "server", "downloaded": downloaded}
        else:
            if not kept.is_dir():
                missing.append(f"{system}: {kept} is not in the fetched run folder")
                continue
            if entry is not None:
                wrong = _mismatches(kept, entry)
                if wrong:
                    shown_wrong = "; ".join(wrong[:3]) + (
                        f" (+{len(wrong) - 3} more)" if len(wrong) > 3 else ""
                    )
                    missing.append(f"{system}: {kept} differs from the run's manifest: {shown_wrong}")
                    continue
            roots[system] = kept
            sources[system] = {"source": "run_folder", "downloaded": 0}
        if entry is not None:
            count, size = len(entry.files), sum(f.bytes for f in entry.files)
        else:
            count, size = _tree_size(roots[system])
        sources[system].update(files=count, bytes=size, verified=entry is not None)
    if missing:
        raise DataError(
            f"cannot re-judge run A ({folder}, run {run_id} fetched from {shown}): its candidates "
            "are missing or differ from what the run logged:\n" + "\n".join(f"  - {m}" for m in missing)
        )
    return FetchedCandidates(roots, sources, run_id, shown, note=None if manifest is not None else why)


def _imported_from(kept: Path) -> str:
    """The folder an ``import`` system's pointer names (only named in messages, never read here)."""
    from omnieval.systems import resolve_candidates_root

    try:
        return str(resolve_candidates_root(kept))
    except (OSError, ValueError, KeyError, TypeError):
        return f"(unreadable {kept / 'IMPORTED.json'})"


def _tree_size(root: Path) -> tuple[int, int]:
    """Files below ``root`` and their total bytes, in one walk."""
    sizes = [p.stat().st_size for p in root.rglob("*") if p.is_file()]
    return len(sizes), sum(sizes)
