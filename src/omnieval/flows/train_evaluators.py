"""Evaluator training flow: the stages of ``omnieval.training`` as Prefect tasks with retries.

Scheduling and retries only; every piece of work is a stage function from ``omnieval.training``
and the order of the stages is :func:`omnieval.training.run_feature`'s. Run it with
``omnieval train pipelines/train_evaluators.yaml`` (``make train-demo``; no Prefect server needed,
a temporary one starts in-process) or ``python flows/train_evaluators.py CONFIG`` (a thin entry point importing this module).

Bad data and bad config are not transient: a failed corpus gate or a config error ends the task at
once (no retries) and the flow fails with the gate's report; the CLI exits with code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from omnieval.errors import OmnievalError
from omnieval.training import (
    Steps,
    load_training_config,
    run_feature,
    stage_check,
    stage_extract,
    stage_finalize,
    stage_gate,
    stage_grid_point,
    stage_prepare,
)


def _transient(_task: Any, _run: Any, state: Any) -> bool:
    """Retry only failures that are not omnieval's own data/config/gate errors."""
    try:
        state.result()
    except OmnievalError:
        return False
    except BaseException:
        return True
    return True


# Inputs are frames and model objects, not worth hashing: no result caching.
def _task(fn: Any, name: str, retries: int, delay: int = 0) -> Any:
    return task(
        name=name,
        retries=retries,
        retry_delay_seconds=delay,
        cache_policy=NO_CACHE,
        retry_condition_fn=_transient,
    )(fn)


prepare_task = _task(stage_prepare, "prepare corpus", 1, 5)
gate_task = _task(stage_gate, "gate corpus", 0)
extract_task = _task(stage_extract, "extract frames", 1, 5)
grid_point_task = _task(stage_grid_point, "train grid point", 1, 10)
finalize_task = _task(stage_finalize, "test, save, register", 2, 5)
check_task = _task(stage_check, "check registered evaluator", 1, 5)


@flow(name="omnieval-train-evaluators", log_prints=False)
def train_evaluators(
    config_path: str = "pipelines/train_evaluators.yaml",
    features: list[str] | None = None,
    track: bool = True,
) -> list[dict[str, Any]]:
    """Per feature: prepare corpus -> gate -> frames -> grid (one task per point) -> select, test,
    save, register -> load the registered version back and score the test split."""
    from omnieval.tracking.training import TrainingTracker

    config = load_training_config(Path(config_path)).select(features)
    tracker = TrainingTracker(config.experiment) if track else None
    steps = Steps(
        prepare=prepare_task,
        gate=gate_task,
        extract=extract_task,
        grid_point=grid_point_task,
        finalize=finalize_task,
        check=check_task,
    )
    summaries = []
    for feature in config.features:
        result = run_feature(config, feature, steps, tracker=tracker)
        summaries.append(
            {
                **result.summary(),
                "selected": {
                    k: result.selected[k] for k in ("head_lr", "backbone_lr", "best_epoch", "dev_accuracy")
                },
                "check": result.check,
                "run_id": result.run_id,
            }
        )
    return summaries
