"""Aggregation and every statistic of Omni-StoryBench's appendices, reading only the scores table.

``aggregate`` gives both policies (valid-only and zero-filled) per component and the Total Average;
``run_analyses`` writes one JSON (and a plot where one helps) per analysis. Each analysis is a pure
function over the table; none loads a model.
"""

from omnieval.analysis._aggregate import Aggregate, PolicyScores, aggregate, aggregate_table, policy_scores
from omnieval.analysis._table import StoryTable, build_table

__all__ = [
    "Aggregate",
    "PolicyScores",
    "StoryTable",
    "aggregate",
    "aggregate_table",
    "build_table",
    "policy_scores",
]
