"""The OmniACBench ``leaderboard.json`` document (FORMATS.md section 7) as pydantic models.

:func:`~omnieval.benchmarks.acbench._aggregate.aggregate_acbench` builds the dict;
:class:`AcbenchLeaderboard` is its shape, validated before the report stage writes it. Field order
follows the order the aggregate builds the keys in, so validating and dumping changes no byte.
"""

from __future__ import annotations

from typing import Literal

from omnieval.benchmarks._leaderboard import (
    DocumentModel,
    GenerationFacts,
    LeaderboardDocument,
    MlflowMetrics,
    RunUsage,
)


class ConditionMetrics(DocumentModel):
    """The paper's Table 2 metrics of one system under one condition (valid rows only).

    A metric with no valid row is ``null`` and listed in ``not_computed``, never 0.
    """

    wer: float | None
    """Mean per-instance word error rate, percent."""
    delta_wpm: float | None
    """Mean words per minute of ``fast`` minus ``slow`` instances."""
    per: float | None
    """Mean per-instance phone error rate of omnieval's word-level decision on the heteronym, percent
    (the reading the speech is decided to carry, scored against the target reading); not the paper's
    utterance-level POWSM PER (the document's ``metric_notes.per`` says so)."""
    vfr_at_0_3: float | None
    """Percent of ``whisper`` instances with a voiced-frame ratio at most 0.3."""
    emotion_accuracy: float | None
    """Emotion evaluator hits, percent."""
    accent_accuracy: float | None
    """Accent evaluator hits, percent."""
    timbre_accuracy: float | None
    """Timbre evaluator hits, percent."""
    n: int
    """Instances of this system and condition, whatever their status."""
    not_computed: list[str]
    """Metric keys left ``null`` (no valid row)."""


class AcbenchSystem(DocumentModel):
    """One system's entry: its metrics per condition, in decomposition order."""

    conditions: dict[str, ConditionMetrics]
    """Condition (original, s_to_t, i_to_t, all_to_t, oracle) -> metrics; absent when not run."""
    generation: GenerationFacts | None = None
    """Generation facts of a generating system (added by the report stage)."""


class AcbenchLeaderboard(LeaderboardDocument):
    """The acbench leaderboard document; systems sorted by name."""

    benchmark: Literal["acbench"]
    systems: dict[str, AcbenchSystem]
    """System id -> entry."""
    metric_notes: dict[str, str] | None = None
    """Metric key -> how it departs from the paper's column of that name (``per``: omnieval's
    word-level decision, not the paper's utterance-level PER); absent in documents written before
    the note existed."""
    mlflow_metrics: MlflowMetrics | None = None
    """System -> MLflow metrics (set by the report stage in ``leaderboard.json``)."""
    usage: RunUsage | None = None
    """Tokens, seconds and cost per judge and generating system (set by the track stage)."""


__all__ = ["AcbenchLeaderboard", "AcbenchSystem", "ConditionMetrics"]
