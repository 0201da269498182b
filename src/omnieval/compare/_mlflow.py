"""The two MLflow calls the comparison needs: find a run's folder, tag a run with its verdict.

Kept in one small module (mlflow imported inside each function) so the lead can move it under
:mod:`omnieval.tracking`, the package that owns MLflow, without touching the comparison logic.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

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
