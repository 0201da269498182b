"""Classification figures for held-out evaluation (pure numpy)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def confusion_matrix(
    y_true: Sequence[int] | np.ndarray, y_pred: Sequence[int] | np.ndarray, n_classes: int
) -> np.ndarray:
    """Counts ``[n_classes, n_classes]``: row = true class, column = predicted class.

    Example:
        >>> confusion_matrix([0, 0, 1, 1], [0, 1, 1, 1], 2).tolist()
        [[1, 1], [0, 2]]
    """
    true = np.asarray(y_true, dtype=np.int64)
    pred = np.asarray(y_pred, dtype=np.int64)
    if true.shape != pred.shape:
        raise ValueError(f"y_true {true.shape} and y_pred {pred.shape} differ in shape")
    if true.size and (min(true.min(), pred.min()) < 0 or max(true.max(), pred.max()) >= n_classes):
        raise ValueError(f"class indices must lie in [0, {n_classes})")
    matrix = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(matrix, (true, pred), 1)
    return matrix


def accuracy(y_true: Sequence[int] | np.ndarray, y_pred: Sequence[int] | np.ndarray) -> float:
    """Share of exact matches in [0, 1]; nan for no samples."""
    true = np.asarray(y_true)
    pred = np.asarray(y_pred)
    if true.size == 0:
        return float("nan")
    return float(np.mean(true == pred))


def balanced_accuracy(y_true: Sequence[int] | np.ndarray, y_pred: Sequence[int] | np.ndarray) -> float:
    """Mean per-class recall over the classes present in ``y_true``, in [0, 1].

    Example:
        >>> balanced_accuracy([0, 0, 0, 1], [0, 0, 0, 0])
        0.5
    """
    true = np.asarray(y_true)
    pred = np.asarray(y_pred)
    classes = np.unique(true)
    if classes.size == 0:
        return float("nan")
    return float(np.mean([np.mean(pred[true == c] == c) for c in classes]))


@dataclass(frozen=True)
class HeldOutReport:
    """Held-out figures of a classifier, with the chance levels to read them against."""

    labels: tuple[str, ...]
    n: int
    accuracy: float
    balanced_accuracy: float
    chance_uniform: float
    """1 / number of classes: a random guess."""
    chance_majority: float
    """Share of the most frequent class in this split: always guessing it."""
    per_class_recall: dict[str, float]
    confusion: list[list[int]]

    def as_dict(self) -> dict[str, object]:
        return {
            "labels": list(self.labels),
            "n": self.n,
            "accuracy": self.accuracy,
            "balanced_accuracy": self.balanced_accuracy,
            "chance_uniform": self.chance_uniform,
            "chance_majority": self.chance_majority,
            "per_class_recall": self.per_class_recall,
            "confusion_matrix": self.confusion,
        }


def held_out_report(
    y_true: Sequence[int] | np.ndarray, y_pred: Sequence[int] | np.ndarray, labels: Sequence[str]
) -> HeldOutReport:
    """Accuracy, balanced accuracy, chance levels, per-class recall and confusion matrix."""
    true = np.asarray(y_true, dtype=np.int64)
    pred = np.asarray(y_pred, dtype=np.int64)
    matrix = confusion_matrix(true, pred, len(labels))
    support = matrix.sum(axis=1)
    recall = {
        label: (float(matrix[i, i] / support[i]) if support[i] else float("nan"))
        for i, label in enumerate(labels)
    }
    return HeldOutReport(
        labels=tuple(labels),
        n=int(true.size),
        accuracy=accuracy(true, pred),
        balanced_accuracy=balanced_accuracy(true, pred),
        chance_uniform=1.0 / len(labels),
        chance_majority=float(support.max() / true.size) if true.size else float("nan"),
        per_class_recall=recall,
        confusion=matrix.tolist(),
    )
