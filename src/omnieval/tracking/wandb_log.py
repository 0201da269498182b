"""Optional Weights & Biases mirror of a suite run (offline unless WANDB_MODE says otherwise).

``tracking.wandb: true`` in a suite sends the same numbers as the MLflow runs to one W&B run per suite
execution: project ``omnieval-<suite>``, group = suite, run name = the MLflow parent run's name.

- config: the resolved suite config, plus ``mlflow_run_id`` and the §5 tags (``omnieval.*``);
- metrics: every child-run metric as ``<system>/<metric key>`` (logged once and kept in the summary);
- tables: ``leaderboard`` (one row per system, one column per metric key) and ``scores_summary``
  (per system, condition, subset, track and component: rows, rows with a value, mean value on the
  component's native scale).

Offline runs land in ``<folder>/wandb/offline-run-*``; ``wandb sync`` uploads them later.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

SUMMARY_KEYS: tuple[str, ...] = ("system", "condition", "subset", "track", "component")
"""Group columns of the ``scores_summary`` table (those missing from a scores table are skipped)."""


@dataclass(frozen=True)
class WandbRun:
    """Where the mirror went: the W&B run id and its local run folder (``.../offline-run-*``)."""

    run_id: str
    run_dir: Path


@dataclass(frozen=True)
class Table:
    """A plain table (column names and rows) before it becomes a ``wandb.Table``."""

    columns: list[str | int]
    rows: list[list[Any]]


def leaderboard_table(metrics: Mapping[str, Mapping[str, float]]) -> Table:
    """One row per system, one column per metric key (union over systems, sorted); None where absent.

    >>> leaderboard_table({"a": {"x": 1.0}, "b": {"y": 2.0}})
    Table(columns=['system', 'x', 'y'], rows=[['a', 1.0, None], ['b', None, 2.0]])
    """
    keys = sorted({k for values in metrics.values() for k in values})
    rows = [[system, *(_number(values.get(k)) for k in keys)] for system, values in metrics.items()]
    return Table(["system", *keys], rows)


def scores_summary(scores: pd.DataFrame) -> Table:
    """Per system / condition / subset / track / component: ``rows``, ``valued`` (rows with a
    value) and ``mean_value`` (mean of those values on the component's native scale; None if none).

    A summary of the scores table, not a score: the benchmark's aggregation (valid-only,
    zero-filled, judge means) lives in the leaderboard.
    """
    keys = [k for k in SUMMARY_KEYS if k in scores.columns]
    grouped = scores.groupby(keys, dropna=False, sort=True)["value"]
    frame = grouped.agg(rows="size", valued="count", mean_value="mean").reset_index()
    rows = [
        [*(str(r[k]) for k in keys), int(r["rows"]), int(r["valued"]), _number(r["mean_value"])]
        for r in frame.to_dict("records")
    ]
    return Table([*keys, "rows", "valued", "mean_value"], rows)


def _number(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


def log_to_wandb(
    *,
    suite: str,
    run_name: str,
    config: Mapping[str, Any],
    metrics: Mapping[str, Mapping[str, float]],
    folder: Path,
    scores: pd.DataFrame | None = None,
    tags: Mapping[str, str] | None = None,
    mlflow_run_id: str | None = None,
) -> WandbRun:
    """Mirror one suite execution to W&B (offline by default) and return where it went.

    Args:
        suite: suite name (project ``omnieval-<suite>``, group ``<suite>``).
        run_name: the W&B run's display name (use the MLflow parent run's name).
        config: the resolved suite config.
        metrics: ``system -> {metric key: value}``, the child runs' metrics.
        folder: the run folder; W&B writes under ``<folder>/wandb/``.
        scores: the scores table (FORMATS.md §3) for the ``scores_summary`` table.
        tags: §5 tags, added to the config.
        mlflow_run_id: the MLflow parent run, added to the config so both records point at each other.
    """
    import wandb

    run_config: dict[str, Any] = dict(config)
    run_config["omnieval"] = {**dict(tags or {}), "mlflow_run_id": mlflow_run_id or ""}
    run = wandb.init(
        project=f"omnieval-{suite}",
        group=suite,
        job_type="suite-run",
        name=run_name,
        config=run_config,
        dir=str(folder.resolve()),
        reinit="create_new",
        # Offline unless the environment asks for more: a nightly never needs a W&B login.
        mode=os.environ.get("WANDB_MODE", "offline"),  # type: ignore[arg-type]
    )
    try:
        flat = {f"{system}/{k}": float(v) for system, values in metrics.items() for k, v in values.items()}
        board = leaderboard_table(metrics)
        payload: dict[str, Any] = {**flat, "leaderboard": wandb.Table(columns=board.columns, data=board.rows)}
        if scores is not None:
            summary = scores_summary(scores)
            payload["scores_summary"] = wandb.Table(columns=summary.columns, data=summary.rows)
        run.log(payload)
        result = WandbRun(str(run.id), Path(run.dir).resolve().parent)
    finally:
        run.finish()
        # finish() returns before the wandb-core service has flushed an offline run to its
        # ``.wandb`` file; shutting the service down waits for that, so the folder is complete
        # (for ``wandb sync`` or a reader) once this returns. A later init starts a new service.
        wandb.teardown()
    return result
