"""Nightly evaluation flow: the stages of ``dvc.yaml`` as Prefect tasks with retries.

Scheduling, retries and concurrency only; every piece of work is a stage function from
``omnieval.stages``, and the suite's benchmark decides what each stage does. Run it with
``omnieval run pipelines/nightly.yaml`` (no Prefect server needed) or serve the nightly schedule
with ``omnieval serve pipelines/nightly.yaml``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, task

from omnieval.config import SuiteConfig, load_suite
from omnieval.errors import OmnievalError
from omnieval.stages import generate, judge, metrics, report, track, validate


def _transient(_task: Any, _run: Any, state: Any) -> bool:
    """Retry only what may pass on a second try: bad data, bad config and failed gates never do."""
    try:
        error = state.result(raise_on_failure=False)
    except Exception:  # an unreadable result is not evidence of a permanent failure
        return True
    return not (isinstance(error, OmnievalError) and error.exit_code == 2)


@task(name="validate dataset", retries=0)
def validate_task(config: SuiteConfig) -> validate.DatasetState:
    # Bad data is not transient: no retries, the gate's exit code 2 must surface.
    return validate.run(config)


@task(name="generate", retries=2, retry_delay_seconds=5, retry_condition_fn=_transient)
def generate_task(config: SuiteConfig, system: str, state: validate.DatasetState) -> generate.GenerateOutcome:
    return generate.run(config, system, state.instances, state.digest)


@task(name="metrics", retries=2, retry_delay_seconds=5, retry_condition_fn=_transient)
def metrics_task(config: SuiteConfig, system: str, state: validate.DatasetState) -> metrics.MetricsOutcome:
    return metrics.run(config, system, state.instances, state.digest)


@task(name="judge", retries=2, retry_delay_seconds=[10, 60], retry_condition_fn=_transient)
def judge_task(config: SuiteConfig, state: validate.DatasetState) -> judge.JudgeOutcome:
    return judge.run(config, state.instances, state.digest)


@task(name="report", retries=1, retry_condition_fn=_transient)
def report_task(config: SuiteConfig, state: validate.DatasetState) -> report.ReportOutcome:
    return report.run(config, state.digest)


@task(name="track", retries=2, retry_delay_seconds=5, retry_condition_fn=_transient)
def track_task(config: SuiteConfig, state: validate.DatasetState) -> track.TrackOutcome:
    return track.run(config, state.digest, started_at=state.started_at)


@flow(name="omnieval-nightly", log_prints=False)
def nightly(suite_path: str = "pipelines/nightly.yaml") -> dict[str, Any]:
    """Validate -> generate (per system, concurrent) -> metrics -> judge (model-major) -> report -> track."""
    config = load_suite(Path(suite_path))
    state = validate_task(config)
    generated = [generate_task.submit(config, sid, state) for sid in config.systems]
    outcomes = [future.result() for future in generated]
    # Metrics share loaded models (Whisper, encoders): one system at a time.
    metric_outcomes = [metrics_task(config, sid, state) for sid in config.systems]
    judged = judge_task(config, state) if config.panels else None
    reported = report_task(config, state)
    tracked = track_task(config, state)
    return {
        "suite": config.suite,
        "run_id": tracked.run_id,
        "run_folder": str(tracked.run_folder),
        "report": str(reported.report_path),
        "regression": _regression_verdict(tracked.run_folder),
        "skipped": {
            **{f"generate@{o.system}": o.skipped for o in outcomes},
            **{f"metrics@{o.system}": o.skipped for o in metric_outcomes},
            "judge": bool(judged.skipped) if judged else True,
            "report": reported.skipped,
        },
        "judge_model_calls": judged.model_calls if judged else 0,
        "judge_cache_hits": judged.cache_hits if judged else 0,
    }


def _regression_verdict(folder: Path) -> str | None:
    """GO / NO-GO / INCONCLUSIVE from the run folder's ``regression.json`` (docs/nightly.md)."""
    from omnieval.compare import regression_verdict

    return regression_verdict(folder)


def serve(suite_path: str = "pipelines/nightly.yaml") -> None:
    """Serve the suite's schedule (cron, default 02:00 UTC) until interrupted."""
    from prefect.schedules import Cron

    config = load_suite(Path(suite_path))
    nightly.serve(
        name=f"omnieval-{config.suite}",
        schedule=Cron(config.schedule.cron, timezone=config.schedule.timezone),
        parameters={"suite_path": suite_path},
    )
