"""What every storybench analysis receives: the dense table, its aggregate and the config."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from omnieval.analysis import (
    AnalysisConfig,
    AnalysisContext,
    AnalysisResult,
    AnalysisSpec,
    Headline,
    Skip,
    analysis,
    register_context,
)
from omnieval.benchmarks.storybench._aggregate import Aggregate, PolicyScores, aggregate_table
from omnieval.benchmarks.storybench._names import MODALITIES, TRACKS, Policy
from omnieval.benchmarks.storybench._table import FloatArray, StoryTable, build_table
from omnieval.errors import ConfigError

BENCHMARK = "storybench"


def _partial_correlations_headline(doc: Any) -> dict[str, float]:
    # One figure per (x, y | controls) over all systems, valid-only.
    out: dict[str, float] = {}
    for e in doc if isinstance(doc, list) else ():
        if isinstance(e, dict) and e.get("policy") == "valid_only" and e.get("subset") == "all":
            r = e.get("r")
            if isinstance(r, int | float) and math.isfinite(r):
                out[f"{e['x']}.{e['y']}.r"] = float(r)
    return out


HEADLINES: dict[str, Headline] = {
    "bootstrap": (
        "leader.difference",
        "leader.share_leader_beats_runner_up",
        "leader.share_leader_ranks_first",
        "n_significant_holm",
    ),
    "zero_filled_sensitivity": (
        "mean_valid_only",
        "mean_zero_filled",
        "agreement.spearman",
        "agreement.kendall_tau_b",
        "agreement.n_moved",
    ),
    "aggregation_sensitivity": ("judge_share", "spearman_range.0", "spearman_range.1"),
    "weight_sweeps": (
        "dirichlet.original_winner_share",
        "dirichlet.spearman_median",
        "uniform.original_winner_share",
        "uniform.spearman_median",
    ),
    "bertscore_text_judge": ("valid_only.pearson.r", "valid_only.spearman.rho"),
    "narration_length": ("variants.m1.spearman", "variants.m1_clipped.spearman", "variants.m2.spearman"),
    "duplicate_sensitivity": ("modes.drop_all.valid_only.spearman", "modes.keep_one.valid_only.spearman"),
    "human_agreement": tuple(
        f"agreement.{t}.spearman" for t in ("text", "image", "speech", "integrated", "composite")
    ),
    "partial_correlations": _partial_correlations_headline,
}
"""Scalar headline figures of each analysis (dotted paths into its JSON), logged as MLflow metrics."""


def _no_params(_config: AnalysisConfig) -> dict[str, Any]:
    return {}


def story_analysis(
    name: str,
    *,
    summary: str,
    params: Callable[[AnalysisConfig], dict[str, Any]] = _no_params,
    inputs: Collection[str] = (),
) -> Callable[[Callable[[StoryContext], AnalysisResult]], Callable[[StoryContext], AnalysisResult]]:
    """Register a storybench analysis with its :data:`HEADLINES` (see :func:`omnieval.analysis.analysis`)."""
    headline = HEADLINES.get(name, ())
    return analysis(
        name, summary=summary, benchmarks=(BENCHMARK,), params=params, headline=headline, inputs=inputs
    )


@register_context(BENCHMARK)
@dataclass
class StoryContext(AnalysisContext):
    """Storybench's analysis context: ``table`` (the dense form) is built on first use."""

    @cached_property
    def table(self) -> StoryTable:
        if isinstance(self.source, StoryTable):
            return self.source
        return build_table(self.source, n_instances=self.config.n_instances)

    def prepare(self, selected: Sequence[AnalysisSpec]) -> None:
        for panel, tracks in self.config.panels.items():
            unknown = sorted(set(tracks) - set(TRACKS))
            if unknown:
                raise ConfigError(f"analyses.panels.{panel}: unknown tracks {unknown}; known: {list(TRACKS)}")
        if selected:
            _ = self.table

    @cached_property
    def aggregate(self) -> Aggregate:
        return aggregate_table(self.table)

    def policy(self, policy: Policy) -> PolicyScores:
        return self.aggregate.policies[policy]

    def modalities(self, policy: Policy) -> dict[str, FloatArray]:
        """Modality scores ``(S,)`` of the modalities with at least one computed component."""
        ps = self.policy(policy)
        return {m: v for m in MODALITIES if (v := ps.modality(m)) is not None}

    def need_systems(self, k: int) -> None:
        if self.table.n_systems < k:
            raise Skip(f"needs at least {k} systems; the table has {self.table.n_systems}")
