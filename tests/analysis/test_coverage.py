"""Judge identity across panels, duplicate keys, judges that never ran, and ranking by coverage."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from omnieval.benchmarks.storybench._aggregate import aggregate
from omnieval.benchmarks.storybench._names import COMPONENTS, POLICIES, SPEECH_FIELDS, TRACKS
from omnieval.benchmarks.storybench._rankings import leaderboard_ranking, rank_by_coverage
from omnieval.benchmarks.storybench._report import leaderboard_table
from omnieval.cli import main
from omnieval.errors import DataError
from omnieval.scores import write_scores
from omnieval_testkit.storybench_synthetic import judge_id, make_scores

from .conftest import Rows

IDS = ["s/b/0__1", "s/b/1__2", "s/b/2__3"]
BENCH = "storybench"


def _two_panels() -> pd.DataFrame:
    """Two panels that both use the judge id ``J`` on the text track, scoring differently."""
    r = Rows(IDS)
    for s, bonus in (("A", 0.0), ("B", 1.0)):
        for iid in IDS:
            r.auto(s, iid, "bertscore_f1", 0.5)
            r.judge(s, iid, "text", "J", 6 + bonus, panel="cpu")
            r.judge(s, iid, "text", "J", 8 + bonus, panel="paper")
    r.not_applicable_track(["A", "B"], "image", panel="cpu")
    return r.frame()


def test_two_panels_sharing_a_judge_id_stay_separate() -> None:
    agg = aggregate(_two_panels())
    doc = agg.to_dict()
    assert doc["judges"]["text"] == ["cpu/J", "paper/J"]
    a = doc["systems"]["A"]["valid_only"]
    assert a["judge_by_judge"]["text"] == {"cpu/J": 6.0, "paper/J": 8.0}
    assert a["judge.text"] == pytest.approx(7.0)
    assert doc["systems"]["B"]["zero_filled"]["judge.text"] == pytest.approx(8.0)
    metrics = agg.mlflow_metrics("A")
    assert metrics["storybench.valid_only.judge.text.cpu/J"] == 6.0
    assert metrics["storybench.valid_only.judge.text.paper/J"] == 8.0
    # The cpu panel's placeholder rows for the image track: the track is unavailable, for every system.
    assert (
        "judge.image: unavailable: no judge could score this track here (every row is not_applicable)"
        in (doc["not_computed"])
    )
    assert doc["systems"]["B"]["missing_judges"]["image"] == {
        "cpu/unavailable": "unavailable: no judge could score this track here (every row is not_applicable)"
    }


def test_duplicate_key_is_a_data_error_naming_the_key() -> None:
    frame = _two_panels()
    row = frame[(frame["panel"] == "paper") & (frame["component"] == "judge")].iloc[:1]
    with pytest.raises(DataError) as err:
        aggregate(pd.concat([frame, row], ignore_index=True))
    text = str(err.value)
    assert (
        "duplicate row: (system, instance_id, track, component, panel, judge, criterion, condition, " in text
    )
    assert (
        "system='A', instance_id='s/b/0__1', track='text', component='judge', panel='paper', judge='J'"
        in text
    )
    # The same judge id in another panel is not a duplicate (previous test), nor another condition.
    other = row.assign(condition="s_to_t")
    with pytest.raises(DataError, match="duplicate judge text row"):
        aggregate(pd.concat([frame, other], ignore_index=True))


def _failed_judge_table() -> pd.DataFrame:
    """J2 never produced a valid record: every call failed (the model was absent)."""
    r = Rows(IDS)
    for s, score in (("A", 8), ("B", 6)):
        for iid in IDS:
            r.auto(s, iid, "bertscore_f1", 0.5)
            if s == "A" and iid == IDS[2]:
                r.judge(s, iid, "text", "J1", None, "missing_output")
            else:
                r.judge(s, iid, "text", "J1", score)
            r.judge(s, iid, "text", "J2", None, "inference_error")
    return r.frame()


def test_a_judge_with_every_record_failed_is_listed_and_left_out() -> None:
    agg = aggregate(_failed_judge_table())
    doc = agg.to_dict()
    assert doc["judges_configured"] == {"text": ["J1", "J2"]}
    assert doc["judges"] == {"text": ["J1"]}
    assert doc["missing_judges"] == {"text": {"J2": "no valid record (6 inference_error)"}}
    assert "judge.text/J2: no valid record (6 inference_error)" in doc["not_computed"]
    for s in ("A", "B"):
        assert doc["systems"][s]["missing_judges"] == {"text": {"J2": "no valid record (3 inference_error)"}}
    a = doc["systems"]["A"]
    # Absent from both policies' means: only J1 counts (J1's missing output still counts 0 zero-filled).
    assert a["valid_only"]["judge.text"] == pytest.approx(8.0)
    assert a["zero_filled"]["judge.text"] == pytest.approx(16 / 3)
    assert doc["systems"]["B"]["zero_filled"]["judge.text"] == pytest.approx(6.0)
    assert "J2" not in a["valid_only"]["judge_by_judge"]["text"]
    assert not any(k.endswith(".J2") for k in agg.mlflow_metrics("A"))
    assert "judge.text/J2: no valid record (6 inference_error)" in a["zero_filled"]["not_computed"]
    # The printed leaderboard says so too.
    text = " ".join(leaderboard_table(doc).split())  # rich wraps long lines
    assert "judge.text/J2: no valid record (6 inference_error)" in text


def test_unavailable_reason_and_all_judges_failed() -> None:
    frame = _failed_judge_table()
    only_failed = frame[~((frame["component"] == "judge") & (frame["judge"] == "J1"))]
    r = Rows(IDS)
    r.not_applicable_track(["A", "B"], "image")
    table = pd.concat([only_failed, r.frame()], ignore_index=True)
    doc = aggregate(table, unavailable={"image": "needs a vision-language model"}).to_dict()
    assert doc["not_computed"][-5:] == [
        "judge.text: no judge produced a valid record",
        "judge.text/J2: no valid record (6 inference_error)",
        "judge.image: unavailable: needs a vision-language model",
        "judge.speech: no rows in the scores table",
        "judge.integrated: no rows in the scores table",
    ]
    a = doc["systems"]["A"]
    assert a["valid_only"]["judge.text"] is None and a["zero_filled"]["judge.text"] is None
    assert a["missing_judges"]["image"] == {"unavailable": "unavailable: needs a vision-language model"}
    assert a["valid_only"]["total_average_components"] == ["bertscore_f1"]


def _expected_single_panel_keys(n_judges: int) -> set[str]:
    """The MLflow keys FORMATS.md section 5 names, written out by hand for a complete table."""
    keys = {f"{BENCH}.missing_output.{m}" for m in ("text", "image", "speech")}
    for policy in POLICIES:
        keys |= {f"{BENCH}.{policy}.{c}" for c in (*COMPONENTS, "total_average", "speech_meta_exact_match")}
        keys |= {f"{BENCH}.{policy}.speech_meta_accuracy.{f}" for f in SPEECH_FIELDS}
        keys |= {f"{BENCH}.{policy}.judge.{t}.{judge_id(t, p)}" for t in TRACKS for p in "ABC"[:n_judges]}
    return keys


def test_single_panel_mlflow_keys_are_unchanged() -> None:
    frame = make_scores(benchmark=BENCH, n_systems=3, n_instances=12, seed=5)
    agg = aggregate(frame)
    assert set(agg.mlflow_metrics("sys00")) == _expected_single_panel_keys(3)
    # A table written before the panel column existed (or with it blank) gives the same metrics.
    old = frame.drop(columns=["panel", "condition", "subset", "paired_with"])
    assert aggregate(old).mlflow_metrics("sys00") == agg.mlflow_metrics("sys00")
    assert aggregate(frame.assign(panel="")).mlflow_metrics("sys01") == agg.mlflow_metrics("sys01")


def test_rank_by_coverage_groups_and_ties() -> None:
    r = rank_by_coverage(
        {"a": 7.0, "b": 9.0, "c": 7.0, "d": None, "e": float("nan"), "f": 5.0},
        {"a": ["x", "y"], "b": ["x"], "c": ["x", "y"], "d": [], "e": ["x"], "f": ["x", "y"]},
        n_components=2,
    )
    assert [(row.system, row.label) for row in r.rows] == [
        ("a", "A1"),
        ("c", "A1"),
        ("f", "A3"),
        ("b", "B1"),
        ("d", "-"),
        ("e", "-"),
    ]
    assert not r.comparable and r.groups == (("x", "y"), ("x",))
    note = r.note()
    assert note is not None and "not comparable" in note and "B = x (1 of 2)" in note
    same = rank_by_coverage({"a": 1.0, "b": 2.0}, {"a": ["x"], "b": ["x"]}, n_components=2)
    assert same.comparable and same.note() is None and [row.label for row in same.rows] == ["1", "2"]


def _mixed_coverage() -> pd.DataFrame:
    """B has no valid image judgment at all, so its valid-only total covers one component fewer."""
    r = Rows(IDS)
    for s in ("A", "B"):
        for iid in IDS:
            r.auto(s, iid, "bertscore_f1", 0.9 if s == "A" else 0.2)
            r.judge(s, iid, "text", "J1", 5 if s == "A" else 9)
            r.judge(s, iid, "image", "J3", 2 if s == "A" else None, "ok" if s == "A" else "missing_output")
    return r.frame()


def test_mixed_coverage_leaderboard_shows_the_note(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    doc = aggregate(_mixed_coverage()).to_dict()
    assert doc["systems"]["A"]["valid_only"]["total_average_components"] == [
        "bertscore_f1",
        "judge.text",
        "judge.image",
    ]
    assert doc["systems"]["B"]["valid_only"]["total_average_components"] == ["bertscore_f1", "judge.text"]
    ranking = leaderboard_ranking(doc)
    assert [(row.system, row.label) for row in ranking.rows] == [("A", "A1"), ("B", "B1")]
    text = " ".join(leaderboard_table(doc).split())  # rich wraps long lines
    assert "not comparable" in text and "B = bertscore_f1, judge.text (2 of 7)" in text
    assert "A1" in text and "B1" in text and "3/7" in text
    assert "judge.image: no valid record for this system" in " ".join(
        doc["systems"]["B"]["valid_only"]["not_computed"]
    )
    path = tmp_path / "scores.parquet"
    write_scores(_mixed_coverage(), path)
    assert main(["aggregate", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "not comparable" in out and "B1" in out
    # A table where every total covers the same components prints plain ranks and no note.
    same = leaderboard_table(
        aggregate(make_scores(benchmark=BENCH, n_systems=3, n_instances=6, seed=0)).to_dict()
    )
    assert "not comparable" not in same and "Total Average covers:" in same
    assert math.isfinite(doc["systems"]["B"]["valid_only"]["total_average"])
