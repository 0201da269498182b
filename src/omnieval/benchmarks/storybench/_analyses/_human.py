"""Human evaluation vs LLM judges (appendix F.5), from a Label Studio JSON export.

Expected export (Label Studio's "JSON" export, one task per item): each task's ``data`` holds
``system``, ``instance_id`` and ``track`` (``text``, ``image``, ``speech``, ``integrated``; ``joint``
is accepted for integrated); each annotation's ``result`` holds one rating per rubric key
(``from_name`` = the criterion key of PROTOCOLS.md, ``value`` = ``{"rating": n}``,
``{"number": n}`` or ``{"choices": ["n"]}`` with n in 1..10). An annotation with all four criteria
is a scored evaluation; cancelled or empty ones count as skipped; others as incomplete.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from omnieval.analysis import (
    AnalysisResult,
    FloatArray,
    Skip,
    kendall_tau_b,
    krippendorff_alpha_ordinal,
    pearson,
    spearman,
)
from omnieval.benchmarks._human_tasks import (
    annotator,
    export_tasks,
    load_json,
    rating,
    submitted_annotations,
)
from omnieval.benchmarks.storybench._aggregate import policy_scores
from omnieval.benchmarks.storybench._analyses._context import StoryContext, story_analysis
from omnieval.benchmarks.storybench._names import RUBRICS, TRACKS
from omnieval.errors import DataError

_TRACK_ALIASES = {"joint": "integrated", "omni": "integrated"}


@dataclass(frozen=True)
class HumanEvaluation:
    """One annotator's four rubric scores (1-10) for one (system, instance, track) item."""

    annotator: str
    system: str
    instance_id: str
    track: str
    scores: Mapping[str, int]

    @property
    def mean(self) -> float:
        return float(np.mean(list(self.scores.values())))


@dataclass(frozen=True)
class HumanRatings:
    """Parsed export: scored evaluations and the counts of everything submitted."""

    evaluations: tuple[HumanEvaluation, ...]
    submitted: int
    skipped: int
    incomplete: int


def _score(value: Any, where: str) -> int | None:
    if not isinstance(value, Mapping):
        return None
    score = rating(value, where, keys=("rating", "number"), noun="rating", low=1, high=10)
    return None if score is None else int(score)


def read_label_studio(path: Path) -> HumanRatings:
    """Parse a Label Studio JSON export into human evaluations (see the module docstring)."""
    tasks = export_tasks(load_json(path, "Label Studio export"), str(path))
    evaluations: list[HumanEvaluation] = []
    counts = {"annotations": 0, "skipped": 0, "incomplete": 0}
    problems: list[str] = []
    for t_idx, task in enumerate(tasks):
        data = task.get("data", {}) if isinstance(task, Mapping) else {}
        where = f"{path}: task {task.get('id', t_idx) if isinstance(task, Mapping) else t_idx}"
        missing = [k for k in ("system", "instance_id", "track") if not isinstance(data.get(k), str)]
        if missing:
            problems.append(f"{where}: data lacks {', '.join(missing)}")
            continue
        track = _TRACK_ALIASES.get(data["track"].lower(), data["track"].lower())
        if track not in RUBRICS:
            problems.append(f"{where}: unknown track {data['track']!r}; known: {list(TRACKS)}")
            continue
        for ann, a_where, results in submitted_annotations(task, where, counts):
            scores: dict[str, int] = {}
            for res in results:
                key = res.get("from_name")
                score = _score(res.get("value"), a_where)
                if score is None:
                    continue  # comments and other non-rating results
                if key not in RUBRICS[track]:
                    problems.append(
                        f"{a_where}: rating {key!r} is not a {track} criterion ({list(RUBRICS[track])})"
                    )
                    continue
                scores[key] = score
            if len(scores) != len(RUBRICS[track]):
                counts["incomplete"] += 1
                continue
            evaluations.append(
                HumanEvaluation(annotator(ann, a_where), data["system"], data["instance_id"], track, scores)
            )
    if problems:
        raise DataError(f"{path}: invalid Label Studio export", problems)
    return HumanRatings(tuple(evaluations), counts["annotations"], counts["skipped"], counts["incomplete"])


def _corr(xs: FloatArray, ys: FloatArray) -> dict[str, Any]:
    ok = np.isfinite(xs) & np.isfinite(ys)
    x, y = xs[ok], ys[ok]
    if x.size < 3:
        return {"n": int(x.size)}
    sp, kt, pe = spearman(x, y), kendall_tau_b(x, y), pearson(x, y)
    return {
        "n": int(x.size),
        "spearman": sp.r,
        "spearman_p": sp.p,
        "kendall_tau_b": kt.r,
        "kendall_p": kt.p,
        "pearson": pe.r,
        "pearson_p": pe.p,
    }


def human_means(
    evaluations: Sequence[HumanEvaluation], systems: Sequence[str], track: str, criterion: str | None = None
) -> FloatArray:
    """Per-system human mean ``(S,)`` on ``track`` (each evaluation weighted equally; NaN = unrated)."""
    acc: dict[str, list[float]] = defaultdict(list)
    for e in evaluations:
        if e.track == track:
            acc[e.system].append(e.mean if criterion is None else float(e.scores[criterion]))
    return np.array([np.mean(acc[s]) if acc.get(s) else np.nan for s in systems])


def _composite(parts: Sequence[FloatArray]) -> FloatArray:
    stacked = np.stack(parts, axis=1)
    return np.where(np.isfinite(stacked).all(axis=1), stacked.mean(axis=1), np.nan)


def alpha_by_criterion(evaluations: Sequence[HumanEvaluation], track: str) -> dict[str, float]:
    """Ordinal Krippendorff alpha per rubric criterion (units = rated items, coders = annotators)."""
    evs = [e for e in evaluations if e.track == track]
    units = sorted({(e.system, e.instance_id) for e in evs})
    coders = sorted({e.annotator for e in evs})
    u_pos = {u: k for k, u in enumerate(units)}
    c_pos = {c: k for k, c in enumerate(coders)}
    out = {}
    for crit in RUBRICS[track]:
        data = np.full((len(coders), len(units)), np.nan)
        for e in evs:
            data[c_pos[e.annotator], u_pos[(e.system, e.instance_id)]] = e.scores[crit]
        out[crit] = krippendorff_alpha_ordinal(data)
    return out


@story_analysis(
    "human_agreement",
    summary="human ratings (Label Studio) vs three-judge means: rank agreement, LOTO, alpha",
    inputs=("humans",),
)
def human_agreement(ctx: StoryContext) -> AnalysisResult:
    if ctx.config.humans is None:
        raise Skip("no human ratings given (--humans LABEL_STUDIO_EXPORT.json)")
    ratings = read_label_studio(ctx.config.humans)
    systems = ctx.table.systems
    known = set(systems)
    evs = [e for e in ratings.evaluations if e.system in known]
    if not evs:
        raise Skip("no scored human evaluation names a system of this scores table")
    ps = ctx.policy("valid_only")
    rated_tracks = [t for t in TRACKS if any(e.track == t for e in evs)]
    compared = [t for t in rated_tracks if t in ctx.table.judges]
    counts: dict[str, Any] = {
        "submitted": ratings.submitted,
        "scored": len(ratings.evaluations),
        "skipped": ratings.skipped,
        "incomplete": ratings.incomplete,
        "unknown_systems": sorted({e.system for e in ratings.evaluations} - known),
        "per_track": {t: sum(1 for e in evs if e.track == t) for t in rated_tracks},
    }
    human = {t: human_means(evs, systems, t) for t in rated_tracks}
    judge = {t: ps.components[f"judge.{t}"] for t in compared}
    # Read only where a track is compared (composite, paradigm tiers).
    judge_composite = _composite([judge[t] for t in compared]) if compared else np.full(len(systems), np.nan)

    def agreement_of(means: Mapping[str, FloatArray]) -> dict[str, Any]:
        """Per compared track, and their composite when there are two or more: human vs judges."""
        out = {t: _corr(means[t], judge[t]) for t in compared}
        if len(compared) >= 2:
            out["composite"] = _corr(_composite([means[t] for t in compared]), judge_composite)
        return out

    agreement = agreement_of(human)
    by_criterion = {
        t: {
            c: _corr(human_means(evs, systems, t, c), ps.per_criterion[t][:, k])
            for k, c in enumerate(ctx.table.judges[t].criteria)
        }
        for t in compared
    }
    # Leave one transition of the human window out; the automated comparator stays fixed.
    window = sorted({e.instance_id for e in evs})
    loto: dict[str, Any] = {}
    if len(window) >= 2:
        runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for held_out in window:
            rest = [e for e in evs if e.instance_id != held_out]
            for t, run in agreement_of({t: human_means(rest, systems, t) for t in compared}).items():
                runs[t].append(run)
        for t, rs in runs.items():
            loto[t] = {
                key: [min(r[key] for r in rs if key in r), max(r[key] for r in rs if key in r)]
                for key in ("spearman", "kendall_tau_b", "pearson", "n")
                if any(key in r for r in rs)
            }
    alpha = {t: alpha_by_criterion(evs, t) for t in rated_tracks}
    alpha_range = {
        t: [min(v for v in a.values() if math.isfinite(v)), max(v for v in a.values() if math.isfinite(v))]
        if any(math.isfinite(v) for v in a.values())
        else None
        for t, a in alpha.items()
    }
    # The same three-judge scores restricted to the human window.
    pos = {iid: k for k, iid in enumerate(ctx.table.instances)}
    in_window = np.zeros(ctx.table.n_instances, dtype=bool)
    in_window[[pos[i] for i in window if i in pos]] = True
    window_check: dict[str, Any] = {"n_transitions": int(in_window.sum())}
    if in_window.any():
        sub = policy_scores(ctx.table.subset_instances(in_window), "valid_only")
        window_check["window_vs_full"] = {
            **{t: _corr(sub.components[f"judge.{t}"], judge[t]) for t in compared},
            "total_average": _corr(sub.total, ps.total),
        }
        window_check["human_vs_window_judges"] = {
            t: _corr(human[t], sub.components[f"judge.{t}"]) for t in compared
        }
    tiers: dict[str, Any] = {}
    if ctx.config.system_groups and len(compared) >= 1:
        composite = {
            "human": _composite([human[t] for t in compared]),
            "judges": judge_composite,
        }
        for g, members in ctx.config.system_groups.items():
            mask = np.isin(np.array(systems, dtype=object), list(members))
            tiers[g] = {
                who: float(np.nanmean(v[mask])) if np.isfinite(v[mask]).any() else None
                for who, v in composite.items()
            }
        tiers = {
            "groups": tiers,
            **{
                f"order_{who}": sorted(
                    (g for g in tiers if tiers[g][who] is not None), key=lambda g: -tiers[g][who]
                )
                for who in composite
            },
        }
    out = {
        "counts": counts,
        "tracks_compared": compared,
        "tracks_without_judges": [t for t in rated_tracks if t not in compared],
        "human_means": {t: dict(zip(systems, human[t], strict=True)) for t in rated_tracks},
        "agreement": agreement,
        "agreement_by_criterion": by_criterion,
        "leave_one_transition_out": loto,
        "krippendorff_alpha_ordinal": alpha,
        "krippendorff_alpha_range": alpha_range,
        "window": window_check,
        "paradigm_tiers": tiers or None,
    }
    return AnalysisResult(out)
