"""Bottleneck diagnostics by hand (ties, alpha cutoffs) and correlations against references."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from omnieval.analysis import AnalysisConfig, run_analyses
from omnieval.benchmarks.storybench._aggregate import aggregate
from omnieval.benchmarks.storybench._analyses._modality import bottleneck_diagnostics
from omnieval_testkit.storybench_synthetic import make_scores

SYSTEMS = ["A", "B", "C", "D"]
CASE = {
    "text": np.array([1.0, 2.0, 3.0, 4.0]),
    "image": np.array([4.0, 1.0, 2.0, 3.0]),
    "speech": np.array([2.0, 2.0, 4.0, 1.0]),  # A and B tie
}
TOTAL = np.array([5.0, 6.0, 7.0, 8.0])


def test_bottleneck_hand_case() -> None:
    d = bottleneck_diagnostics(SYSTEMS, CASE, TOTAL, alphas=(1 / 3, 0.25, 0.5))
    diag = d["diagnostics"]
    # Percentile ranks (text, image, speech): A (0, 100, 50), B (33.3, 0, 50), C (66.7, 33.3, 100), D (100, 66.7, 0)
    assert [diag[m]["weakest_count"] for m in ("text", "image", "speech")] == [1.0, 2.0, 1.0]
    assert diag["text"]["mean_weakest_rank_gap_pp"] == pytest.approx(75.0)
    assert diag["image"]["mean_weakest_rank_gap_pp"] == pytest.approx(
        ((100 / 3 + 50) / 2 + ((200 / 3 + 100) / 2 - 100 / 3)) / 2
    )
    assert diag["speech"]["mean_weakest_rank_gap_pp"] == pytest.approx((100 + 200 / 3) / 2)
    assert diag["text"]["iqr"] == pytest.approx(1.5)
    # Bottom third: cutoff ceil(4/3) = 2; the A/B tie at speech min-rank 2 puts three systems in.
    assert diag["text"]["max_total_bottom"]["1/3"]["systems"] == ["A", "B"]
    assert diag["text"]["max_total_bottom"]["1/3"]["max_total"] == 6.0
    assert diag["image"]["max_total_bottom"]["1/3"]["max_total"] == 7.0
    speech = diag["speech"]["max_total_bottom"]["1/3"]
    assert speech["n"] == 3 and speech["max_total"] == 8.0 and speech["cutoff_rank"] == 2
    # alpha 0.25: cutoff exactly 1 (no floating-point spill to 2)
    assert diag["text"]["max_total_bottom"]["0.25"]["systems"] == ["A"]
    assert diag["speech"]["max_total_bottom"]["0.25"]["systems"] == ["D"]
    assert d["strongest_signal"]["weakest_count"] == ["image"]
    assert d["strongest_signal"]["max_total_bottom"] == ["text"]
    assert d["strongest_signal"]["max_total_bottom_by_alpha"]["0.25"] == ["text"]


def test_bottleneck_weakest_ties_split_the_count() -> None:
    scores = {
        "text": np.array([1.0, 2.0, 3.0]),
        "image": np.array([1.0, 3.0, 2.0]),
        "speech": np.array([3.0, 1.0, 2.0]),
    }
    d = bottleneck_diagnostics(["X", "Y", "Z"], scores, np.zeros(3))["diagnostics"]
    assert [d[m]["weakest_count"] for m in ("text", "image", "speech")] == [0.5, 1.0, 1.5]
    assert [d[m]["weakest_ties"] for m in ("text", "image", "speech")] == [1, 2, 1]
    assert d["text"]["mean_weakest_rank_gap_pp"] == pytest.approx(50.0)
    assert d["image"]["mean_weakest_rank_gap_pp"] == pytest.approx(37.5)
    assert d["speech"]["mean_weakest_rank_gap_pp"] == pytest.approx(87.5 / 1.5)


def test_bottleneck_drops_systems_without_scores() -> None:
    scores = {m: np.append(v, np.nan) for m, v in CASE.items()}
    d = bottleneck_diagnostics([*SYSTEMS, "E"], scores, np.append(TOTAL, 9.0))
    assert d["excluded_systems"] == ["E"] and d["n_systems"] == 4


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, dict]:  # type: ignore[type-arg]
    frame = make_scores(benchmark="storybench", n_systems=8, n_instances=40, seed=11)
    out = tmp_path_factory.mktemp("modality")
    groups = {"first": ("sys00", "sys01", "sys02", "sys03", "sys04")}
    run_analyses(
        frame,
        out,
        only=["partial_correlations", "correlations", "bertscore_text_judge", "bottleneck"],
        config=AnalysisConfig(system_groups=groups),
    )
    import json

    docs = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    return frame, docs


def _modality_scores(frame: pd.DataFrame, policy: str) -> pd.DataFrame:
    doc = aggregate(frame).to_dict()["systems"]
    rows = {}
    for s, d in doc.items():
        p = d[policy]
        rows[s] = {
            "text": (p["bertscore_f1"] * 10 + p["judge.text"]) / 2,
            "image": (p["image_similarity"] * 10 + p["judge.image"]) / 2,
            "speech": (p["speech_meta_accuracy"] * 10 + p["judge.speech"]) / 2,
            "integrated": p["judge.integrated"],
        }
    return pd.DataFrame(rows).T


def test_partial_correlations_match_pingouin(small) -> None:  # type: ignore[no-untyped-def]
    import pingouin as pg

    frame, docs = small
    entries = docs["partial_correlations"]
    assert isinstance(entries, list)
    for policy in ("valid_only", "zero_filled"):
        ms = _modality_scores(frame, policy)
        for x, y, z in (
            ("text", "image", "speech"),
            ("text", "speech", "image"),
            ("image", "speech", "text"),
        ):
            got = next(
                e for e in entries if (e["x"], e["y"], e["policy"], e["subset"]) == (x, y, policy, "all")
            )
            assert got["controls"] == [z]
            ref = pg.partial_corr(ms.astype(float), x=x, y=y, covar=[z])
            assert got["r"] == pytest.approx(float(ref["r"].iloc[0]), abs=1e-9)
            pcol = "p_val" if "p_val" in ref else "p-val"
            assert got["p"] == pytest.approx(float(ref[pcol].iloc[0]), rel=1e-6)
        integ = next(
            e
            for e in entries
            if (e["x"], e["y"], e["policy"], e["subset"]) == ("integrated", "image", policy, "all")
        )
        ref = pg.partial_corr(ms.astype(float), x="integrated", y="image", covar=["text", "speech"])
        assert integ["r"] == pytest.approx(float(ref["r"].iloc[0]), abs=1e-9)
    assert any(e["subset"] == "first" and e["n"] == 5 for e in entries)
    assert any(e["x"].startswith("integrated.") for e in entries)


def test_correlations_and_bertscore_agreement_match_scipy(small) -> None:  # type: ignore[no-untyped-def]
    from scipy import stats

    frame, docs = small
    ms = _modality_scores(frame, "valid_only")
    row = next(
        r
        for r in docs["correlations"]["valid_only"]
        if (r["x"], r["y"], r["subset"]) == ("text", "speech", "all")
    )
    ref = stats.pearsonr(ms["text"], ms["speech"])
    assert row["r"] == pytest.approx(ref.statistic, abs=1e-12)
    assert row["p"] == pytest.approx(ref.pvalue, rel=1e-9)
    doc = aggregate(frame).to_dict()["systems"]
    bert = [doc[s]["valid_only"]["bertscore_f1"] * 10 for s in sorted(doc)]
    judge = [doc[s]["valid_only"]["judge.text"] for s in sorted(doc)]
    got = docs["bertscore_text_judge"]["valid_only"]
    assert got["spearman"]["rho"] == pytest.approx(stats.spearmanr(bert, judge).statistic, abs=1e-12)
    assert got["pearson"]["r"] == pytest.approx(stats.pearsonr(bert, judge).statistic, abs=1e-12)
    assert got["range_bertscore_x10"] == pytest.approx([min(bert), max(bert)])
    assert docs["bottleneck"]["valid_only"]["n_systems"] == 8


def test_dreamsim_correlations(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from scipy import stats

    frame = make_scores(benchmark="storybench", n_systems=6, n_instances=12, seed=2)
    img = frame[frame["component"] == "image_similarity"].copy()
    img["component"] = "dreamsim_distance"
    img["value"] = 1.0 - img["value"]
    outputs = run_analyses(pd.concat([frame, img], ignore_index=True), tmp_path, only=["dreamsim"])
    assert outputs["dreamsim"].status == "ok"
    doc = json.loads((tmp_path / "dreamsim.json").read_text())
    row = next(r for r in doc["valid_only"] if r["y"] == "image_similarity")
    assert row["r"] == pytest.approx(-1.0)
    agg = aggregate(frame).to_dict()["systems"]
    dist = [doc["mean_distance"][s] for s in sorted(agg)]
    total = [agg[s]["valid_only"]["total_average"] for s in sorted(agg)]
    row = next(r for r in doc["valid_only"] if r["y"] == "total_average")
    assert row["r"] == pytest.approx(stats.pearsonr(dist, total).statistic)
    assert run_analyses(frame, tmp_path / "none", only=["dreamsim"])["dreamsim"].status == "skipped"
