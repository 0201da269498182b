"""Sensitivity of the leaderboard (appendix F.4 and F.8): zero-filling, aggregation rules, weights,
internal duplicates."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from omnieval.analysis import AnalysisResult, FloatArray, Skip, figure, pearson_rows, rank_desc, rankdata
from omnieval.benchmarks.storybench._aggregate import policy_scores
from omnieval.benchmarks.storybench._analyses._context import StoryContext, story_analysis
from omnieval.benchmarks.storybench._names import AUTOMATIC, JUDGE, MODALITY_COMPONENTS, POLICIES
from omnieval.benchmarks.storybench._rankings import compare_rankings, ranking
from omnieval.errors import DataError

# ---------------------------------------------------------------------------------------------
# Zero-filled scoring (F.4)


@story_analysis(
    "zero_filled_sensitivity", summary="valid-only vs zero-filled Total Average: rank changes and agreement"
)
def zero_filled_sensitivity(ctx: StoryContext) -> AnalysisResult:
    ctx.need_systems(2)
    systems = ctx.table.systems
    vo, zf = ctx.policy("valid_only").total, ctx.policy("zero_filled").total
    rv, rz = rank_desc(vo, "min"), rank_desc(zf, "min")
    agg = ctx.aggregate
    per_system = {}
    for k, s in enumerate(systems):
        comp = agg.completeness(s)
        per_system[s] = {
            "valid_only": vo[k],
            "zero_filled": zf[k],
            "delta": zf[k] - vo[k],
            "rank_valid_only": int(rv[k]),
            "rank_zero_filled": int(rz[k]),
            "rank_change": int(rv[k] - rz[k]),
            "missing_outputs": {m: v["missing"] for m, v in comp["outputs"].items()},
        }
    deltas = zf - vo
    worst = int(np.nanargmin(deltas)) if np.isfinite(deltas).any() else None
    groups = {}
    for g, members in ctx.config.system_groups.items():
        mask = np.isin(np.array(systems, dtype=object), list(members))
        if mask.any():
            groups[g] = {
                "n": int(mask.sum()),
                "valid_only": float(np.nanmean(vo[mask])),
                "zero_filled": float(np.nanmean(zf[mask])),
                "delta": float(np.nanmean(zf[mask]) - np.nanmean(vo[mask])),
            }
    out = {
        "n_instances": ctx.table.n_instances,
        "mean_valid_only": float(np.nanmean(vo)),
        "mean_zero_filled": float(np.nanmean(zf)),
        "agreement": compare_rankings(systems, vo, zf, ctx.config.top_k),
        "largest_decrease": None
        if worst is None
        else {"system": systems[worst], "delta": float(deltas[worst])},
        "lowest_valid_only": ranking(systems, vo)[-1]["system"],
        "lowest_zero_filled": ranking(systems, zf)[-1]["system"],
        "systems": per_system,
        "groups": groups,
    }

    def plot(path: Path) -> None:
        with figure(path, size=(5.2, 4.6)) as (_fig, axes):
            ax = axes[0][0]
            ax.scatter(vo, zf, s=14)
            lo, hi = float(np.nanmin([vo, zf])), float(np.nanmax([vo, zf]))
            ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8)
            ax.set_xlabel("Total Average, valid-only")
            ax.set_ylabel("Total Average, zero-filled")

    return AnalysisResult(out, {"": plot})


# ---------------------------------------------------------------------------------------------
# Aggregation rules and covariance shares (F.8)


def _complete_matrix(ctx: StoryContext) -> tuple[list[str], tuple[str, ...], FloatArray]:
    ps = ctx.policy("valid_only")
    names = ps.covered
    if len(names) < 2:
        raise Skip(f"needs at least two computed components; computed: {list(names)}")
    x = ps.scaled(names)
    keep = np.asarray(np.isfinite(x).all(axis=1))
    systems = [s for s, k in zip(ctx.table.systems, keep, strict=True) if k]
    if len(systems) < 3:
        raise Skip("needs at least 3 systems with every computed component")
    return systems, names, x[keep]


def covariance_shares(x: FloatArray) -> FloatArray:
    """``c_k = Cov(X_k, T) / (K Var T)`` with ``T`` the row mean of ``x`` (``(S, K)``); sums to 1."""
    t = x.mean(axis=1)
    k = x.shape[1]
    cov = ((x - x.mean(axis=0)) * (t - t.mean())[:, None]).sum(axis=0) / (x.shape[0] - 1)
    shares: FloatArray = cov / (k * t.var(ddof=1))
    return shares


def alternative_rules(names: Sequence[str], x: FloatArray) -> dict[str, FloatArray]:
    """Alternative aggregates of the ``(S, K)`` scaled components (higher is better for all).

    Four families (automatic and judge averaged within each unimodal family), automatic-only,
    judge-only, z-score and min-max normalised means across systems, negated mean rank, and every
    leave-one-component-out mean.
    """
    col = {c: x[:, k] for k, c in enumerate(names)}
    out: dict[str, FloatArray] = {}
    families = []
    for parts in MODALITY_COMPONENTS.values():
        present = [col[c] for c in parts if c in col]
        if present:
            families.append(np.mean(present, axis=0))
    if "judge.integrated" in col:
        families.append(col["judge.integrated"])
    out["four_families"] = np.mean(families, axis=0)
    auto = [col[c] for c in names if c in AUTOMATIC]
    judge = [col[c] for c in names if c in JUDGE]
    if auto:
        out["automatic_only"] = np.mean(auto, axis=0)
    if judge:
        out["judge_only"] = np.mean(judge, axis=0)
    sd = x.std(axis=0, ddof=1)
    z = np.where(sd > 0, (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)
    out["z_score"] = z.mean(axis=1)
    span = x.max(axis=0) - x.min(axis=0)
    out["min_max"] = np.where(span > 0, (x - x.min(axis=0)) / np.where(span > 0, span, 1.0), 0.0).mean(axis=1)
    out["mean_rank"] = -rank_desc(x.T, "average").T.mean(axis=1)
    for k, c in enumerate(names):
        out[f"leave_out.{c}"] = np.delete(x, k, axis=1).mean(axis=1)
    return out


@story_analysis(
    "aggregation_sensitivity",
    summary="covariance shares of the Total Average and alternative aggregation rules with rank agreement",
)
def aggregation_sensitivity(ctx: StoryContext) -> AnalysisResult:
    systems, names, x = _complete_matrix(ctx)
    total = x.mean(axis=1)
    shares = covariance_shares(x)
    components = {
        c: {
            "min": float(x[:, k].min()),
            "max": float(x[:, k].max()),
            "sd": float(x[:, k].std(ddof=1)),
            "covariance_share": float(shares[k]),
        }
        for k, c in enumerate(names)
    }
    judge_share = float(sum(shares[k] for k, c in enumerate(names) if c in JUDGE))
    rules = {
        rule: {
            **compare_rankings(systems, total, score, ctx.config.top_k),
            "scores": dict(zip(systems, score, strict=True)),
        }
        for rule, score in alternative_rules(names, x).items()
    }
    out = {
        "n_systems": len(systems),
        "components": components,
        "judge_share": judge_share,
        "original_ranking": ranking(systems, total),
        "rules": rules,
        "spearman_range": [
            min(r["spearman"] for r in rules.values()),
            max(r["spearman"] for r in rules.values()),
        ],
    }

    def plot(path: Path) -> None:
        with figure(path, ncols=2, size=(11.0, 4.0)) as (_fig, axes):
            ax = axes[0][0]
            ax.bar(list(names), shares)
            ax.set_title("covariance share of Total Average variance", fontsize=9)
            ax.tick_params(axis="x", rotation=45, labelsize=7)
            ax = axes[0][1]
            ax.barh(list(rules), [r["spearman"] for r in rules.values()])
            ax.set_xlabel("Spearman rho with the equal-weight ranking")
            ax.tick_params(axis="y", labelsize=7)

    return AnalysisResult(out, {"": plot})


# ---------------------------------------------------------------------------------------------
# Continuous weight sweeps (F.8)


def weight_sweep(systems: Sequence[str], x: FloatArray, weights: FloatArray) -> dict[str, Any]:
    """Winners and rank agreement of weighted totals ``x @ w`` for every row of ``weights`` (``(D, K)``)."""
    total = x.mean(axis=1)
    scores = weights @ x.T  # (D, S)
    winners = np.argmax(scores, axis=1)
    shares = np.bincount(winners, minlength=len(systems)) / weights.shape[0]
    base_rank = rankdata(total)
    rho = pearson_rows(rankdata(scores), np.broadcast_to(base_rank, scores.shape))
    original = int(np.argmax(total))
    return {
        "draws": int(weights.shape[0]),
        "original_winner": systems[original],
        "original_winner_share": float(shares[original]),
        "win_share": {
            systems[k]: float(shares[k]) for k in np.argsort(-shares, kind="stable") if shares[k] > 0
        },
        "spearman_median": float(np.median(rho)),
        "spearman_p05": float(np.percentile(rho, 5)),
        "spearman_p95": float(np.percentile(rho, 95)),
    }


@story_analysis(
    "weight_sweeps",
    summary="Dirichlet(1..1) and bounded-uniform component-weight sweeps: win shares and rank agreement",
    params=lambda c: {
        "dirichlet_draws": c.dirichlet_draws,
        "dirichlet_seed": c.dirichlet_seed,
        "uniform_draws": c.uniform_draws,
        "uniform_seed": c.uniform_seed,
        "uniform_low": c.uniform_low,
        "uniform_high": c.uniform_high,
    },
)
def weight_sweeps(ctx: StoryContext) -> AnalysisResult:
    systems, names, x = _complete_matrix(ctx)
    cfg = ctx.config
    k = len(names)
    dirichlet = np.random.default_rng(cfg.dirichlet_seed).dirichlet(np.ones(k), size=cfg.dirichlet_draws)
    raw = np.random.default_rng(cfg.uniform_seed).uniform(
        cfg.uniform_low, cfg.uniform_high, size=(cfg.uniform_draws, k)
    )
    uniform = raw / raw.sum(axis=1, keepdims=True)
    out: dict[str, Any] = {
        "components": list(names),
        "n_systems": len(systems),
        "dirichlet": weight_sweep(systems, x, dirichlet),
        "uniform": weight_sweep(systems, x, uniform),
    }

    def plot(path: Path) -> None:
        with figure(path, ncols=2, size=(11.0, 4.0)) as (_fig, axes):
            for ax, key in zip(axes[0], ("dirichlet", "uniform"), strict=True):
                shares = out[key]["win_share"]
                ax.bar(list(shares), list(shares.values()))
                ax.set_title(f"{key}: share of draws won", fontsize=9)
                ax.tick_params(axis="x", rotation=60, labelsize=7)

    return AnalysisResult(out, {"": plot})


# ---------------------------------------------------------------------------------------------
# Internal duplicates


def read_duplicate_clusters(path: Path) -> list[list[str]]:
    """Clusters of instance ids from a JSON file.

    Accepted shapes: ``[[id, ...], ...]``, ``{"clusters": [[id, ...], ...]}`` or
    ``{"clusters": [{"members": [id, ...]}, ...]}`` (``instance_ids`` or ``ids`` also accepted).
    """
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: cannot read duplicate clusters: {exc}") from None
    raw = doc.get("clusters") if isinstance(doc, Mapping) else doc
    if not isinstance(raw, list):
        raise DataError(f"{path}: expected a list of clusters or {{'clusters': [...]}}")
    clusters = []
    for k, c in enumerate(raw):
        members = c
        if isinstance(c, Mapping):
            members = next((c[key] for key in ("members", "instance_ids", "ids") if key in c), None)
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise DataError(f"{path}: cluster {k} is not a list of instance ids")
        clusters.append(list(members))
    return clusters


def duplicate_clusters_file(ctx: StoryContext) -> tuple[Path, str]:
    """The clusters file to use and where it came from (``config`` or ``audit``).

    An explicit file (``--duplicates``, the analysis config's ``duplicates``) wins; without one, the
    output of ``omnieval audit`` under ``state/audit/*/clusters.json`` whose audited instances cover
    this table's (:func:`omnieval.audit.find_audit_clusters`).
    """
    from omnieval.audit import find_audit_clusters

    if ctx.config.duplicates is not None:
        return ctx.config.duplicates, "config"
    found = find_audit_clusters(ctx.table.instances)
    if found.path is None:
        raise Skip(f"no duplicate clusters given (--duplicates CLUSTERS.json) and {found.reason}")
    return found.path, "audit"


@story_analysis(
    "duplicate_sensitivity",
    summary="rankings after dropping internal-duplicate clusters",
    inputs=("duplicates",),
)
def duplicate_sensitivity(ctx: StoryContext) -> AnalysisResult:
    path, source = duplicate_clusters_file(ctx)
    ctx.need_systems(2)
    clusters = [c for c in read_duplicate_clusters(path) if len(c) >= 2]
    if not clusters:
        raise Skip(f"the clusters file {path} holds no cluster with two or more members")
    pos = {iid: k for k, iid in enumerate(ctx.table.instances)}
    known = [[pos[i] for i in c if i in pos] for c in clusters]
    unknown = sum(1 for c in clusters for i in c if i not in pos)
    flagged = sorted({k for c in known if len(c) >= 2 for k in c})
    if not flagged:
        raise Skip("no cluster has two or more members among this table's instances")
    modes = {
        "drop_all": np.isin(np.arange(ctx.table.n_instances), flagged, invert=True),
        "keep_one": np.isin(
            np.arange(ctx.table.n_instances),
            [k for c in known if len(c) >= 2 for k in sorted(c)[1:]],
            invert=True,
        ),
    }
    out: dict[str, Any] = {
        "clusters_file": str(path),
        "clusters_source": source,
        "n_clusters": len(clusters),
        "n_flagged_instances": len(flagged),
        "ids_not_in_table": unknown,
        "modes": {},
    }
    for mode, keep in modes.items():
        sub = ctx.table.subset_instances(keep)
        res: dict[str, Any] = {"n_instances": sub.n_instances, "n_removed": int((~keep).sum())}
        for policy in POLICIES:
            base = ctx.policy(policy).total
            new = policy_scores(sub, policy).total
            res[policy] = {
                **compare_rankings(ctx.table.systems, base, new, ctx.config.top_k),
                "totals": dict(zip(ctx.table.systems, new, strict=True)),
                "max_abs_change": float(np.nanmax(np.abs(new - base))),
            }
        out["modes"][mode] = res
    return AnalysisResult(out)
