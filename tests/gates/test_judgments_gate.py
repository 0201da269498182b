"""The judgments gate: judgments.parquet's columns and statuses, and its link to the judge score rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from omnieval.gates import GateResult, gate_judgments, judge_rows_gate_frame, judgments_gate_frame
from omnieval.judges import JUDGMENT_COLUMNS
from omnieval.scores import SCORE_COLUMNS, coerce_scores

CRITERIA = ("fluency", "coherence")
SYSTEMS = ("oracle", "copy-current")
INSTANCES = (("book/p01__p02", 0), ("book/p02__p03", 1), ("book/p03__p04", 2))


def _tables(statuses: dict[tuple[str, int], str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Judgments and score rows as one cpu-panel text track writes them (plus judge_expected rows)."""
    statuses = statuses or {}
    judgments: list[dict[str, Any]] = []
    scores: list[dict[str, Any]] = []
    for system in SYSTEMS:
        for instance_id, index in INSTANCES:
            status = statuses.get((system, index), "ok")
            valued = status in ("ok", "repaired")
            verdict = {c: 7 + i for i, c in enumerate(CRITERIA)} if valued else {}
            judgments.append(
                {
                    **{c: "" for c in JUDGMENT_COLUMNS},
                    "system": system,
                    "instance_id": instance_id,
                    "index": index,
                    "track": "text",
                    "judge": "qwen-1.5b",
                    "model": "qwen.gguf",
                    "status": status,
                    "raw_response": json.dumps(verdict) if valued else "",
                    "scores": json.dumps(verdict),
                    "rationales": json.dumps({c: "reads well" for c in verdict}),
                    "normalizations": "[]",
                    "repair_history": json.dumps([{"outcome": "repaired"}] if status == "repaired" else []),
                    "cache_hit": False,
                    "latency_s": 1.5,
                    "panel": "cpu",
                }
            )
            for criterion in CRITERIA:
                base = {
                    "benchmark": "storybench",
                    "system": system,
                    "instance_id": instance_id,
                    "index": index,
                    "track": "text",
                    "component": "judge",
                    "judge": "qwen-1.5b",
                    "criterion": criterion,
                    "value": float(verdict[criterion]) if valued else None,
                    "status": status,
                    "panel": "cpu",
                }
                scores.append(base)
                # The probability-weighted companion: not applicable when no probabilities came back.
                scores.append(
                    {**base, "component": "judge_expected", "value": None, "status": "not_applicable"}
                )
    frame = pd.DataFrame(judgments)
    return frame.astype({"index": "int64", "cache_hit": bool, "latency_s": float}), coerce_scores(
        pd.DataFrame(scores, columns=list(SCORE_COLUMNS))
    )


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[GateResult, Path, pd.DataFrame]]:
    out = tmp_path_factory.mktemp("gates")
    clean_j, clean_s = _tables({("oracle", 1): "parse_error", ("copy-current", 2): "repaired"})
    bad_j, bad_s = _tables({("oracle", 1): "parse_error"})
    # 0: a second judgment of the same record; 1: a valued judgment that lost its raw response;
    # 2: a status outside the vocabulary; 3: a status that disagrees with its score rows.
    bad_j = pd.concat([bad_j, bad_j.iloc[[0]]], ignore_index=True)
    bad_j.loc[2, "raw_response"] = ""
    bad_j.loc[3, "status"] = "fine"
    bad_j.loc[4, "status"] = "parse_error"
    # A judgment whose score rows are gone, and judge score rows without a judgment.
    gone = (bad_s["system"] == "copy-current") & (bad_s["index"] == 2)
    bad_s = bad_s[~gone]
    stray = bad_s[(bad_s["system"] == "oracle") & (bad_s["index"] == 0)].assign(judge="ghost-judge")
    bad_s = pd.concat([bad_s, stray], ignore_index=True)
    return {
        "clean": (gate_judgments(clean_j, clean_s, out_json=out / "clean.json"), out / "clean.json", clean_j),
        "bad": (gate_judgments(bad_j, bad_s, out_json=out / "bad.json"), out / "bad.json", bad_j),
    }


def test_clean_judgments_pass(results: dict[str, tuple[GateResult, Path, pd.DataFrame]]) -> None:
    result, path, judgments = results["clean"]
    assert result.success, result.report()
    saved = json.loads(path.read_text())
    assert saved["suite"] == "judgments" and saved["success"] is True and saved["n_rows"] == len(judgments)
    assert saved["details"]["statuses"] == {"ok": 4, "parse_error": 1, "repaired": 1}


def test_tampered_judgments_fail_naming_the_record(
    results: dict[str, tuple[GateResult, Path, pd.DataFrame]],
) -> None:
    result, path, judgments = results["bad"]
    assert not result.success
    by = {(f.expectation_type, f.column): f for f in result.failed}
    key = "panel, system, instance_id, judge, track"
    assert sorted(by[("expect_compound_columns_to_be_unique", key)].unexpected_rows) == [
        0,
        len(judgments) - 1,
    ]
    raw = by[("expect_column_value_lengths_to_be_between", "raw_response")]
    assert raw.unexpected_rows == [2] and "a valued judgment keeps the judge's raw response" in raw.describe()
    status = by[("expect_column_values_to_be_in_set", "status")]
    assert status.unexpected_values == ["'fine'"] and status.unexpected_rows == [3]
    linked = by[("expect_column_values_to_be_in_set", "scores__linked")]
    text = linked.describe()
    # Rows 3 and 4 disagree with their score rows; row 5 (copy-current, index 2) lost its rows.
    assert sorted(linked.unexpected_rows) == [3, 4, 5]
    assert "judgment status 'parse_error' but its judge rows say ok" in text
    assert "no score rows for this judgment" in text
    assert "system=copy-current instance=book/p03__p04" in text
    orphan = by[("expect_column_values_to_be_in_set", "judgment__linked")]
    # The ghost judge's 2 criteria x (judge, judge_expected), and the verdict rows of rows 3 and 4,
    # which say ok where their (tampered) judgments say otherwise.
    assert orphan.unexpected_count == 8
    assert "judge=ghost-judge" in orphan.describe() and "no judgment record" in orphan.describe()
    assert "status 'ok' but its judgments say fine" in orphan.describe()
    assert len(result.failed) == 5, result.report()
    assert json.loads(path.read_text())["n_failed"] == 5


def test_derived_rows_may_be_not_applicable_but_not_contradict() -> None:
    judgments, scores = _tables()
    frame = judgments_gate_frame(judgments, scores)
    assert frame["scores__linked"].all()
    # A derived row claiming a failure its verdict did not have breaks the link.
    first = scores.index[(scores["component"] == "judge_expected")][0]
    scores.loc[first, "status"] = "inference_error"
    frame = judgments_gate_frame(judgments, scores)
    assert (
        frame["scores__problem"]
        .tolist()
        .count("judgment status 'ok' but rows derived from it say inference_error")
        == 1
    )


def test_automatic_rows_are_not_linked() -> None:
    judgments, scores = _tables()
    automatic = scores.iloc[[0]].assign(component="bertscore_f1", judge="", panel="", criterion="value")
    rows = judge_rows_gate_frame(pd.concat([scores, automatic], ignore_index=True), judgments)
    assert len(rows) == len(scores) and rows["judgment__linked"].all()


def test_no_panel_output_passes_without_gx(tmp_path: Path) -> None:
    result = gate_judgments(
        pd.DataFrame(), pd.DataFrame(columns=list(SCORE_COLUMNS)), out_json=tmp_path / "j.json"
    )
    assert result.success and result.evaluated == 0
    assert json.loads((tmp_path / "j.json").read_text())["notes"] == ["no judgments and no judge rows"]


def _prism_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Prism's shape: one judgment per call (stage, swapped), a system row and a ground-truth row per cell."""
    judgments: list[dict[str, Any]] = []
    scores: list[dict[str, Any]] = []
    for system in SYSTEMS:
        for instance_id, index in INSTANCES:
            for stage, swapped in ((1, False), (1, True), (2, False)):
                status = "parse_error" if (system, index, stage, swapped) == ("oracle", 1, 1, True) else "ok"
                judgments.append(
                    {
                        "system": system,
                        "instance_id": instance_id,
                        "index": index,
                        "subset": "on_screen",
                        "stage": stage,
                        "swapped": swapped,
                        "judge": "omni-7b",
                        "model": "omni",
                        "panel": "omni",
                        "status": status,
                        "raw_response": "{...}" if status == "ok" else "not json",
                        "scores": "{}",
                        "evidence": "{}",
                        "error": "",
                        "repair_history": "[]",
                    }
                )
                if swapped:
                    continue  # swap-check calls make no score rows
                for track in ("av_coherence",) if stage == 1 else ("audio_quality", "expressiveness"):
                    for own, pair in ((system, "ground_truth"), ("ground_truth", system)):
                        scores.append(
                            {
                                "benchmark": "prism",
                                "system": own,
                                "instance_id": instance_id,
                                "index": index,
                                "track": track,
                                "component": "judge",
                                "judge": "omni-7b",
                                "criterion": "speech",
                                "value": 6.0,
                                "status": "ok",
                                "panel": "omni",
                                "subset": "on_screen",
                                "paired_with": pair,
                            }
                        )
    frame = pd.DataFrame(judgments).astype({"index": "int64"})
    return frame, coerce_scores(pd.DataFrame(scores))


def test_prism_shaped_judgments(tmp_path: Path) -> None:
    judgments, scores = _prism_tables()
    linked = judgments_gate_frame(judgments, scores)
    assert linked["scores__linked"].all(), linked.loc[~linked["scores__linked"], "scores__problem"].tolist()
    rows = judge_rows_gate_frame(scores, judgments)
    # Ground-truth rows belong to the call of the system they were judged beside.
    assert rows["judgment__linked"].all() and (scores["system"] == "ground_truth").sum() == len(scores) // 2
    result = gate_judgments(judgments, scores, out_json=tmp_path / "j.json")
    assert result.success, result.report()
    # A ground-truth row whose pairing has no call, and a second stage-2 call of one record.
    stray = scores.iloc[[1]].assign(paired_with="nobody")
    bad = gate_judgments(
        pd.concat([judgments, judgments.iloc[[2]]], ignore_index=True),
        pd.concat([scores, stray], ignore_index=True),
        out_json=None,
    )
    by = {(f.expectation_type, f.column): f for f in bad.failed}
    unique = by[("expect_compound_columns_to_be_unique", "panel, system, instance_id, judge, stage, swapped")]
    assert sorted(unique.unexpected_rows) == [2, len(judgments)]
    orphan = by[("expect_column_values_to_be_in_set", "judgment__linked")]
    assert orphan.unexpected_count == 1 and "paired_with=nobody" in orphan.describe()
    assert len(bad.failed) == 2, bad.report()


def test_judgments_without_reasons_fail() -> None:
    judgments, scores = _prism_tables()
    result = gate_judgments(judgments.drop(columns=["evidence"]), scores, out_json=None)
    [failure] = result.failed
    assert failure.expectation_type == "expect_table_columns_to_match_set"
    assert "missing columns: rationales" in failure.detail and "rationales or evidence" in failure.meaning


def test_judgments_checked_against_the_benchmarks_schema() -> None:
    from omnieval.benchmarks.prism._judge import JUDGMENT_SCHEMA

    judgments, scores = _prism_tables()
    # The test tables carry only the columns the gate links by; the schema asks for the rest.
    complete = judgments.assign(**{c: "" for c in JUDGMENT_SCHEMA.columns if c not in judgments.columns})
    assert gate_judgments(complete, scores, out_json=None, schema=JUDGMENT_SCHEMA).success
    result = gate_judgments(complete.drop(columns=["order"]), scores, out_json=None, schema=JUDGMENT_SCHEMA)
    [failure] = result.failed
    assert failure.expectation_type == "expect_table_columns_to_match_set"
    assert "missing columns: order" in failure.detail
    assert "judgment schema" in failure.meaning
