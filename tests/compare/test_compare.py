"""``compare_runs`` end to end on synthetic run folders: verdicts, what changed, top movers."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from omnieval.compare import compare_runs, read_run
from omnieval.config import RegressionConfig

from .conftest import LINEAGE, N, noisy_scores, storybench_scores

CONFIG = RegressionConfig(bootstrap_draws=1000, seed=0)
CHANGED_KEYS = {"dataset", "code", "judges", "prompts", "metric_models", "candidates"}


def _compare(a: Path, b: Path, config: RegressionConfig = CONFIG) -> dict[str, Any]:
    return compare_runs(read_run(a), read_run(b), config)


def test_identical_runs_go_and_nothing_changed(make_run: Callable[..., Path]) -> None:
    doc = _compare(make_run("run1"), make_run("run2"))
    assert doc["verdict"] == "GO"
    assert set(doc["changed"]) == CHANGED_KEYS
    assert all(not v for v in doc["changed"].values())
    assert doc["top_movers"] == []
    cell = doc["systems"]["alpha"]["bertscore_f1"]
    assert set(cell) == {"a", "b", "delta", "ci95", "p_holm", "mde"}
    assert cell["delta"] == 0.0 and cell["ci95"] == [0.0, 0.0] and cell["p_holm"] == 1.0
    scores = storybench_scores()
    expected = scores[(scores.system == "alpha") & (scores.component == "bertscore_f1")]["value"].mean() * 10
    assert cell["a"] == pytest.approx(expected)
    # judge.text per instance = mean of the record's four criteria (one judge here)
    judged = scores[(scores.system == "beta") & (scores.component == "judge")]
    assert doc["systems"]["beta"]["judge.text"]["a"] == pytest.approx(
        judged.groupby("instance_id")["value"].mean().mean()
    )
    assert set(doc["systems"]["alpha"]) == {"bertscore_f1", "judge.text", "total_average"}


def test_changed_prompt_is_inconclusive_and_named(make_run: Callable[..., Path]) -> None:
    lineage = copy.deepcopy(LINEAGE)
    lineage["judges"]["cpu"]["prompts"]["text"]["sha256"] = "b" * 64
    doc = _compare(make_run("run1"), make_run("run2", lineage=lineage))
    assert doc["verdict"] == "INCONCLUSIVE"
    assert doc["changed"]["prompts"] == [
        {
            "panel": "cpu",
            "prompt": "text",
            "a": "a" * 12 + " native storybench-judge/1",
            "b": "b" * 12 + " native storybench-judge/1",
        }
    ]
    assert any("prompt text" in r and "panel cpu" in r for r in doc["reasons"])
    unsafe = {(t["system"], t["component"]): t["unsafe"] for t in doc["tests"]}
    assert unsafe[("alpha", "bertscore_f1")] == []  # the prompt does not touch automatic metrics
    assert unsafe[("alpha", "judge.text")] and unsafe[("alpha", "total_average")]


def _worse(scores: pd.DataFrame, system: str, instances: list[int], by: float) -> pd.DataFrame:
    out = scores.copy()
    ids = {f"book/p{i:02d}__p{i + 1:02d}" for i in instances}
    mask = (out.system == system) & (out.component == "bertscore_f1") & out.instance_id.isin(ids)
    out.loc[mask, "value"] = (out.loc[mask, "value"] - by).clip(lower=0.0)
    return out


def test_worse_candidates_no_go_with_movers(make_run: Callable[..., Path]) -> None:
    dropped = [2, 5, 7, 11, 13, 17, 19, 23, 29, 4]
    worse = _worse(storybench_scores(), "beta", dropped, 0.4)
    doc = _compare(
        make_run("run1"),
        make_run("run2", worse, candidates={"alpha": "story of alpha", "beta": "a worse story"}),
    )
    assert doc["verdict"] == "NO-GO"
    assert any("beta / bertscore_f1" in r for r in doc["reasons"] if r.startswith("worse:"))
    assert not any("alpha" in r for r in doc["reasons"] if r.startswith("worse:"))
    cell = doc["systems"]["beta"]["bertscore_f1"]
    assert cell["delta"] < 0 and cell["ci95"][1] < 0
    assert [c["system"] for c in doc["changed"]["candidates"]] == ["beta"]
    movers = doc["top_movers"]
    assert len(movers) == 10
    assert {m["system"] for m in movers} == {"beta"}
    assert {m["component"] for m in movers} <= {"bertscore_f1", "total_average"}
    dropped_ids = {f"book/p{i:02d}__p{i + 1:02d}" for i in dropped}
    assert {m["instance_id"] for m in movers} <= dropped_ids
    assert [abs(m["delta"]) for m in movers] == sorted((abs(m["delta"]) for m in movers), reverse=True)
    for m in movers:
        assert m["delta"] == pytest.approx(m["b"] - m["a"])


def test_tolerance_absorbs_a_small_drop(make_run: Callable[..., Path]) -> None:
    worse = _worse(storybench_scores(), "beta", list(range(N)), 0.01)  # 0.1 on the 0-10 scale
    a, b = make_run("run1"), make_run("run2", worse)
    assert _compare(a, b)["verdict"] == "NO-GO"
    tolerant = RegressionConfig(
        bootstrap_draws=1000, component_tolerance={"bertscore_f1": 0.2, "total_average": 0.2}
    )
    assert _compare(a, b, tolerant)["verdict"] == "GO"


def test_a_drop_just_beyond_its_tolerance_is_no_go(make_run: Callable[..., Path]) -> None:
    """The tolerance is a bound on the drop itself: 0.1 (0-10 scale) is beyond 0.06 and within 0.14."""
    worse = _worse(storybench_scores(), "beta", list(range(N)), 0.01)
    a, b = make_run("run1"), make_run("run2", worse)

    def verdict(tolerance: float) -> str:
        tolerances = {"bertscore_f1": tolerance, "total_average": tolerance}  # the total moves by half
        config = RegressionConfig(bootstrap_draws=1000, seed=0, component_tolerance=tolerances)
        return str(_compare(a, b, config)["verdict"])

    assert verdict(0.06) == "NO-GO"
    assert verdict(0.14) == "GO"


def test_require_holm_counts_only_adjusted_p_below_0_05(make_run: Callable[..., Path]) -> None:
    a = make_run("run1")
    holm = RegressionConfig(bootstrap_draws=1000, seed=0, require_holm=True)
    # Four instances 0.05 lower: the CI lies below zero, but the Holm-adjusted p is ~0.17.
    b = make_run("run2", _worse(storybench_scores(), "beta", list(range(4)), 0.05))
    assert _compare(a, b)["verdict"] == "NO-GO"
    doc = _compare(a, b, holm)
    assert doc["verdict"] == "GO"
    assert 0.05 < doc["systems"]["beta"]["bertscore_f1"]["p_holm"] < 0.5
    # Six instances: adjusted p ~0.03, a regression either way.
    c = make_run("run3", _worse(storybench_scores(), "beta", list(range(6)), 0.05))
    assert _compare(a, c, holm)["verdict"] == "NO-GO"


def test_automatic_drop_beats_prompt_change(make_run: Callable[..., Path]) -> None:
    lineage = copy.deepcopy(LINEAGE)
    lineage["judges"]["cpu"]["prompts"]["text"]["sha256"] = "b" * 64
    worse = _worse(storybench_scores(), "alpha", list(range(N)), 0.3)
    doc = _compare(make_run("run1"), make_run("run2", worse, lineage=lineage))
    assert doc["verdict"] == "NO-GO"
    assert any("prompt text" in r for r in doc["reasons"])
    # the total moves too, but under a changed prompt it is only a possible regression
    assert "alpha / total_average" in doc["possible_regressions"]


def test_drift_and_coverage_make_it_inconclusive(make_run: Callable[..., Path]) -> None:
    doc = _compare(make_run("run1"), make_run("run2", drift={"status": "drift", "reasons": ["j1 moved"]}))
    assert doc["verdict"] == "INCONCLUSIVE" and any("drift" in r and "j1 moved" in r for r in doc["reasons"])
    assert doc["drift"]["status"] == "drift"
    ok = _compare(make_run("run3"), make_run("run4", drift={"status": "ok", "reasons": []}))
    assert ok["verdict"] == "GO"

    scores = storybench_scores()
    gone = scores[
        ~((scores.system == "alpha") & (scores["index"] < 6) & (scores.component == "bertscore_f1"))
    ]
    doc = _compare(make_run("run5"), make_run("run6", gone))
    assert doc["verdict"] == "INCONCLUSIVE"
    assert any("coverage: alpha / bertscore_f1 valid instances 30 -> 24" in r for r in doc["reasons"])


def test_dataset_and_judge_identity_changes(make_run: Callable[..., Path]) -> None:
    lineage = copy.deepcopy(LINEAGE)
    lineage["judges"]["cpu"]["judges"]["j1"]["revision"] = "r2"
    lineage["code"]["git_sha"] = "g2"
    doc = _compare(make_run("run1"), make_run("run2", lineage=lineage))
    assert doc["verdict"] == "INCONCLUSIVE"
    assert doc["changed"]["judges"] == [
        {"panel": "cpu", "judge": "j1", "field": "revision", "a": "r1", "b": "r2"}
    ]
    assert doc["changed"]["code"] == {"git_sha": {"a": "g1", "b": "g2"}}

    fewer = storybench_scores(n=N - 2)
    doc = _compare(make_run("run3"), make_run("run4", fewer))
    assert doc["verdict"] == "INCONCLUSIVE"
    assert doc["changed"]["dataset"]["instances_removed"] == [
        f"book/p{i:02d}__p{i + 1:02d}" for i in (28, 29)
    ]
    assert doc["n_shared_instances"] == N - 2


def test_acbench_lower_is_better(make_run: Callable[..., Path]) -> None:
    rows = []
    rng = np.random.default_rng(0)
    for i in range(24):
        for condition in ("original", "oracle"):
            rows.append(
                dict(
                    benchmark="acbench",
                    system="tts",
                    instance_id=f"ac-{i:04d}",
                    index=i,
                    track="speech_rate",
                    component="wer",
                    judge="",
                    criterion="fast",
                    value=float(rng.uniform(0.0, 0.2)),
                    status="ok",
                    panel="",
                    condition=condition,
                )
            )
    base = pd.DataFrame(rows)
    lineage = copy.deepcopy(LINEAGE)
    lineage["judges"] = {}
    higher_wer = base.copy()
    higher_wer.loc[higher_wer.condition == "original", "value"] += 0.2
    lower_wer = base.copy()
    lower_wer.loc[lower_wer.condition == "original", "value"] *= 0.5
    a = make_run("ac1", base, lineage=lineage, candidates={"tts": "x"})
    worse = _compare(a, make_run("ac2", higher_wer, lineage=lineage, candidates={"tts": "x"}))
    assert worse["verdict"] == "NO-GO"
    assert worse["systems"]["tts"]["original.wer"]["delta"] == pytest.approx(20.0)
    assert any("tts / original.wer" in r for r in worse["reasons"])
    better = _compare(a, make_run("ac3", lower_wer, lineage=lineage, candidates={"tts": "x"}))
    assert better["verdict"] == "GO"
    assert not any("drift" in r for r in better["reasons"])  # acbench has no judges to drift


def test_every_component_carries_its_mde_and_a_go_says_what_it_rules_out(
    make_run: Callable[..., Path],
) -> None:
    from scipy.stats import norm

    from omnieval.compare import verdict_lines

    before, after = noisy_scores()
    doc = _compare(make_run("run1", before), make_run("run2", after))
    assert doc["verdict"] == "GO"
    assert doc["mde_power"] == 0.8
    factor = norm.ppf(0.975) + norm.ppf(0.8)
    tests = {(t["system"], t["component"]): t for t in doc["tests"]}
    for system, cells in doc["systems"].items():
        for component, cell in cells.items():
            test = tests[(system, component)]
            assert cell["mde"] == pytest.approx(factor * test["se"]) and cell["mde"] >= 0
            assert test["mde"] == cell["mde"] and test["rules_out"] == pytest.approx(cell["mde"])
    assert doc["systems"]["beta"]["bertscore_f1"]["mde"] > 0  # the noisy component has a real SE
    (line,) = [r for r in doc["reasons"] if r.startswith("GO: ")]
    worst = {
        c: max(doc["systems"][s][c]["mde"] for s in doc["systems"])
        for c in ("bertscore_f1", "judge.text", "total_average")
    }
    assert line == (
        f"GO: no bertscore_f1 drop >= {worst['bertscore_f1']:.2g}, no judge.text drop >= "
        f"{worst['judge.text']:.2g}, no total_average drop >= {worst['total_average']:.2g} points "
        "(any of 2 systems; 80% power at alpha 0.05)"
    )
    text = "\n".join(verdict_lines(doc))
    assert line in text and " mde" in text.splitlines()[text.splitlines().index("") + 1]


def test_mde_shrinks_with_more_instances_and_grows_with_power(make_run: Callable[..., Path]) -> None:
    folders: dict[int, tuple[Path, Path]] = {}
    for n in (20, 80, 320):
        before, after = noisy_scores(n=n)
        folders[n] = (make_run(f"a{n}", before), make_run(f"b{n}", after))

    def mde(n: int, config: RegressionConfig = CONFIG) -> float:
        doc = _compare(folders[n][0], folders[n][1], config)
        return float(doc["systems"]["alpha"]["bertscore_f1"]["mde"])

    at_80 = mde(80)
    assert mde(20) > at_80 > mde(320)
    assert mde(80, RegressionConfig(bootstrap_draws=1000, power=0.95)) > at_80


def test_power_must_lie_strictly_between_0_and_1() -> None:
    from pydantic import ValidationError

    assert RegressionConfig().power == 0.8
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValidationError, match="power"):
            RegressionConfig(power=bad)


def test_mde_accounts_for_holm_and_tolerance_and_no_go_claims_nothing(
    make_run: Callable[..., Path],
) -> None:
    from scipy.stats import norm

    before, after = noisy_scores()
    a, b = make_run("run1", before), make_run("run2", after)
    holm = _compare(a, b, RegressionConfig(bootstrap_draws=1000, require_holm=True))
    m = sum(t["p"] is not None for t in holm["tests"])
    cell = holm["systems"]["alpha"]["bertscore_f1"]
    se = next(t["se"] for t in holm["tests"] if (t["system"], t["component"]) == ("alpha", "bertscore_f1"))
    assert cell["mde"] == pytest.approx((norm.ppf(1 - 0.05 / m / 2) + norm.ppf(0.8)) * se)

    tolerant = _compare(
        a, b, RegressionConfig(bootstrap_draws=1000, component_tolerance={"bertscore_f1": 0.5})
    )
    (test,) = [t for t in tolerant["tests"] if (t["system"], t["component"]) == ("alpha", "bertscore_f1")]
    assert (
        test["rules_out"] == pytest.approx(0.5 + norm.ppf(0.8) * test["se"])
        and test["rules_out"] > test["mde"]
    )
    assert "no bertscore_f1 drop >= 0.5" in next(r for r in tolerant["reasons"] if r.startswith("GO: "))

    worse = _compare(a, make_run("run3", _worse(before, "beta", list(range(N)), 0.3)))
    assert worse["verdict"] == "NO-GO" and not any(r.startswith("GO: ") for r in worse["reasons"])
    assert worse["systems"]
    assert all(c["mde"] is not None for cells in worse["systems"].values() for c in cells.values())
