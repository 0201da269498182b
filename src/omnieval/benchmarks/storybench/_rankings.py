"""Rankings: comparing two leaderboards of the same systems, and ranking totals of unequal coverage.

:func:`compare_rankings` is used by every sensitivity analysis; :func:`rank_by_coverage` is the rule
every printed leaderboard follows when some systems' totals cover fewer components than others'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from omnieval.analysis import FloatArray, kendall_tau_b, rank_desc, spearman
from omnieval.benchmarks.storybench._names import COMPONENTS


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


@dataclass(frozen=True)
class CoverageRank:
    """One system's place on a leaderboard whose totals may cover different components.

    Attributes:
        system: system id.
        total: its Total Average (None when it has none).
        components: the components its total covers, in the order given.
        group: index into :attr:`CoverageRanking.groups` (None without a total).
        rank: rank within its group, 1 = best, ties share the best rank (None without a total).
        label: the rank as printed: ``"3"`` when all totals are comparable, ``"B1"`` (group letter,
            then rank) when they are not, ``"-"`` without a total.
    """

    system: str
    total: float | None
    components: tuple[str, ...]
    group: int | None
    rank: int | None
    label: str


@dataclass(frozen=True)
class CoverageRanking:
    """Systems ranked only against systems whose totals cover the same components.

    Attributes:
        rows: every system in display order: group by group, best first within a group, systems
            without a total last.
        groups: the covered component sets, largest first; group ``k`` is lettered ``"ABC..."[k]``.
        n_components: how many components a complete total covers (for "5 of 7").
    """

    rows: tuple[CoverageRank, ...]
    groups: tuple[tuple[str, ...], ...]
    n_components: int

    @property
    def comparable(self) -> bool:
        """Whether every total covers the same components (one ranking for all)."""
        return len(self.groups) <= 1

    def note(self) -> str | None:
        """The footnote a leaderboard prints when totals are not comparable (None when they are)."""
        if self.comparable:
            return None
        sets = "; ".join(
            f"{_letter(k)} = {', '.join(g) or 'nothing'} ({len(g)} of {self.n_components})"
            for k, g in enumerate(self.groups)
        )
        return (
            "Totals cover different components, so they are not comparable across groups: systems are "
            f"ranked only within their coverage group ({sets})."
        )


def _letter(k: int) -> str:
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[k] if k < 26 else f"G{k + 1}"


def rank_by_coverage(
    totals: Mapping[str, float | None],
    components: Mapping[str, Sequence[str]],
    *,
    n_components: int,
) -> CoverageRanking:
    """Rank systems by total, but only against systems whose totals cover the same components.

    A total averages the components a system has; two totals over different component sets are on
    different footings (one may lack the hardest component), so ranking them against each other
    would be silent and misleading. Systems are grouped by covered set, groups ordered by how many
    components they cover (then by first appearance), and ranked within the group.

    Args:
        totals: system -> Total Average (None or NaN when it has none).
        components: system -> the components its total covers.
        n_components: how many components a complete total covers.

    Returns:
        The ranking; its ``note()`` is the footnote to print when totals are not comparable.

    Example:
        >>> r = rank_by_coverage({"a": 7.0, "b": 8.0, "c": 6.0},
        ...                      {"a": ["x", "y"], "b": ["x"], "c": ["x", "y"]}, n_components=2)
        >>> [(row.system, row.label) for row in r.rows]
        [('a', 'A1'), ('c', 'A2'), ('b', 'B1')]
        >>> rank_by_coverage({"a": 7.0, "b": 8.0}, {"a": ["x"], "b": ["x"]}, n_components=2).rows[0].label
        '1'
    """
    groups: list[tuple[str, ...]] = []
    members: dict[tuple[str, ...], list[tuple[str, float]]] = {}
    no_total: list[str] = []
    for system, total in totals.items():
        if total is None or not math.isfinite(total):
            no_total.append(system)
            continue
        cover = tuple(components.get(system, ()))
        if cover not in members:
            groups.append(cover)
            members[cover] = []
        members[cover].append((system, float(total)))
    # Stable sort: equal-sized groups keep their first-appearance order.
    groups.sort(key=len, reverse=True)
    single = len(groups) <= 1
    rows: list[CoverageRank] = []
    for k, cover in enumerate(groups):
        entries = sorted(members[cover], key=lambda st: (-st[1], st[0]))
        for system, total in entries:
            rank = 1 + sum(1 for _, other in entries if other > total)
            label = str(rank) if single else f"{_letter(k)}{rank}"
            rows.append(CoverageRank(system, total, cover, k, rank, label))
    for system in sorted(no_total):
        rows.append(CoverageRank(system, None, tuple(components.get(system, ())), None, None, "-"))
    return CoverageRanking(tuple(rows), tuple(groups), n_components)


def leaderboard_ranking(document: Mapping[str, Any], policy: str = "valid_only") -> CoverageRanking:
    """:func:`rank_by_coverage` over an aggregate document (``Aggregate.to_dict()``) by one policy.

    A complete total covers the seven Total Average components.
    """
    systems: Mapping[str, Any] = document.get("systems", {})
    entries = {name: entry.get(policy, {}) for name, entry in systems.items()}
    return rank_by_coverage(
        {name: e.get("total_average") for name, e in entries.items()},
        {name: list(e.get("total_average_components", ())) for name, e in entries.items()},
        n_components=len(COMPONENTS),
    )
