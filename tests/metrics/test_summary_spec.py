"""Speech-metadata accuracy policies from rows, and the facts every registered metric declares."""

from __future__ import annotations

import math

import pytest

from omnieval.benchmarks.storybench._speech_summary import summarize_speech_meta
from omnieval.metrics import METRICS
from omnieval.scores import ScoreRow, scores_frame


def _rows() -> list[ScoreRow]:
    def row(index: int, field: str, value: float | None, status: str) -> ScoreRow:
        return ScoreRow(
            "storybench", "s", f"id{index}", index, "speech", "speech_meta", "", field, value, status
        )

    out = []
    # instance 0: speed and pitch right; 1: speed right, pitch wrong; 2: audio missing
    for index, speed, pitch in ((0, 1.0, 1.0), (1, 1.0, 0.0)):
        out += [
            row(index, "emotion", None, "not_applicable"),
            row(index, "speed", speed, "ok"),
            row(index, "pitch", pitch, "ok"),
            row(index, "gender", None, "not_applicable"),
        ]
    out += [row(2, f, None, "missing_output") for f in ("emotion", "speed", "pitch", "gender")]
    return out


def test_valid_only_and_zero_filled() -> None:
    summary = summarize_speech_meta(scores_frame(_rows()))
    assert summary.fields == ("speed", "pitch") and summary.instances == 3 and summary.valid == 2
    v, z = summary.valid_only, summary.zero_filled
    assert v.per_field == {"emotion": None, "speed": 1.0, "pitch": 0.5, "gender": None}
    assert v.sample_accuracy == pytest.approx(0.75) and v.exact_match == pytest.approx(0.5)
    assert z.per_field["speed"] == pytest.approx(2 / 3) and z.per_field["pitch"] == pytest.approx(1 / 3)
    assert z.sample_accuracy == pytest.approx(0.5) and z.exact_match == pytest.approx(1 / 3)


def test_every_metric_declares_its_facts() -> None:
    names = METRICS.names()
    assert {"bertscore_f1", "image_similarity", "speech_meta", "wer", "wpm", "per", "vfr"} <= set(names)
    for name in names:
        spec = METRICS.get(name)
        assert spec.name == name
        assert isinstance(spec.higher_is_better, bool)
        low, high = spec.value_range
        assert low < high and not math.isnan(low)
        assert spec.inputs and spec.version and spec.description
        assert spec.as_dict()["name"] == name
