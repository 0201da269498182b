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
