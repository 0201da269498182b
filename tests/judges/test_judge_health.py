"""Judge health on crafted judgments, against hand-computed figures."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from omnieval.judges._health import HealthRules, judge_health, judge_health_metrics

CRITERIA = ("a", "b", "c", "d")


def _tables(
    verdicts: list[tuple[int, ...] | None],
    rationales: list[tuple[str, ...]] | None = None,
    *,
    panel: str = "cpu",
    judge: str = "j1",
    expected: list[tuple[float, ...]] | None = None,
    finish: list[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score and judgment rows of one judge: a None verdict is a parse error."""
    scores, judgments = [], []
    for i, v in enumerate(verdicts):
        status = "ok" if v is not None else "parse_error"
        for k, c in enumerate(CRITERIA):
            base = dict(panel=panel, judge=judge, system="s", instance_id=f"i{i}", track="text", criterion=c)
            scores.append(
                {**base, "component": "judge", "value": float(v[k]) if v else None, "status": status}
            )
            if expected is not None:
                value = expected[i][k] if v else None
                scores.append({**base, "component": "judge_expected", "value": value, "status": status})
        texts = rationales[i] if rationales else ("Fine.",) * 4
        judgments.append(
            dict(
                panel=panel,
                judge=judge,
                system="s",
                instance_id=f"i{i}",
                track="text",
                status=status,
                rationales=json.dumps(dict(zip(CRITERIA, texts, strict=True))) if v else "{}",
                finish_reason=finish[i] if finish else "stop",
            )
        )
    return pd.DataFrame(judgments), pd.DataFrame(scores)


def test_healthy_judge_figures() -> None:
    verdicts: list[tuple[int, ...] | None] = [(8, 7, 9, 8), (2, 3, 2, 1), (5, 5, 5, 5), None] + [
        (6, 7, 4, 9)
    ] * 8
    rationales = [
        ("It fits the book well.", "Smooth.", "All conditions met!", "Close to the reference.")
    ] * 12
    j, s = _tables(verdicts, rationales)
    h = judge_health(j, s)
    info = h["judges"]["cpu/j1"]
    assert h["degenerate"] == []
    assert info["n_records"] == 12 and info["n_verdicts"] == 11
    # Histogram by hand: 8,7,9,8 / 2,3,2,1 / 5x4 / 8 x (6,7,4,9).
    assert info["histogram"] == {
        "1": 1,
        "2": 2,
        "3": 1,
        "4": 8,
        "5": 4,
        "6": 8,
        "7": 9,
        "8": 2,
        "9": 9,
        "10": 0,
    }
    assert info["values_used"] == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert info["distinct_values"] == 9
    assert info["identical_share"] == pytest.approx(1 / 11)
    lengths = [22, 7, 19, 23]
    assert info["rationale_chars"] == {"mean": sum(lengths) / 4, "p50": 20.5, "max": 23}
    assert info["truncated_share"] == 0.0
    assert not info["degenerate"] and info["reasons"] == []


def test_one_or_ten_identical_and_cut_is_degenerate() -> None:
    verdicts: list[tuple[int, ...] | None] = [(10, 10, 10, 10)] * 9 + [(1, 1, 1, 1)] * 2 + [(10, 1, 10, 10)]
    cut = (
        "The candidate narration aligns well with the book'",
        "The candidate follows naturally from the",
        "Meets all the",
        "Conveys the meaning.",
    )
    j, s = _tables(verdicts, [cut] * 12)
    info = judge_health(j, s)["judges"]["cpu/j1"]
    assert info["distinct_values"] == 2 and info["values_used"] == [1, 10]
    assert info["identical_share"] == pytest.approx(11 / 12)
    assert info["truncated_share"] == pytest.approx(3 / 4)  # only the last rationale ends a sentence
    assert info["degenerate"]
    assert len(info["reasons"]) == 3
    assert any("2 distinct" in r for r in info["reasons"])
    assert any("92%" in r for r in info["reasons"])
    assert any("75% of rationales" in r for r in info["reasons"])


def test_token_budget_counts_as_cut() -> None:
    verdicts: list[tuple[int, ...] | None] = [(i % 10 + 1, 2, 3, 4) for i in range(10)]
    j, s = _tables(verdicts, finish=["length"] * 6 + ["stop"] * 4)
    info = judge_health(j, s)["judges"]["cpu/j1"]
    assert info["truncated_share"] == pytest.approx(0.6)
    assert info["reasons"] == ["60% of rationales are cut (> 50%)"]


def test_spread_judge_expected_does_not_hide_degenerate_greedy_scores() -> None:
    verdicts: list[tuple[int, ...] | None] = [(10, 10, 10, 10)] * 10
    # Rounded to 0.5: 9.5, 9.0, 8.5, 7.0 / ... -> plenty of values, criteria differ.
    expected = [(9.6, 9.1, 8.4, 7.2 - 0.1 * i) for i in range(10)]
    j, s = _tables(verdicts, expected=expected)
    info = judge_health(j, s)["judges"]["cpu/j1"]
    assert info["distinct_values"] == 1
    rounded = sorted({math.floor(v * 2 + 0.5) / 2 for row in expected for v in row})
    assert info["expected"]["values_used_rounded"] == rounded
    assert info["expected"]["identical_share_rounded"] == 0.0
    assert info["expected"]["mean"] == pytest.approx(sum(sum(r) for r in expected) / 40)
    # Both kinds are shown: the greedy scores (the leaderboard's) fail, the weighted ones pass.
    assert info["scores"] == {"judge": "degenerate", "judge_expected": "ok"}
    assert info["degenerate"]
    assert info["reasons"] == [
        "greedy scores: only 1 distinct score values used ([10])",
        "greedy scores: 100% of verdicts with two or more criteria give every criterion the same score (> 80%)",
    ]


def test_degenerate_judge_expected_is_a_reason_too() -> None:
    verdicts: list[tuple[int, ...] | None] = [(i % 10 + 1, 2, 3, 4) for i in range(10)]
    j, s = _tables(verdicts, expected=[(9.9, 10.0, 9.8, 10.0)] * 10)
    info = judge_health(j, s)["judges"]["cpu/j1"]
    assert info["scores"] == {"judge": "ok", "judge_expected": "degenerate"}
    assert any(r.startswith("judge_expected (rounded to 0.5): only 1 distinct") for r in info["reasons"])


def test_few_verdicts_and_no_valid_verdict() -> None:
    j, s = _tables([(10, 10, 10, 10)] * 3)
    info = judge_health(j, s)["judges"]["cpu/j1"]
    assert not info["degenerate"] and "too few verdicts" in info["notes"][0]
    j, s = _tables([None, None])
    info = judge_health(j, s)["judges"]["cpu/j1"]
    assert info["degenerate"] and info["reasons"] == ["no valid verdicts"]
    assert info["identical_share"] is None and info["rationale_chars"]["mean"] is None


def test_judges_are_kept_apart_and_unavailable_skipped() -> None:
    j1, s1 = _tables([(10, 10, 10, 10)] * 10, judge="a")
    j2, s2 = _tables([(3, 5, 7, 9)] * 10, judge="b", panel="other")
    j3, s3 = _tables([None], judge="unavailable")
    h = judge_health(pd.concat([j1, j2, j3]), pd.concat([s1, s2, s3]))
    assert sorted(h["judges"]) == ["cpu/a", "other/b"]
    assert h["degenerate"] == ["cpu/a"]
    metrics = judge_health_metrics(h)
    assert metrics["judge.cpu.a.distinct_values"] == 1.0
    assert metrics["judge.cpu.a.degenerate"] == 1.0
    assert metrics["judge.other.b.identical_share"] == 0.0
    assert metrics["judge.other.b.n_verdicts"] == 10.0


def test_rules_are_configurable() -> None:
    j, s = _tables([(9, 9, 9, 8)] * 10)
    assert judge_health(j, s)["degenerate"] == ["cpu/j1"]
    assert judge_health(j, s, HealthRules(max_distinct=1))["degenerate"] == []


def _prism_rows(cells_per_call: list[list[float]], paired_with: list[str]) -> pd.DataFrame:
    """PRISM-shaped score rows: one clip (system ``gt``, instance ``on-01``, one dimension) judged
    beside each system of ``paired_with``, with that call's active cells."""
    rows = []
    for cells, other in zip(cells_per_call, paired_with, strict=True):
        for k, value in enumerate(cells):
            rows.append(
                dict(panel="cpu-cascade", judge="j1", system="gt", instance_id="on-01", track="av_coherence",
                     criterion=f"cell{k}", component="judge", value=value, status="ok", paired_with=other)
            )  # fmt: skip
    return pd.DataFrame(rows)


def test_one_criterion_verdicts_are_left_out_of_the_identical_share() -> None:
    # 12 one-cell calls (trivially "all criteria equal") and 4 two-cell calls, one of them equal.
    calls = [[float(1 + k % 9)] for k in range(12)] + [[3.0, 3.0], [2.0, 8.0], [4.0, 6.0], [9.0, 1.0]]
    scores = _prism_rows(calls, [f"sys{k}" for k in range(16)])
    health = judge_health(pd.DataFrame(), scores)["judges"]["cpu-cascade/j1"]
    assert health["n_verdicts"] == 16 and health["n_records"] == 16
    assert health["n_multi_criterion"] == 4
    assert health["identical_share"] == pytest.approx(1 / 4)
    assert not health["degenerate"], health["reasons"]


def test_each_pairing_is_its_own_verdict() -> None:
    # One clip judged beside 12 systems, two cells each, never equal within a call. Merged into one
    # (system, instance, track) group the cells would read as a single 24-criterion verdict.
    calls = [[float(1 + k % 9), float(10 - k % 9)] for k in range(12)]
    scores = _prism_rows(calls, [f"sys{k}" for k in range(12)])
    health = judge_health(pd.DataFrame(), scores)["judges"]["cpu-cascade/j1"]
    assert health["n_verdicts"] == 12 and health["n_multi_criterion"] == 12
    assert health["identical_share"] == 0.0


def test_no_multi_criterion_verdict_gives_no_identical_share() -> None:
    scores = _prism_rows([[float(1 + k % 9)] for k in range(12)], [f"sys{k}" for k in range(12)])
    health = judge_health(pd.DataFrame(), scores)["judges"]["cpu-cascade/j1"]
    assert health["identical_share"] is None and health["n_multi_criterion"] == 0
    assert not health["degenerate"], health["reasons"]
