"""Nightly evaluation flow: the stages of ``dvc.yaml`` as Prefect tasks with retries.

Scheduling, retries and concurrency only; every piece of work is a stage function from
``omnieval.stages``, and the suite's benchmark decides what each stage does. Run it with
``omnieval run pipelines/nightly.yaml`` (no Prefect server needed) or serve the nightly schedule
with ``omnieval serve pipelines/nightly.yaml``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from prefect import flow, task

from omnieval.config import SuiteConfig, load_suite
from omnieval.errors import OmnievalError
from omnieval.progress import heartbeat, note
from omnieval.stages import generate, judge, metrics, report, track, validate


def _transient(_task: Any, _run: Any, state: Any) -> bool:
    """Retry only what may pass on a second try: bad data, bad config and failed gates never do."""
    try:
        error = state.result(raise_on_failure=False)
    except Exception:  # an unreadable result is not evidence of a permanent failure
        return True
    return not (isinstance(error, OmnievalError) and (error.exit_code == 2 or error.final))


def _begin(message: str) -> None:
    """Announce a task (the kill harness and log readers key on ``[<stage>] started``).

    Under Dask a task runs in a worker process, which needs the CLI's log redaction too.
    """
    from omnieval.security import install_log_redaction

    install_log_redaction()
    note(message)


@task(name="validate dataset", retries=0)
def validate_task(config: SuiteConfig) -> validate.DatasetState:
    # Bad data is not transient: no retries, the gate's exit code 2 must surface.
    _begin("[validate] started")
    with heartbeat("validate"):
        return validate.run(config)


@task(name="generate", retries=2, retry_delay_seconds=5, retry_condition_fn=_transient)
def generate_task(config: SuiteConfig, system: str, state: validate.DatasetState) -> generate.GenerateOutcome:
    _begin(f"[generate] started {system}")
    return generate.run(config, system, state.instances, state.digest)


@task(name="metrics", retries=2, retry_delay_seconds=5, retry_condition_fn=_transient)
def metrics_task(config: SuiteConfig, system: str, state: validate.DatasetState) -> metrics.MetricsOutcome:
    _begin(f"[metrics] started {system}")
    return metrics.run(config, system, state.instances, state.digest)


@task(name="judge shard", retries=2, retry_delay_seconds=[10, 60], retry_condition_fn=_transient)
def judge_shard_task(
    config: SuiteConfig, systems: tuple[str, ...], state: validate.DatasetState
) -> judge.JudgeShard:
    _begin(f"[judge] started shard {'+'.join(systems)}")
    return judge.run_shard(config, systems, state.instances, state.digest)


@task(name="judge", retries=2, retry_delay_seconds=[10, 60], retry_condition_fn=_transient)
def judge_task(
    config: SuiteConfig, state: validate.DatasetState, shards: list[judge.JudgeShard] | None = None
) -> judge.JudgeOutcome:
    _begin("[judge] started")
    return judge.run(config, state.instances, state.digest, shards=shards)


@task(name="report", retries=1, retry_condition_fn=_transient)
def report_task(config: SuiteConfig, state: validate.DatasetState) -> report.ReportOutcome:
    _begin("[report] started")
    with heartbeat("report"):
        return report.run(config, state.digest)


@task(name="track", retries=2, retry_delay_seconds=5, retry_condition_fn=_transient)
def track_task(config: SuiteConfig, state: validate.DatasetState, notify: bool = True) -> track.TrackOutcome:
    _begin("[track] started")
    with heartbeat("track"):
        return track.run(config, state.digest, started_at=state.started_at, notify=notify)


@flow(name="omnieval-nightly", log_prints=False)
def nightly(
    suite_path: str = "pipelines/nightly.yaml", runner: str | None = None, notify: bool = True
) -> dict[str, Any]:
    """Validate -> generate (per system, concurrent) -> metrics -> judge (model-major) -> report -> track.

    ``runner``: ``default`` or ``dask`` (None: the suite's ``execution.runner``). Under Dask the
    per-shard tasks (generate and metrics per system, the judge shards) are submitted together and
    run on the cluster's worker processes; the default runner keeps metrics one system at a time
    (they share loaded models) and judges all systems in one shard, model-major. ``notify``: send
    the verdict through the suite's ``regression.notify`` (a night sends one for all its suites).
    """
    config = load_suite(Path(suite_path))
    distributed = (runner or config.execution.runner) == "dask"
    seconds: dict[str, float] = {}
    clock = time.monotonic()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.monotonic()
        seconds[stage] = round(now - clock, 2)
        clock = now

    state = validate_task(config)
    lap("validate")
    generated = [generate_task.submit(config, sid, state) for sid in config.systems]
    outcomes = [future.result() for future in generated]
    lap("generate")
    if distributed:
        metric_futures = [metrics_task.submit(config, sid, state) for sid in config.systems]
        metric_outcomes = [future.result() for future in metric_futures]
    else:
        metric_outcomes = [metrics_task(config, sid, state) for sid in config.systems]
    lap("metrics")
    judged = None
    if config.panels:
        shards = None
        if distributed:
            plan = judge.shard_plan(config, by_system=True)
            if len(plan) == 1 and config.bench.judge_shards_by_system and len(config.systems) > 1:
                held = ", ".join(judge.order_dependent_judges(config))
                note(
                    f"[judge] one shard: {held} answer(s) depend on the calls around them in one "
                    "process (llama.cpp lockstep batches, transformers), so the systems are not split"
                )
            shard_futures = [judge_shard_task.submit(config, systems, state) for systems in plan]
            shards = [future.result() for future in shard_futures]
        judged = judge_task(config, state, shards)
    lap("judge")
    reported = report_task(config, state)
    lap("report")
    tracked = track_task(config, state, notify)
    lap("track")
    return {
        "suite": config.suite,
        "run_id": tracked.run_id,
        "run_folder": str(tracked.run_folder),
        # The run folder's page, re-rendered with this run's comparison: the stage's own
        # report.html is reused while its inputs are unchanged and so may predate the verdict.
        "report": str(tracked.run_folder / "report.html"),
        "viewer": str(tracked.run_folder / "instances.html"),
        "stage_report": str(reported.report_path),
        "regression": _regression_verdict(tracked.run_folder),
        "skipped": {
            **{f"generate@{o.system}": o.skipped for o in outcomes},
            **{f"metrics@{o.system}": o.skipped for o in metric_outcomes},
            "judge": bool(judged.skipped) if judged else True,
            "report": reported.skipped,
        },
        "runner": "dask" if distributed else "default",
        "stage_seconds": seconds,
        "judge_model_calls": judged.model_calls if judged else 0,
        "judge_cache_hits": judged.cache_hits if judged else 0,
    }


def _regression_verdict(folder: Path) -> str | None:
    """GO / NO-GO / INCONCLUSIVE from the run folder's ``regression.json`` (docs/nightly.md)."""
    from omnieval.compare import regression_verdict

    return regression_verdict(folder)
