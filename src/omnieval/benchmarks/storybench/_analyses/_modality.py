"""Modality analyses (appendix E.6, F.1, F.3, F.4): bottleneck diagnostics and correlations.

A modality score is the mean of the modality's scaled automatic metric and its three-judge mean
(when only one of the two is computed, that one). The unit of analysis is a system.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from omnieval.analysis import (
    AnalysisResult,
    FloatArray,
    Skip,
    figure,
    partial_correlation,
    pearson,
    rankdata,
    spearman,
)
from omnieval.benchmarks.storybench._analyses._context import StoryContext, story_analysis
from omnieval.benchmarks.storybench._names import MODALITIES, POLICIES, Policy
from omnieval.benchmarks.storybench._table import _nanmean

_EPS = 1e-9


def _best(values: Mapping[str, float], *, lowest: bool = False) -> list[str]:
    finite = {k: v for k, v in values.items() if math.isfinite(v)}
    if not finite:
        return []
    target = min(finite.values()) if lowest else max(finite.values())
    return [k for k, v in finite.items() if abs(v - target) <= _EPS]


def bottleneck_diagnostics(
    systems: Sequence[str],
    scores: Mapping[str, FloatArray],
    total: FloatArray,
    alphas: Sequence[float] = (1 / 3, 0.20, 0.25, 0.40, 0.50),
) -> dict[str, Any]:
    """The four modality-bottleneck diagnostics of appendix E.6 (pure function).

    Args:
        systems: system names, ``S`` of them.
        scores: modality -> ``(S,)`` modality scores (at least two modalities); systems with a
            non-finite score in any modality are left out.
        total: ``(S,)`` Total Average.
        alphas: bottom-fraction cutoffs for Max Total; the first is the headline (the tercile).

    Definitions (our reading of E.6, stated so results can be checked):
        * Within-modality percentile rank ``u = 100 (r - 1) / (N - 1)`` from ascending average ranks
          ``r`` (0 = lowest score in that modality, 100 = highest).
        * Weakest modality of a system: the one with the lowest ``u``; a tie between k modalities
          gives each ``1/k`` of that system's count.
        * Rank gap of a system's weakest modality: mean ``u`` of its other modalities minus ``u`` of
          the weakest, in percentage points; averaged over the systems weakest in that modality
          (weighted by their share).
        * IQR: 75th minus 25th percentile (linear interpolation) of the modality scores; the central
          80/60/40 % spreads use the 10/90, 20/80 and 30/70 percentiles.
        * Max Total at cutoff alpha: the largest Total Average among systems whose ascending
          min-rank in the modality is at most ``ceil(alpha N)``; ties at the cutoff all enter, so a
          subset can exceed ``ceil(alpha N)`` systems.
    """
    mods = list(scores)
    if len(mods) < 2:
        raise ValueError("bottleneck diagnostics need at least two modalities")
    x = np.stack([np.asarray(scores[m], dtype=np.float64) for m in mods], axis=1)
    keep = np.asarray(np.isfinite(x).all(axis=1))
    names = [s for s, k in zip(systems, keep, strict=True) if k]
    x, tot = x[keep], np.asarray(total, dtype=np.float64)[keep]
    n, m = x.shape
    if n < 3:
        raise ValueError("bottleneck diagnostics need at least three systems with all modality scores")
    ranks = rankdata(x.T, "average").T
    pct = 100.0 * (ranks - 1.0) / (n - 1.0)
    weakest = pct <= pct.min(axis=1, keepdims=True) + _EPS
    share = weakest / weakest.sum(axis=1, keepdims=True)
    gap = (pct.sum(axis=1, keepdims=True) - pct) / (m - 1) - pct
    min_rank = rankdata(x.T, "min").T
    per_mod: dict[str, Any] = {}
    for k, mod in enumerate(mods):
        count = float(share[:, k].sum())
        q = np.percentile(x[:, k], [10, 20, 25, 30, 70, 75, 80, 90])
        bottom = {}
        for a in alphas:
            cutoff = math.ceil(a * n - _EPS)
            members = min_rank[:, k] <= cutoff
            bottom[_alpha_key(a)] = {
                "alpha": a,
                "cutoff_rank": cutoff,
                "n": int(members.sum()),
                "max_total": float(np.nanmax(tot[members])) if np.isfinite(tot[members]).any() else None,
                "systems": [names[i] for i in np.flatnonzero(members)],
            }
        per_mod[mod] = {
            "weakest_count": count,
            "weakest_ties": int((weakest[:, k] & (weakest.sum(axis=1) > 1)).sum()),
            "mean_weakest_rank_gap_pp": float((share[:, k] * gap[:, k]).sum() / count) if count > 0 else None,
            "iqr": float(q[5] - q[2]),
            "central_spread": {"80": float(q[7] - q[0]), "60": float(q[6] - q[1]), "40": float(q[4] - q[3])},
            "max_total_bottom": bottom,
        }
    head = _alpha_key(alphas[0])

    def col(key: str) -> dict[str, float]:
        return {mod: _f(per_mod[mod][key]) for mod in mods}

    by_alpha = {
        _alpha_key(a): _best(
            {mod: _f(per_mod[mod]["max_total_bottom"][_alpha_key(a)]["max_total"]) for mod in mods},
            lowest=True,
        )
        for a in alphas
    }
    strongest = {
        "weakest_count": _best(col("weakest_count")),
        "mean_weakest_rank_gap_pp": _best(col("mean_weakest_rank_gap_pp")),
        "iqr": _best(col("iqr")),
        "max_total_bottom": by_alpha[head],
        "max_total_bottom_by_alpha": by_alpha,
    }
    per_system = [
        {
            "system": names[i],
            "scores": {mod: float(x[i, k]) for k, mod in enumerate(mods)},
            "percentile_rank": {mod: float(pct[i, k]) for k, mod in enumerate(mods)},
            "weakest": [mods[k] for k in np.flatnonzero(weakest[i])],
        }
        for i in range(n)
    ]
    return {
        "n_systems": n,
        "modalities": mods,
        "excluded_systems": [s for s, k in zip(systems, keep, strict=True) if not k],
        "diagnostics": per_mod,
        "strongest_signal": strongest,
        "systems": per_system,
    }


def _f(v: Any) -> float:
    return math.nan if v is None else float(v)


def _alpha_key(a: float) -> str:
    return "1/3" if abs(a - 1 / 3) < 1e-9 else f"{a:.2f}"


def _modality_inputs(ctx: StoryContext, policy: Policy, need: int) -> dict[str, FloatArray]:
    mods = ctx.modalities(policy)
    if len(mods) < need:
        missing = [m for m in MODALITIES if m not in mods]
        raise Skip(f"needs {need} modality scores; not computed here: {', '.join(missing)}")
    return mods


@story_analysis(
    "bottleneck",
    summary="modality-bottleneck diagnostics (E.6): weakest counts, rank gaps, IQR, Max Total in the bottom tercile",
    params=lambda c: {"alphas": list(c.bottleneck_alphas)},
)
def bottleneck(ctx: StoryContext) -> AnalysisResult:
    ctx.need_systems(3)
    out: dict[str, Any] = {}
    for policy in POLICIES:
        mods = _modality_inputs(ctx, policy, 2)
        try:
            out[policy] = bottleneck_diagnostics(
                ctx.table.systems, mods, ctx.policy(policy).total, ctx.config.bottleneck_alphas
            )
        except ValueError as exc:
            raise Skip(str(exc)) from None
    if len(out["valid_only"]["modalities"]) < 3:
        out["note"] = "fewer than three modalities are computed; diagnostics compare the available ones"

    def plot(path: Path) -> None:
        d = out["valid_only"]
        mods = d["modalities"]
        head = _alpha_key(ctx.config.bottleneck_alphas[0])
        panels = [
            ("weakest-modality count", [d["diagnostics"][m]["weakest_count"] for m in mods]),
            (
                "mean weakest rank gap (pp)",
                [_f(d["diagnostics"][m]["mean_weakest_rank_gap_pp"]) for m in mods],
            ),
            ("IQR of modality score", [d["diagnostics"][m]["iqr"] for m in mods]),
            (
                f"max Total, bottom {head}",
                [_f(d["diagnostics"][m]["max_total_bottom"][head]["max_total"]) for m in mods],
            ),
        ]
        with figure(path, ncols=4, size=(12.0, 3.2)) as (_fig, axes):
            for ax, (title, vals) in zip(axes[0], panels, strict=True):
                ax.bar(mods, vals, color=["#4c72b0", "#dd8452", "#55a868"][: len(mods)])
                ax.set_title(title, fontsize=9)

    return AnalysisResult(out, {"": plot})


def _variables(ctx: StoryContext, policy: Policy) -> dict[str, FloatArray]:
    ps = ctx.policy(policy)
    out = dict(ctx.modalities(policy))
    if "judge.integrated" in ps.components:
        out["integrated"] = ps.components["judge.integrated"]
    out["total_average"] = ps.total
    return out


def _pearson(a: FloatArray, b: FloatArray, /, **labels: str) -> list[dict[str, Any]]:
    """``[{**labels, r, p, n}]``: Pearson's r over the systems finite in both; ``[]`` with fewer than 3."""
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3:
        return []
    c = pearson(a[ok], b[ok])
    return [{**labels, "r": c.r, "p": c.p, "n": c.n}]


def _subsets(ctx: StoryContext) -> dict[str, np.ndarray]:
    systems = ctx.table.systems
    out = {"all": np.ones(len(systems), dtype=bool)}
    for group, members in ctx.config.system_groups.items():
        unknown = sorted(set(members) - set(systems))
        if unknown:
            raise Skip(f"system group {group!r} names unknown systems {unknown}")
        out[group] = np.isin(np.array(systems, dtype=object), list(members))
    return out


@story_analysis(
    "correlations", summary="system-level Pearson correlations between modality, integrated and total scores"
)
def correlations(ctx: StoryContext) -> AnalysisResult:
    ctx.need_systems(3)
    _modality_inputs(ctx, "valid_only", 2)
    out: dict[str, Any] = {}
    for policy in POLICIES:
        vars_ = _variables(ctx, policy)
        names = list(vars_)
        rows = []
        for subset, mask in _subsets(ctx).items():
            for i, a in enumerate(names):
                for b in names[i + 1 :]:
                    rows += _pearson(vars_[a][mask], vars_[b][mask], x=a, y=b, subset=subset)
        out[policy] = rows

    def plot(path: Path) -> None:
        vars_ = ctx.modalities("valid_only")
        names = list(vars_)
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
        with figure(path, ncols=len(pairs), size=(4.0 * len(pairs), 3.6)) as (_fig, axes):
            for ax, (a, b) in zip(axes[0], pairs, strict=True):
                ax.scatter(vars_[a], vars_[b], s=14)
                r = pearson(vars_[a], vars_[b]).r
                ax.set_xlabel(f"{a} score")
                ax.set_ylabel(f"{b} score")
                ax.set_title(f"r = {r:.3f}", fontsize=9)

    return AnalysisResult(out, {"": plot})


_MODALITY_PAIRS = (("text", "image", "speech"), ("text", "speech", "image"), ("image", "speech", "text"))
"""Each pair of modalities, then the third one (the control)."""


@story_analysis(
    "partial_correlations",
    summary="partial correlations between modality scores (and the integrated judge) controlling for the others",
)
def partial_correlations(ctx: StoryContext) -> AnalysisResult:
    ctx.need_systems(4)
    entries: list[dict[str, Any]] = []
    for policy in POLICIES:
        ps = ctx.policy(policy)
        mods = ctx.modalities(policy)
        if len(mods) < 3:
            continue
        specs = [(a, mods[a], b, mods[b], [control]) for a, b, control in _MODALITY_PAIRS]
        if "judge.integrated" in ps.components:
            # The integrated judge and each of its rubric categories against each modality.
            outcomes = {"integrated": ps.components["judge.integrated"]}
            for k, criterion in enumerate(ctx.table.judges["integrated"].criteria):
                outcomes[f"integrated.{criterion}"] = ps.per_criterion["integrated"][:, k]
            specs += [
                (o_name, o_vals, m, mods[m], [x for x in MODALITIES if x != m])
                for o_name, o_vals in outcomes.items()
                for m in MODALITIES
            ]
        for subset, mask in _subsets(ctx).items():
            for x_name, xv, y_name, yv, controls in specs:
                z = np.stack([mods[c][mask] for c in controls], axis=1)
                x, y = xv[mask], yv[mask]
                ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(z).all(axis=1)
                if ok.sum() < len(controls) + 3:
                    continue
                c = partial_correlation(x[ok], y[ok], z[ok])
                entries.append(
                    {
                        "x": x_name,
                        "y": y_name,
                        "controls": controls,
                        "r": c.r,
                        "p": c.p,
                        "n": c.n,
                        "policy": policy,
                        "subset": subset,
                    }
                )
    if not entries:
        missing = [m for m in MODALITIES if m not in ctx.modalities("valid_only")]
        raise Skip(
            "needs text, image and speech modality scores for at least 4 systems"
            + (f"; not computed here: {', '.join(missing)}" if missing else "")
        )
    return AnalysisResult(entries)


@story_analysis(
    "bertscore_text_judge", summary="agreement between BERTScore and the text judge across systems (F.1)"
)
def bertscore_text_judge(ctx: StoryContext) -> AnalysisResult:
    ctx.need_systems(3)
    out: dict[str, Any] = {}
    for policy in POLICIES:
        ps = ctx.policy(policy)
        if "bertscore_f1" not in ps.components or "judge.text" not in ps.components:
            raise Skip(
                "needs both BERTScore and the text judge; " + f"not computed: {list(ctx.table.not_computed)}"
            )
        bert = ps.components["bertscore_f1"] * 10.0
        judge = ps.components["judge.text"]
        ok = np.isfinite(bert) & np.isfinite(judge)
        if ok.sum() < 3:
            raise Skip("fewer than 3 systems have both BERTScore and a text-judge score")
        p, s = pearson(bert[ok], judge[ok]), spearman(bert[ok], judge[ok])
        out[policy] = {
            "n": int(ok.sum()),
            "pearson": {"r": p.r, "p": p.p},
            "spearman": {"rho": s.r, "p": s.p},
            "range_bertscore_x10": [float(bert[ok].min()), float(bert[ok].max())],
            "range_text_judge": [float(judge[ok].min()), float(judge[ok].max())],
        }

    def plot(path: Path) -> None:
        ps = ctx.policy("valid_only")
        with figure(path, size=(5.0, 4.0)) as (_fig, axes):
            ax = axes[0][0]
            ax.scatter(ps.components["bertscore_f1"] * 10.0, ps.components["judge.text"], s=14)
            ax.set_xlabel("BERTScore F1 x10")
            ax.set_ylabel("text judge (three-judge mean)")

    return AnalysisResult(out, {"": plot})


@story_analysis(
    "integrated_categories", summary="integrated-judge rubric categories: means, loss shares, IQR (F.3)"
)
def integrated_categories(ctx: StoryContext) -> AnalysisResult:
    if "integrated" not in ctx.table.judges:
        raise Skip("the integrated judge track is not computed")
    ctx.need_systems(2)
    jt = ctx.table.judges["integrated"]
    out: dict[str, Any] = {}
    for policy in POLICIES:
        x = ctx.policy(policy).per_criterion["integrated"]  # (S, 4)
        ok = np.isfinite(x).all(axis=1)
        x = x[ok]
        loss = (10.0 - x).sum(axis=0)
        lowest = x <= x.min(axis=1, keepdims=True) + _EPS
        out[policy] = {
            "n_systems": int(ok.sum()),
            "categories": {
                c: {
                    "mean": float(x[:, k].mean()),
                    "loss_share": float(loss[k] / loss.sum()) if loss.sum() > 0 else None,
                    "iqr": float(np.subtract(*np.percentile(x[:, k], [75, 25]))),
                    "lowest_for_systems": int(lowest[:, k].sum()),
                }
                for k, c in enumerate(jt.criteria)
            },
        }
    return AnalysisResult(out)


DREAMSIM = "dreamsim_distance"


@story_analysis(
    "dreamsim", summary="mean DreamSim distance vs image, integrated and total scores across systems (F.2)"
)
def dreamsim(ctx: StoryContext) -> AnalysisResult:
    if DREAMSIM not in ctx.table.extras:
        raise Skip(f"the scores table has no {DREAMSIM!r} rows (DreamSim disabled or unavailable)")
    ctx.need_systems(3)
    # Mean distance over valid generated images; missing images are left out (valid-only).
    distance = _nanmean(ctx.table.extras[DREAMSIM], axis=1)
    out: dict[str, Any] = {"mean_distance": dict(zip(ctx.table.systems, distance, strict=True))}
    for policy in POLICIES:
        ps = ctx.policy(policy)
        targets: dict[str, FloatArray] = {}
        if "image_similarity" in ps.components:
            targets["image_similarity"] = ps.components["image_similarity"] * 10.0
        if "judge.image" in ps.components:
            targets["judge.image"] = ps.components["judge.image"]
            for k, c in enumerate(ctx.table.judges["image"].criteria):
                targets[f"judge.image.{c}"] = ps.per_criterion["image"][:, k]
        image = ps.modality("image")
        if image is not None:
            targets["image_modality"] = image
        if "judge.integrated" in ps.components:
            targets["judge.integrated"] = ps.components["judge.integrated"]
        targets["total_average"] = ps.total
        out[policy] = [row for name, values in targets.items() for row in _pearson(distance, values, y=name)]
    return AnalysisResult(out)
