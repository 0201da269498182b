"""OmniACBench metrics: pure functions, manifest validation, and a run on espeak-ng speech."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnieval.errors import DataError
from omnieval.metrics.functional.acoustic import (
    classifier_accuracy,
    delta_wpm,
    is_whisper_like,
    phone_error_rate,
    vfr_at,
    words_per_minute,
)


def test_pure_functions() -> None:
    assert words_per_minute(30, 10.0) == 180.0
    with pytest.raises(ValueError):
        words_per_minute(3, 0.0)
    assert (
        delta_wpm([210.0, 190.0, 100.0, 120.0, float("nan")], ["fast", "Fast", "slow", "slow", "fast"])
        == 90.0
    )
    with pytest.raises(ValueError, match="fast and one slow"):
        delta_wpm([100.0], ["fast"])
    assert phone_error_rate(list("abc"), list("abd")) == pytest.approx(1 / 3)
    assert phone_error_rate(list("ab"), list("abcd")) == 1.0
    assert is_whisper_like(0.3) and not is_whisper_like(0.31)
    assert vfr_at([0.0, 0.3, 0.5, 0.9]) == 0.5
    assert classifier_accuracy(["Joy", "UK", "fear"], ["joy", "uk", "anger"]) == pytest.approx(2 / 3)


def _line(**overrides: object) -> str:
    obj = {
        "id": "x1",
        "feature": "speech_rate",
        "target_value": "fast",
        "script": "We must hurry.",
        "instruction_audio": "instr/x1.wav",
        "instruction_text": "Read this quickly.",
        "image": "img/x1.png",
        "image_keywords": ["train", "clock"],
    }
    obj.update(overrides)
    return json.dumps(obj)


def test_manifest_line_that_is_not_utf8_is_reported_not_raised(tmp_path: Path) -> None:
    from omnieval.metrics import read_manifest

    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(
        _line().encode()
        + b"\n"
        + _line(id="x2").replace("We must hurry.", "caf\u00e9").encode("latin-1")
        + b"\n"
    )
    with pytest.raises(DataError) as info:
        read_manifest(bad)
    assert f"{bad}:2: not UTF-8 text" in str(info.value)


def test_manifest_validation_reports_every_problem(tmp_path: Path) -> None:
    from omnieval.metrics import read_manifest

    good = tmp_path / "good.jsonl"
    good.write_text(_line() + "\n" + _line(id="x2", feature="Global Accent", target_value="UK") + "\n")
    instances = read_manifest(good)
    assert [i.feature for i in instances] == ["speech_rate", "global_accent"]
    assert instances[1].target_value == "uk" and instances[0].image == tmp_path / "img/x1.png"

    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "\n".join(
            [
                _line(),
                "{not json",
                _line(id="x1"),
                _line(id="x3", feature="loudness"),
                _line(id="x4", target_value="medium"),
                json.dumps({"id": "x5"}),
                _line(id="x6", script=""),
            ]
        )
    )
    with pytest.raises(DataError) as info:
        read_manifest(bad)
    text = str(info.value)
    for fragment in (
        ":2: not valid JSON",
        "duplicate id",
        "unknown feature",
        "not one of fast, slow",
        "missing fields",
        "non-empty",
    ):
        assert fragment in text


@pytest.mark.slow
def test_acbench_on_espeak(tmp_path: Path) -> None:
    from omnieval.audio import espeak_wav
    from omnieval.metrics import MetricsConfig, compute_acbench_metrics

    script = "We must hurry, the train leaves in five minutes."
    lines, renders = [], []
    specs = [
        ("r1", "speech_rate", "fast", script, {"rate_wpm": 300}),
        ("r2", "speech_rate", "slow", script, {"rate_wpm": 100}),
        ("w1", "phonation", "whisper", "Be very quiet, the baby is sleeping.", {"voice": "en-us+whisper"}),
        ("w2", "phonation", "whisper", "Be very quiet, the baby is sleeping.", {}),
        ("p1", "pronunciation", "heteronym", "I read a good book.", {}),
        ("e1", "emotion", "joy", "What a wonderful day!", {}),
        ("t1", "timbre", "adult male", "Hello there.", None),
    ]
    for ident, feature, target, text, opts in specs:
        lines.append(_line(id=ident, feature=feature, target_value=target, script=text))
        renders.append((text, opts))
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("\n".join(lines) + "\n")
    cand = tmp_path / "cand"
    for index, (text, opts) in enumerate(renders):
        if opts is not None:
            espeak_wav(text, cand / "speech" / str(index) / "generated.wav", **opts)  # type: ignore[arg-type]

    result = compute_acbench_metrics(
        manifest, cand, "espeak", cache_dir=tmp_path / "cache", config=MetricsConfig()
    )
    frame = result.scores
    assert set(frame["benchmark"]) == {"acbench"}
    wpm = frame[frame["component"] == "wpm"].set_index("criterion")["value"]
    assert wpm["fast"] > wpm["slow"] + 60
    assert result.summary.delta_wpm == pytest.approx(wpm["fast"] - wpm["slow"])
    detected = frame[frame["component"] == "whisper_detected"]["value"].tolist()
    assert detected == [1.0, 0.0]  # whispered espeak is detected, modal espeak is not
    assert result.summary.vfr_at_0_3_pct == 50.0
    per = frame[frame["component"] == "per"]
    assert per["status"].tolist() == ["ok"] and per["value"].iloc[0] >= 0
    wer = frame[(frame["component"] == "wer") & (frame["instance_id"] == "r2")]["value"].iloc[0]
    assert wer <= 0.2
    emotion = frame[frame["component"] == "classifier_accuracy"]
    assert emotion["status"].tolist() == ["not_applicable", "missing_output"]
    assert "emotion" in result.summary.unavailable
    assert result.summary.scored == 6 and result.summary.instances == 7

    again = compute_acbench_metrics(
        manifest, cand, "espeak", cache_dir=tmp_path / "cache", config=MetricsConfig()
    )
    assert again.computed == 0 and again.scores.equals(frame)
