"""When a run folder counts as finished: shared by the local folders and those fetched from a server."""

from __future__ import annotations

from pathlib import Path

SUCCESS_FILES: tuple[str, ...] = ("leaderboard.json", "scores.parquet", "lineage.json", "mlflow.json")
"""A run folder holding all of these finished successfully."""


def is_successful(folder: Path) -> bool:
    """Whether ``folder`` holds every file of :data:`SUCCESS_FILES`."""
    return all((Path(folder) / name).is_file() for name in SUCCESS_FILES)


__all__ = ["SUCCESS_FILES", "is_successful"]
