"""Figures for the MLflow runs and the probing report (matplotlib, Agg backend, PNG files)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: Path) -> Path:
    """Lay out ``fig``, write it to ``path`` (creating the folder) and free it.

    Every training figure is saved the same way (110 dpi PNG), and closing matters: pyplot keeps
    each open figure alive, and a grid search draws many.
    """
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_confusion(matrix: Sequence[Sequence[int]], labels: Sequence[str], title: str, path: Path) -> Path:
    """Confusion matrix heatmap (rows = true, columns = predicted) with counts in the cells."""
    plt = _pyplot()
    size = 1.2 + 0.7 * len(labels)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    ax.imshow(matrix, cmap="Blues")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    peak = max((max(row) for row in matrix), default=0)
    for i, row in enumerate(matrix):
        for j, count in enumerate(row):
            ax.text(
                j, i, str(count), ha="center", va="center", color="white" if count > peak / 2 else "black"
            )
    ax.set_title(title, fontsize=9)
    return _save(plt, fig, path)


def plot_curves(histories: Mapping[str, Sequence[Any]], title: str, path: Path) -> Path:
    """Dev accuracy and train loss by epoch, one line per grid point (``EpochLog`` sequences)."""
    plt = _pyplot()
    fig, (acc_ax, loss_ax) = plt.subplots(1, 2, figsize=(10, 3.8))
    for name, history in histories.items():
        epochs = [h.epoch for h in history]
        acc_ax.plot(epochs, [h.dev_accuracy for h in history], label=name)
        loss_ax.plot(epochs, [h.train_loss for h in history], label=name)
    acc_ax.set_xlabel("epoch")
    acc_ax.set_ylabel("dev accuracy")
    loss_ax.set_xlabel("epoch")
    loss_ax.set_ylabel("train loss (label-smoothed CE)")
    acc_ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    return _save(plt, fig, path)


def plot_probe(
    curves: Mapping[str, tuple[Sequence[str], Sequence[float], Sequence[float], float]],
    path: Path,
    title: str = "linear probes",
) -> Path:
    """Balanced accuracy by layer, one line per feature: ``{feature: (layers, mean, std, chance)}``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 0.35 * max(len(c[0]) for c in curves.values()) + 3), 3.8))
    for feature, (layers, mean, std, chance) in curves.items():
        xs = list(range(len(layers)))
        line = ax.plot(xs, mean, marker="o", markersize=3, label=feature)[0]
        low = [m - s for m, s in zip(mean, std, strict=True)]
        high = [m + s for m, s in zip(mean, std, strict=True)]
        ax.fill_between(xs, low, high, alpha=0.15, color=line.get_color())
        ax.axhline(chance, linestyle="--", linewidth=0.8, color=line.get_color())
        ax.set_xticks(xs, list(layers), rotation=60, ha="right", fontsize=7)
    ax.set_ylim(0.0, 1.02)
    ax.set_ylabel("balanced accuracy (dashed: chance)")
    ax.set_xlabel("layer")
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=9)
    return _save(plt, fig, path)
