"""Zero-filled sensitivity, aggregation rules, weight sweeps, length controls, duplicates."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from omnieval.analysis import AnalysisConfig, run_analyses
from omnieval.benchmarks.storybench._aggregate import aggregate
from omnieval.benchmarks.storybench._analyses._length import m1_adjust, m2_adjust
from omnieval.benchmarks.storybench._analyses._sensitivity import (
    alternative_rules,
    covariance_shares,
    weight_sweep,
)
from omnieval_testkit.storybench_synthetic import make_scores


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return make_scores(benchmark="storybench", n_systems=8, n_instances=40, missing_rate=0.1, seed=21)


@pytest.fixture(scope="module")
def docs(frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> dict:  # type: ignore[type-arg]
    out = tmp_path_factory.mktemp("sens")
    dup = out / "clusters.json"
    ids = sorted(frame["instance_id"].unique())
    dup.write_text(json.dumps({"clusters": [{"members": ids[:3]}, [ids[5], ids[6]], ["unknown/x", ids[7]]]}))
    cfg = AnalysisConfig(duplicates=dup, dirichlet_draws=2000, uniform_draws=2000)
    only = [
        "zero_filled_sensitivity",
        "aggregation_sensitivity",
        "weight_sweeps",
        "narration_length",
        "duplicate_sensitivity",
    ]
    run_analyses(frame, out, only=only, config=cfg)
    return {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")} | {"_ids": ids}


def test_zero_filled_sensitivity(frame: pd.DataFrame, docs: dict) -> None:  # type: ignore[type-arg]
    agg = aggregate(frame).to_dict()["systems"]
    vo = [agg[s]["valid_only"]["total_average"] for s in sorted(agg)]
    zf = [agg[s]["zero_filled"]["total_average"] for s in sorted(agg)]
    d = docs["zero_filled_sensitivity"]
    assert d["agreement"]["spearman"] == pytest.approx(stats.spearmanr(vo, zf).statistic)
    assert d["agreement"]["kendall_tau_b"] == pytest.approx(stats.kendalltau(vo, zf).statistic)
    assert d["mean_zero_filled"] == pytest.approx(np.mean(zf))
    worst = min(
        agg, key=lambda s: agg[s]["zero_filled"]["total_average"] - agg[s]["valid_only"]["total_average"]
    )
    assert d["largest_decrease"]["system"] == worst


def test_covariance_shares_and_rules_by_hand() -> None:
    x = np.array([[1.0, 4.0, 2.0], [2.0, 1.0, 3.0], [4.0, 2.0, 2.0], [3.0, 3.0, 5.0]])
    shares = covariance_shares(x)
    t = x.mean(axis=1)
    expected = [np.cov(x[:, k], t)[0, 1] / (3 * np.var(t, ddof=1)) for k in range(3)]
    np.testing.assert_allclose(shares, expected)
    assert shares.sum() == pytest.approx(1.0)
    names = ("bertscore_f1", "judge.text", "judge.speech")
    rules = alternative_rules(names, x)
    np.testing.assert_allclose(rules["leave_out.judge.text"], (x[:, 0] + x[:, 2]) / 2)
    np.testing.assert_allclose(rules["automatic_only"], x[:, 0])
    np.testing.assert_allclose(rules["judge_only"], x[:, 1:].mean(axis=1))
    z = (x - x.mean(0)) / x.std(0, ddof=1)
    np.testing.assert_allclose(rules["z_score"], z.mean(axis=1))
    # four families: text = mean(bertscore, text judge), speech = speech judge alone
    np.testing.assert_allclose(rules["four_families"], ((x[:, 0] + x[:, 1]) / 2 + x[:, 2]) / 2)


def test_aggregation_sensitivity_doc(docs: dict) -> None:  # type: ignore[type-arg]
    d = docs["aggregation_sensitivity"]
    assert sum(c["covariance_share"] for c in d["components"].values()) == pytest.approx(1.0)
    assert len(d["rules"]) == 6 + 7
    assert d["rules"]["leave_out.bertscore_f1"]["n"] == 8


def test_weight_sweep_reproducible_and_dominance() -> None:
    x = np.array([[9.0, 9.0, 9.0], [5.0, 6.0, 7.0], [1.0, 2.0, 8.0]])
    w = np.random.default_rng(20260925).dirichlet(np.ones(3), size=500)
    a = weight_sweep(["best", "mid", "low"], x, w)
    assert a["win_share"] == {"best": 1.0} and a["original_winner_share"] == 1.0
    assert a == weight_sweep(["best", "mid", "low"], x, w)


def test_weight_sweeps_doc_uses_paper_seeds(docs: dict) -> None:  # type: ignore[type-arg]
    d = docs["weight_sweeps"]
    assert d["params"]["dirichlet_seed"] == 20260925 and d["params"]["uniform_seed"] == 20260926
    for key in ("dirichlet", "uniform"):
        assert sum(d[key]["win_share"].values()) == pytest.approx(1.0)
        assert d[key]["spearman_p05"] <= d[key]["spearman_median"] <= d[key]["spearman_p95"]


def test_m1_and_m2_by_hand() -> None:
    # Two systems, one judge, lengths 1..4; scores carry a length effect and a system offset.
    lengths = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]])
    scores = np.array([[5.0, 5.0, 9.0, 9.0], [6.0, 6.0, 8.0, 8.0]])[:, :, None]
    # Two pooled bins {1,2} and {3,4} with means 5.5 and 8.5; pooled mean 7.
    np.testing.assert_allclose(m1_adjust(scores, lengths, n_bins=2), [[7.0], [7.0]])
    res = m2_adjust(scores, lengths, n_bins=2, min_count=2)
    assert res["kept_bins"] == [0, 1]
    np.testing.assert_allclose(res["per_judge"], [[7.0], [7.0]])
    assert m2_adjust(scores, lengths, n_bins=2, min_count=3)["kept_bins"] == []


def test_narration_length_doc(docs: dict) -> None:  # type: ignore[type-arg]
    d = docs["narration_length"]
    assert set(d["variants"]) == {"m1", "m1_clipped", "m2"}
    assert d["descriptives"]["length_vs_text_judge"]["spearman"] > 0  # the generator rewards length
    assert -1 <= d["variants"]["m1"]["spearman"] <= 1


def test_duplicate_sensitivity_matches_filtering_the_table(frame: pd.DataFrame, docs: dict) -> None:  # type: ignore[type-arg]
    d = docs["duplicate_sensitivity"]
    ids = docs["_ids"]
    assert d["n_flagged_instances"] == 5 and d["ids_not_in_table"] == 1
    dropped = frame[~frame["instance_id"].isin(ids[:3] + ids[5:7])]
    expected = aggregate(dropped).to_dict()["systems"]
    got = d["modes"]["drop_all"]
    assert got["n_removed"] == 5
    for s, e in expected.items():
        for policy in ("valid_only", "zero_filled"):
            assert got[policy]["totals"][s] == pytest.approx(e[policy]["total_average"])
    kept = frame[~frame["instance_id"].isin(ids[1:3] + ids[6:7])]
    expected = aggregate(kept).to_dict()["systems"]
    for s, e in expected.items():
        assert d["modes"]["keep_one"]["valid_only"]["totals"][s] == pytest.approx(
            e["valid_only"]["total_average"]
        )


def test_bad_duplicate_file(tmp_path: Path) -> None:
    from omnieval.errors import DataError

    bad = tmp_path / "c.json"
    bad.write_text('{"clusters": [[1, 2]]}')
    with pytest.raises(DataError, match="cluster 0"):
        run_analyses(
            make_scores(benchmark="storybench", n_systems=3, n_instances=5, seed=0),
            tmp_path / "o",
            only=["duplicate_sensitivity"],
            config=AnalysisConfig(duplicates=bad),
        )
