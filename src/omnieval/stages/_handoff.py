"""What one stage leaves for the next: the run's start, the validated dataset's digest, the
leaderboard's MLflow-metrics key.

Kept apart from the stage modules so that validate, report and track read each other's outputs
without importing each other.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from omnieval.errors import GateFailed
from omnieval.stages._common import StatePaths, read_json, write_json

STARTED_FILE = "started_at.json"
"""State file holding when the current suite execution started (written by the validate stage)."""


def record_start(paths: StatePaths) -> datetime:
    """Note that a suite execution starts now; the track stage uses it as the MLflow run's start.

    The flow hands the returned time to :func:`run` directly; the file serves stage-by-stage runs
    (``dvc repro``), where validate and track are separate processes.
    """
    now = datetime.now(UTC)
    write_json(paths.root / STARTED_FILE, {"started_at": now.isoformat()})
    return now


def recorded_start(paths: StatePaths) -> datetime | None:
    """The recorded start, or None when validate did not run for this execution."""
    marker = paths.root / STARTED_FILE
    return datetime.fromisoformat(read_json(marker)["started_at"]) if marker.is_file() else None


def dataset_digest(paths: StatePaths) -> str:
    """Digest recorded by the last successful validate stage."""
    if not paths.dataset_manifest.is_file():
        raise GateFailed(f"{paths.dataset_manifest} missing: run the validate stage first")
    manifest: dict[str, Any] = read_json(paths.dataset_manifest)
    return str(manifest["digest"])


MLFLOW_METRICS_KEY = "mlflow_metrics"
"""Key of ``leaderboard.json`` holding system -> {MLflow metric key: value}."""


def leaderboard_document(board: dict[str, Any]) -> dict[str, Any]:
    """``leaderboard.json`` without the MLflow metrics map (what people read)."""
    return {k: v for k, v in board.items() if k != MLFLOW_METRICS_KEY}
