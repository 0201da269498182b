"""PRISM-Bench judge stability (paper appendix A-B; FORMATS.md section 8 ``stability.json``).

The same ground-truth clip is judged once beside every system, so its score depends a little on the
pairing context. These statistics compare that context drift with the real differences between
systems, per subset, per dimension and (extra) per (dimension, audio type) cell:

- only **systems under test** take part: diagnostic probes and the reference system (the ground
  truth beside itself) are left out, exactly as the calibration's global mean leaves them out
  (:func:`~omnieval.benchmarks.prism._aggregate.under_test`), so adding a probe to a suite moves no
  figure. With fewer than two systems under test there is no pair: nothing is computed and the
  document's top-level ``not_computed`` says why (never a figure over probes instead);
- per item, a candidate's **total** is the sum of its judge-averaged cells (uncalibrated, 0-10 per
  cell); the ground truth has one total per pairing. A total whose cells are not all judged validly
  is undefined (the item drops out for that candidate);
- a system **was judged on** an item when its own total and the total of the ground truth paired
  with it are both defined;
- for each pair of systems (a, b), over the items both were judged on (n >= 2):
  ``d_bias = (mean GT total beside a - mean GT total beside b) / pooled SD`` of those two GT total
  lists, ``d_signal = (mean total of a - mean total of b) / pooled SD`` of those two total lists,
  with ``pooled SD = sqrt(((n1-1) s1^2 + (n2-1) s2^2) / (n1 + n2 - 2))`` and sample SDs (n - 1);
  the pair's ``snr = |d_signal| / |d_bias|``. Pair values keep their sign (a minus b, with a < b by
  name);
- subset (or dimension) figures: ``d_bias``, ``d_signal`` = unweighted means over the pairs of
  ``|d_bias|``, ``|d_signal|``; ``snr`` = the unweighted mean of the pairs' ``snr``; ``std`` = the
  mean over pairing contexts (one per system) of the sample SD of every defined GT total in that
  context.

Edge cases (all JSON-safe, never NaN or infinity): a pooled SD of 0 (both lists constant) or fewer
than 2 shared items leaves that pair's d undefined (``null``); ``d_bias`` = 0 leaves that pair's
``snr`` ``null`` (the ratio is infinite); undefined pair values are left out of the subset means,
and a mean over no pair is ``null``; a context with fewer than 2 GT totals has no SD and is left out
of ``std``.

Note: the paper's printed Eval SNR rows equal the ratio of the averaged ``d_signal`` to the averaged
``d_bias`` (e.g. on-screen 0.521 / 0.281 = 1.85), while FORMATS.md section 8 asks for the mean of
the per-pair ratios; ``snr`` follows the contract and the extra top-level ``ratio_of_means`` gives
the paper's reading.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any

from omnieval.benchmarks.prism._aggregate import (
    item_totals,
    judge_cells,
    prism_scores,
    system_roles,
    under_test,
)
from omnieval.benchmarks.prism._tags import AUDIO_TYPES, DIMENSIONS, GROUND_TRUTH, SUBSETS

if TYPE_CHECKING:
    import pandas as pd


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def sample_sd(values: Sequence[float]) -> float | None:
    """Sample standard deviation (n - 1); None for fewer than 2 values.

    Example:
        >>> sample_sd([1.0, 2.0, 3.0])
        1.0
    """
    if len(values) < 2:
        return None
    m = _mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (len(values) - 1))


def pooled_sd(a: Sequence[float], b: Sequence[float]) -> float | None:
    """``sqrt(((n1-1) s1^2 + (n2-1) s2^2) / (n1+n2-2))``; None when either list has fewer than 2 values.

    Example:
        >>> round(pooled_sd([1.0, 3.0], [2.0, 2.0, 2.0]), 12)
        0.816496580928
    """
    sa, sb = sample_sd(a), sample_sd(b)
    if sa is None or sb is None:
        return None
    n1, n2 = len(a), len(b)
    return math.sqrt(((n1 - 1) * sa * sa + (n2 - 1) * sb * sb) / (n1 + n2 - 2))


def cohens_d(a: Sequence[float], b: Sequence[float]) -> float | None:
    """``(mean(a) - mean(b)) / pooled_sd(a, b)``; None when the pooled SD is undefined or 0.

    Both lists constant means a pooled SD of exactly 0; that is tested on the values, not on the
    rounded SD, so float noise never turns into a huge effect size.

    Example:
        >>> cohens_d([2.0, 4.0], [1.0, 3.0])
        0.7071067811865475
        >>> cohens_d([5.0, 5.0], [4.0, 4.0]) is None
        True
    """
    pooled = pooled_sd(a, b)
    if pooled is None or (len(set(a)) == 1 and len(set(b)) == 1) or pooled == 0.0:
        return None
    return (_mean(a) - _mean(b)) / pooled


@dataclass(frozen=True)
class PairEffect:
    """Effect sizes of one pair of systems (a < b by name), over the ``n`` items both were judged on."""

    system_a: str
    system_b: str
    n: int
    d_bias: float | None
    d_signal: float | None

    @property
    def snr(self) -> float | None:
        """``|d_signal| / |d_bias|``; None when either is undefined or ``d_bias`` is 0."""
        if self.d_bias is None or self.d_signal is None or self.d_bias == 0.0:
            return None
        return abs(self.d_signal) / abs(self.d_bias)


@dataclass(frozen=True)
class StabilitySummary:
    """One block of ``stability.json`` and the pairs it averages."""

    std: float | None
    d_bias: float | None
    d_signal: float | None
    snr: float | None
    pairs: tuple[PairEffect, ...]

    def as_dict(self) -> dict[str, float | None]:
        return {"std": self.std, "d_bias": self.d_bias, "d_signal": self.d_signal, "snr": self.snr}

    @property
    def ratio_of_means(self) -> float | None:
        """Averaged ``d_signal`` / averaged ``d_bias`` (how the paper's tables read)."""
        if self.d_bias is None or self.d_signal is None or self.d_bias == 0.0:
            return None
        return self.d_signal / self.d_bias


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    defined = [v for v in values if v is not None]
    return _mean(defined) if defined else None


def summarize(
    system_totals: Mapping[str, Mapping[str, float]], gt_totals: Mapping[str, Mapping[str, float]]
) -> StabilitySummary:
    """The statistics of one block from defined totals.

    Args:
        system_totals: system -> instance -> the system's total.
        gt_totals: system -> instance -> total of the ground truth judged beside that system.
    """
    systems = sorted(set(system_totals) | set(gt_totals))
    std = _mean_or_none([sample_sd(list(gt_totals.get(m, {}).values())) for m in systems])
    judged = {m: set(system_totals.get(m, {})) & set(gt_totals.get(m, {})) for m in systems}
    pairs: list[PairEffect] = []
    for a, b in combinations(systems, 2):
        items = sorted(judged[a] & judged[b])
        d_bias = (
            cohens_d([gt_totals[a][i] for i in items], [gt_totals[b][i] for i in items]) if items else None
        )
        d_signal = (
            cohens_d([system_totals[a][i] for i in items], [system_totals[b][i] for i in items])
            if items
            else None
        )
        pairs.append(PairEffect(a, b, len(items), d_bias, d_signal))
    return StabilitySummary(
        std=std,
        d_bias=_mean_or_none([None if p.d_bias is None else abs(p.d_bias) for p in pairs]),
        d_signal=_mean_or_none([None if p.d_signal is None else abs(p.d_signal) for p in pairs]),
        snr=_mean_or_none([p.snr for p in pairs]),
        pairs=tuple(pairs),
    )


def _split(
    totals: pd.DataFrame, subset: str
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """(system totals, GT totals per pairing) of one subset, defined totals only."""
    rows = totals[(totals["subset"] == subset) & totals["total"].notna()]
    sys_t: dict[str, dict[str, float]] = {}
    gt_t: dict[str, dict[str, float]] = {}
    for system, paired, iid, total in zip(
        rows["system"], rows["paired_with"], rows["instance_id"], rows["total"], strict=True
    ):
        if system == GROUND_TRUTH:
            gt_t.setdefault(str(paired), {})[str(iid)] = float(total)
        else:
            sys_t.setdefault(str(system), {})[str(iid)] = float(total)
    return sys_t, gt_t


def _pair_dict(p: PairEffect, *, with_n: bool, **where: str) -> dict[str, Any]:
    extra = {"n": p.n} if with_n else {}
    return {
        **where,
        "system_a": p.system_a,
        "system_b": p.system_b,
        **extra,
        "d_bias": p.d_bias,
        "d_signal": p.d_signal,
        "snr": p.snr,
    }


@dataclass(frozen=True)
class Participants:
    """The systems under test of a table: the ones the statistics are over."""

    under_test: frozenset[str]

    @property
    def not_computed(self) -> str | None:
        """Why no pair statistic exists (fewer than two systems under test), else None."""
        n = len(self.under_test)
        return f"fewer than two systems under test (n = {n})" if n < 2 else None

    def header(self) -> dict[str, Any]:
        """The document's ``systems_under_test`` (and ``not_computed``) entries.

        Probes are not named: the document of a table with a probe is the document without it.
        """
        why = self.not_computed
        return {**({"not_computed": why} if why else {}), "systems_under_test": sorted(self.under_test)}


def participants(cells: pd.DataFrame, facts: Any = None) -> Participants:
    """The systems under test of ``cells`` (:func:`judge_cells`), as the calibration decides them.

    Args:
        cells: Judge-averaged cells.
        facts: Where the diagnostic and reference ids come from (``diagnostic`` / ``reference``
            keys or attributes; a :class:`~omnieval.benchmarks.RunFacts`, an analysis config);
            None = the benchmark's default ids.
    """
    is_gt = cells["system"] == GROUND_TRUTH
    systems = {str(s) for s in cells.loc[~is_gt, "system"]} | {
        str(s) for s in cells.loc[is_gt, "paired_with"]
    }
    return Participants(under_test(systems, *system_roles(facts)))


def _only(cells: pd.DataFrame, systems: frozenset[str]) -> pd.DataFrame:
    """The cells of ``systems`` and of the ground truth judged beside them."""
    is_gt = cells["system"] == GROUND_TRUTH
    keep = (~is_gt & cells["system"].isin(systems)) | (is_gt & cells["paired_with"].isin(systems))
    return cells[keep]


def _empty(header: dict[str, Any]) -> dict[str, Any]:
    return {
        **header,
        "subsets": {},
        "dimensions": {},
        "pairs": [],
        "cells": {},
        "dimension_pairs": [],
        "ratio_of_means": {"subsets": {}, "dimensions": {}},
    }


def stability_from_cells(cells: pd.DataFrame, facts: Any = None) -> dict[str, Any]:
    """:func:`stability` on already computed :func:`judge_cells`."""
    who = participants(cells, facts)
    doc = _empty(who.header())
    if who.not_computed:
        return doc
    cells = _only(cells, who.under_test)
    present = {
        (str(s), str(d), str(t))
        for s, d, t in zip(cells["subset"], cells["dimension"], cells["audio_type"], strict=True)
    }
    subsets = [s for s in SUBSETS if any(p[0] == s for p in present)]
    out_dims, out_cells, ratio = doc["dimensions"], doc["cells"], doc["ratio_of_means"]
    all_totals = item_totals(cells)
    for subset in subsets:
        summary = summarize(*_split(all_totals, subset))
        doc["subsets"][subset] = summary.as_dict()
        ratio["subsets"][subset] = summary.ratio_of_means
        doc["pairs"] += [_pair_dict(p, with_n=False, subset=subset) for p in summary.pairs]
        out_dims[subset], out_cells[subset], ratio["dimensions"][subset] = {}, {}, {}
        for dim in DIMENSIONS:
            types = [t for t in AUDIO_TYPES if (subset, dim, t) in present]
            if not types:
                continue
            dim_summary = summarize(*_split(item_totals(cells, dimension=dim), subset))
            out_dims[subset][dim] = dim_summary.as_dict()
            ratio["dimensions"][subset][dim] = dim_summary.ratio_of_means
            doc["dimension_pairs"] += [
                _pair_dict(p, with_n=True, subset=subset, dimension=dim) for p in dim_summary.pairs
            ]
            out_cells[subset][dim] = {
                t: summarize(*_split(item_totals(cells, dimension=dim, audio_type=t), subset)).as_dict()
                for t in types
            }
    return doc


def stability(scores: pd.DataFrame, panel: str | None = None, facts: Any = None) -> dict[str, Any]:
    """GT stability and bias-signal separation of a prism scores table (see the module docstring).

    Args:
        scores: Scores table holding prism rows.
        panel: Only this panel's judges; default every (panel, judge) of the table, averaged.
        facts: The diagnostic and reference system ids (``diagnostic`` / ``reference`` keys or
            attributes, as :func:`~omnieval.benchmarks.prism._aggregate.aggregate_prism` reads
            them); None = the benchmark's default ids (``muted``, ``swapped-audio``, ``offset``;
            ``ground-truth``).

    Returns:
        ``{"subsets": {SUBSET: {"std", "d_bias", "d_signal", "snr"}}, "dimensions": {SUBSET:
        {DIMENSION: {...}}}, "pairs": [{"subset", "system_a", "system_b", "d_bias", "d_signal",
        "snr"}]}`` (FORMATS.md section 8; ``pairs`` lists the subset-level pairs only) plus extras:
        ``cells`` (the same four figures per subset, dimension and audio type, as the paper's
        Table 3), ``dimension_pairs`` (the pairs behind each dimension figure, with ``dimension``
        and ``n`` = items both systems were judged on) and ``ratio_of_means`` (averaged d_signal / averaged
        d_bias per subset and dimension). Undefined values are None. Always ``systems_under_test``
        (the systems the pairs are drawn from); with fewer than two systems under test also ``not_computed`` (e.g.
        ``"fewer than two systems under test (n = 1)"``) and every block empty.

    Raises:
        DataError: See :func:`~omnieval.benchmarks.prism._aggregate.prism_scores`.
    """
    return stability_from_cells(judge_cells(scores, panel=panel), facts)


def judge_ablation(scores: pd.DataFrame, facts: Any = None) -> dict[str, Any]:
    """The stability figures per judge panel (all its judges averaged) and, for a panel with several
    judges, per single judge: the paper's appendix B table comparing judges.

    Over the systems under test only, as :func:`stability` (``facts`` as there).

    Returns:
        ``{"systems_under_test", "judges": [{"panel", "judge" (None = the panel's judge
        mean), "n_judges", "subsets", "dimensions", "ratio_of_means"}, ...]}`` in panel order, each
        panel's mean row before its judges; an entry whose own rows hold fewer than two systems
        under test carries its ``not_computed``. With fewer than two systems under test in the
        table: the top-level ``not_computed`` and no entry.
    """
    frame = prism_scores(scores)
    who = participants(judge_cells(frame, checked=True), facts)
    if who.not_computed:
        return {**who.header(), "judges": []}
    entries: list[dict[str, Any]] = []
    for panel in sorted(set(frame["panel"])):
        of_panel = frame[frame["panel"] == panel]
        judges = sorted(set(of_panel["judge"]))
        views: list[tuple[str | None, pd.DataFrame]] = [(None, of_panel)]
        if len(judges) > 1:
            views += [(j, of_panel[of_panel["judge"] == j]) for j in judges]
        for judge, rows in views:
            doc = stability_from_cells(judge_cells(rows, checked=True), facts)
            entries.append(
                {
                    "panel": panel,
                    "judge": judge,
                    "n_judges": len(judges) if judge is None else 1,
                    **({"not_computed": doc["not_computed"]} if "not_computed" in doc else {}),
                    "subsets": doc["subsets"],
                    "dimensions": doc["dimensions"],
                    "ratio_of_means": doc["ratio_of_means"],
                }
            )
    return {**who.header(), "judges": entries}
