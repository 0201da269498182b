"""pYIN median F0 and pitch labels: exact against librosa, close to Praat, boundaries as the paper says."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omnieval.audio import TARGET_RATE, harmonic_tone, prepare_speech
from omnieval.metrics.functional.pitch import (
    FMAX_HZ,
    FMIN_HZ,
    F0Method,
    median_f0,
    pitch_label,
    pitch_thresholds,
    pyin_f0,
)


def _librosa_f0(y: np.ndarray) -> np.ndarray:
    import librosa

    f0, _, _ = librosa.pyin(y, fmin=librosa.note_to_hz("C2"), fmax=librosa.note_to_hz("C7"), sr=TARGET_RATE)
    return np.asarray(f0)


def test_range_constants_are_c2_c7() -> None:
    import librosa

    assert librosa.note_to_hz("C2") == FMIN_HZ and librosa.note_to_hz("C7") == FMAX_HZ


@pytest.mark.parametrize(
    ("f0", "vibrato", "noise", "seed"),
    [(110.0, 0.0, 0.0, 0), (215.0, 0.04, 0.02, 1), (95.0, 0.02, 0.2, 2), (330.0, 0.0, 0.05, 3)],
)
def test_banded_decoder_equals_librosa_pyin(f0: float, vibrato: float, noise: float, seed: int) -> None:
    # Silence in the middle gives voiced/unvoiced switches and octave-distant candidates.
    tone = harmonic_tone(f0, 0.8, vibrato_hz=5.0, vibrato_depth=vibrato, noise=noise, seed=seed)
    y = np.concatenate([tone, np.zeros(3000, dtype=np.float32), tone[::-1]])
    np.testing.assert_array_equal(pyin_f0(y).f0, _librosa_f0(y))


def test_banded_decoder_equals_librosa_on_noise() -> None:
    y = np.random.default_rng(7).normal(0, 0.1, 24000).astype(np.float32)
    np.testing.assert_array_equal(pyin_f0(y).f0, _librosa_f0(y))


def test_banded_decoder_equals_librosa_on_speech(clips: dict[str, Path]) -> None:
    for name in ("male", "whisper"):
        y = prepare_speech(clips[name]).trimmed
        np.testing.assert_array_equal(pyin_f0(y).f0, _librosa_f0(y), err_msg=name)


def _praat_median(y: np.ndarray) -> float:
    import parselmouth

    pitch = parselmouth.Sound(y.astype(np.float64), TARGET_RATE).to_pitch(
        pitch_floor=65.0, pitch_ceiling=600.0
    )
    values = pitch.selected_array["frequency"]
    return float(np.median(values[values > 0]))


@pytest.mark.parametrize("f0", [90.0, 140.0, 210.0, 300.0])
def test_median_f0_agrees_with_praat_on_tones(f0: float) -> None:
    y = harmonic_tone(f0, 1.5, vibrato_hz=4.0, vibrato_depth=0.03, noise=0.01)
    ours = median_f0(y)
    assert ours.method is F0Method.PYIN
    assert ours.hz == pytest.approx(_praat_median(y), rel=0.03)
    assert ours.hz == pytest.approx(f0, rel=0.03)


def test_median_f0_agrees_with_praat_on_synthesized_speech(clips: dict[str, Path]) -> None:
    for name in ("female", "male", "slow", "fast"):
        y = prepare_speech(clips[name]).trimmed
        assert median_f0(y).hz == pytest.approx(_praat_median(y), rel=0.05), name


def test_yin_fallback_and_no_estimate() -> None:
    # 60 ms of tone: too few pYIN frames voiced, YIN still finds a period.
    short = harmonic_tone(200.0, 0.06)
    result = median_f0(short)
    assert result.method in (F0Method.YIN, F0Method.NONE)
    if result.method is F0Method.YIN:
        assert result.hz == pytest.approx(200.0, rel=0.1)
    silent = np.zeros(400, dtype=np.float32)
    assert median_f0(silent).method is F0Method.NONE
    assert pitch_label(median_f0(silent).hz, "female") == "normal"


def test_labels_and_boundaries() -> None:
    assert pitch_label(165.0, "female") == "normal"
    assert pitch_label(164.99, "female") == "low"
    assert pitch_label(255.0, "female") == "normal"
    assert pitch_label(255.01, "female") == "high"
    assert pitch_label(110.0, "male") == "normal" and pitch_label(109.9, "male") == "low"
    assert pitch_label(170.0, "male") == "normal" and pitch_label(170.1, "male") == "high"
    assert pitch_label(145.0, None) == "normal" and pitch_label(144.0, None) == "low"
    assert pitch_label(221.0, "child") == "high"
    assert pitch_thresholds(" Female ") == (165.0, 255.0)
    assert pitch_label(None, "male") == "normal"
    assert pitch_label(float("nan"), "male") == "normal"


def test_voiced_frame_ratio_separates_whisper(clips: dict[str, Path]) -> None:
    modal = pyin_f0(prepare_speech(clips["female"]).trimmed).voiced_frame_ratio
    whisper = pyin_f0(prepare_speech(clips["whisper"]).trimmed).voiced_frame_ratio
    assert whisper <= 0.3 < modal
