"""A few scalar headline figures per analysis JSON, for MLflow metrics and quick comparisons."""

from __future__ import annotations

import math
from typing import Any

_PATHS: dict[str, tuple[str, ...]] = {
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
}


def _get(doc: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(doc, dict):
            doc = doc.get(part)
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            return None
    return doc


def headline_metrics(name: str, doc: Any) -> dict[str, float]:
    """Finite scalar figures of one analysis document, keyed by their dotted path."""
    out: dict[str, float] = {}
    if isinstance(doc, list):
        # partial_correlations: one figure per (x, y | controls) over all systems, valid-only.
        for e in doc:
            if isinstance(e, dict) and e.get("policy") == "valid_only" and e.get("subset") == "all":
                r = e.get("r")
                if isinstance(r, int | float) and math.isfinite(r):
                    out[f"{e['x']}.{e['y']}.r"] = float(r)
        return out
    for path in _PATHS.get(name, ()):
        v = _get(doc, path)
        if isinstance(v, bool):
            v = float(v)
        if isinstance(v, int | float) and math.isfinite(v):
            out[path] = float(v)
    return out
