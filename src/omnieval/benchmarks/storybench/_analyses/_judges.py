"""Agreement across LLM judges (appendix F.6): system rankings, item-level agreement, calibration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from omnieval.analysis import AnalysisResult, FloatArray, Skip, figure, kendall_tau_b, pearson, spearman
from omnieval.benchmarks.storybench._analyses._context import StoryContext, story_analysis
from omnieval.benchmarks.storybench._names import AUTOMATIC, TRACKS
from omnieval.benchmarks.storybench._rankings import compare_rankings
from omnieval.benchmarks.storybench._table import JudgeTrack, _nanmean


def judge_pair_agreement(jt: JudgeTrack, a: int, b: int) -> dict[str, Any]:
    """System-level and item-level agreement of judges ``a`` and ``b`` of one track (valid-only)."""
    ex = jt.example  # (S, n, J)
    ma, mb = _nanmean(ex[:, :, a], axis=1), _nanmean(ex[:, :, b], axis=1)
    ok = np.isfinite(ma) & np.isfinite(mb)
    joint = np.isfinite(ex[:, :, a]) & np.isfinite(ex[:, :, b])
    ja = _nanmean(np.where(joint, ex[:, :, a], np.nan), axis=1)
    jb = _nanmean(np.where(joint, ex[:, :, b], np.nan), axis=1)
    jok = np.isfinite(ja) & np.isfinite(jb)
    out: dict[str, Any] = {"judges": [jt.judges[a], jt.judges[b]], "n_systems": int(ok.sum())}
    if ok.sum() >= 3:
        sp, kt = spearman(ma[ok], mb[ok]), kendall_tau_b(ma[ok], mb[ok])
        out["system_spearman"] = sp.r
        out["system_spearman_p"] = sp.p
        out["system_kendall_tau_b"] = kt.r
        out["system_kendall_p"] = kt.p
    if jok.sum() >= 3:
        out["system_spearman_jointly_valid"] = spearman(ja[jok], jb[jok]).r
    xa, xb = ex[:, :, a][joint], ex[:, :, b][joint]
    out["n_items"] = int(joint.sum())
    if xa.size >= 3:
        sp = spearman(xa, xb)
        out["item_spearman"] = sp.r
        out["item_spearman_p"] = sp.p
        out["item_pearson"] = pearson(xa, xb).r
        out["item_mae"] = float(np.abs(xa - xb).mean())
        out["item_mean_difference"] = float((xa - xb).mean())
    return out


def _calibration(per_judge: FloatArray, judges: tuple[str, ...]) -> dict[str, Any]:
    out = {}
    for k, j in enumerate(judges):
        v = per_judge[:, k]
        v = v[np.isfinite(v)]
        out[j] = {
            "mean": float(v.mean()) if v.size else None,
            "between_system_sd": float(v.std(ddof=1)) if v.size > 1 else None,
            "n_systems": int(v.size),
        }
    return out


def _panel_scores(ctx: StoryContext) -> dict[str, dict[str, FloatArray]]:
    """Per panel: the four-track composite and the panel-specific Total Average, ``(S,)`` each."""
    ps = ctx.policy("valid_only")
    out: dict[str, dict[str, FloatArray]] = {}
    auto = [ps.components[c] * 10.0 for c in AUTOMATIC if c in ps.components]
    for panel, by_track in ctx.config.panels.items():
        judge_scores = []
        for track, judge in by_track.items():
            jt = ctx.table.judges.get(track)
            if jt is None:
                continue
            if judge not in jt.judges:
                raise Skip(
                    f"panel {panel!r} names judge {judge!r} for track {track!r}; known: {list(jt.judges)}"
                )
            judge_scores.append(ps.per_judge[track][:, jt.judges.index(judge)])
        if not judge_scores:
            continue
        out[panel] = {
            "composite": _nanmean(np.stack(judge_scores, axis=1), axis=1),
            "total_average": _nanmean(np.stack(auto + judge_scores, axis=1), axis=1),
        }
    return out


@story_analysis(
    "inter_judge",
    summary="agreement across judges: system rankings, item-level Spearman and MAE, calibration",
)
def inter_judge(ctx: StoryContext) -> AnalysisResult:
    ctx.need_systems(2)
    tracks: dict[str, Any] = {}
    ps = ctx.policy("valid_only")
    for t in TRACKS:
        jt = ctx.table.judges.get(t)
        if jt is None:
            continue
        entry: dict[str, Any] = {
            "judges": list(jt.judges),
            "calibration": _calibration(ps.per_judge[t], jt.judges),
        }
        entry["pairs"] = [
            judge_pair_agreement(jt, a, b)
            for a in range(len(jt.judges))
            for b in range(a + 1, len(jt.judges))
        ]
        tracks[t] = entry
    if not any(len(e["judges"]) >= 2 for e in tracks.values()):
        raise Skip("no judge track has two or more judges")
    out: dict[str, Any] = {"tracks": tracks}
    panels = _panel_scores(ctx) if ctx.config.panels else {}
    if panels:
        names = list(panels)
        comparisons = []
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                for what in ("composite", "total_average"):
                    comparisons.append(
                        {
                            "panels": [a, b],
                            "score": what,
                            **compare_rankings(
                                ctx.table.systems, panels[a][what], panels[b][what], ctx.config.top_k
                            ),
                        }
                    )
        out["panels"] = {
            "members": ctx.config.panels,
            "scores": {
                p: {k: dict(zip(ctx.table.systems, v, strict=True)) for k, v in d.items()}
                for p, d in panels.items()
            },
            "comparisons": comparisons,
        }
    else:
        out["panels"] = None
        out["note"] = "panel composites need AnalysisConfig.panels (panel -> track -> judge id)"

    def plot(path: Path) -> None:
        shown = [t for t in tracks if len(tracks[t]["judges"]) >= 1]
        with figure(path, ncols=len(shown), size=(3.2 * len(shown), 3.4)) as (_fig, axes):
            for ax, t in zip(axes[0], shown, strict=True):
                cal = tracks[t]["calibration"]
                names = list(cal)
                means = [cal[j]["mean"] or 0.0 for j in names]
                sds = [cal[j]["between_system_sd"] or 0.0 for j in names]
                ax.bar(range(len(names)), means, yerr=sds, capsize=3)
                ax.set_xticks(range(len(names)), names, rotation=45, fontsize=7)
                ax.set_ylim(1, 10)
                ax.set_title(f"{t}: judge mean ± between-system SD", fontsize=8)

    return AnalysisResult(out, {"": plot})
