"""Windowed speaker-gender decision (appendix E.2).

The classifier sees 3.0 s windows with a 1.5 s hop when the clip is longer than one window (else the
whole clip); window probabilities are averaged and the clip is ``male`` when the mean male
probability is at least the mean female probability, else ``female``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

WINDOW_S = 3.0
HOP_S = 1.5


class Span(NamedTuple):
    """A window as sample indices ``[start, end)``."""

    start: int
    end: int


def window_spans(n_samples: int, sr: int, window_s: float = WINDOW_S, hop_s: float = HOP_S) -> list[Span]:
    """Windows covering a clip of ``n_samples``.

    A clip no longer than one window is one span. Otherwise windows start every ``hop_s``; when the
    last regular window stops short of the end, one more window aligned to the end covers the tail
    (the paper does not say how the tail is handled; this keeps every sample in some window).

    Example:
        >>> window_spans(16000 * 2, 16000)
        [Span(start=0, end=32000)]
        >>> [s.start / 16000 for s in window_spans(16000 * 7, 16000)]
        [0.0, 1.5, 3.0, 4.0]
    """
    win = round(window_s * sr)
    hop = round(hop_s * sr)
    if n_samples <= win:
        return [Span(0, n_samples)]
    spans = [Span(s, s + win) for s in range(0, n_samples - win + 1, hop)]
    if spans[-1].end < n_samples:
        spans.append(Span(n_samples - win, n_samples))
    return spans


def mean_probabilities(window_probs: Sequence[npt.NDArray[np.floating[Any]]]) -> npt.NDArray[np.float64]:
    """Average per-window class probabilities, shape ``(n_windows, n_labels) -> (n_labels,)``."""
    stacked = np.stack([np.asarray(p, dtype=np.float64) for p in window_probs])
    return np.asarray(stacked.mean(axis=0), dtype=np.float64)


def binarize_gender(labels: Sequence[str], mean_probs: npt.NDArray[np.floating[Any]]) -> str:
    """``male`` when P(male) >= P(female), else ``female`` (other classes such as child are ignored).

    Example:
        >>> binarize_gender(("female", "male", "child"), np.array([0.4, 0.4, 0.2]))
        'male'
    """
    index = {label.strip().lower(): i for i, label in enumerate(labels)}
    if "female" not in index or "male" not in index:
        raise ValueError(f"a gender classifier needs 'female' and 'male' labels, got {list(labels)}")
    return "male" if mean_probs[index["male"]] >= mean_probs[index["female"]] else "female"
