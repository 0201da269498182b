"""The Omni-StoryBench ``leaderboard.json`` document (FORMATS.md section 7) as pydantic models.

``Aggregate.to_dict`` (``benchmarks/storybench/_aggregate.py``) builds the dict;
:class:`StorybenchLeaderboard` is its shape, validated before the report stage writes it. Field
order follows the order the aggregate builds the keys in, so validating and dumping changes no byte.
The four judge components keep their dotted keys (``judge.text``) through aliases; their Python
names use an underscore.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from omnieval.benchmarks._leaderboard import (
    DocumentModel,
    GenerationFacts,
    LeaderboardDocument,
    MlflowMetrics,
    RunUsage,
)

PerJudge = dict[str, dict[str, float | None]]
"""Track -> judge key (or rubric criterion) -> mean on the judges' 1-10 scale."""


class PolicyScores(DocumentModel):
    """One system's aggregate under one policy (valid-only or zero-filled).

    The seven components are on their native scale (automatic 0-1, judges 1-10) and ``null`` when
    not computed (or, valid-only, when the system has no valid example of them).
    """

    bertscore_f1: float | None
    image_similarity: float | None
    speech_meta_accuracy: float | None
    judge_text: float | None = Field(alias="judge.text")
    judge_image: float | None = Field(alias="judge.image")
    judge_speech: float | None = Field(alias="judge.speech")
    judge_integrated: float | None = Field(alias="judge.integrated")
    total_average: float | None
    """Mean of the finite components on the 0-10 scale; ``null`` when none is."""
    total_average_components: list[str]
    """Components that entered ``total_average``."""
    not_computed: list[str]
    """What this entry lacks, each as ``<component>: <why>``."""
    judge_by_judge: PerJudge
    """Track -> judge key -> that judge's mean."""
    criteria: PerJudge
    """Track -> rubric criterion -> mean over the track's judges."""
    speech_meta_fields: list[str]
    """Speech metadata fields scored; empty when speech metadata was not computed."""
    speech_meta_per_field: dict[str, float | None] | None = None
    """Field -> accuracy (0-1); present only when speech metadata was computed."""
    speech_meta_exact_match: float | None = None
    """Share of instances with every field right; present only when speech metadata was computed."""


class OutputCount(DocumentModel):
    """Missing outputs of one modality."""

    n_instances: int
    missing: int


class RecordCounts(DocumentModel):
    """Record outcomes of one component (or one judge of a judge component)."""

    valid: int
    missing_output: int
    invalid: int
    absent: int


class Completeness(DocumentModel):
    """Output availability per modality and record outcomes per component."""

    outputs: dict[str, OutputCount]
    """Modality (text, image, speech) -> missing outputs."""
    records: dict[str, RecordCounts | dict[str, RecordCounts]]
    """Automatic component -> counts; ``judge.<track>`` -> judge key -> counts."""


class StorybenchSystem(DocumentModel):
    """One system's entry: both policies, missing judges and completeness."""

    valid_only: PolicyScores
    zero_filled: PolicyScores
    missing_judges: dict[str, dict[str, str]]
    """Track -> judge key -> why it has no valid record for this system."""
    completeness: Completeness
    generation: GenerationFacts | None = None
    """Generation facts of a generating system (added by the report stage)."""


class StorybenchLeaderboard(LeaderboardDocument):
    """The storybench leaderboard document (``omnieval aggregate --json`` plus run facts)."""

    benchmark: Literal["storybench"]
    n_instances: int
    """The zero-filled denominator."""
    n_instances_scored: int
    """Instances present in the scores table."""
    components: list[str]
    """Components some system has, in the paper's order."""
    not_computed: list[str]
    """``<component>: <why>`` for components no system has, and judges that produced nothing."""
    judges: dict[str, list[str]]
    """Track -> judges with at least one valid record."""
    judges_configured: dict[str, list[str]]
    """Track -> every configured judge."""
    missing_judges: dict[str, dict[str, str]]
    """Track -> configured judge without any valid record -> why."""
    speech_meta_fields: list[str]
    systems: dict[str, StorybenchSystem]
    """System id -> entry."""
    notes: list[str]
    mlflow_metrics: MlflowMetrics | None = None
    """System -> MLflow metrics (set by the report stage in ``leaderboard.json``)."""
    usage: RunUsage | None = None
    """Tokens, seconds and cost per judge and generating system (set by the track stage)."""


__all__ = [
    "Completeness",
    "OutputCount",
    "PolicyScores",
    "RecordCounts",
    "StorybenchLeaderboard",
    "StorybenchSystem",
]
