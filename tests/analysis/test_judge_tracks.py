"""judge_track_differences against hand computations and a plain per-resample loop."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from omnieval.analysis import AnalysisConfig, analysis_names, run_analyses
from omnieval.benchmarks.storybench._analyses._judge_tracks import resample_means, track_differences
from omnieval.reporting import analysis_reading

from .conftest import Rows

NAME = "judge_track_differences"
INSTANCES = ("i1", "i2", "i3", "i4", "i5")


def _run(frame: pd.DataFrame, out: Path, draws: int = 2000, seed: int = 7) -> dict[str, Any]:
    outputs = run_analyses(frame, out, only=[NAME], config=AnalysisConfig(bootstrap_draws=draws, seed=seed))
    assert set(outputs) == {NAME}
    doc: dict[str, Any] = json.loads((out / f"{NAME}.json").read_text())
    return doc


def _reference(d: list[float], draws: int, seed: int, level: float = 0.95) -> tuple[float, float, float]:
    """Percentile interval and share of positive draws, one resample at a time in plain Python."""
    rng = np.random.default_rng(seed)
    m = len(d)
    stats = []
    for _ in range(draws):
        idx = rng.integers(0, m, size=m)
        stats.append(sum(d[int(k)] for k in idx) / m)
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(stats, [tail, 100.0 - tail])
    return float(lo), float(hi), sum(s > 0 for s in stats) / draws


def _pairs(doc: dict[str, Any], track: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(p["a"], p["b"]): p for p in doc["tracks"][track]["pairs"]}


def _hand_table() -> pd.DataFrame:
    r = Rows(INSTANCES)
    scores: dict[str, list[float | None]] = {
        "A": [8, 7, 9, 6, 8],
        "B": [6, 7, 5, 6, 4],
        "C": [5, 5, 5, 5, None],  # i5 failed to parse for C only
    }
    for system, values in scores.items():
        for iid, v in zip(INSTANCES, values, strict=True):
            if v is None:
                r.judge(system, iid, "text", "j1", None, "parse_error")
            else:
                r.judge(system, iid, "text", "j1", float(v))
    return r.frame()


def test_hand_table_points_and_bootstrap_match_reference(tmp_path: Path) -> None:
    draws, seed = 2000, 7
    doc = _run(_hand_table(), tmp_path, draws, seed)
    assert doc["status"] == "ok" and doc["params"] == {
        "seed": seed,
        "draws": draws,
        "level": 0.95,
        "policy": "valid_only",
    }
    text = doc["tracks"]["text"]
    assert list(doc["tracks"]) == ["text"]
    assert text["judges"] == ["j1"]
    assert text["means"] == pytest.approx({"A": 7.6, "B": 5.6, "C": 5.0})
    assert text["ranking"] == ["A", "B", "C"]
    assert text["n_instances"] == 5
    # Hand-computed paired differences; C's failed i5 leaves only A-C and B-C with four instances.
    by_hand = {
        ("A", "B"): [2.0, 0.0, 4.0, 0.0, 4.0],
        ("A", "C"): [3.0, 2.0, 4.0, 1.0],
        ("B", "C"): [1.0, 2.0, 0.0, 1.0],
    }
    pairs = _pairs(doc, "text")
    assert list(pairs) == list(by_hand)
    for key, d in by_hand.items():
        p = pairs[key]
        assert p["n_paired"] == len(d)
        assert p["difference"] == pytest.approx(sum(d) / len(d))
        lo, hi, share = _reference(d, draws, seed)
        assert p["ci95"] == pytest.approx([lo, hi], abs=1e-12)
        assert p["share_draws_above_zero"] == pytest.approx(share)
        assert p["above_zero"] is (lo > 0)
        assert p["ci95"][0] <= p["difference"] <= p["ci95"][1]
    assert pairs[("A", "B")]["difference"] == pytest.approx(2.0)
    assert pairs[("A", "C")]["difference"] == pytest.approx(2.5)
    assert pairs[("B", "C")]["difference"] == pytest.approx(1.0)
    assert pairs[("A", "C")]["above_zero"] is True  # A beats C on every paired instance
    assert (tmp_path / f"{NAME}.png").is_file()
    n_above = text["n_above_zero"]
    assert n_above == sum(p["above_zero"] for p in pairs.values())
    assert analysis_reading(NAME, doc) == (
        f"System pairs whose judge-score difference has its 95% interval above 0: text {n_above} of 3."
    )


def test_constant_and_dominant_differences(tmp_path: Path) -> None:
    r = Rows(INSTANCES)
    base = [7.0, 4.0, 9.5, 6.0, 3.0]
    for iid, v in zip(INSTANCES, base, strict=True):
        r.judge("P", iid, "image", "j1", v)
        r.judge("Q", iid, "image", "j1", v - 1.5)  # always exactly 1.5 below P
        r.judge("R", iid, "image", "j1", 1.0)  # below both everywhere
    doc = _run(r.frame(), tmp_path, draws=500)
    pairs = _pairs(doc, "image")
    pq = pairs[("P", "Q")]
    assert pq["difference"] == pytest.approx(1.5)
    assert pq["ci95"] == pytest.approx([1.5, 1.5], abs=1e-12)
    assert pq["share_draws_above_zero"] == 1.0 and pq["above_zero"] is True
    for key in (("P", "R"), ("Q", "R")):
        assert pairs[key]["ci95"][0] > 0 and pairs[key]["above_zero"] is True
    assert doc["tracks"]["image"]["n_above_zero"] == 3


def test_invalid_instances_drop_from_their_pairs_only(tmp_path: Path) -> None:
    r = Rows(INSTANCES)
    for k, iid in enumerate(INSTANCES):
        r.judge("A", iid, "text", "j1", 8.0)
        r.judge("B", iid, "text", "j1", 6.0 if k != 0 else 2.0)
        if iid == "i2":
            # A record with one criterion missing is invalid as a whole.
            r.judge("C", iid, "text", "j1", [5.0, 5.0, 5.0, None], ["ok", "ok", "ok", "parse_error"])
        elif iid == "i3":
            r.judge("C", iid, "text", "j1", None, "missing_output")
        else:
            r.judge("C", iid, "text", "j1", 4.0)
        r.judge("D", iid, "text", "j1", None, "inference_error")  # never scored
    doc = _run(r.frame(), tmp_path, draws=300)
    text = doc["tracks"]["text"]
    assert text["unscored"] == ["D"]
    assert "D" not in text["means"] and all("D" not in key for key in _pairs(doc, "text"))
    assert text["n_scored"] == {"A": 5, "B": 5, "C": 3}
    pairs = _pairs(doc, "text")
    assert pairs[("A", "B")]["n_paired"] == 5
    assert pairs[("A", "B")]["difference"] == pytest.approx((6 + 2 + 2 + 2 + 2) / 5)
    assert pairs[("A", "C")]["n_paired"] == 3
    assert pairs[("A", "C")]["difference"] == pytest.approx(4.0)
    # B-C: i1 (2-4), i4 (6-4), i5 (6-4); B's i2 and i3 are not used here.
    assert pairs[("B", "C")]["n_paired"] == 3
    assert pairs[("B", "C")]["difference"] == pytest.approx((-2 + 2 + 2) / 3)


def test_judges_are_averaged_per_instance(tmp_path: Path) -> None:
    iids = ("i1", "i2", "i3", "i4")
    r = Rows(iids)
    a: dict[str, list[float | None]] = {"j1": [8.0, 6.0, 7.0, 9.0], "j2": [6.0, 6.0, None, 9.0]}
    b: dict[str, list[float | None]] = {"j1": [5.0, 5.0, 5.0, None], "j2": [3.0, None, 5.0, None]}
    for system, by_judge in (("A", a), ("B", b)):
        for judge, values in by_judge.items():
            for iid, v in zip(iids, values, strict=True):
                r.judge(system, iid, "speech", judge, v, "ok" if v is not None else "unrecoverable")
    doc = _run(r.frame(), tmp_path, draws=400, seed=3)
    speech = doc["tracks"]["speech"]
    assert speech["judges"] == ["j1", "j2"]
    # Panel scores: A = [7, 6, 7, 9], B = [4, 5, 5, NaN] (no valid judge on i4).
    assert speech["means"] == pytest.approx({"A": 29 / 4, "B": 14 / 3})
    p = _pairs(doc, "speech")[("A", "B")]
    assert p["n_paired"] == 3
    assert p["difference"] == pytest.approx(2.0)
    lo, hi, share = _reference([3.0, 1.0, 2.0], 400, 3)
    assert p["ci95"] == pytest.approx([lo, hi], abs=1e-12)
    assert p["share_draws_above_zero"] == pytest.approx(share)


def test_tracks_follow_the_table(tmp_path: Path) -> None:
    r = Rows(INSTANCES[:3])
    for iid in INSTANCES[:3]:
        for system, v in (("X", 6.0), ("Y", 6.0)):
            r.judge(system, iid, "integrated", "j1", v)
            r.judge(system, iid, "text", "j2", v + (1.0 if system == "Y" else 0.0))
    doc = _run(r.frame(), tmp_path, draws=100)
    assert list(doc["tracks"]) == ["text", "integrated"]
    tie = doc["tracks"]["integrated"]
    assert tie["ranking"] == ["X", "Y"]  # equal means: by name
    p = tie["pairs"][0]
    assert p["difference"] == 0.0 and p["ci95"] == [0.0, 0.0]
    assert p["share_draws_above_zero"] == 0.0 and p["above_zero"] is False
    assert doc["tracks"]["text"]["ranking"] == ["Y", "X"]


@pytest.mark.parametrize("case", ["one_system", "no_judge_rows", "every_judge_record_invalid"])
def test_skips_with_a_reason(tmp_path: Path, case: str) -> None:
    r = Rows(INSTANCES[:3])
    systems = ("A",) if case == "one_system" else ("A", "B")
    for s in systems:
        for iid in INSTANCES[:3]:
            r.auto(s, iid, "bertscore_f1", 0.5)
            if case == "one_system":
                r.judge(s, iid, "text", "j1", 7.0)
            elif case == "every_judge_record_invalid":
                r.judge(s, iid, "text", "j1", None, "parse_error")
    doc = _run(r.frame(), tmp_path, draws=50)
    assert doc["status"] == "skipped"
    expected = "at least 2 systems" if case == "one_system" else "no judge track has a valid score"
    assert expected in doc["reason"]


def test_chunking_does_not_change_results() -> None:
    rng = np.random.default_rng(11)
    panel = rng.uniform(1.0, 10.0, size=(5, 23))
    panel[rng.random(panel.shape) < 0.2] = np.nan
    systems = tuple(f"s{k}" for k in range(5))
    whole = track_differences(panel, systems, draws=300, seed=5)
    # 10,000 elements: one pair per block and 33 resamples per chunk.
    chunked = track_differences(panel, systems, draws=300, seed=5, chunk_elements=10_000)
    # Equal up to the summation order of the matrix products (which depends on their shapes).
    assert len(chunked["pairs"]) == len(whole["pairs"])
    for c, w in zip(chunked["pairs"], whole["pairs"], strict=True):
        assert (c["a"], c["b"], c["n_paired"], c["above_zero"]) == (
            w["a"],
            w["b"],
            w["n_paired"],
            w["above_zero"],
        )
        assert c["difference"] == w["difference"]
        assert c["ci95"] == pytest.approx(w["ci95"], rel=1e-12)
        assert c["share_draws_above_zero"] == w["share_draws_above_zero"]
    assert {p["n_paired"] for p in whole["pairs"]} != {23}  # several paired sizes exercised
    values = rng.normal(size=(17, 4))
    np.testing.assert_allclose(
        resample_means(values, draws=257, seed=1),
        resample_means(values, draws=257, seed=1, chunk_elements=20),
        rtol=1e-12,
        atol=1e-15,
    )


def test_no_paired_instance_gives_null_statistics() -> None:
    nan = math.nan
    panel = np.array([[9.0, nan, 8.0], [nan, 3.0, nan]])
    out = track_differences(panel, ("A", "B"), draws=50, seed=0)
    assert out["pairs"] == [
        {
            "a": "A",
            "b": "B",
            "difference": None,
            "n_paired": 0,
            "ci95": None,
            "share_draws_above_zero": None,
            "above_zero": False,
        }
    ]


def test_registered_for_storybench() -> None:
    assert NAME in analysis_names("storybench")
