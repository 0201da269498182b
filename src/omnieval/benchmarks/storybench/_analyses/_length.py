"""Narration-length controls of the text-judge component (appendix F.8), methods M1 and M2.

Both replace only the text-judge component (keeping the other components) and keep the equal
weighting of the per-judge means. Generated lengths come from the scores table's automatic
``narration_length`` rows (Unicode characters of the generated narration after trimming).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from omnieval.analysis import AnalysisResult, FloatArray, Skip, figure, pearson, spearman
from omnieval.benchmarks.storybench._analyses._context import StoryContext, story_analysis
from omnieval.benchmarks.storybench._names import NARRATION_LENGTH
from omnieval.benchmarks.storybench._rankings import compare_rankings
from omnieval.benchmarks.storybench._table import _nanmean


def quantile_bins(lengths: FloatArray, n_bins: int) -> tuple[np.ndarray, FloatArray]:
    """Bin index ``0..n_bins-1`` of each length by the pooled quantiles, and the bin edges.

    Edges are the ``k / n_bins`` quantiles (linear interpolation); a length equal to an inner edge
    goes to the upper bin. Repeated edges (many equal lengths) leave some bins empty.
    """
    edges = np.quantile(lengths, np.linspace(0.0, 1.0, n_bins + 1))
    return np.searchsorted(edges[1:-1], lengths, side="right"), edges


def m1_adjust(example: FloatArray, lengths: FloatArray, n_bins: int, clip: bool = False) -> FloatArray:
    """M1: per judge, subtract the length-bin mean and restore that judge's pooled mean.

    Args:
        example: ``(S, n, J)`` text-judge example scores (NaN = invalid).
        lengths: ``(S, n)`` generated lengths (NaN = none).
        n_bins: quantile bins per judge (pooled over systems).
        clip: clip adjusted scores to ``[1, 10]`` (a sensitivity check).

    Returns:
        ``(S, J)`` valid-only per-judge means of the adjusted scores.
    """
    s, _n, j = example.shape
    out = np.full((s, j), np.nan)
    for k in range(j):
        y = example[:, :, k]
        ok = np.isfinite(y) & np.isfinite(lengths)
        if not ok.any():
            continue
        bins, _ = quantile_bins(lengths[ok], n_bins)
        counts = np.bincount(bins, minlength=n_bins)
        sums = np.bincount(bins, weights=y[ok], minlength=n_bins)
        bin_mean = sums / np.maximum(counts, 1)
        adj = np.full(y.shape, np.nan)
        adj[ok] = y[ok] - bin_mean[bins] + y[ok].mean()
        if clip:
            adj = np.clip(adj, 1.0, 10.0)
        out[:, k] = _nanmean(adj, axis=1)
    return out


def m2_adjust(example: FloatArray, lengths: FloatArray, n_bins: int, min_count: int) -> dict[str, Any]:
    """M2: common length support with shared bin weights for every system-judge group.

    Five (``n_bins``) pooled quantile bins over all valid (system, instance, judge) observations;
    a bin is kept when every system-judge group with observations has at least ``min_count`` in
    it; each group's score is the weighted mean of its bin means with weights proportional to the
    pooled counts of the kept bins.

    Returns:
        ``per_judge`` ``(S, J)`` (NaN when no bin is kept), ``kept_bins``, ``edges`` and coverage.
    """
    s, _n, j = example.shape
    ok = np.isfinite(example) & np.isfinite(lengths)[:, :, None]
    pooled = np.broadcast_to(lengths[:, :, None], example.shape)[ok]
    bins, edges = quantile_bins(pooled, n_bins)
    grid = np.full(example.shape, -1, dtype=np.int64)
    grid[ok] = bins
    counts = np.zeros((s, j, n_bins))
    sums = np.zeros((s, j, n_bins))
    for b in range(n_bins):
        in_b = grid == b
        counts[:, :, b] = in_b.sum(axis=1)
        sums[:, :, b] = np.where(in_b, example, 0.0).sum(axis=1)
    has_obs = counts.sum(axis=2) > 0
    kept = np.array([bool((counts[:, :, b][has_obs] >= min_count).all()) for b in range(n_bins)])
    pooled_counts = counts.sum(axis=(0, 1))
    result: dict[str, Any] = {
        "edges": edges.tolist(),
        "kept_bins": [int(b) for b in np.flatnonzero(kept)],
        "pooled_share_kept": float(pooled_counts[kept].sum() / pooled_counts.sum())
        if pooled_counts.sum()
        else None,
    }
    if not kept.any():
        result["per_judge"] = np.full((s, j), np.nan)
        return result
    w = pooled_counts[kept] / pooled_counts[kept].sum()
    means = sums[:, :, kept] / np.maximum(counts[:, :, kept], 1)
    result["per_judge"] = np.where(has_obs, (means * w).sum(axis=2), np.nan)
    group_share = counts[:, :, kept].sum(axis=2)[has_obs] / counts.sum(axis=2)[has_obs]
    result["group_share_kept"] = [float(group_share.min()), float(group_share.max())]
    result["upper_length_kept"] = float(edges[np.flatnonzero(kept).max() + 1])
    return result


@story_analysis(
    "narration_length",
    summary="narration-length controls M1 and M2 of the text-judge component and their rankings",
    params=lambda c: {"m1_bins": c.m1_bins, "m2_bins": c.m2_bins, "m2_min_count": c.m2_min_count},
)
def narration_length(ctx: StoryContext) -> AnalysisResult:
    table, cfg = ctx.table, ctx.config
    if NARRATION_LENGTH not in table.extras:
        raise Skip(f"the scores table has no {NARRATION_LENGTH!r} rows (generated narration lengths)")
    if "text" not in table.judges:
        raise Skip("the text judge track is not computed")
    ctx.need_systems(2)
    lengths = table.extras[NARRATION_LENGTH]
    example = table.judges["text"].example
    ps = ctx.policy("valid_only")
    total = ps.total
    all_valid = np.isfinite(example).all(axis=2) & np.isfinite(lengths)
    judge_mean = example.mean(axis=2)
    desc: dict[str, Any] = {
        "n_observations_all_judges_valid": int(all_valid.sum()),
        "mean_length": float(np.nanmean(lengths)),
        "length_vs_text_judge": {
            "pearson": pearson(lengths[all_valid], judge_mean[all_valid]).r,
            "spearman": spearman(lengths[all_valid], judge_mean[all_valid]).r,
        }
        if all_valid.sum() >= 3
        else None,
    }
    if "bertscore_f1" in table.auto:
        bert = table.auto["bertscore_f1"].values
        both = np.isfinite(bert) & np.isfinite(lengths)
        if both.sum() >= 3:
            desc["length_vs_bertscore"] = {"pearson": pearson(lengths[both], bert[both]).r}

    def replaced(per_judge: FloatArray) -> FloatArray:
        text = _nanmean(per_judge, axis=1)
        x = ps.scaled()
        x[:, ps.covered.index("judge.text")] = text
        return _nanmean(x, axis=1)

    def variant(per_judge: FloatArray) -> dict[str, Any]:
        new_total = replaced(per_judge)
        return {
            **compare_rankings(table.systems, total, new_total, cfg.top_k),
            "judge.text": dict(zip(table.systems, _nanmean(per_judge, axis=1), strict=True)),
            "totals": dict(zip(table.systems, new_total, strict=True)),
        }

    variants: dict[str, Any] = {
        "m1": variant(m1_adjust(example, lengths, cfg.m1_bins)),
        "m1_clipped": variant(m1_adjust(example, lengths, cfg.m1_bins, clip=True)),
    }
    m2 = m2_adjust(example, lengths, cfg.m2_bins, cfg.m2_min_count)
    m2_judge = m2.pop("per_judge")
    if np.isfinite(m2_judge).any():
        variants["m2"] = {**m2, **variant(m2_judge)}
    else:
        variants["m2"] = {**m2, "status": "no length bin has enough observations in every system-judge group"}
    out = {"descriptives": desc, "variants": variants}

    def plot(path: Path) -> None:
        with figure(path, size=(5.5, 4.2)) as (_fig, axes):
            ax = axes[0][0]
            per_sys_len = _nanmean(np.where(np.isfinite(lengths), lengths, np.nan), axis=1)
            ax.scatter(per_sys_len, ps.components["judge.text"], s=14)
            ax.set_xlabel("mean generated narration length (characters)")
            ax.set_ylabel("text judge (valid-only)")

    return AnalysisResult(out, {"": plot})
