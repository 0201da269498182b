"""The espeak-ng prosody calibration, checked with Praat (parselmouth) rather than our own pitch code."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnieval.backends.tts import SpeechRequest, SynthesisError, synthesize

LINE = "The lantern is still burning, so we must hurry home before the storm arrives."


def _praat_median_f0(path: Path) -> float:
    import numpy as np
    import parselmouth

    pitch = parselmouth.Sound(str(path)).to_pitch(pitch_floor=60.0, pitch_ceiling=500.0)
    values = pitch.selected_array["frequency"]
    return float(np.median(values[values > 0]))


def _duration(path: Path) -> float:
    import soundfile as sf

    info = sf.info(str(path))
    return float(info.frames / info.samplerate)


@pytest.mark.parametrize(
    ("gender", "pitch", "low", "high"),
    [
        ("female", "low", 0, 145),
        ("female", "normal", 165, 220),
        ("female", "high", 255, 400),
        ("male", "low", 0, 110),
        ("male", "normal", 145, 170),
        ("male", "high", 220, 400),
    ],
)
def test_pitch_lands_in_the_label_band_for_both_threshold_sets(
    tmp_path: Path, gender: str, pitch: str, low: float, high: float
) -> None:
    # Bands are the intersection of the gendered and the "unknown gender" thresholds, so the label
    # holds whether or not the metric predicts gender.
    out = synthesize(SpeechRequest(LINE, gender=gender, pitch=pitch), tmp_path / "x.wav").path
    assert low < _praat_median_f0(out) < high


def test_speed_orders_durations(tmp_path: Path) -> None:
    slow = _duration(synthesize(SpeechRequest(LINE, speed="slow"), tmp_path / "s.wav").path)
    normal = _duration(synthesize(SpeechRequest(LINE, speed="normal"), tmp_path / "n.wav").path)
    fast = _duration(synthesize(SpeechRequest(LINE, speed="fast"), tmp_path / "f.wav").path)
    assert slow > 1.3 * normal > 1.3 * 1.3 * fast * 0.9


def test_unknown_label_and_empty_text_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(SynthesisError, match="unknown speed label 'brisk'"):
        synthesize(SpeechRequest(LINE, speed="brisk"), tmp_path / "x.wav")
    with pytest.raises(SynthesisError, match="empty text"):
        synthesize(SpeechRequest("  "), tmp_path / "x.wav")
    assert not (tmp_path / "x.wav").exists()
