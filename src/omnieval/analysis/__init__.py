"""Aggregation and every statistic of Omni-StoryBench's appendices, reading only the scores table.

``aggregate`` gives both policies (valid-only and zero-filled) per component and the Total Average;
``run_analyses`` writes one JSON (and a plot where one helps) per analysis. Each analysis is a pure
function over the table; none loads a model. ``omnieval.analysis.synthetic.make_scores`` builds
seeded synthetic tables of any size for tests and benchmarks.
"""

from omnieval.analysis._aggregate import Aggregate, PolicyScores, aggregate, aggregate_table, policy_scores
from omnieval.analysis._config import AnalysisConfig
from omnieval.analysis._runner import (
    ANALYSES,
    AnalysisContext,
    AnalysisOutput,
    AnalysisResult,
    Skip,
    analysis,
    analysis_names,
    run_analyses,
)
from omnieval.analysis._table import StoryTable, build_table

__all__ = [
    "ANALYSES",
    "Aggregate",
    "AnalysisConfig",
    "AnalysisContext",
    "AnalysisOutput",
    "AnalysisResult",
    "PolicyScores",
    "Skip",
    "StoryTable",
    "aggregate",
    "aggregate_table",
    "analysis",
    "analysis_names",
    "build_table",
    "policy_scores",
    "run_analyses",
]
