"""OmniACBench's acoustic-control metrics as pure functions over per-instance values (section 4.1).

- WPM: words of the script per minute of speech; delta-WPM = mean WPM of ``fast`` instances minus
  mean WPM of ``slow`` instances.
- PER: phone edit distance over reference phone count (:func:`reading_per` for a heteronym's reading).
- VFR: share of frames with a detected F0; an utterance is whisper-like when VFR <= 0.3, and
  VFR@0.3 is the share of ``whisper`` instances detected as whisper-like.
- Classifier accuracy: share of instances whose predicted label equals the target value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from omnieval.metrics.functional.labels import normalize_label
from omnieval.metrics.functional.text import error_rate

if TYPE_CHECKING:
    from omnieval.backends.phones import PronunciationDecision

WHISPER_VFR_THRESHOLD = 0.3


def words_per_minute(n_words: int, duration_s: float) -> float:
    """Words per minute.

    Example:
        >>> words_per_minute(12, 4.0)
        180.0
    """
    if not duration_s > 0:
        raise ValueError(f"speech duration must be positive, got {duration_s}")
    return 60.0 * n_words / duration_s


def delta_wpm(wpm: Sequence[float], targets: Sequence[str]) -> float:
    """mean(WPM | target ``fast``) - mean(WPM | target ``slow``); NaN values are skipped.

    Example:
        >>> delta_wpm([200.0, 180.0, 120.0], ["fast", "fast", "slow"])
        70.0
    """
    fast = [w for w, t in zip(wpm, targets, strict=True) if normalize_label(t) == "fast" and math.isfinite(w)]
    slow = [w for w, t in zip(wpm, targets, strict=True) if normalize_label(t) == "slow" and math.isfinite(w)]
    if not fast or not slow:
        raise ValueError("delta-WPM needs at least one fast and one slow instance with a WPM")
    return sum(fast) / len(fast) - sum(slow) / len(slow)


def phone_error_rate(reference: Sequence[str], recognized: Sequence[str]) -> float:
    """Phone edit distance / number of reference phones (can exceed 1).

    Example:
        >>> phone_error_rate(["HH", "AH", "L", "OW"], ["HH", "L", "OW", "OW"])
        0.5
    """
    if not reference:
        raise ValueError("empty reference phone sequence")
    return error_rate(reference, recognized)


def reading_per(
    decision: PronunciationDecision, target_key: str, readings: Mapping[str, Sequence[str]]
) -> float:
    """Phone error rate of a heteronym: the phones heard against the target reading's.

    The pronunciation decision (:func:`omnieval.backends.phones.pronunciation_decision`) is
    constrained to the word's known readings, so what it recognized is the chosen reading's phones:
    the PER is 0 when the target reading won and ``edit_distance(target, other) / len(target)``
    otherwise (1/3 for "lead": L IY D against L EH D). When no reading could be aligned nothing was
    recognized, and every reference phone counts as deleted (PER 1.0). The paper instead runs the
    POWSM phone recognizer over the whole utterance against the whole script's reference; here only
    the heteronym is scored, and only between its known readings.

    Example:
        >>> from omnieval.backends.phones import DECISION_METHOD, PronunciationDecision
        >>> readings = {"leash": ("L", "IY", "D"), "metal": ("L", "EH", "D")}
        >>> d = PronunciationDecision("metal", {}, ("L", "EH", "D"), DECISION_METHOD, 1.0)
        >>> round(reading_per(d, "leash", readings), 3), reading_per(d, "metal", readings)
        (0.333, 0.0)
    """
    return phone_error_rate(list(readings[target_key]), list(decision.recognized))


def is_whisper_like(vfr: float, threshold: float = WHISPER_VFR_THRESHOLD) -> bool:
    """VFR <= threshold (0.3 in the paper)."""
    return vfr <= threshold


def vfr_at(vfrs: Sequence[float], threshold: float = WHISPER_VFR_THRESHOLD) -> float:
    """Share (0-1) of utterances with VFR <= threshold (apply to the ``whisper`` instances).

    Example:
        >>> vfr_at([0.1, 0.25, 0.6, 0.3])
        0.75
    """
    if not vfrs:
        raise ValueError("no utterances")
    return sum(1 for v in vfrs if is_whisper_like(v, threshold)) / len(vfrs)


def classifier_accuracy(predicted: Sequence[str], targets: Sequence[str]) -> float:
    """Share (0-1) of predictions equal to the target (lower-cased, stripped).

    Example:
        >>> classifier_accuracy(["Joy", "fear"], ["joy", "anger"])
        0.5
    """
    if not predicted:
        raise ValueError("no predictions")
    hits = sum(1 for p, t in zip(predicted, targets, strict=True) if normalize_label(p) == normalize_label(t))
    return hits / len(predicted)
