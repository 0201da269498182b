"""Speaking rate from word timestamps, the energy fallback, and the 2.6 / 4.7 thresholds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from omnieval.audio import TARGET_RATE, harmonic_tone
from omnieval.metrics.functional.speed import (
    RateMethod,
    WordChunk,
    fallback_rate,
    rate_from_chunks,
    speaking_rate,
    speech_duration_s,
    speed_label,
    token_count,
)


def test_rate_counts_valid_chunks_over_their_span() -> None:
    chunks = [
        WordChunk("one", 0.5, 0.9),
        WordChunk("  ", 1.0, 1.2),  # empty text: not a unit
        WordChunk("two", 1.3, 1.3),  # no duration: not a unit
        WordChunk("three", 1.4, math.nan),  # no end: not a unit
        WordChunk("four", 1.5, 2.5),
    ]
    rate = rate_from_chunks(chunks)
    assert rate is not None
    assert rate.units == 2 and rate.span_s == pytest.approx(2.0)
    assert rate.units_per_second == pytest.approx(1.0)
    assert rate_from_chunks([WordChunk("", 0, 1)]) is None
    assert rate_from_chunks([]) is None


def test_boundaries_are_normal() -> None:
    assert speed_label(2.6) == "normal"
    assert speed_label(4.7) == "normal"
    assert speed_label(2.5999) == "slow"
    assert speed_label(4.7001) == "fast"
    assert speed_label(None) == "normal"
    # Exactly 2.6 words/s from timestamps: 13 words over 5 s.
    chunks = [WordChunk(f"w{i}", i * 5 / 13, (i + 0.9) * 5 / 13) for i in range(13)]
    chunks[-1] = WordChunk("w12", 12 * 5 / 13, 5.0)
    rate = rate_from_chunks(chunks)
    assert rate is not None and speed_label(rate.units_per_second) == "normal"


def test_token_count() -> None:
    assert token_count("come back  here ") == 3
    assert token_count("ありがとう") == 5
    assert token_count("") == 0


def test_energy_fallback_uses_speech_duration() -> None:
    tone = harmonic_tone(150.0, 1.0)
    y = np.concatenate([tone, np.zeros(TARGET_RATE, dtype=np.float32), tone])
    # Energy frames (2048 samples, hop 512) widen each segment a little.
    assert speech_duration_s(y, TARGET_RATE) == pytest.approx(2.0, abs=0.2)
    rate = fallback_rate("one two three four five six", y, TARGET_RATE)
    assert rate is not None and rate.method is RateMethod.FALLBACK
    assert rate.units_per_second == pytest.approx(6 / speech_duration_s(y, TARGET_RATE))


def test_speaking_rate_prefers_timestamps_then_fallback_then_none() -> None:
    y = harmonic_tone(150.0, 2.0)
    with_words = speaking_rate([WordChunk("a", 0.0, 0.5), WordChunk("b", 0.5, 1.0)], "a b", y, TARGET_RATE)
    assert with_words.method is RateMethod.TIMESTAMPS and with_words.units_per_second == pytest.approx(2.0)
    no_stamps = speaking_rate([WordChunk("a", 0.0, 0.0)], "a b c d", y, TARGET_RATE)
    assert no_stamps.method is RateMethod.FALLBACK
    nothing = speaking_rate([], "", y, TARGET_RATE)
    assert nothing.method is RateMethod.NONE and speed_label(nothing.units_per_second) == "normal"
