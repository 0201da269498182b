"""The MLflow calls the comparison needs: find a run's folder, tag a run with its verdict, log
each test's minimum detectable effect (``regression.<system>.<component>.mde``).

Kept in one small module (mlflow imported inside each function) so the lead can move it under
:mod:`omnieval.tracking`, the package that owns MLflow, without touching the comparison logic.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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
