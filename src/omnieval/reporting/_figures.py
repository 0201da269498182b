"""Figures for the report: matplotlib (Agg) charts drawn to PNG bytes and embedded with a reading.

Every chart function takes plain typed rows and returns PNG bytes; :func:`figure` wraps bytes and a
one-line reading into a ``<figure>``. matplotlib is imported only when a chart is drawn.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from omnieval.reporting._templates import render, trusted

STATUS_COLOURS: dict[str, str] = {
    "ok": "#2e7d32",
    "repaired": "#81c784",
    "parse_error": "#f9a825",
    "inference_error": "#e53935",
    "unrecoverable": "#8e0000",
    "missing_output": "#9e9e9e",
    "not_applicable": "#d7dbe0",
}
"""Colour per judgment status in the validity ledger (greens valid, warm colours failures)."""


@dataclass
class Canvas:
    """What :func:`plot` yields: the figure, its axes grid (``[row][col]``) and, after the block, PNG bytes."""

    fig: Any
    axes: Any
    png: bytes = field(default=b"")
    rect: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)
    """Area (figure fractions) the axes are laid out in; less than 1 on top leaves room for a legend."""

    def panels(self, n: int) -> Iterator[tuple[int, Any]]:
        """The first ``n`` axes of a small-multiples grid in reading order, with their index.

        The grid's spare cells (a last row not filled) are blanked once the panels are drawn, so
        they show nothing rather than an empty frame with ticks.
        """
        nrows, ncols = len(self.axes), len(self.axes[0])
        for k in range(nrows * ncols):
            ax = self.axes[k // ncols][k % ncols]
            if k < n:
                yield k, ax
            else:
                ax.axis("off")


def _grid(n: int, ncols: int) -> tuple[int, int]:
    """Columns and rows of a small-multiples grid for ``n`` panels, at most ``ncols`` a row."""
    ncols = max(1, min(ncols, n))
    return ncols, max(1, math.ceil(n / ncols))


@contextmanager
def plot(*, size: tuple[float, float], ncols: int = 1, nrows: int = 1, dpi: int = 100) -> Iterator[Canvas]:
    """Draw into a fresh figure; on exit the PNG lands in ``canvas.png`` and the figure is closed.

    Args:
        size: inches (width, height); at the default dpi 10 inches are 1000 pixels.
        ncols: columns of the axes grid.
        nrows: rows of the axes grid.
        dpi: pixels per inch of the PNG.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=size, squeeze=False)
    canvas = Canvas(fig, axes)
    try:
        yield canvas
        fig.tight_layout(rect=canvas.rect)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=dpi)
        canvas.png = buffer.getvalue()
    finally:
        plt.close(fig)


def _base64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


def figure(
    png: bytes,
    reading: str,
    *,
    alt: str,
    title: str | None = None,
    extra: str = "",
    more: Sequence[bytes] = (),
) -> str:
    """One ``<figure>``: the embedded PNG and a caption that starts with the one-line reading.

    Args:
        png: PNG file bytes.
        reading: what a person should take away, in one sentence (plain text).
        alt: the image's alternative text (plain).
        title: an optional ``<h3>`` above the image (plain).
        extra: trusted HTML appended to the caption (e.g. a link to the JSON).
        more: further PNGs of the same figure, shown under the first.
    """
    if not reading.strip():
        raise ValueError("a figure needs a reading")
    return render(
        "figure.html.j2",
        title=title,
        images=[_base64(p) for p in (png, *more)],
        alt=alt,
        reading=reading,
        extra=trusted(extra),
    )


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


@dataclass(frozen=True)
class Interval:
    """One point estimate with an optional interval, for the CI and delta charts.

    Attributes:
        label: the row label (system, or ``system / component``).
        value: the estimate.
        lo: lower end of the interval (None when unknown).
        hi: upper end of the interval (None when unknown).
        highlight: draw the row emphasised (e.g. significant after Holm).
    """

    label: str
    value: float
    lo: float | None = None
    hi: float | None = None
    highlight: bool = True


def ci_chart(rows: Sequence[Interval], *, xlabel: str) -> bytes:
    """Horizontal points with error bars, first row on top (a leaderboard with its CIs)."""
    height = max(2.2, 0.36 * len(rows) + 1.1)
    with plot(size=(8.5, height)) as c:
        ax = c.axes[0][0]
        for k, row in enumerate(rows):
            y = len(rows) - 1 - k
            if _finite(row.lo) and _finite(row.hi):
                assert row.lo is not None and row.hi is not None
                ax.errorbar(
                    [row.value],
                    [y],
                    xerr=[[row.value - row.lo], [row.hi - row.value]],
                    fmt="o",
                    color="#1f4e9c",
                    ecolor="#7a9cd6",
                    elinewidth=3,
                    capsize=4,
                    ms=6,
                )
                text, anchor = f"{row.value:.2f} [{row.lo:.2f}, {row.hi:.2f}]", row.hi
            else:
                ax.plot([row.value], [y], "o", color="#1f4e9c")
                text, anchor = f"{row.value:.2f}", row.value
            # The value (with its interval when there is one) just right of the mark's right end.
            ax.annotate(text, (anchor, y), xytext=(6, 0), textcoords="offset points", va="center", fontsize=8)
        ax.set_yticks(range(len(rows)), [r.label for r in reversed(rows)], fontsize=9)
        ax.set_xlabel(xlabel, fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        ends = [v for r in rows for v in (r.lo, r.hi, r.value) if v is not None and math.isfinite(v)]
        lo, hi = min(ends, default=0.0), max(ends, default=1.0)
        pad = max(0.5, (hi - lo) * 0.25)
        ax.set_xlim(lo - pad * 0.3, hi + pad)
        ax.set_ylim(-0.7, len(rows) - 0.3)
    return c.png


@dataclass(frozen=True)
class Panel:
    """One small-multiple panel of a bar chart: its title and per-row values.

    Attributes:
        title: panel title (a component).
        values: row label -> main bar value (None: not computed).
        markers: row label -> a second value drawn as a tick on the bar (e.g. zero-filled).
    """

    title: str
    values: Mapping[str, float | None]
    markers: Mapping[str, float | None] = field(default_factory=dict)


def panel_bars(
    panels: Sequence[Panel],
    rows: Sequence[str],
    *,
    xlim: tuple[float, float] | None = None,
    bar_label: str = "",
    marker_label: str = "",
    ncols: int = 4,
) -> bytes:
    """Small multiples of horizontal bars: one panel per component, one bar per row (system)."""
    ncols, nrows = _grid(len(panels), ncols)
    height = nrows * max(1.8, 0.26 * len(rows) + 1.0)
    with plot(size=(2.9 * ncols + 1.0, height), ncols=ncols, nrows=nrows) as c:
        for k, ax in c.panels(len(panels)):
            p = panels[k]
            ys = list(range(len(rows)))[::-1]
            vals = [p.values.get(r) for r in rows]
            ax.barh(
                ys,
                [v if _finite(v) else 0.0 for v in vals],
                color="#4c72b0",
                height=0.7,
                label=bar_label or None,
            )
            marks = [p.markers.get(r) for r in rows]
            if any(_finite(m) for m in marks):
                ax.plot(
                    [m if _finite(m) else math.nan for m in marks],
                    ys,
                    "|",
                    color="#dd8452",
                    ms=14,
                    mew=2.5,
                    label=marker_label or None,
                )
            if not any(_finite(v) for v in vals):
                ax.text(
                    0.5, 0.5, "not computed", transform=ax.transAxes, ha="center", va="center", color="#888"
                )
            ax.set_title(p.title, fontsize=9)
            ax.set_yticks(ys, list(rows) if k % ncols == 0 else [""] * len(rows), fontsize=8)
            if xlim is not None:
                ax.set_xlim(*xlim)
            ax.tick_params(axis="x", labelsize=7)
            ax.grid(axis="x", alpha=0.3)
        if marker_label and panels:
            handles, labels = c.axes[0][0].get_legend_handles_labels()
            c.fig.legend(handles, labels, fontsize=8, loc="upper right", ncol=2, frameon=False)
            c.rect = (0.0, 0.0, 1.0, 1.0 - 0.3 / height)
    return c.png


def delta_chart(panels: Mapping[str, Sequence[Interval]], *, ncols: int = 4) -> bytes:
    """Diverging deltas with CIs, one panel per component, rows = systems; highlighted = significant."""
    names = list(panels)
    ncols, nrows = _grid(len(names), ncols)
    n_rows = max((len(v) for v in panels.values()), default=1)
    height = nrows * max(1.8, 0.3 * n_rows + 1.0)
    with plot(size=(3.0 * ncols + 1.0, height), ncols=ncols, nrows=nrows) as c:
        for k, ax in c.panels(len(names)):
            rows = panels[names[k]]
            ys = list(range(len(rows)))[::-1]
            for y, row in zip(ys, rows, strict=True):
                colour = ("#1e7b34" if row.value >= 0 else "#b3261e") if row.highlight else "#9aa0a6"
                ax.barh([y], [row.value], color=colour, height=0.6, alpha=0.85 if row.highlight else 0.5)
                if _finite(row.lo) and _finite(row.hi):
                    assert row.lo is not None and row.hi is not None
                    ax.plot([row.lo, row.hi], [y, y], color="#333", lw=1.2)
            ax.axvline(0, color="#333", lw=0.8)
            extent = max(
                [abs(v) for r in rows for v in (r.value, r.lo, r.hi) if v is not None and math.isfinite(v)],
                default=1.0,
            )
            extent = extent * 1.15 if extent > 0 else 1.0
            ax.set_xlim(-extent, extent)
            ax.set_title(names[k], fontsize=9)
            ax.set_yticks(ys, [r.label for r in rows] if k % ncols == 0 else [""] * len(rows), fontsize=8)
            ax.tick_params(axis="x", labelsize=7)
            ax.grid(axis="x", alpha=0.3)
    return c.png


def stacked_bars(rows: Sequence[tuple[str, Mapping[str, int]]], order: Sequence[str]) -> bytes:
    """Horizontal 100% stacked bars of counts (e.g. judgment statuses per judge and track)."""
    height = max(1.8, 0.34 * len(rows) + 1.2)
    with plot(size=(9.0, height)) as c:
        ax = c.axes[0][0]
        ys = list(range(len(rows)))[::-1]
        used: set[str] = set()
        for y, (_label, counts) in zip(ys, rows, strict=True):
            total = sum(counts.values()) or 1
            left = 0.0
            for status in order:
                n = counts.get(status, 0)
                if not n:
                    continue
                share = 100.0 * n / total
                ax.barh(
                    [y],
                    [share],
                    left=left,
                    color=STATUS_COLOURS.get(status, "#555"),
                    height=0.7,
                    label=None if status in used else status,
                )
                used.add(status)
                if share >= 8:
                    ax.text(left + share / 2, y, str(n), ha="center", va="center", fontsize=7)
                left += share
        ax.set_yticks(ys, [label for label, _c in rows], fontsize=8)
        ax.set_xlim(0, 100)
        ax.set_xlabel("% of judgments", fontsize=9)
        ax.legend(
            fontsize=7,
            ncol=min(7, max(1, len(used))),
            loc="lower center",
            bbox_to_anchor=(0.5, 1.0),
            frameon=False,
        )
    return c.png


def histograms(
    hists: Sequence[tuple[str, Sequence[int], bool]], *, bins: Sequence[str], ncols: int = 4
) -> bytes:
    """Small bar histograms, one per entry ``(title, counts per bin, flagged)``; flagged ones in red."""
    ncols, nrows = _grid(len(hists), ncols)
    with plot(size=(3.0 * ncols, 2.3 * nrows), ncols=ncols, nrows=nrows) as c:
        for k, ax in c.panels(len(hists)):
            title, counts, flagged = hists[k]
            ax.bar(list(bins), list(counts), color="#b3261e" if flagged else "#4c72b0")
            ax.set_title(
                ("DEGENERATE  " if flagged else "") + title,
                fontsize=8,
                color="#b3261e" if flagged else "black",
            )
            ax.tick_params(labelsize=7)
            ax.set_xlabel("verdict", fontsize=7)
    return c.png
