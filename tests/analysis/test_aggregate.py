"""Aggregation (valid-only and zero-filled) against hand computations and the independent reference
(tests/_reference/storybench.py)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from tests._reference import storybench as reference

from omnieval.benchmarks.storybench._aggregate import aggregate
from omnieval.benchmarks.storybench._names import COMPONENTS
from omnieval.cli import main
from omnieval.errors import DataError
from omnieval.scores import write_scores
from omnieval_testkit.storybench_synthetic import make_scores

from .conftest import Rows

IDS = ["s/b/0__1", "s/b/1__2", "s/b/2__3"]


def _hand_table() -> pd.DataFrame:
    r = Rows(IDS)
    # System A: the worked example in the module docstring of this test.
    r.auto("A", IDS[0], "bertscore_f1", 0.8)
    r.auto("A", IDS[1], "bertscore_f1", 0.6)
    r.auto("A", IDS[2], "bertscore_f1", None, "missing_output")
    for iid, pitch, speed in ((IDS[0], 1.0, 0.0), (IDS[1], 1.0, None)):
        r.speech("A", iid, "pitch", pitch)
        r.speech("A", iid, "speed", speed, "ok" if speed is not None else "inference_error")
    for f in ("pitch", "speed"):
        r.speech("A", IDS[2], f, None, "missing_output")
    for s in ("A", "B"):
        for iid in IDS:
            for f in ("emotion", "gender"):
                r.speech(s, iid, f, None, "not_applicable")
            r.auto(s, iid, "image_similarity", None, "not_applicable")
    r.judge("A", IDS[0], "text", "J1", 8)
    r.judge("A", IDS[1], "text", "J1", 6)
    r.judge("A", IDS[2], "text", "J1", None, "missing_output")
    r.judge("A", IDS[0], "text", "J2", [7, 7, 7, 9])
    r.judge("A", IDS[1], "text", "J2", [5, None, 5, 5], ["ok", "parse_error", "ok", "repaired"])
    r.judge("A", IDS[2], "text", "J2", None, "missing_output")
    r.judge("A", IDS[0], "speech", "J3", 5)
    r.judge("A", IDS[1], "speech", "J3", 9)
    r.judge("A", IDS[2], "speech", "J3", None, "missing_output")
    # System B: everything valid.
    for k, iid in enumerate(IDS):
        r.auto("B", iid, "bertscore_f1", 0.9)
        r.speech("B", iid, "pitch", 1.0)
        r.speech("B", iid, "speed", float(k % 2))
        r.judge("B", iid, "text", "J1", 9)
        r.judge("B", iid, "text", "J2", 8)
        r.judge("B", iid, "speech", "J3", 6)
    r.not_applicable_track(["A", "B"], "image")
    r.not_applicable_track(["A", "B"], "integrated")
    return r.frame()


def test_hand_computed_valid_only_and_zero_filled() -> None:
    doc = aggregate(_hand_table()).to_dict()
    assert doc["not_computed"] == [
        "image_similarity: not applicable here (every row is not_applicable)",
        "judge.image: unavailable: no judge could score this track here (every row is not_applicable)",
        "judge.integrated: unavailable: no judge could score this track here (every row is not_applicable)",
    ]
    assert doc["components"] == ["bertscore_f1", "speech_meta_accuracy", "judge.text", "judge.speech"]
    assert doc["speech_meta_fields"] == ["speed", "pitch"]
    a_vo = doc["systems"]["A"]["valid_only"]
    a_zf = doc["systems"]["A"]["zero_filled"]
    assert a_vo["bertscore_f1"] == pytest.approx(0.7)
    assert a_zf["bertscore_f1"] == pytest.approx(1.4 / 3)
    assert a_vo["speech_meta_accuracy"] == pytest.approx(0.75)
    assert a_zf["speech_meta_accuracy"] == pytest.approx(0.5)
    assert a_vo["speech_meta_per_field"] == pytest.approx({"speed": 0.0, "pitch": 1.0})
    assert a_zf["speech_meta_per_field"] == pytest.approx({"speed": 0.0, "pitch": 2 / 3})
    assert a_vo["speech_meta_exact_match"] == 0.0
    assert a_vo["judge_by_judge"]["text"] == pytest.approx({"J1": 7.0, "J2": 7.5})
    assert a_vo["judge.text"] == pytest.approx(7.25)
    assert a_zf["judge.text"] == pytest.approx((14 / 3 + 2.5) / 2)
    assert a_vo["judge.speech"] == pytest.approx(7.0)
    assert a_zf["judge.speech"] == pytest.approx(14 / 3)
    for policy in (a_vo, a_zf):
        assert policy["image_similarity"] is None
        assert policy["judge.image"] is None
        assert policy["judge.integrated"] is None
        assert policy["total_average_components"] == [
            "bertscore_f1",
            "speech_meta_accuracy",
            "judge.text",
            "judge.speech",
        ]
    assert a_vo["total_average"] == pytest.approx((7.0 + 7.5 + 7.25 + 7.0) / 4)
    assert a_zf["total_average"] == pytest.approx((14 / 3 + 5.0 + (14 / 3 + 2.5) / 2 + 14 / 3) / 4)
    # Per-criterion: J2's invalid record drops all four of its criteria.
    crit = a_vo["criteria"]["text"]
    assert crit["alignment_with_metadata"] == pytest.approx((7.0 + 7.0) / 2)
    assert crit["semantic_consistency_with_ground_truth"] == pytest.approx((7.0 + 9.0) / 2)
    b = doc["systems"]["B"]
    assert b["valid_only"]["total_average"] == pytest.approx(b["zero_filled"]["total_average"])
    assert b["valid_only"]["speech_meta_exact_match"] == pytest.approx(1 / 3)
    comp = doc["systems"]["A"]["completeness"]
    assert comp["outputs"]["text"] == {"n_instances": 3, "missing": 1}
    assert comp["records"]["judge.text"]["J2"] == {"valid": 1, "missing_output": 1, "invalid": 1, "absent": 0}


def test_n_instances_override_pads_the_denominator() -> None:
    doc = aggregate(_hand_table(), n_instances=4).to_dict()
    a = doc["systems"]["A"]
    assert doc["n_instances"] == 4
    assert a["zero_filled"]["bertscore_f1"] == pytest.approx(1.4 / 4)
    assert a["valid_only"]["bertscore_f1"] == pytest.approx(0.7)
    assert a["completeness"]["outputs"]["text"]["missing"] == 2
    with pytest.raises(DataError, match="smaller"):
        aggregate(_hand_table(), n_instances=2)


def test_mlflow_metrics_keys_follow_formats_section_5() -> None:
    m = aggregate(_hand_table()).mlflow_metrics("A")
    assert m["storybench.valid_only.total_average"] == pytest.approx(7.1875)
    assert "storybench.zero_filled.judge.text" in m
    assert m["storybench.valid_only.judge.text.J2"] == pytest.approx(7.5)
    assert m["storybench.valid_only.bertscore_f1"] == pytest.approx(0.7)
    assert not any("image" in k for k in m if k.startswith("storybench.valid_only"))
    assert m["storybench.missing_output.text"] == 1.0


@pytest.mark.parametrize(
    "options",
    [
        dict(n_systems=5, n_instances=60, missing_rate=0.1, invalid_rate=0.1, seed=3),
        # Several judges per track, a track and a speech field nobody can score here.
        dict(
            n_systems=4,
            n_instances=40,
            missing_rate=0.2,
            invalid_rate=0.15,
            not_applicable_tracks=("image",),
            not_applicable_fields=("emotion",),
            seed=5,
        ),
    ],
)
def test_matches_the_independent_reference_under_both_policies(options: dict[str, Any]) -> None:
    frame = make_scores(benchmark="storybench", **options)
    doc = aggregate(frame).to_dict()
    expected = reference.reference_aggregate(frame)
    assert set(doc["systems"]) == set(expected)
    for s, policies in expected.items():
        for policy, want in policies.items():
            got = doc["systems"][s][policy]
            for c in reference.HEADLINE:
                if want[c] is None:
                    assert got[c] is None, (s, policy, c)
                else:
                    assert got[c] == pytest.approx(want[c], rel=1e-12), (s, policy, c)
            assert got["total_average_components"] == want["total_average_components"], (s, policy)
    # The hand-written case too: an invalid criterion drops its record, a judge without any valid
    # record for a system counts 0 under zero-filled only.
    hand = _hand_table()
    want_hand = reference.reference_aggregate(hand)
    got_hand = aggregate(hand).to_dict()["systems"]
    for s in ("A", "B"):
        for policy in reference.POLICIES:
            for c in reference.HEADLINE:
                assert got_hand[s][policy][c] == pytest.approx(want_hand[s][policy][c]), (s, policy, c)
    # Zero-filled never exceeds valid-only here (all scores are positive).
    for s in expected:
        assert (
            doc["systems"][s]["zero_filled"]["total_average"]
            <= doc["systems"][s]["valid_only"]["total_average"]
        )


def test_seeded_generator_is_reproducible() -> None:
    a = make_scores(benchmark="storybench", n_systems=3, n_instances=10, seed=7)
    b = make_scores(benchmark="storybench", n_systems=3, n_instances=10, seed=7)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(make_scores(benchmark="storybench", n_systems=3, n_instances=10, seed=8))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda f: f.assign(
                criterion=np.where(
                    f.index == f.index[f["component"] == "judge"][0], "overall", f["criterion"]
                )
            ),
            "unknown criterion",
        ),
        (lambda f: pd.concat([f, f.iloc[:1]], ignore_index=True), "duplicate"),
        (lambda f: f.assign(value=f["value"].where(f["component"] != "judge", 11.0)), "1-10"),
        (lambda f: f.assign(value=np.where(f.index == 0, np.nan, f["value"]), status="ok"), "finite value"),
        (lambda f: f.assign(benchmark="acbench"), "storybench"),
        (lambda f: f.assign(benchmark=np.where(f.index == 0, "prism", "storybench")), "several benchmarks"),
        (lambda f: f.assign(status=np.where(f.index == 0, "weird", f["status"])), "unknown status"),
        (
            lambda f: f.assign(track=np.where(f["component"] == "judge", "video", f["track"])),
            "unknown judge track",
        ),
    ],
)
def test_bad_tables_fail_with_a_clear_data_error(mutate, message) -> None:  # type: ignore[no-untyped-def]
    frame = make_scores(
        benchmark="storybench",
        n_systems=2,
        n_instances=3,
        missing_rate=0.0,
        invalid_rate=0.0,
        repaired_rate=0.0,
        seed=0,
    )
    with pytest.raises(DataError, match=message):
        aggregate(mutate(frame), benchmark="storybench")


def test_a_table_of_another_shape_is_refused() -> None:
    frame = make_scores(benchmark="acbench", n_systems=2, n_instances=3, seed=0)
    # Named by the caller's benchmark: a table of another one is refused...
    with pytest.raises(DataError, match="for 'storybench' tables; this scores table holds 'acbench'"):
        aggregate(frame, benchmark="storybench")
    # ... and without a name, a table holding none of the components this aggregation reads.
    wer = frame.assign(component="wer", judge="", panel="", criterion="fast")
    with pytest.raises(DataError, match="holds none of the components"):
        aggregate(wer.drop_duplicates(["system", "instance_id", "track"]))


def test_judge_without_any_valid_record_drops_out_of_valid_only() -> None:
    r = Rows(IDS[:2])
    for s in ("A", "B"):
        for iid in IDS[:2]:
            r.auto(s, iid, "bertscore_f1", 0.5)
            r.judge(s, iid, "text", "J1", 6)
            r.judge(s, iid, "text", "J2", None if s == "A" else 8, "parse_error" if s == "A" else "ok")
    doc = aggregate(r.frame()).to_dict()
    a = doc["systems"]["A"]
    assert a["valid_only"]["judge.text"] == 6.0
    assert a["valid_only"]["judge_by_judge"]["text"]["J2"] is None
    assert a["zero_filled"]["judge.text"] == 3.0
    assert doc["not_computed"] == [
        "image_similarity: no rows in the scores table",
        "speech_meta_accuracy: no rows in the scores table",
        "judge.image: no rows in the scores table",
        "judge.speech: no rows in the scores table",
        "judge.integrated: no rows in the scores table",
    ]
    # J2 is valid for B, so it stays in the track; A's entry says why it has nothing from J2.
    assert doc["judges"]["text"] == ["J1", "J2"] and doc["missing_judges"] == {}
    assert a["missing_judges"] == {"text": {"J2": "no valid record (2 parse_error)"}}
    assert "judge.text/J2: no valid record (2 parse_error)" in a["valid_only"]["not_computed"]
    assert "judge.text/J2: no valid record (2 parse_error)" not in a["zero_filled"]["not_computed"]
    assert doc["systems"]["B"]["missing_judges"] == {}


def test_cli_aggregate_json(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "scores.parquet"
    write_scores(_hand_table(), path)
    assert main(["aggregate", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["systems"]) == {"A", "B"}
    vo = doc["systems"]["A"]["valid_only"]
    for key in (*COMPONENTS, "total_average", "total_average_components"):
        assert key in vo
    assert math.isclose(vo["total_average"], 7.1875)
    assert main(["aggregate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "storybench: 3 instances" in out
    assert "7.188" in out


def test_cli_aggregate_reports_bad_input(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["aggregate", str(tmp_path / "nope.parquet")]) == 2
    assert f"SCORES.parquet: {tmp_path / 'nope.parquet'} does not exist" in capsys.readouterr().err
    frame = make_scores(benchmark="storybench", n_systems=2, n_instances=2, seed=0)
    frame.loc[frame["component"] == "judge", "value"] = 42.0
    frame.loc[frame["component"] == "judge", "status"] = "ok"
    path = tmp_path / "bad.parquet"
    write_scores(frame, path)
    assert main(["aggregate", str(path), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: scores table failed validation")
    assert "judge scores lie in 1-10" in err


def test_rubric_keys_match_the_judges_package() -> None:
    from omnieval.benchmarks.storybench._names import RUBRICS
    from omnieval.judges import tracks_of

    assert {t: spec.criteria for t, spec in tracks_of("storybench").tracks.items()} == RUBRICS
