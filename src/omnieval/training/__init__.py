"""Training speech-attribute evaluators (OmniACBench appendix C) and linear probing (appendix D).

``omnieval train pipelines/train_evaluators.yaml`` runs the Prefect flow in
``flows/train_evaluators.py``; the stage functions here are what it calls. See ``docs/training.md``.
"""

from omnieval.training._config import (
    FeatureConfig,
    GridConfig,
    OptimConfig,
    TrainEvaluatorsConfig,
    load_training_config,
)
from omnieval.training._metrics import (
    HeldOutReport,
    accuracy,
    balanced_accuracy,
    confusion_matrix,
    held_out_report,
)
from omnieval.training._pipeline import (
    FeatureResult,
    GridPointResult,
    SplitData,
    Steps,
    run_feature,
    run_training,
    select_best,
    stage_check,
    stage_extract,
    stage_finalize,
    stage_gate,
    stage_grid_point,
    stage_prepare,
)
from omnieval.training._probe import (
    ProbeSettings,
    read_hidden_states,
    read_label_table,
    run_probes,
    write_probe_report,
)
from omnieval.training._schedule import warmup_cosine_factor
from omnieval.training._train import ClipData, EpochLog, PointOutcome, predict_proba, train_point

__all__ = [
    "ClipData",
    "EpochLog",
    "FeatureConfig",
    "FeatureResult",
    "GridConfig",
    "GridPointResult",
    "HeldOutReport",
    "OptimConfig",
    "PointOutcome",
    "ProbeSettings",
    "SplitData",
    "Steps",
    "TrainEvaluatorsConfig",
    "accuracy",
    "balanced_accuracy",
    "confusion_matrix",
    "held_out_report",
    "load_training_config",
    "predict_proba",
    "read_hidden_states",
    "read_label_table",
    "run_feature",
    "run_probes",
    "run_training",
    "select_best",
    "stage_check",
    "stage_extract",
    "stage_finalize",
    "stage_gate",
    "stage_grid_point",
    "stage_prepare",
    "train_point",
    "warmup_cosine_factor",
    "write_probe_report",
]
