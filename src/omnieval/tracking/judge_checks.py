"""Judge checks into MLflow: the known-set figures of the run's judges, on the suite's parent run.

The parent run carries the judges' checkpoints (``omnieval.judge.<id>.revision`` / ``.sha256``
tags), so the figures that say how far to trust those checkpoints go beside them: metrics
``meta_eval.<panel>.<judge>.<track>.{accuracy, agreement, floor, passed, n_pairs}`` and tags
``omnieval.meta_eval.<panel>.set_sha256`` and ``omnieval.meta_eval.below_floor``, as
:func:`omnieval.judges.meta_eval_metrics` computes them from ``health.json``.
"""

from __future__ import annotations

from collections.abc import Mapping


def log_judge_checks(run_id: str, metrics: Mapping[str, float], tags: Mapping[str, str]) -> None:
    """Log ``metrics`` and ``tags`` on the (possibly finished) MLflow run ``run_id``.

    Stamped at the run's end (or start), as the gate results are: they belong to that execution.
    """
    if not metrics and not tags:
        return
    import mlflow
    from mlflow.entities import Metric, RunTag

    from omnieval.tracking._store import tracking_uri

    client = mlflow.MlflowClient(tracking_uri())
    info = client.get_run(run_id).info
    timestamp = int(info.end_time or info.start_time or 0)
    items = [Metric(k, float(v), timestamp, 0) for k, v in metrics.items()]
    client.log_batch(run_id, metrics=items[:1000], tags=[RunTag(k, v) for k, v in tags.items()])
    for start in range(1000, len(items), 1000):  # MLflow's log_batch limit per call
        client.log_batch(run_id, metrics=items[start : start + 1000])
