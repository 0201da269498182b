"""Speaking rate and the speed label of Omni-StoryBench (appendix E.2).

The rate is ASR word chunks per second: chunks with valid timestamps (non-empty text, finite times,
end after start) divided by the span from the first chunk's start to the last chunk's end. Without
usable timestamps the harness falls back to whitespace tokens of the transcript (its character count
when it has no spaces) over the speech duration found by energy-based splitting at 30 dB. Below 2.6
units/s is ``slow``, above 4.7 ``fast``, anything else (including no rate) ``normal``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

SLOW_BELOW = 2.6
"""Units per second strictly below which speech is ``slow``."""
FAST_ABOVE = 4.7
"""Units per second strictly above which speech is ``fast``."""


@dataclass(frozen=True)
class WordChunk:
    """One recognized word with its time span in seconds from the start of the audio."""

    text: str
    start: float
    end: float

    @property
    def valid(self) -> bool:
        return (
            bool(self.text.strip())
            and math.isfinite(self.start)
            and math.isfinite(self.end)
            and self.end > self.start
        )


class RateMethod(StrEnum):
    TIMESTAMPS = "timestamps"
    FALLBACK = "energy_fallback"
    NONE = "none"


@dataclass(frozen=True)
class SpeakingRate:
    """Units per second (None when no rate could be measured) and how it was measured."""

    units_per_second: float | None
    method: RateMethod
    units: int
    span_s: float


def rate_from_chunks(chunks: Sequence[WordChunk]) -> SpeakingRate | None:
    """Word chunks per second over the timestamped span; None when no valid chunk spans time.

    Example:
        >>> rate_from_chunks([WordChunk("a", 0.0, 0.4), WordChunk("b", 0.5, 1.0)]).units_per_second
        2.0
    """
    valid = [c for c in chunks if c.valid]
    if not valid:
        return None
    span = valid[-1].end - valid[0].start
    if not span > 0:
        return None
    return SpeakingRate(len(valid) / span, RateMethod.TIMESTAMPS, len(valid), span)


def token_count(transcript: str) -> int:
    """Whitespace tokens, or the character count of a transcript written without spaces (e.g. CJK).

    Example:
        >>> token_count("come back here"), token_count("你好吗"), token_count("  ")
        (3, 3, 0)
    """
    text = transcript.strip()
    if not text:
        return 0
    tokens = text.split()
    return len(tokens) if len(tokens) > 1 else len(text)


def speech_duration_s(y: npt.NDArray[np.floating[Any]], sr: int, top_db: float = 30.0) -> float:
    """Seconds of non-silent audio (librosa.effects.split at ``top_db`` below the peak)."""
    import librosa

    if y.size == 0:
        return 0.0
    intervals = librosa.effects.split(y, top_db=top_db)
    return float(sum(int(end) - int(start) for start, end in intervals)) / float(sr)


def fallback_rate(
    transcript: str, y: npt.NDArray[np.floating[Any]], sr: int, top_db: float = 30.0
) -> SpeakingRate | None:
    """Token-like transcript count per second of energy-detected speech; None if either is zero."""
    units = token_count(transcript)
    duration = speech_duration_s(y, sr, top_db)
    if units == 0 or duration <= 0:
        return None
    return SpeakingRate(units / duration, RateMethod.FALLBACK, units, duration)


def speaking_rate(
    chunks: Sequence[WordChunk] | None, transcript: str, y: npt.NDArray[np.floating[Any]], sr: int
) -> SpeakingRate:
    """Timestamped rate when available, else the energy fallback, else no rate."""
    measured = rate_from_chunks(chunks) if chunks else None
    if measured is None:
        measured = fallback_rate(transcript, y, sr)
    return measured or SpeakingRate(None, RateMethod.NONE, 0, 0.0)


def speed_label(units_per_second: float | None) -> str:
    """``slow`` / ``normal`` / ``fast``; thresholds are exclusive, no rate is ``normal``.

    Example:
        >>> speed_label(2.6), speed_label(2.59), speed_label(4.71), speed_label(None)
        ('normal', 'slow', 'fast', 'normal')
    """
    if units_per_second is None or not math.isfinite(units_per_second):
        return "normal"
    if units_per_second < SLOW_BELOW:
        return "slow"
    if units_per_second > FAST_ABOVE:
        return "fast"
    return "normal"
