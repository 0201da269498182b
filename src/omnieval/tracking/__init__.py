"""Experiment tracking: the only place that imports mlflow (and wandb).

Naming follows FORMATS.md section 5: an experiment per suite, a parent run per suite execution, a
child run per system, analyses as child runs tagged ``omnieval.kind=analysis``. How the runs look in
the MLflow UI (names, columns, inputs, artifacts) is described in ``docs/mlflow-ui.md``.
"""

from omnieval.tracking._credentials import (
    CREDENTIALS_ENV,
    apply_credentials,
    check_private,
    credentials_text,
    read_credentials,
    without_password,
    write_private,
)
from omnieval.tracking._mlflow import (
    DEFAULT_HEADLINE_PATTERNS,
    METRIC_NOTE_TAG,
    CandidateTable,
    SuiteRunIds,
    candidate_table,
    headline_component_patterns,
    headline_metrics,
    log_failed_run,
    log_suite_run,
    short_sha,
    suite_run_name,
    system_run_name,
    usage_metrics,
)
from omnieval.tracking._store import (
    DEFAULT_STORE,
    EXPERIMENT_KIND,
    EXPERIMENT_KIND_TAG,
    configure_mlflow,
    no_artifact_progress_bar,
    tracking_uri,
)
from omnieval.tracking.judgment_traces import VerdictTraces, log_judgment_traces

__all__ = [
    "CREDENTIALS_ENV",
    "DEFAULT_HEADLINE_PATTERNS",
    "DEFAULT_STORE",
    "EXPERIMENT_KIND",
    "EXPERIMENT_KIND_TAG",
    "METRIC_NOTE_TAG",
    "CandidateTable",
    "SuiteRunIds",
    "VerdictTraces",
    "apply_credentials",
    "candidate_table",
    "check_private",
    "configure_mlflow",
    "credentials_text",
    "headline_component_patterns",
    "headline_metrics",
    "log_failed_run",
    "log_judgment_traces",
    "log_suite_run",
    "no_artifact_progress_bar",
    "read_credentials",
    "short_sha",
    "suite_run_name",
    "system_run_name",
    "tracking_uri",
    "usage_metrics",
    "without_password",
    "write_private",
]
