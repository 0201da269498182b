"""The judges' shared pieces for blind pairs and repairs, on small hand-made inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnieval.errors import ConfigError
from omnieval.judges import (
    AnswerReading,
    PairedReading,
    PairPanelConfig,
    decide_repair,
    judge_repair,
    load_panel_file,
    parse_score,
    read_answer,
    read_per_candidate,
    swap_summary,
)

SLOTS = [("candidate_1", ["candidate_1", "clip_1"]), ("candidate_2", ["candidate_2", "clip_2"])]
FIELDS = [("quality", [["quality"]])]


def test_one_reader_for_both_candidates_with_dotted_keys_and_aliases() -> None:
    answer = '{"clip_1.quality.score": 7, "clip_1.quality.evidence": "clean", "candidate_2": {}}'
    scores, texts, problems = read_per_candidate(
        json.loads(answer), SLOTS, FIELDS, parse_score, {"evidence"}, "evidence"
    )
    assert scores == {"candidate_1.quality": 7} and texts == {"candidate_1.quality": "clean"}
    assert problems == ["candidate_2.quality: missing"]


def test_one_repair_rule_with_each_benchmarks_wording() -> None:
    original = "clip 1 quality 7 clean; clip 2 quality 3 hiss"
    fixed = json.dumps({"candidate_1": {"quality": {"score": 9, "evidence": "clean"}}})  # 9: never given

    def reading(answer: str) -> AnswerReading:
        return read_answer(
            answer, lambda o: read_per_candidate(o, SLOTS[:1], FIELDS, parse_score, {"evidence"}, "evidence")
        )

    outcome = decide_repair(
        original, fixed, reading, lambda r: r.texts, texts_name="evidence", source="original"
    )
    assert outcome.status == "unrecoverable"
    assert (
        outcome.reason
        == "excluded: the repair supplied scores absent from the original (candidate_1.quality)"
    )
    honest = json.dumps({"candidate_1": {"quality": {"score": 7, "evidence": "clean"}}})
    assert decide_repair(original, honest, reading, lambda r: r.texts).status == "repaired"
    made_up = json.dumps({"candidate_1": {"quality": {"score": 7, "evidence": "crisp and warm"}}})
    why = decide_repair(original, made_up, reading, lambda r: r.texts).reason
    assert (
        why
        == "excluded: the repair supplied rationales absent from the original answer (candidate_1.quality)"
    )
    # The refusal marker: storybench's rule also takes a marker JSON cannot load, PRISM's does not.
    odd = '{\u00a0"unrecoverable": true}'
    assert judge_repair("x", odd, "text").reason == "the repair model found the answer unrecoverable"
    assert decide_repair("x", odd, reading, lambda r: r.texts, json_marker_only=True).reason.startswith(
        "the repair answer is not a valid verdict"
    )


def test_swap_summary_counts_flips_between_the_two_orders() -> None:
    # The judge prefers whatever it is shown first: every preference flips with the order.
    first = PairedReading(("j", "sys", "a"), "stage_1", False, {"q": (8, 3)}, candidate_slot=1)
    other = PairedReading(("j", "sys", "a"), "stage_1", True, {"q": (8, 3)}, candidate_slot=2)
    lone = PairedReading(("j", "sys", "b"), "stage_1", False, {"q": (5, 5)}, candidate_slot=1)
    out = swap_summary([first, other, lone], ["stage_1", "stage_2"])
    assert out["stage_1"] == {
        "cells": 1,
        "flips": 1,
        "flip_rate": 1.0,
        "strict_flips": 1,
        "strict_flip_rate": 1.0,
        "first_slot_wins": 1.0,
    }
    assert out["stage_2"]["cells"] == 0 and out["stage_2"]["flip_rate"] is None


def test_pair_panels_load_by_path_and_refuse_unknown_names(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown demo judge panel 'nope'; known: a \(or a path"):
        load_panel_file(PairPanelConfig, "nope", {"a": "a.yaml"}, "omnieval.judges", "demo judge panel")
    path = tmp_path / "p.yaml"
    path.write_text("name: p\njudge_kind: cascade\nrequires: x\njudges: []\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid demo judge panel"):
        load_panel_file(PairPanelConfig, path, {}, "omnieval.judges", "demo judge panel")
