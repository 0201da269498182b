"""Comparing two leaderboards of the same systems (used by every sensitivity analysis)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from omnieval.analysis._stats import FloatArray, kendall_tau_b, rank_desc, spearman


def ranking(systems: Sequence[str], scores: FloatArray) -> list[dict[str, Any]]:
    """Systems ordered by descending score with their rank (ties share the best rank)."""
    ranks = rank_desc(scores, "min")
    order = np.lexsort((np.array(systems, dtype=object), ranks))
    return [{"system": systems[k], "score": float(scores[k]), "rank": int(ranks[k])} for k in order]


def compare_rankings(
    systems: Sequence[str], base: FloatArray, other: FloatArray, top_k: Sequence[int] = (5, 10)
) -> dict[str, Any]:
    """How ``other`` reorders the systems relative to ``base`` (both ``(S,)``, higher is better).

    Spearman's rho and Kendall's tau-b (over systems finite in both), the winners, shared top-k
    members, the largest rank displacement and how many systems changed rank.
    """
    ok = np.isfinite(base) & np.isfinite(other)
    names = [s for s, keep in zip(systems, ok, strict=True) if keep]
    b, o = base[ok], other[ok]
    if b.size == 0:
        return {"n": 0}
    rb, ro = rank_desc(b, "min"), rank_desc(o, "min")
    sp = spearman(b, o)
    kt = kendall_tau_b(b, o)
    out: dict[str, Any] = {
        "n": int(b.size),
        "spearman": sp.r,
        "spearman_p": sp.p,
        "kendall_tau_b": kt.r,
        "kendall_p": kt.p,
        "winner_base": [names[k] for k in np.flatnonzero(rb == 1)],
        "winner": [names[k] for k in np.flatnonzero(ro == 1)],
        "max_displacement": int(np.abs(rb - ro).max()),
        "n_moved": int((rb != ro).sum()),
    }
    out["same_winner"] = out["winner"] == out["winner_base"]
    out["top_k_overlap"] = {
        str(k): len({names[i] for i in np.flatnonzero(rb <= k)} & {names[i] for i in np.flatnonzero(ro <= k)})
        for k in top_k
        if k <= b.size
    }
    return out
