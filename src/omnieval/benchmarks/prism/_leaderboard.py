"""The PRISM-Bench ``leaderboard.json`` document (FORMATS.md section 7) as pydantic models.

:func:`~omnieval.benchmarks.prism._aggregate.aggregate_prism` builds the dict (the benchmark adds
``swap_check``); :class:`PrismLeaderboard` is its shape, validated before the report stage writes
it. Field order follows the order the aggregate builds the keys in, so validating and dumping
changes no byte. Subsets, dimensions and audio types are map keys, not fields: a dimension without
an active cell in a subset (AV coherence off screen) is absent, as the paper prints "/".
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

CellValues = dict[str, dict[str, float | None]]
"""Dimension -> audio type -> value on the judges' 0-10 scale; ``null`` when not computable."""


class SubsetScores(DocumentModel):
    """One subset of a system (or of the ground-truth reference): cells, dimension totals, final."""

    cells: CellValues
    """Calibrated cells (for the ground truth: the global ground-truth mean per cell)."""
    dimensions: dict[str, float | None]
    """Dimension -> sum of its active cells; ``null`` when any of them is."""
    final: float | None
    """Sum of the dimension totals; ``null`` when any of them is."""


class PrismSystem(DocumentModel):
    """One judged system, under test or diagnostic (never the ground-truth pseudo-system)."""

    subsets: dict[str, SubsetScores]
    """Subset (on_screen, off_screen, mixed) -> scores, in the paper's order."""
    diagnostic: bool | None = None
    """``true`` for a diagnostic system (a probe such as ``muted``): scored against the global
    ground-truth mean of the systems under test, which leaves its pairings out; absent otherwise."""
    generation: GenerationFacts | None = None
    """Generation facts of a generating system (added by the report stage)."""


class GroundTruthReference(DocumentModel):
    """The paper's "Ground Truth" row: the context-averaged reference per subset."""

    subsets: dict[str, SubsetScores]


class CalibrationPairing(DocumentModel):
    """The ground-truth cells beside one system that entered a subset's global mean."""

    instances: int
    """Instances with at least one valid ground-truth cell beside the system."""
    cells: int
    """Valid ground-truth cells beside the system (instance x dimension x audio type)."""


class CalibrationLeftOut(DocumentModel):
    """Pairings of a subset kept out of its global ground-truth mean."""

    diagnostic: list[str]
    """Diagnostic systems (probes) the ground truth was judged beside."""
    reference: list[str]
    """The reference system (the ground truth beside itself), when systems under test exist."""


class CalibrationSource(DocumentModel):
    """Which pairings one subset's global ground-truth mean took (FORMATS.md section 7)."""

    source: Literal["systems_under_test", "reference_beside_itself", "none"]
    """``systems_under_test`` (the rule); ``reference_beside_itself`` when the subset has no system
    under test (the fallback); ``none`` when it has neither (calibrated cells are ``null``)."""
    pairings: dict[str, CalibrationPairing]
    """System -> the ground-truth cells beside it that entered the mean, sorted by system."""
    left_out: CalibrationLeftOut
    note: str
    """The rule in words."""


class Calibration(DocumentModel):
    """Where the calibration's global ground-truth mean came from, per subset."""

    subsets: dict[str, CalibrationSource]


class SubsetCoverage(DocumentModel):
    """How much of one subset a system's judged cells cover."""

    instances: int
    """Instances of the subset with a row for this system."""
    cells: int
    """Judge-averaged cells of this system (instance x dimension x audio type)."""
    valid_cells: int
    """Cells with at least one valid judge score."""


class SwapStage(DocumentModel):
    """The blind-order swap check of one judging stage: how often preference flips with the order."""

    cells: int
    """Cells judged validly in both orders."""
    flips: int
    """Cells whose preferred clip (candidate, reference or tie) changed."""
    flip_rate: float | None
    """``flips / cells``; ``null`` without cells."""
    strict_flips: int
    """Cells whose preference went candidate <-> reference."""
    strict_flip_rate: float | None
    """``strict_flips / cells``; ``null`` without cells."""
    first_slot_wins: float | None
    """Share of comparisons where the clip shown first scored higher; ``null`` without any."""


class PrismLeaderboard(LeaderboardDocument):
    """The prism leaderboard document: GT-calibrated cells, dimension totals and final per subset."""

    benchmark: Literal["prism"]
    panel: str | None
    """The one panel aggregated; ``null`` = every (panel, judge) counted alike."""
    judges: list[str]
    """``<panel>/<judge>`` of every judge in the aggregated rows, sorted."""
    systems: dict[str, PrismSystem]
    """System id -> entry, sorted by id."""
    ground_truth: GroundTruthReference
    calibration: Calibration | None = None
    """Which pairings entered each subset's global ground-truth mean."""
    coverage: dict[str, dict[str, SubsetCoverage]]
    """System -> subset -> coverage."""
    not_computed: list[str]
    """Every ``null`` calibrated cell and every judge a panel could not run, with why."""
    swap_check: dict[str, dict[str, SwapStage]] | None = None
    """Panel -> ``stage_<n>`` -> swap statistics; present only when a panel ran the check."""
    mlflow_metrics: MlflowMetrics | None = None
    """System -> MLflow metrics (set by the report stage in ``leaderboard.json``)."""
    usage: RunUsage | None = None
    """Tokens, seconds and cost per judge and generating system (set by the track stage)."""


__all__ = [
    "Calibration",
    "CalibrationLeftOut",
    "CalibrationPairing",
    "CalibrationSource",
    "CellValues",
    "GroundTruthReference",
    "PrismLeaderboard",
    "PrismSystem",
    "SubsetCoverage",
    "SubsetScores",
    "SwapStage",
]
