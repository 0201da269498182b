"""Paired bootstrap over instances (appendix F.7), vectorised and in bounded memory.

Every resample draws ``n`` instances with replacement and applies the same draw to every system
(paired). A resample is a vector of multiplicities ``w`` (``(n,)``); every per-(component, judge,
system) valid-only mean is then ``(w @ value) / (w @ valid)``, so a chunk of resamples is two matrix
products ``W (c, n) @ X (n, K*S)``. The chunk size ``c`` shrinks as ``n`` grows so the working
memory stays near ``chunk_elements`` floats, and resample ``b`` always uses the ``b``-th block of
``n`` draws from one seeded generator, so results do not depend on the chunk size.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from omnieval.analysis import (
    AnalysisResult,
    FloatArray,
    Skip,
    figure,
    holm,
    normal_two_sided,
    partial_rows,
    pearson_rows,
    percentile_interval,
    rank_desc,
)
from omnieval.benchmarks.storybench._analyses._context import StoryContext, story_analysis
from omnieval.benchmarks.storybench._names import (
    AUTOMATIC_SCALE,
    COMPONENTS,
    JUDGE,
    MODALITIES,
    MODALITY_COMPONENTS,
    Policy,
)
from omnieval.benchmarks.storybench._table import StoryTable, _nanmean


@dataclass(frozen=True)
class _Layout:
    """Per-example matrix of every (column, system): ``num``/``den`` are ``(n, K*S)``."""

    num: FloatArray
    den: FloatArray
    n_columns: int
    components: tuple[str, ...]
    # For each component: the column indices that average into it (judges) or the single column.
    groups: tuple[tuple[int, ...], ...]


def _layout(table: StoryTable) -> _Layout:
    cols: list[FloatArray] = []  # each (S, n)
    components: list[str] = []
    groups: list[tuple[int, ...]] = []
    automatic = table.automatic
    for name in COMPONENTS:
        if name in automatic:
            groups.append((len(cols),))
            cols.append(automatic[name])
            components.append(name)
        elif JUDGE.get(name) in table.judges:
            ex = table.judges[JUDGE[name]].example
            start = len(cols)
            cols += [ex[:, :, j] for j in range(ex.shape[2])]
            groups.append(tuple(range(start, len(cols))))
            components.append(name)
    stacked = np.stack(cols, axis=0)  # (K, S, n)
    k, s, n = stacked.shape
    x = np.ascontiguousarray(stacked.transpose(2, 0, 1).reshape(n, k * s))
    valid = np.isfinite(x)
    return _Layout(np.where(valid, x, 0.0), valid.astype(np.float64), k, tuple(components), tuple(groups))


@dataclass(frozen=True)
class BootstrapDraws:
    """Per-draw aggregates: ``totals`` is ``(B, S)``; ``modality`` maps modality -> ``(B, S)``."""

    totals: FloatArray
    modality: dict[str, FloatArray]
    point_totals: FloatArray
    point_modality: dict[str, FloatArray]


def _reduce(
    lay: _Layout, weights: FloatArray, n_systems: int, policy: Policy, include: FloatArray | None
) -> tuple[FloatArray, dict[str, FloatArray], FloatArray]:
    """Totals ``(c, S)``, modality scores and the per-component values ``(c, C, S)`` for weights ``(c, n)``."""
    c = weights.shape[0]
    num = (weights @ lay.num).reshape(c, lay.n_columns, n_systems)
    if policy == "valid_only":
        den = (weights @ lay.den).reshape(c, lay.n_columns, n_systems)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    else:
        means = num / weights.sum(axis=1)[:, None, None]
    comps = np.empty((c, len(lay.components), n_systems))
    for k, (name, cols) in enumerate(zip(lay.components, lay.groups, strict=True)):
        block = means[:, list(cols), :]
        if len(cols) == 1:
            comps[:, k, :] = block[:, 0, :] * (AUTOMATIC_SCALE if not name.startswith("judge.") else 1.0)
        else:
            comps[:, k, :] = _nanmean(block, axis=1)
    if include is None:
        include = np.isfinite(comps[0]).astype(np.float64)
    with np.errstate(invalid="ignore"):
        totals = (np.where(include > 0, comps, 0.0) * include).sum(axis=1) / include.sum(axis=0)
        # A component that counted in the point estimate but has no valid example in this draw makes
        # the draw's total undefined rather than silently covering fewer components.
        broken = (~np.isfinite(comps) & (include[None] > 0)).any(axis=1)
        totals = np.where(broken | (include.sum(axis=0) == 0), np.nan, totals)
    modality: dict[str, FloatArray] = {}
    for m in MODALITIES:
        idx = [lay.components.index(c) for c in MODALITY_COMPONENTS[m] if c in lay.components]
        if idx:
            modality[m] = _nanmean(comps[:, idx, :], axis=1)
    return totals, modality, include


def bootstrap_draws(
    table: StoryTable,
    *,
    draws: int,
    seed: int,
    policy: Policy = "valid_only",
    chunk_elements: int = 2_000_000,
) -> BootstrapDraws:
    """Total Average and modality scores of every system under ``draws`` paired resamples.

    Args:
        table: the dense scores table.
        draws: number of resamples ``B``.
        seed: seed of ``numpy.random.default_rng``; resample ``b`` uses draws ``b*n .. b*n+n-1``.
        policy: ``valid_only`` (the paper's) or ``zero_filled``.
        chunk_elements: working-memory budget per chunk in float64 elements.

    Returns:
        Per-draw ``(B, S)`` totals and modality scores, plus the point estimates (all weights 1),
        which equal :func:`omnieval.analysis.aggregate`'s.
    """
    lay = _layout(table)
    n, s = lay.num.shape[0], table.n_systems
    point_totals, point_modality, include = _reduce(lay, np.ones((1, n)), s, policy, None)
    chunk = max(1, min(draws, chunk_elements // max(n, lay.num.shape[1])))
    totals = np.empty((draws, s))
    modality = {m: np.empty((draws, s)) for m in point_modality}
    for start, weights in multiplicity_chunks(n, draws=draws, seed=seed, chunk=chunk):
        c = weights.shape[0]
        t, mods, _ = _reduce(lay, weights, s, policy, include)
        totals[start : start + c] = t
        for m, v in mods.items():
            modality[m][start : start + c] = v
    return BootstrapDraws(totals, modality, point_totals[0], {m: v[0] for m, v in point_modality.items()})


def multiplicity_chunks(n: int, *, draws: int, seed: int, chunk: int) -> Iterator[tuple[int, FloatArray]]:
    """The multiplicity matrices of ``draws`` resamples of ``n`` instances, ``chunk`` resamples at a time.

    Yields ``(start, weights)``: ``weights`` ``(c, n)`` counts how often resample ``start + r`` drew
    each instance. Resample ``b`` uses draws ``b*n .. b*n+n-1`` of ``numpy.random.default_rng(seed)``
    (one call of shape ``(c, n)`` gives the same numbers as ``c`` calls of ``n``), so the resamples do
    not depend on ``chunk``.

    Example:
        >>> [w.sum(axis=1).tolist() for _, w in multiplicity_chunks(3, draws=5, seed=0, chunk=2)]
        [[3.0, 3.0], [3.0, 3.0], [3.0]]
    """
    rng = np.random.default_rng(seed)
    offsets = np.arange(chunk, dtype=np.int64)[:, None] * n
    for start in range(0, draws, chunk):
        c = min(chunk, draws - start)
        idx = rng.integers(0, n, size=(c, n))
        counts = np.bincount((idx + offsets[:c]).ravel(), minlength=c * n)
        yield start, counts.reshape(c, n).astype(np.float64)


def _interval_key(level: float) -> str:
    return f"ci{round(level * 100)}"


def summarize(
    systems: tuple[str, ...], boot: BootstrapDraws, *, level: float = 0.95, alpha: float = 0.05
) -> dict[str, Any]:
    """Percentile CIs, rank intervals, leader vs runner-up and Holm-corrected paired differences."""
    key = _interval_key(level)
    t, point = boot.totals, boot.point_totals
    s = t.shape[1]
    ranks = rank_desc(t, "min")
    point_rank = rank_desc(point, "min")
    ci = percentile_interval(t, level)
    tail = (1.0 - level) / 2.0
    rank_lo = np.quantile(ranks, tail, axis=0, method="inverted_cdf")
    rank_hi = np.quantile(ranks, 1.0 - tail, axis=0, method="inverted_cdf")
    per_system = {}
    for k, name in enumerate(systems):
        finite = np.isfinite(t[:, k])
        per_system[name] = {
            "total_average": point[k],
            key: [ci[0, k], ci[1, k]],
            "se": float(np.std(t[finite, k], ddof=1)) if finite.sum() > 1 else None,
            "rank": int(point_rank[k]),
            "rank_interval": [int(rank_lo[k]), int(rank_hi[k])],
            "share_rank_first": float((ranks[:, k] == 1).mean()),
            "undefined_draws": int((~finite).sum()),
        }
    order = [int(i) for i in np.lexsort((np.array(systems, dtype=object), point_rank))]
    out: dict[str, Any] = {"systems": per_system, "ranking": [systems[i] for i in order]}
    if s >= 2 and np.isfinite(point[order[:2]]).all():
        lead, runner = order[0], order[1]
        d = t[:, lead] - t[:, runner]
        dci = percentile_interval(d[None].T, level)[:, 0]
        out["leader"] = {
            "system": systems[lead],
            "runner_up": systems[runner],
            "difference": float(point[lead] - point[runner]),
            key: [float(dci[0]), float(dci[1])],
            "share_leader_beats_runner_up": float((d > 0).mean()),
            "share_leader_ranks_first": float((ranks[:, lead] == 1).mean()),
        }
    pairs: list[dict[str, Any]] = []

    for i_pos, i in enumerate(order):
        rest = order[i_pos + 1 :]
        if not rest:
            break
        d = t[:, [i]] - t[:, rest]  # (B, len(rest))
        se = np.nanstd(d, axis=0, ddof=1)
        dci = percentile_interval(d, level)
        for col, j in enumerate(rest):
            diff = float(point[i] - point[j])
            z = diff / se[col] if se[col] > 0 else (math.inf if diff != 0 else 0.0)
            pairs.append(
                {
                    "a": systems[i],
                    "b": systems[j],
                    "difference": diff,
                    "se": float(se[col]),
                    "z": z,
                    "p": normal_two_sided(z) if math.isfinite(diff) else None,
                    key: [float(dci[0, col]), float(dci[1, col])],
                }
            )
    adjusted = holm(np.array([math.nan if p["p"] is None else p["p"] for p in pairs]))
    for p, adj in zip(pairs, adjusted, strict=True):
        p["p_holm"] = float(adj)
        p["significant"] = bool(adj < alpha)
    out["pairs"] = pairs
    out["n_pairs"] = len(pairs)
    out["n_significant_holm"] = int(sum(p["significant"] for p in pairs))
    return out


def modality_associations(boot: BootstrapDraws, *, level: float = 0.95) -> list[dict[str, Any]]:
    """Transition-bootstrap percentile intervals of modality Pearson and partial correlations."""
    mods = [m for m in MODALITIES if m in boot.modality]
    if len(mods) < 2:
        return []
    key = _interval_key(level)
    # Systems without a point-estimate modality score take no part (as in the point analysis).
    keep = np.isfinite(np.stack([boot.point_modality[m] for m in mods], axis=1)).all(axis=1)
    if keep.sum() < 3:
        return []
    data = np.stack([boot.modality[m][:, keep] for m in mods], axis=2)  # (B, S, M)
    point = np.stack([boot.point_modality[m][keep] for m in mods], axis=1)[None]  # (1, S, M)
    out = []
    for i in range(len(mods)):
        for j in range(i + 1, len(mods)):
            # (controls, per-draw r, point r): Pearson's, then the partial one given the other modalities.
            variants: list[tuple[list[int], FloatArray, FloatArray]] = [
                ([], pearson_rows(data[..., i], data[..., j]), pearson_rows(point[..., i], point[..., j]))
            ]
            controls = [k for k in range(len(mods)) if k not in (i, j)]
            if controls and data.shape[1] >= len(controls) + 3:
                variants.append(
                    (controls, partial_rows(data, i, j, controls), partial_rows(point, i, j, controls))
                )
            out += [
                {
                    "x": mods[i],
                    "y": mods[j],
                    "controls": [mods[k] for k in ctrl],
                    "r": float(r_point[0]),
                    key: percentile_interval(r[:, None], level)[:, 0].tolist(),
                }
                for ctrl, r, r_point in variants
            ]
    return out


@story_analysis(
    "bootstrap",
    summary="paired bootstrap over instances: percentile CIs, rank intervals, leader frequencies, Holm-corrected pairs",
    params=lambda c: {
        "seed": c.seed,
        "draws": c.bootstrap_draws,
        "level": c.level,
        "alpha": c.alpha,
        "policy": "valid_only",
    },
)
def bootstrap(ctx: StoryContext) -> AnalysisResult:
    ctx.need_systems(2)
    table, cfg = ctx.table, ctx.config
    if not ctx.policy("valid_only").covered:
        raise Skip("no component is computed")
    boot = bootstrap_draws(
        table,
        draws=cfg.bootstrap_draws,
        seed=cfg.seed,
        policy="valid_only",
        chunk_elements=cfg.chunk_elements,
    )
    out = {
        "policy": "valid_only",
        "draws": cfg.bootstrap_draws,
        "seed": cfg.seed,
        "level": cfg.level,
        "n_instances": table.n_instances,
        **summarize(table.systems, boot, level=cfg.level, alpha=cfg.alpha),
        "modality_associations": modality_associations(boot, level=cfg.level) if table.n_systems >= 3 else [],
    }
    key = _interval_key(cfg.level)

    def plot(path: Path) -> None:
        names = out["ranking"]
        pts = [out["systems"][n]["total_average"] for n in names]
        lo = [out["systems"][n][key][0] for n in names]
        hi = [out["systems"][n][key][1] for n in names]
        y = np.arange(len(names))[::-1]
        with figure(path, size=(7.0, max(2.5, 0.28 * len(names) + 1.0))) as (_fig, axes):
            ax = axes[0][0]
            ax.errorbar(
                pts,
                y,
                xerr=[np.subtract(pts, lo), np.subtract(hi, pts)],
                fmt="o",
                ms=3,
                capsize=2,
            )
            ax.set_yticks(y, names, fontsize=7)
            ax.set_xlabel(f"Total Average (valid-only), {round(cfg.level * 100)}% percentile interval")

    return AnalysisResult(out, {"": plot})
