"""Emotion ensemble of Omni-StoryBench (appendix E.2).

Each recognizer's labels are mapped onto the four benchmark classes; labels without a counterpart
(disgust, fear, surprise, other...) carry no probability. Each recognizer's mapped distribution is
renormalized, the recognizers are averaged with equal weight, and the arg-max is the label.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

EMOTION_CLASSES: tuple[str, ...] = ("neutral", "happy", "sad", "angry")

CANONICAL_EMOTION: dict[str, str] = {
    "neu": "neutral",
    "neutral": "neutral",
    "ang": "angry",
    "anger": "angry",
    "angry": "angry",
    "hap": "happy",
    "happy": "happy",
    "joy": "happy",
    "sad": "sad",
    "sadness": "sad",
}


def canonical_emotion(label: str) -> str | None:
    """Map a recognizer label to a benchmark class, or None.

    Bilingual labels such as ``"生气/angry"`` (emotion2vec) use the part after the slash.

    Example:
        >>> canonical_emotion("Hap"), canonical_emotion("生气/angry"), canonical_emotion("fear")
        ('happy', 'angry', None)
    """
    key = label.strip().lower()
    if "/" in key:
        key = key.rsplit("/", 1)[1].strip()
    return CANONICAL_EMOTION.get(key)


def to_canonical(
    labels: Sequence[str], probs: npt.NDArray[np.floating[Any]]
) -> npt.NDArray[np.float64] | None:
    """Sum a recognizer's probabilities into :data:`EMOTION_CLASSES`, renormalized to 1.

    Returns None when no probability lands on the four classes (the recognizer abstains).
    """
    out = np.zeros(len(EMOTION_CLASSES), dtype=np.float64)
    for label, p in zip(labels, np.asarray(probs, dtype=np.float64), strict=True):
        target = canonical_emotion(label)
        if target is not None:
            out[EMOTION_CLASSES.index(target)] += p
    total = float(out.sum())
    if not total > 0:
        return None
    return out / total


def ensemble_emotion(distributions: Sequence[npt.NDArray[np.floating[Any]] | None]) -> str | None:
    """Equal-weight average of canonical distributions; arg-max label (ties go to the earlier class).

    Example:
        >>> ensemble_emotion([np.array([0.1, 0.6, 0.2, 0.1]), np.array([0.5, 0.2, 0.2, 0.1])])
        'happy'
    """
    usable = [np.asarray(d, dtype=np.float64) for d in distributions if d is not None]
    if not usable:
        return None
    mean = np.mean(np.stack(usable), axis=0)
    return EMOTION_CLASSES[int(np.argmax(mean))]
