"""The vectorised paired bootstrap against a plain per-resample pandas computation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from omnieval.benchmarks.storybench._aggregate import aggregate
from omnieval.benchmarks.storybench._analyses._bootstrap import (
    bootstrap_draws,
    modality_associations,
    summarize,
)
from omnieval.benchmarks.storybench._names import AUTOMATIC
from omnieval.benchmarks.storybench._table import build_table
from omnieval_testkit.storybench_synthetic import make_scores


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return make_scores(
        benchmark="storybench", n_systems=6, n_instances=30, missing_rate=0.08, invalid_rate=0.08, seed=5
    )


def _weighted_totals(frame: pd.DataFrame, weights: pd.Series) -> pd.Series:
    """Valid-only Total Average where instance i counts ``weights[i]`` times (plain pandas)."""
    f = frame.merge(weights.rename("w").reset_index(), on="instance_id")
    f = f[f["w"] > 0]
    valued = f[f["status"].isin(["ok", "repaired"])]
    comps: dict[str, pd.Series] = {}
    for comp in ("bertscore_f1", "image_similarity"):
        v = valued[valued["component"] == comp]
        comps[comp] = (v["value"] * v["w"]).groupby(v["system"]).sum() / v.groupby("system")["w"].sum()
    sm = valued[valued["component"] == "speech_meta"]
    per = sm.groupby(["system", "instance_id"]).agg(v=("value", "mean"), w=("w", "first")).reset_index()
    comps["speech_meta_accuracy"] = (per["v"] * per["w"]).groupby(per["system"]).sum() / per.groupby(
        "system"
    )["w"].sum()
    j = f[f["component"] == "judge"].assign(ok=lambda d: d["status"].isin(["ok", "repaired"]))
    rec = j.groupby(["system", "instance_id", "track", "judge"]).agg(
        n=("ok", "sum"), v=("value", "mean"), w=("w", "first")
    )
    rec = rec[rec["n"] == 4].reset_index()
    rec["vw"] = rec["v"] * rec["w"]
    per_judge = rec.groupby(["system", "track", "judge"])[["vw", "w"]].sum()
    per_judge = per_judge["vw"] / per_judge["w"]
    tracks = per_judge.groupby(level=["system", "track"]).mean().unstack("track")
    table = pd.DataFrame(comps)
    for c in AUTOMATIC:
        table[c] *= 10
    for t in tracks.columns:
        table[f"judge.{t}"] = tracks[t]
    return table.mean(axis=1)


def test_point_estimate_equals_aggregate(frame: pd.DataFrame) -> None:
    table = build_table(frame)
    agg = aggregate(frame).to_dict()["systems"]
    for policy in ("valid_only", "zero_filled"):
        boot = bootstrap_draws(table, draws=3, seed=0, policy=policy)
        expected = [agg[s][policy]["total_average"] for s in table.systems]
        np.testing.assert_allclose(boot.point_totals, expected, rtol=1e-12)


def test_draws_match_plain_pandas_resampling(frame: pd.DataFrame) -> None:
    table = build_table(frame)
    draws, seed = 4, 123
    boot = bootstrap_draws(table, draws=draws, seed=seed)
    rng = np.random.default_rng(seed)
    for b in range(draws):
        idx = rng.integers(0, table.n_instances, size=table.n_instances)
        counts = np.bincount(idx, minlength=table.n_instances)
        weights = pd.Series(counts, index=pd.Index(table.instances, name="instance_id"))
        expected = _weighted_totals(frame, weights)
        np.testing.assert_allclose(boot.totals[b], expected.loc[list(table.systems)].to_numpy(), rtol=1e-10)


def test_seed_reproduces_and_chunking_does_not_matter(frame: pd.DataFrame) -> None:
    table = build_table(frame)
    a = bootstrap_draws(table, draws=37, seed=9, chunk_elements=10_000)
    b = bootstrap_draws(table, draws=37, seed=9, chunk_elements=5_000_000)
    np.testing.assert_array_equal(a.totals, b.totals)
    for m in a.modality:
        np.testing.assert_array_equal(a.modality[m], b.modality[m])
    c = bootstrap_draws(table, draws=37, seed=10)
    assert not np.array_equal(a.totals, c.totals)


def test_summary_intervals_holm_and_leader(frame: pd.DataFrame) -> None:
    from scipy import stats
    from statsmodels.stats import multitest

    table = build_table(frame)
    boot = bootstrap_draws(table, draws=300, seed=1)
    out = summarize(table.systems, boot, level=0.95, alpha=0.05)
    assert len(out["pairs"]) == 15
    p = np.array([e["p"] for e in out["pairs"]])
    np.testing.assert_allclose(
        [e["p_holm"] for e in out["pairs"]], multitest.multipletests(p, method="holm")[1]
    )
    first = out["pairs"][0]
    a, b = table.systems.index(first["a"]), table.systems.index(first["b"])
    d = boot.totals[:, a] - boot.totals[:, b]
    assert first["se"] == pytest.approx(np.std(d, ddof=1))
    assert first["p"] == pytest.approx(2 * stats.norm.sf(abs(first["difference"] / first["se"])))
    assert first["ci95"] == pytest.approx(np.percentile(d, [2.5, 97.5]).tolist())
    lead = out["leader"]
    assert lead["system"] == out["ranking"][0] and lead["runner_up"] == out["ranking"][1]
    ranks = (-boot.totals).argsort(axis=1).argsort(axis=1) + 1
    li = table.systems.index(lead["system"])
    assert lead["share_leader_ranks_first"] == pytest.approx((ranks[:, li] == 1).mean())
    for s, e in out["systems"].items():
        lo, hi = e["rank_interval"]
        assert lo <= e["rank"] <= hi, s
        assert e["ci95"][0] <= e["total_average"] <= e["ci95"][1], s


def test_modality_association_intervals(frame: pd.DataFrame) -> None:
    table = build_table(frame)
    boot = bootstrap_draws(table, draws=50, seed=2)
    rows = modality_associations(boot)
    assert {(r["x"], r["y"], tuple(r["controls"])) for r in rows} >= {
        ("text", "image", ()),
        ("text", "image", ("speech",)),
    }
    for r in rows:
        assert -1 <= r["ci95"][0] <= r["ci95"][1] <= 1


def _independent_rank_interval(totals: list[list[float]], system: int, level: float) -> tuple[int, int]:
    """Plain-Python percentile interval of one system's rank (1 = best, ties share the best rank).

    The lower end is the smallest rank r with P(rank <= r) >= (1 - level) / 2, the upper end the
    smallest r with P(rank <= r) >= 1 - (1 - level) / 2 (the empirical quantile, no interpolation).
    """
    ranks = sorted(1 + sum(other > row[system] for other in row) for row in totals)
    tail = (1.0 - level) / 2.0

    def quantile(q: float) -> int:
        for i, r in enumerate(ranks, start=1):
            if i / len(ranks) >= q - 1e-12:
                return r
        return ranks[-1]

    return quantile(tail), quantile(1.0 - tail)


def test_rank_intervals_match_an_independent_computation() -> None:
    from omnieval.benchmarks.storybench._analyses._bootstrap import BootstrapDraws

    # 200 draws with hand-set orders, lopsided so that a wrong tail moves an interval end: a ranks
    # 1st in 95.5 % of draws, 2nd in 3.5 %, 3rd in 1 % (95 % interval [1, 2]; a 90 % one [1, 1]);
    # c ranks 1st in 3 % (95 % interval [1, 3]; a 90 % one [2, 3]).
    orders = [("c", "a", "b")] * 6 + [("a", "c", "b")] * 8 + [("b", "a", "c")] + [("b", "c", "a")] * 2
    orders += [("a", "b", "c")] * (200 - len(orders))
    value_of_place = (0.7, 0.6, 0.5)
    totals = np.array([[value_of_place[order.index(name)] for name in "abc"] for order in orders])
    point = np.array([0.60, 0.58, 0.50])
    boot = BootstrapDraws(totals, {}, point, {})
    out = summarize(("a", "b", "c"), boot, level=0.95, alpha=0.05)
    rows = totals.tolist()
    expected = {name: _independent_rank_interval(rows, k, 0.95) for k, name in enumerate(("a", "b", "c"))}
    assert expected["a"] == (1, 2) and expected["c"] == (1, 3)
    assert {name: tuple(e["rank_interval"]) for name, e in out["systems"].items()} == expected
    # The data can tell tails apart: a 90 % or a 100 % interval differs from the 95 % one somewhere.
    for other in (0.90, 1.0):
        assert any(_independent_rank_interval(rows, k, other) != expected[n] for k, n in enumerate("abc"))
