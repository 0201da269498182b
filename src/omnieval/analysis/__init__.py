"""Analyses as a registry: each a pure function over a benchmark's scores table, one JSON (and plots) each.

Benchmarks register their analyses (``@analysis``) and, where their analyses share a dense view of
the table, a context class (``@register_context``); :func:`run_analyses` writes ``<name>.json`` per
analysis. The statistics they share (correlations, Holm, Krippendorff's alpha, percentile
intervals) live beside the runner; no analysis loads a model.
"""

from omnieval.analysis._config import AnalysisConfig
from omnieval.analysis._headline import headline_metrics
from omnieval.analysis._plots import figure
from omnieval.analysis._runner import (
    ANALYSES,
    CONTEXTS,
    AnalysisContext,
    AnalysisOutput,
    AnalysisResult,
    AnalysisSpec,
    Headline,
    Skip,
    analysis,
    analysis_names,
    register_context,
    run_analyses,
    select_benchmark,
    to_jsonable,
)
from omnieval.analysis._stats import (
    FloatArray,
    holm,
    kendall_tau_b,
    krippendorff_alpha_ordinal,
    normal_two_sided,
    partial_correlation,
    partial_rows,
    pearson,
    pearson_rows,
    percentile_interval,
    rank_desc,
    rankdata,
    spearman,
)

__all__ = [
    "ANALYSES",
    "CONTEXTS",
    "AnalysisConfig",
    "AnalysisContext",
    "AnalysisOutput",
    "AnalysisResult",
    "AnalysisSpec",
    "FloatArray",
    "Headline",
    "Skip",
    "analysis",
    "analysis_names",
    "figure",
    "headline_metrics",
    "holm",
    "kendall_tau_b",
    "krippendorff_alpha_ordinal",
    "normal_two_sided",
    "partial_correlation",
    "partial_rows",
    "pearson",
    "pearson_rows",
    "percentile_interval",
    "rank_desc",
    "rankdata",
    "register_context",
    "run_analyses",
    "select_benchmark",
    "spearman",
    "to_jsonable",
]
