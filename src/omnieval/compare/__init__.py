"""Compare two runs and say whether the new one regressed (``omnieval compare``, nightly verdict).

- :func:`compare_runs`: paired bootstrap deltas per (system, headline component) over the shared
  instances, Holm-corrected p-values, a GO / NO-GO / INCONCLUSIVE verdict with reasons, what changed
  in lineage and the instances that moved most.
- :func:`resolve_run` / :func:`read_run`: a RUN argument (folder, run id or a unique start of one,
  ``latest``, ``previous``) to a run folder and its contents; :func:`find_run_by_id` is the run-id
  (prefix) resolver every command naming a run shares; :func:`order_runs` makes the older of two
  runs the baseline.
- :func:`nightly_regression` / :func:`notify_regression`: the track stage's self-comparison with the
  previous run (``regression.json``, the MLflow tag ``omnieval.regression``) and its notifications.

The procedure, the verdict's rules and the exit codes are described in ``docs/nightly.md``.
"""

from omnieval.compare._changes import lineage_changes, tree_digest
from omnieval.compare._load import (
    BASELINE_RULES,
    RunFolder,
    find_run_by_id,
    is_successful,
    latest_run,
    order_runs,
    read_run,
    resolve_run,
    run_age,
    suite_runs,
)
from omnieval.compare._mlflow import log_regression_metrics, regression_metrics, tracking_server
from omnieval.compare._nightly import (
    find_baseline,
    nightly_regression,
    notify_regression,
    record_verdict,
    regression_verdict,
)
from omnieval.compare._notify import SendOutcome, build_block, send_notifications, verdict_message
from omnieval.compare._paired import (
    PairedResult,
    bootstrap_indices,
    holm,
    minimum_detectable_effect,
    normal_p_value,
    paired_bootstrap,
)
from omnieval.compare._rejudge import (
    RejudgeCost,
    rejudge_comparison,
    rejudge_lines,
    split_effects,
    suite_of_run,
)
from omnieval.compare._trend import (
    DEFAULT_NIGHTS,
    ComponentTrend,
    CusumParams,
    CusumResult,
    Night,
    TrendReport,
    component_direction,
    cusum,
    detect_trends,
    nightly_trend,
    read_history,
    trend_document,
    trend_lines,
    write_trend,
)
from omnieval.compare._verdict import (
    GO,
    INCONCLUSIVE,
    MDE_MIN_PAIRED,
    NO_GO,
    VERDICTS,
    compare_runs,
    mde_note,
    same_run,
    verdict_lines,
)

__all__ = [
    "BASELINE_RULES",
    "DEFAULT_NIGHTS",
    "GO",
    "INCONCLUSIVE",
    "MDE_MIN_PAIRED",
    "NO_GO",
    "VERDICTS",
    "ComponentTrend",
    "CusumParams",
    "CusumResult",
    "FileNotification",
    "Night",
    "PairedResult",
    "RejudgeCost",
    "RunFolder",
    "SendOutcome",
    "TrendReport",
    "WebhookNotification",
    "bootstrap_indices",
    "build_block",
    "compare_runs",
    "component_direction",
    "cusum",
    "detect_trends",
    "find_baseline",
    "find_run_by_id",
    "holm",
    "is_successful",
    "latest_run",
    "lineage_changes",
    "log_regression_metrics",
    "mde_note",
    "minimum_detectable_effect",
    "nightly_regression",
    "nightly_trend",
    "normal_p_value",
    "notify_regression",
    "order_runs",
    "paired_bootstrap",
    "read_history",
    "read_run",
    "record_verdict",
    "regression_metrics",
    "regression_verdict",
    "rejudge_comparison",
    "rejudge_lines",
    "resolve_run",
    "run_age",
    "same_run",
    "send_notifications",
    "split_effects",
    "suite_of_run",
    "suite_runs",
    "tracking_server",
    "tree_digest",
    "trend_document",
    "trend_lines",
    "verdict_lines",
    "verdict_message",
    "write_trend",
]


def __getattr__(name: str) -> object:
    # The notification blocks import Prefect; load them only when asked for.
    if name in ("FileNotification", "WebhookNotification"):
        from omnieval.compare import _blocks

        return getattr(_blocks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
