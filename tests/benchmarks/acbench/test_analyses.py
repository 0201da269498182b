"""acbench's Table 3 and Table 4 analyses against hand-computed cases, and through ``omnieval analyze``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from benchmarks.acbench.test_aggregate import _row
from omnieval.benchmarks.acbench._analyses import (
    _evaluator_rows,
    capability_diagnostics,
    human_validation,
    majority_label,
    read_records,
)
from omnieval.cli import main
from omnieval.errors import DataError
from omnieval.scores import coerce_scores, write_scores


def _scores() -> pd.DataFrame:
    """System m: e1 (joy) and e2 (fear) under original and oracle, a1 (uk) under original, e3 with a
    missing output; WER 0.1 and 0.3 under original."""
    rows = [
        _row("m", "e1", 0, "emotion", "attribute_accuracy", "joy", 1.0, "ok", "original"),
        _row("m", "e2", 1, "emotion", "attribute_accuracy", "fear", 0.0, "ok", "original"),
        _row("m", "a1", 2, "accent", "attribute_accuracy", "UK", 1.0, "ok", "original"),
        _row("m", "e3", 3, "emotion", "attribute_accuracy", "joy", None, "missing_output", "original"),
        _row("m", "e1", 0, "emotion", "attribute_accuracy", "joy", 1.0, "ok", "oracle"),
        _row("m", "e2", 1, "emotion", "attribute_accuracy", "fear", 1.0, "ok", "oracle"),
        _row("m", "e1", 0, "emotion", "wer", "joy", 0.1, "ok", "original"),
        _row("m", "e2", 1, "emotion", "wer", "fear", 0.3, "ok", "original"),
    ]
    return coerce_scores(pd.DataFrame(rows))


def _labels() -> list[dict[str, Any]]:
    clips = {
        ("m", "original", "e1"): ["joy", "Joy", "fear", "joy", "sadness"],  # majority joy: hit
        ("m", "original", "e2"): ["fear", "fear", "angry", "angry", "joy"],  # 2-2 tie: a miss
        ("m", "oracle", "e1"): ["sadness", "sadness", "sadness", "joy", "joy"],  # sadness: miss
        ("m", "oracle", "e2"): ["fear"] * 5,  # hit
        ("m", "original", "a1"): ["uk", "india", "uk"],  # uk: hit (target "UK")
        ("m", "original", "e3"): ["joy"] * 5,  # no valid evaluator row: unmatched
    }
    return [
        {"system": s, "condition": c, "instance_id": i, "annotator": f"r{n}", "label": label}
        for (s, c, i), labels in clips.items()
        for n, label in enumerate(labels)
    ]


def test_human_validation_by_hand() -> None:
    out = human_validation(_labels(), _evaluator_rows(_scores()))
    groups = {(g["condition"], g["feature"]): g for g in out["groups"]}
    assert [(g["condition"], g["feature"]) for g in out["groups"]] == [
        ("oracle", "emotion"),
        ("original", "accent"),
        ("original", "emotion"),
    ]
    # oracle/emotion: evaluator hits e1 and e2 (E 100); humans miss e1, hit e2 (H 50); agree on e2.
    oracle = groups[("oracle", "emotion")]
    assert (oracle["n"], oracle["evaluator_accuracy"], oracle["human_accuracy"]) == (2, 100.0, 50.0)
    assert oracle["difference"] == 50.0 and oracle["agreement"] == 50.0 and oracle["ties"] == 0
    # original/emotion: evaluator hit e1, missed e2 (E 50); humans hit e1, tie on e2 = miss (H 50).
    original = groups[("original", "emotion")]
    assert (original["evaluator_accuracy"], original["human_accuracy"], original["agreement"]) == (
        50.0,
        50.0,
        100.0,
    )
    assert original["ties"] == 1 and original["annotators"] == {"min": 5, "max": 5}
    accent = groups[("original", "accent")]
    assert (accent["n"], accent["human_accuracy"], accent["annotators"]) == (1, 100.0, {"min": 3, "max": 3})
    assert out["unmatched"] == ["m / original / e3"]


def test_majority_label_and_repeated_annotator() -> None:
    assert majority_label(["a", "b", "b"]) == "b" and majority_label(["a", "b"]) is None
    twice = [
        {"system": "m", "condition": "original", "instance_id": "e1", "annotator": "r1", "label": x}
        for x in "ab"
    ]
    with pytest.raises(DataError, match="twice"):
        human_validation(twice, {})


def _capabilities() -> list[dict[str, Any]]:
    return [
        {"system": "m", "setting": "script_only", "instance_id": "i1", "wer": "0.1"},
        {
            "system": "m",
            "setting": "script_only",
            "instance_id": "i2",
            "script": "Mr. Smith has 5 apples.",
            "transcript": "mister smith has five apples",
        },
        {
            "system": "m",
            "setting": "spoken_conditioning",
            "instance_id": "i1",
            "script": "the cat sat",
            "transcript": "the cat sat down",
        },
        {
            "system": "m",
            "setting": "visual_cue",
            "instance_id": "i1",
            "feature": "speech_rate",
            "answer": "fast",
            "choice": " Fast",
        },
        {
            "system": "m",
            "setting": "visual_cue",
            "instance_id": "i2",
            "feature": "speech_rate",
            "answer": "slow",
            "choice": "fast",
        },
        {
            "system": "m",
            "setting": "visual_cue",
            "instance_id": "i3",
            "feature": "emotion",
            "answer": "joy",
            "choice": "joy",
        },
        {"system": "q", "setting": "visual_cue", "instance_id": "i1", "answer": "uk", "choice": "india"},
    ]


def test_capability_diagnostics_by_hand() -> None:
    out = capability_diagnostics(_capabilities(), {"m": 20.0})
    m, q = out["systems"]["m"], out["systems"]["q"]
    # script-only: WER 0.1 and 0.0 (Whisper normalization makes the second exact) -> 5 %.
    assert m["script_only"]["n"] == 2 and m["script_only"]["wer"] == pytest.approx(5.0)
    # spoken conditioning: one inserted word over three -> 33.33 %.
    assert m["spoken_conditioning"] == {"wer": pytest.approx(100 / 3), "n": 1}
    # visual cue: 2 of 3 right; speech_rate 1 of 2, emotion 1 of 1.
    assert m["visual_cue"]["accuracy"] == pytest.approx(200 / 3) and m["visual_cue"]["n"] == 3
    assert m["visual_cue"]["by_feature"] == {
        "emotion": {"accuracy": 100.0, "n": 1},
        "speech_rate": {"accuracy": 50.0, "n": 2},
    }
    assert m["task_wer_original"] == 20.0
    assert q["script_only"] == {"wer": None, "n": 0} and q["visual_cue"]["accuracy"] == 0.0
    assert q["task_wer_original"] is None and q["visual_cue"]["by_feature"] == {}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"system": "m", "setting": "script", "instance_id": "i"}, "unknown setting"),
        ({"system": "m", "setting": "script_only", "instance_id": "i"}, "needs 'wer'"),
        ({"system": "m", "setting": "visual_cue", "instance_id": "i", "answer": "fast"}, "missing 'choice'"),
    ],
)
def test_capability_rows_are_checked(row: dict[str, Any], message: str) -> None:
    with pytest.raises(DataError, match=message):
        capability_diagnostics([row])
    with pytest.raises(DataError, match="given twice"):
        capability_diagnostics([_capabilities()[0], _capabilities()[0]])


def test_omnieval_analyze_runs_both_from_csv_and_jsonl(tmp_path: Path) -> None:
    scores = tmp_path / "scores.parquet"
    write_scores(_scores(), scores)
    capabilities = tmp_path / "capabilities.csv"
    columns = [
        "system",
        "setting",
        "instance_id",
        "wer",
        "script",
        "transcript",
        "feature",
        "answer",
        "choice",
    ]
    lines = [",".join(columns)] + [
        ",".join(f'"{row.get(c, "")}"' for c in columns) for row in _capabilities()
    ]
    capabilities.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert len(read_records(capabilities)) == 7
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(row) + "\n" for row in _labels()), encoding="utf-8")
    out = tmp_path / "out"
    only = "capability_diagnostics,human_validation"
    argv = ["analyze", str(scores), "--out", str(out), "--only", only]
    assert main([*argv, "--capabilities", str(capabilities), "--humans", str(labels)]) == 0
    table3 = json.loads((out / "capability_diagnostics.json").read_text())
    assert table3["status"] == "ok" and table3["systems"]["m"]["task_wer_original"] == pytest.approx(20.0)
    assert table3["systems"]["m"]["spoken_conditioning"]["wer"] == pytest.approx(100 / 3)
    table4 = json.loads((out / "human_validation.json").read_text())
    assert table4["status"] == "ok" and len(table4["groups"]) == 3
    # Without the files both are skipped with the flag to use.
    assert main([*argv[:3], str(tmp_path / "bare"), *argv[4:]]) == 0
    skipped = json.loads((tmp_path / "bare" / "capability_diagnostics.json").read_text())
    assert skipped["status"] == "skipped" and "--capabilities" in skipped["reason"]
    assert "--humans" in json.loads((tmp_path / "bare" / "human_validation.json").read_text())["reason"]


def test_a_non_utf8_capabilities_file_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scores = tmp_path / "scores.parquet"
    write_scores(_scores(), scores)
    capabilities = tmp_path / "capabilities.csv"
    capabilities.write_bytes(b"system,setting\nm,\xff\n")
    with pytest.raises(DataError, match=r"capabilities\.csv: not UTF-8 text \(byte 17\)"):
        read_records(capabilities)
    argv = ["analyze", str(scores), "--out", str(tmp_path / "out"), "--only", "capability_diagnostics"]
    assert main([*argv, "--capabilities", str(capabilities)]) != 0
    err = capsys.readouterr().err
    assert "not UTF-8 text" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "capability_diagnostics.json").exists()
