"""Windowed gender decision, emotion ensemble, label matching; and the analyzer's use of classifiers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omnieval.metrics.functional.emotion import (
    EMOTION_CLASSES,
    canonical_emotion,
    ensemble_emotion,
    to_canonical,
)
from omnieval.metrics.functional.gender import binarize_gender, mean_probabilities, window_spans
from omnieval.metrics.functional.labels import exact_match, field_accuracy, labels_match, sample_accuracy


def test_window_spans() -> None:
    sr = 16000
    assert window_spans(3 * sr, sr) == [(0, 3 * sr)]
    spans = window_spans(int(6.0 * sr), sr)
    assert [s.start / sr for s in spans] == [0.0, 1.5, 3.0]
    assert all(s.end - s.start == 3 * sr for s in spans)
    tail = window_spans(int(5.0 * sr), sr)
    assert tail[-1].end == 5 * sr and tail[-1].end - tail[-1].start == 3 * sr


def test_gender_binarization() -> None:
    labels = ("female", "male", "child")
    probs = mean_probabilities([np.array([0.7, 0.2, 0.1]), np.array([0.1, 0.6, 0.3])])
    np.testing.assert_allclose(probs, [0.4, 0.4, 0.2])
    assert binarize_gender(labels, probs) == "male"  # ties go to male, as in the harness
    assert binarize_gender(labels, np.array([0.5, 0.3, 0.2])) == "female"
    # A child-dominated clip is still binarized female vs male.
    assert binarize_gender(labels, np.array([0.2, 0.1, 0.7])) == "female"
    with pytest.raises(ValueError, match="female"):
        binarize_gender(("a", "b"), np.array([0.5, 0.5]))


def test_emotion_canonicalization_and_ensemble() -> None:
    assert [canonical_emotion(x) for x in ("neu", "Anger", "joy", "sadness", "fear")] == [
        "neutral",
        "angry",
        "happy",
        "sad",
        None,
    ]
    iemocap = to_canonical(("neu", "hap", "ang", "sad"), np.array([0.1, 0.2, 0.6, 0.1]))
    e2v = to_canonical(
        ("生气/angry", "开心/happy", "中立/neutral", "难过/sad", "恐惧/fearful"),
        np.array([0.1, 0.5, 0.1, 0.1, 0.2]),
    )
    assert e2v is not None
    np.testing.assert_allclose(e2v.sum(), 1.0)  # fear's mass is dropped, then renormalized
    assert ensemble_emotion([iemocap, e2v]) in EMOTION_CLASSES
    mean = (np.asarray(iemocap) + e2v) / 2
    assert ensemble_emotion([iemocap, e2v]) == EMOTION_CLASSES[int(np.argmax(mean))]
    assert to_canonical(("fear", "disgust"), np.array([0.5, 0.5])) is None
    assert ensemble_emotion([None]) is None


def test_label_matching_and_accuracies() -> None:
    assert labels_match(" Fast ", "fast") and not labels_match("", "")
    per_field = field_accuracy(
        {"emotion": None, "speed": "fast", "pitch": "Low", "gender": "male"},
        {"emotion": "happy", "speed": "fast", "pitch": "low", "gender": "female"},
    )
    assert per_field == {"speed": 1.0, "pitch": 1.0, "gender": 0.0}
    assert sample_accuracy(per_field) == 0.5
    assert exact_match(per_field) == 0.0
    assert exact_match({"emotion": 1.0, "speed": 1.0, "pitch": 1.0, "gender": 1.0}) == 1.0


class _CentroidGender:
    """A scripted classifier: 'male' for low spectral centroids, records the window lengths it saw."""

    labels = ("female", "male", "child")

    def __init__(self) -> None:
        self.seen: list[int] = []

    def predict_proba(self, wave_16k: np.ndarray) -> np.ndarray:
        self.seen.append(int(wave_16k.shape[0]))
        spectrum = np.abs(np.fft.rfft(wave_16k))
        centroid = float((spectrum * np.arange(spectrum.size)).sum() / max(spectrum.sum(), 1e-9))
        p_male = 1.0 / (1.0 + np.exp((centroid - 2500.0) / 500.0))
        return np.array([1 - p_male, p_male, 0.0])


class _FixedEmotion:
    def __init__(self, labels: tuple[str, ...], probs: list[float]) -> None:
        self.labels = labels
        self.probs = np.array(probs)

    def predict_proba(self, wave_16k: np.ndarray) -> np.ndarray:
        return self.probs


def test_analyzer_uses_windows_hint_and_ensemble(tmp_path: Path) -> None:
    import soundfile as sf

    from omnieval.audio import harmonic_tone
    from omnieval.metrics import MetricsConfig, SpeechAnalyzer

    path = tmp_path / "tone.wav"
    sf.write(str(path), np.tile(harmonic_tone(180.0, 1.0), 7), 16000)
    gender = _CentroidGender()
    emotions = [
        _FixedEmotion(("neu", "hap", "ang", "sad"), [0.1, 0.6, 0.2, 0.1]),
        _FixedEmotion(("angry", "happy", "fear"), [0.6, 0.3, 0.1]),
    ]
    analyzer = SpeechAnalyzer(MetricsConfig(asr_model=None), gender_model=gender, emotion_models=emotions)
    assert analyzer.fields_covered() == ["emotion", "pitch", "gender"]
    attrs = analyzer.describe(path)
    assert attrs.ok
    assert len(gender.seen) == 4 and set(gender.seen) == {48000}  # 7 s: 0, 1.5, 3.0 and an end-aligned window
    assert attrs.gender in ("female", "male")
    assert attrs.pitch_rule is not None and attrs.pitch_rule.startswith(f"predicted:{attrs.gender}")
    # In (neutral, happy, sad, angry) order: (.1, .6, .1, .2) and (0, 1/3, 0, 2/3) average to happy .47 > angry .43.
    assert attrs.emotion == "happy"
    assert attrs.speed is None and attrs.transcript is None  # no ASR configured
    hinted = analyzer.describe(path, gender_hint="female")
    assert hinted.pitch_rule is not None and hinted.pitch_rule.startswith("hint:female")
    assert hinted.pitch == "normal"  # 180 Hz is inside the female 165-255 band
