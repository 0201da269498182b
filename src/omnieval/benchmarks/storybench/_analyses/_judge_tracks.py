"""Per judge track: is system A's judge score above system B's? Paired bootstrap over instances.

Definition (valid-only throughout):

* Tracks: every judge track of the table (text, image, speech, integrated; whichever are present)
  with at least one valid example score.
* Panel score ``p[s, i]`` of system ``s`` on instance ``i``: the mean over the track's judges of
  their valid example scores (:attr:`JudgeTrack.example`, 1-10), NaN when no judge has a valid
  record there. A system's track mean is the mean of its panel scores over the instances where it
  has one; a system without any is listed under ``unscored`` and takes part in no pair.
* Pairs: the scored systems are ordered by track mean, highest first (ties by name), and every
  unordered pair is listed once as ``(a, b)`` with ``a`` first in that order.
* Paired difference: over the ``m`` instances where both ``a`` and ``b`` have a panel score,
  ``d_i = p[a, i] - p[b, i]``; ``difference`` is ``mean(d)``. Because the track means are taken over
  each system's own valid instances, ``difference`` can be negative for a pair ordered ``a >= b``.
* Bootstrap: ``draws`` resamples, each drawing ``m`` of the pair's paired instances with
  replacement (the same draw for both systems); the statistic is ``mean(d)`` over the drawn
  instances. Resample ``b`` uses draws ``b*m .. b*m+m-1`` of ``numpy.random.default_rng(seed)``,
  restarted for every pair, so every pair with the same ``m`` sees the same draws and, when every
  instance is valid for every system, all pairs share one joint resample of the instances (as in
  ``bootstrap``). The interval ``ci<level%>`` is the percentile interval at ``level``;
  ``share_draws_above_zero`` is the share of resamples with a positive statistic, and
  ``above_zero`` says the interval's lower bound is above 0. A pair without a paired instance has
  ``n_paired`` 0, null statistics and ``above_zero`` false.

Computation: a chunk of resamples is a multiplicity matrix ``W (c, m)`` (how often each paired
instance is drawn), and the statistics of every pair with the same ``m`` are one product
``W @ D / m`` with ``D (m, P)`` holding their differences column-wise. Chunks of resamples and blocks
of pairs are sized so the working memory stays near ``chunk_elements`` floats; the results do not
depend on either size (up to rounding). The cost grows with the number of distinct ``m`` in a track,
as each needs its own draws.

Output: ``policy``, ``draws``, ``seed``, ``level``, ``n_instances`` (the table's) and ``tracks``:
track -> ``judges``, ``n_instances`` (instances where some system has a panel score), ``means`` and
``n_scored`` (per scored system, in ranking order), ``unscored``, ``ranking``, ``pairs`` (``a``,
``b``, ``difference``, ``n_paired``, ``ci<level%>``, ``share_draws_above_zero``, ``above_zero``),
``n_pairs`` and ``n_above_zero``. Skipped with fewer than two systems or no scored judge track.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from omnieval.analysis import AnalysisResult, FloatArray, Skip, figure, percentile_interval
from omnieval.benchmarks.storybench._analyses._bootstrap import _interval_key, multiplicity_chunks
from omnieval.benchmarks.storybench._analyses._context import StoryContext, story_analysis
from omnieval.benchmarks.storybench._names import TRACKS
from omnieval.benchmarks.storybench._table import JudgeTrack, StoryTable, _nanmean


def panel_scores(jt: JudgeTrack) -> FloatArray:
    """Per-instance panel scores ``(S, n)``: the mean of the valid judges' example scores, else NaN.

    Example:
        >>> import numpy as np
        >>> ex = np.array([[[4.0, 6.0], [np.nan, 3.0], [np.nan, np.nan]]])  # (S=1, n=3, J=2)
        >>> scores = ex[..., None].repeat(4, axis=3)  # the same value on the 4 criteria
        >>> state = np.zeros((1, 3, 2), dtype=np.int8)
        >>> jt = JudgeTrack("text", ("j1", "j2"), ("c1", "c2", "c3", "c4"), scores, state)
        >>> panel_scores(jt).tolist()
        [[5.0, 3.0, nan]]
    """
    return _nanmean(jt.example, axis=2)


def resample_means(
    values: FloatArray, *, draws: int, seed: int, chunk_elements: int = 2_000_000
) -> FloatArray:
    """Column means of ``values`` ``(m, P)`` under ``draws`` resamples of its ``m`` rows: ``(draws, P)``.

    Resample ``b`` draws the rows ``default_rng(seed).integers(0, m)`` numbers ``b*m .. b*m+m-1``
    with replacement; every column sees the same draws. Memory stays near ``chunk_elements`` floats
    per chunk of resamples, and the result does not depend on it.

    Example:
        >>> import numpy as np
        >>> resample_means(np.array([[2.0], [2.0]]), draws=3, seed=0).ravel().tolist()
        [2.0, 2.0, 2.0]
    """
    m, p = values.shape
    if m == 0:
        return np.full((draws, p), np.nan)
    chunk = max(1, min(draws, chunk_elements // max(m, p)))
    out = np.empty((draws, p))
    for start, weights in multiplicity_chunks(m, draws=draws, seed=seed, chunk=chunk):
        out[start : start + weights.shape[0]] = weights @ values / m
    return out


@dataclass(frozen=True)
class _Pair:
    a: int
    b: int
    d: FloatArray  # paired differences (m,)


def track_differences(
    panel: FloatArray,
    systems: tuple[str, ...],
    *,
    draws: int,
    seed: int,
    level: float = 0.95,
    chunk_elements: int = 2_000_000,
) -> dict[str, Any]:
    """Means, ranking and bootstrapped paired differences of one track's panel scores ``(S, n)``.

    See the module docstring for the definition; the result is this analysis's per-track entry.
    """
    key = _interval_key(level)
    valid = np.isfinite(panel)
    means = _nanmean(panel, axis=1)
    scored = [k for k in range(len(systems)) if np.isfinite(means[k])]
    order = sorted(scored, key=lambda k: (-float(means[k]), systems[k]))
    pairs = [
        _Pair(a, b, panel[a, valid[a] & valid[b]] - panel[b, valid[a] & valid[b]])
        for pos, a in enumerate(order)
        for b in order[pos + 1 :]
    ]
    entries: list[dict[str, Any]] = [
        {
            "a": systems[p.a],
            "b": systems[p.b],
            "difference": float(p.d.mean()) if p.d.size else None,
            "n_paired": int(p.d.size),
            key: None,
            "share_draws_above_zero": None,
            "above_zero": False,
        }
        for p in pairs
    ]
    # Pairs with the same number of paired instances share the draws: one product per block of them.
    block = max(1, chunk_elements // max(draws, 1))
    by_m: dict[int, list[int]] = {}
    for k, p in enumerate(pairs):
        if p.d.size:
            by_m.setdefault(int(p.d.size), []).append(k)
    for members in by_m.values():
        for start in range(0, len(members), block):
            cols = members[start : start + block]
            stats = resample_means(
                np.stack([pairs[k].d for k in cols], axis=1),
                draws=draws,
                seed=seed,
                chunk_elements=chunk_elements,
            )
            ci = percentile_interval(stats, level)
            above = (stats > 0).mean(axis=0)
            for col, k in enumerate(cols):
                lo, hi = float(ci[0, col]), float(ci[1, col])
                entries[k][key] = [lo, hi]
                entries[k]["share_draws_above_zero"] = float(above[col])
                entries[k]["above_zero"] = bool(lo > 0)
    return {
        "n_instances": int(valid.any(axis=0).sum()),
        "means": {systems[k]: float(means[k]) for k in order},
        "n_scored": {systems[k]: int(valid[k].sum()) for k in order},
        "unscored": [systems[k] for k in range(len(systems)) if k not in scored],
        "ranking": [systems[k] for k in order],
        "pairs": entries,
        "n_pairs": len(entries),
        "n_above_zero": sum(e["above_zero"] for e in entries),
    }


def judge_track_panels(table: StoryTable) -> dict[str, tuple[JudgeTrack, FloatArray]]:
    """Track -> (judge track, panel scores ``(S, n)``) for the tracks with at least one valid score."""
    out = {}
    for t in TRACKS:
        jt = table.judges.get(t)
        if jt is None:
            continue
        panel = panel_scores(jt)
        if np.isfinite(panel).any():
            out[t] = (jt, panel)
    return out


@story_analysis(
    "judge_track_differences",
    summary="per judge track, paired bootstrap CIs of every system pair's panel-score difference",
    params=lambda c: {"seed": c.seed, "draws": c.bootstrap_draws, "level": c.level, "policy": "valid_only"},
)
def judge_track_differences(ctx: StoryContext) -> AnalysisResult:
    ctx.need_systems(2)
    table, cfg = ctx.table, ctx.config
    panels = judge_track_panels(table)
    if not panels:
        raise Skip("no judge track has a valid score")
    key = _interval_key(cfg.level)
    tracks = {
        t: {
            "judges": list(jt.judges),
            **track_differences(
                panel,
                table.systems,
                draws=cfg.bootstrap_draws,
                seed=cfg.seed,
                level=cfg.level,
                chunk_elements=cfg.chunk_elements,
            ),
        }
        for t, (jt, panel) in panels.items()
    }
    out: dict[str, Any] = {
        "policy": "valid_only",
        "draws": cfg.bootstrap_draws,
        "seed": cfg.seed,
        "level": cfg.level,
        "n_instances": table.n_instances,
        "tracks": tracks,
    }
    shown = {t: [p for p in v["pairs"] if p[key] is not None] for t, v in tracks.items()}
    shown = {t: ps for t, ps in shown.items() if ps}
    if not shown:
        return AnalysisResult(out)

    def plot(path: Path) -> None:
        most = max(len(ps) for ps in shown.values())
        size = (4.2 * len(shown), max(2.5, 0.22 * most + 1.0))
        with figure(path, ncols=len(shown), size=size) as (_fig, axes):
            for ax, (t, ps) in zip(axes[0], shown.items(), strict=True):
                y = np.arange(len(ps))[::-1]
                colors = ["tab:blue" if p["above_zero"] else "tab:gray" for p in ps]
                # Lines rather than error bars: a point estimate may lie outside its percentile interval.
                ax.hlines(y, [p[key][0] for p in ps], [p[key][1] for p in ps], colors=colors, lw=1.2)
                ax.scatter([p["difference"] for p in ps], y, c=colors, s=9, zorder=3)
                ax.axvline(0.0, color="black", lw=0.6)
                ax.set_yticks(y, [f"{p['a']} - {p['b']}" for p in ps], fontsize=6)
                ax.set_title(f"judge.{t}", fontsize=9)
                ax.set_xlabel(f"panel-score difference, {round(cfg.level * 100)}% interval", fontsize=8)

    return AnalysisResult(out, {"": plot})
