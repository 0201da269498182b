"""PRISM-Bench human preference-direction agreement on a synthetic two-stage Label Studio export with
hand-computed agreement, and clear errors for malformed exports."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.prism._tables import frame, row
from omnieval.analysis import AnalysisConfig, run_analyses
from omnieval.benchmarks.prism._human import (
    parse_two_stage_export,
    preference_agreement,
    read_two_stage_export,
)
from omnieval.errors import DataError

GT = "ground_truth"
AQ, EX, PF, AV = "audio_quality", "expressiveness", "prompt_following", "av_coherence"

# Judge cells (one judge): (item, system) -> {dimension: (system score, GT score beside it)}, speech only.
JUDGES = {
    ("i1", "A"): {AQ: (7, 8), EX: (6, 6), PF: (5, 4)},
    ("i1", "B"): {AQ: (5, 8), EX: (5, 7), PF: (5, 6)},
    ("i2", "A"): {AV: (5, 7), AQ: (6, 6), EX: (6, 5), PF: (6, 8)},
}
SUBSET = {"i1": "off_screen", "i2": "on_screen"}


def _scores() -> Any:
    rows = []
    for (iid, system), cells in JUDGES.items():
        for dim, (own, gt) in cells.items():
            rows.append(row(system, iid, dim, "speech", float(own), subset=SUBSET[iid]))
            rows.append(row(GT, iid, dim, "speech", float(gt), paired_with=system, subset=SUBSET[iid]))
    return frame(rows)


def _result(video: int, dim: str, score: int) -> dict[str, Any]:
    return {
        "from_name": f"v{video}_{dim}_speech",
        "to_name": f"video{video}",
        "type": "number",
        "value": {"number": score},
    }


def _discard(flag: str) -> dict[str, Any]:
    return {"from_name": "discard", "to_name": "video1", "type": "choices", "value": {"choices": [flag]}}


def _task(
    tid: int, iid: str, system: str, order: str, tags: str, annotations: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "id": tid,
        "data": {
            "num": tid,
            "instance_id": iid,
            "subset": SUBSET[iid],
            "tags": tags,
            "system": system,
            "order": order,
            "caption": "a person speaks",
            "video1": "/data/1.mp4",
            "video2": "/data/2.mp4",
        },
        "annotations": annotations,
    }


def _annotation(aid: int, who: int, v1: dict[str, int], v2: dict[str, int], **extra: Any) -> dict[str, Any]:
    result = [_result(1, d, s) for d, s in v1.items()] + [_result(2, d, s) for d, s in v2.items()]
    result.append({"from_name": "comment", "type": "textarea", "value": {"text": ["ok"]}})
    return {"id": aid, "completed_by": who, "result": [*result, _discard("false")], **extra}


def export() -> list[dict[str, Any]]:
    return [
        # i1 / A, video1 = GT. Annotator 1: A - GT = AQ -3, EX +1, PF +2; annotator 2 keeps the same
        # directions (AQ: A 7, GT 9 on average). One discarded and one cancelled annotation.
        _task(
            1,
            "i1",
            "A",
            "gt_first",
            "SPEECH_B",
            [
                _annotation(11, 1, {AQ: 9, EX: 5, PF: 4}, {AQ: 6, EX: 6, PF: 6}),
                _annotation(12, 2, {AQ: 9, EX: 5, PF: 4}, {AQ: 8, EX: 6, PF: 6}),
                {
                    **_annotation(13, 3, {AQ: 1, EX: 1, PF: 1}, {AQ: 9, EX: 9, PF: 9}),
                    "result": [_discard("true")],
                },
                {"id": 14, "completed_by": 4, "was_cancelled": True, "result": []},
            ],
        ),
        # i1 / B, video1 = B: B - GT = AQ -4, EX -4, PF +1. An inactive (music) score is ignored.
        _task(
            2,
            "i1",
            "B",
            "system_first",
            "SPEECH_B",
            [
                {
                    **_annotation(21, 1, {AQ: 4, EX: 4, PF: 7}, {AQ: 8, EX: 8, PF: 6}),
                }
            ],
        ),
        # i2 / A on screen (AV coherence active): A - GT = AV -2, AQ 0, EX +2, PF -2.
        _task(
            3,
            "i2",
            "A",
            "gt_first",
            ["SPEECH_A"],
            [_annotation(31, 1, {AV: 8, AQ: 7, EX: 5, PF: 9}, {AV: 6, AQ: 7, EX: 7, PF: 7})],
        ),
    ]


def _with_inactive(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tasks = copy.deepcopy(tasks)
    extra = {
        "from_name": "v1_audio_quality_music",
        "to_name": "video1",
        "type": "number",
        "value": {"number": 3},
    }
    tasks[1]["annotations"][0]["result"].append(extra)
    return tasks


def test_hand_computed_agreement() -> None:
    parsed = parse_two_stage_export(_with_inactive(export()))
    assert parsed.counts == {
        "tasks": 3,
        "annotations": 6,
        "scored": 4,
        "skipped": 1,
        "discarded": 1,
        "incomplete": 0,
        "inactive_scores_ignored": 1,
    }
    doc = preference_agreement(parsed, _scores())
    cells = doc["gt_vs_model"]["cells"]
    # i1/A: AQ (-,-) yes, EX (+, tie) no, PF (+,+) yes; i1/B: AQ yes, EX yes, PF (+,-) no;
    # i2/A: AV yes, AQ (tie, tie) yes, EX yes, PF yes.
    assert cells["overall"] == {
        "n": 10,
        "agree": 8,
        "rate": 0.8,
        "n_untied": 8,
        "agree_untied": 7,
        "rate_untied": 7 / 8,
    }
    assert cells["by_subset"]["off_screen"]["agree"] == 4 and cells["by_subset"]["off_screen"]["n"] == 6
    assert cells["by_subset"]["on_screen"]["rate"] == 1.0
    assert list(cells["by_dimension"]) == [AV, AQ, EX, PF]
    assert {d: (v["agree"], v["n"]) for d, v in cells["by_dimension"].items()} == {
        AV: (1, 1),
        AQ: (3, 3),
        EX: (2, 3),
        PF: (2, 3),
    }
    assert {s: (v["agree"], v["n"]) for s, v in cells["by_system"].items()} == {"A": (6, 7), "B": (2, 3)}
    totals = doc["gt_vs_model"]["totals"]
    # i1/A human +1 (AQ 7 - 9, EX +1, PF +2 over both annotators) vs judge 0 (tie): no;
    # i1/B -7 vs -6 and i2/A -2 vs -3: yes.
    assert (totals["overall"]["agree"], totals["overall"]["n"], totals["overall"]["n_untied"]) == (2, 3, 2)
    assert totals["overall"]["agree_untied"] == 2
    assert doc["mean_dimension_agreement"] == pytest.approx((1 + 1 + 2 / 3 + 2 / 3) / 4)
    mm = doc["model_vs_model"]
    # i1, A - B: human AQ +3 (A 7 avg vs 4), EX +2, PF -1; judges AQ +2, EX +1, PF 0.
    assert (mm["cells"]["overall"]["agree"], mm["cells"]["overall"]["n"]) == (2, 3)
    assert mm["cells"]["by_pair"] == {"A vs B": mm["cells"]["overall"]}
    assert (mm["totals"]["overall"]["agree"], mm["totals"]["overall"]["n"]) == (1, 1)
    json.dumps(doc, allow_nan=False)


def test_human_preference_analysis_reads_the_export(tmp_path: Path) -> None:
    import omnieval.benchmarks.prism._analyses  # noqa: F401

    path = tmp_path / "export.json"
    path.write_text(json.dumps(export()))
    assert read_two_stage_export(path).counts["scored"] == 4
    outputs = run_analyses(
        _scores(), tmp_path / "out", only=["human_preference"], config=AnalysisConfig(humans=path)
    )
    assert outputs["human_preference"].status == "ok"
    written = json.loads((tmp_path / "out" / "human_preference.json").read_text())
    assert written["gt_vs_model"]["cells"]["overall"]["agree"] == 8


def _broken(edit: Any) -> list[dict[str, Any]]:
    tasks = export()
    edit(tasks)
    return tasks


@pytest.mark.parametrize(
    ("edit", "fragments"),
    [
        (lambda t: t[0]["data"].pop("order"), ["task 1", "data.order"]),
        (lambda t: t[1]["data"].update(order="left"), ["task 2", "data.order", "'left'"]),
        (lambda t: t[0]["data"].pop("instance_id"), ["task 1", "data.instance_id"]),
        (lambda t: t[2]["data"].update(tags="SPEECH_B"), ["task 3", "data.tags", "on_screen"]),
        (lambda t: t[2]["data"].update(tags=7), ["task 3", "data.tags"]),
        (lambda t: t[1]["data"].update(system=GT), ["task 2", "data.system"]),
        (
            lambda t: t[0]["annotations"][0]["result"][0]["value"].update(number=11),
            ["task 1 annotation 11", "v1_audio_quality_speech", "0..10"],
        ),
        (
            lambda t: t[0]["annotations"][0]["result"][0]["value"].update(number="good"),
            ["task 1 annotation 11", "not a number"],
        ),
        (
            lambda t: t[0]["annotations"][0]["result"][0].update(from_name="v1_loudness_speech"),
            ["task 1 annotation 11", "v1_loudness_speech", "score name"],
        ),
        (
            lambda t: t[2]["annotations"][0]["result"][-1]["value"].update(choices=["maybe"]),
            ["task 3 annotation 31", "discard"],
        ),
        (lambda t: t[1]["data"].update(tags="SPEECH_B,MUSIC_B"), ["task 2", "other tags"]),
        # Without an annotator the ratings of several people would pool as one.
        (lambda t: t[0]["annotations"][0].pop("completed_by"), ["task 1 annotation 11", "completed_by"]),
    ],
)
def test_malformed_exports_name_task_and_field(edit: Any, fragments: list[str]) -> None:
    with pytest.raises(DataError) as info:
        parse_two_stage_export(_broken(edit), "export.json")
    message = str(info.value)
    for fragment in ["export.json", *fragments]:
        assert fragment in message, (fragment, message)


def test_not_a_task_list_and_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="list of tasks"):
        parse_two_stage_export({"tasks": []}, "x.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(DataError, match="cannot read Label Studio export"):
        read_two_stage_export(bad)


def test_incomplete_annotations_count_and_partial_cells_still_compare() -> None:
    tasks = export()
    # Annotator 1 on task 2 forgets PF for video2: the annotation is incomplete; AQ and EX still count.
    tasks[1]["annotations"][0]["result"] = [
        r for r in tasks[1]["annotations"][0]["result"] if r["from_name"] != "v2_prompt_following_speech"
    ]
    parsed = parse_two_stage_export(tasks)
    assert parsed.counts["incomplete"] == 1 and parsed.counts["scored"] == 3
    doc = preference_agreement(parsed, _scores())
    assert doc["gt_vs_model"]["cells"]["by_system"]["B"]["n"] == 2
    assert "B" not in doc["gt_vs_model"]["totals"]["by_system"]


def test_majority_vote_of_three_raters() -> None:
    # i1 / A (GT shown first), three raters per clip, speech only:
    # AQ: A 8, 8, 2 -> 8 (the mean, 6, would say A < GT); GT 7, 7, 7 -> 7: human +, judges (7 vs 8) -.
    # EX: A 3, 9, 5 -> no majority, median 5; GT 6, 6, 5 -> 6: human -, judges (6 vs 6) tie.
    # PF: A 6, 6, 9 -> 6 (mean 7); GT 4, 8, 8 -> 8 (mean 6.67): human -, judges (5 vs 4) +.
    raters = [
        ({AQ: 7, EX: 6, PF: 4}, {AQ: 8, EX: 3, PF: 6}),
        ({AQ: 7, EX: 6, PF: 8}, {AQ: 8, EX: 9, PF: 6}),
        ({AQ: 7, EX: 5, PF: 8}, {AQ: 2, EX: 5, PF: 9}),
    ]
    task = _task(
        1, "i1", "A", "gt_first", "SPEECH_B", [_annotation(i, i, gt, a) for i, (gt, a) in enumerate(raters)]
    )
    doc = preference_agreement(parse_two_stage_export([task]), _scores())
    assert doc["counts"]["labels"] == 6 and doc["counts"]["labels_without_majority"] == 1
    by_dim = doc["gt_vs_model"]["cells"]["by_dimension"]
    # AQ: human + vs judge -: no. EX: human - vs judge tie: no. PF: human - vs judge +: no.
    assert {d: by_dim[d]["agree"] for d in (AQ, EX, PF)} == {AQ: 0, EX: 0, PF: 0}
    # The item total: human (+1) + (-1) + (-2) = -2; judges -1 + 0 + 1 = 0 (a tie): no.
    assert doc["gt_vs_model"]["totals"]["overall"] == {
        "n": 1,
        "agree": 0,
        "rate": 0.0,
        "n_untied": 0,
        "agree_untied": 0,
        "rate_untied": None,
    }
    # Flip the judges' AQ cell to A above GT and the majority-voted AQ now agrees.
    flipped = _scores()
    hit = (flipped["system"] == "A") & (flipped["instance_id"] == "i1") & (flipped["track"] == AQ)
    flipped.loc[hit, "value"] = 9.0
    assert (
        preference_agreement(parse_two_stage_export([task]), flipped)["gt_vs_model"]["cells"]["by_dimension"][
            AQ
        ]["agree"]
        == 1
    )
    assert "majority" in doc["rater_rule"]
