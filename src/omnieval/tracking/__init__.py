"""Experiment tracking: the only place that imports mlflow (and wandb).

Naming follows FORMATS.md section 5: an experiment per suite, a parent run per suite execution, a
child run per system, analyses as child runs tagged ``omnieval.kind=analysis``.
"""

from omnieval.tracking._mlflow import (
    SuiteRunIds,
    configure_mlflow,
    log_failed_run,
    log_suite_run,
    tracking_uri,
)

__all__ = ["SuiteRunIds", "configure_mlflow", "log_failed_run", "log_suite_run", "tracking_uri"]
