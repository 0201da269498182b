"""Matplotlib helpers (Agg backend, imported only when a plot is drawn)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def figure(
    path: Path, *, ncols: int = 1, nrows: int = 1, size: tuple[float, float] = (7.0, 4.5)
) -> Iterator[Any]:
    """Yield ``(fig, axes)`` and save the figure as PNG to ``path`` (written atomically)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=size, squeeze=False)
    try:
        yield fig, axes
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.stem + ".tmp.png")
        fig.savefig(tmp, dpi=110)
        tmp.replace(path)
    finally:
        plt.close(fig)
