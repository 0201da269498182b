"""Progress display: stage, items done of total, elapsed and time left (rich on a terminal, on stderr).

On a terminal a rich bar redraws itself (elapsed and time left keep moving between updates). In
a log (CI, ``nohup``, a pipe) plain lines are printed instead: one when the count changes (at most
one per :data:`PLAIN_MIN_INTERVAL_S`) and a heartbeat line at least every
:data:`PLAIN_HEARTBEAT_S` while the stage runs, so a reader of the log sees done/total, the
elapsed time and an estimate of the time left even while one slow model call is running.

Callers count what costs time (model calls, decoded clips), not records settled for free; the
estimate is the mean time per item since the first one was done (so loading a model before it
does not inflate it) times the items left.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

PLAIN_HEARTBEAT_S = 10.0
"""Longest silence in plain (non-terminal) mode: a line is printed at least this often (10 s, so a
line still comes within 15 s when a loaded machine delays the thread)."""
PLAIN_MIN_INTERVAL_S = 5.0
"""Shortest gap between two plain lines caused by count changes (the last item always prints)."""


def format_duration(seconds: float) -> str:
    """``seconds`` as ``42 s``, ``3 min 05 s`` or ``1 h 02 min``.

    Example:
        >>> format_duration(42.4), format_duration(185), format_duration(3725)
        ('42 s', '3 min 05 s', '1 h 02 min')
    """
    total = round(max(seconds, 0.0))
    if total < 60:
        return f"{total} s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def eta_seconds(done: int, total: int, elapsed_s: float) -> float | None:
    """Time left at the mean pace so far; None before the first item is done.

    Example:
        >>> eta_seconds(4, 10, 60.0)
        90.0
        >>> eta_seconds(0, 10, 60.0) is None
        True
    """
    if done <= 0 or total <= 0:
        return None
    return elapsed_s / done * max(total - done, 0)


def plain_line(description: str, done: int, total: int, elapsed_s: float, pace_s: float | None = None) -> str:
    """One progress line for logs: ``[judge cpu] 3/16 (19 %), 41 s elapsed, ~2 min 58 s left``.

    ``pace_s``: seconds per item to estimate the time left with; default the mean so far.

    Example:
        >>> plain_line("judge cpu", 3, 16, 41.0)
        '[judge cpu] 3/16 (19 %), 41 s elapsed, ~2 min 58 s left'
        >>> plain_line("judge cpu", 3, 16, 41.0, pace_s=10.0)
        '[judge cpu] 3/16 (19 %), 41 s elapsed, ~2 min 10 s left'
        >>> plain_line("judge cpu", 0, 16, 5.0)
        '[judge cpu] 0/16 (0 %), 5 s elapsed, time left unknown until the first item is done'
        >>> plain_line("judge cpu", 0, 0, 0.5)
        '[judge cpu] preparing (nothing counted yet), 0 s elapsed'
    """
    if total <= 0:
        return f"[{description}] preparing (nothing counted yet), {format_duration(elapsed_s)} elapsed"
    share = f"{100 * done / total:.0f} %"
    eta = eta_seconds(done, total, elapsed_s) if pace_s is None else pace_s * max(total - done, 0)
    if done >= total:
        left = "done"
    elif eta is None:
        left = "time left unknown until the first item is done"
    else:
        left = f"~{format_duration(eta)} left"
    return f"[{description}] {done}/{total} ({share}), {format_duration(elapsed_s)} elapsed, {left}"


class PlainProgress:
    """Plain progress lines for logs: on count changes (rate-limited) and a heartbeat thread.

    Args:
        description: the stage label printed in brackets.
        total: items expected (may change with each update).
        stream: where lines go (default ``sys.stderr``).
        heartbeat_s: longest silence; ``0`` disables the heartbeat thread.
        min_interval_s: shortest gap between two lines caused by count changes.
        clock: the time source (tests pass a fake one).
    """

    def __init__(
        self,
        description: str,
        total: int,
        *,
        stream: TextIO | None = None,
        heartbeat_s: float = PLAIN_HEARTBEAT_S,
        min_interval_s: float = PLAIN_MIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.description = description
        self.done = 0
        self.total = total
        self.stream = stream
        self.heartbeat_s = heartbeat_s
        self.min_interval_s = min_interval_s
        self.clock = clock
        self.started = clock()
        self.last_print = -float("inf")
        self.printed_done = -1
        self.first_done: tuple[float, int] | None = None
        """When the first item was done and the count then: the pace is measured from there, so
        one-off costs before it (loading a model) do not inflate the estimate."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _emit(self) -> None:
        # Called with the lock held.
        now = self.clock()
        pace = None
        if self.first_done is not None and self.done > self.first_done[1]:
            pace = (now - self.first_done[0]) / (self.done - self.first_done[1])
        line = plain_line(self.description, self.done, self.total, now - self.started, pace)
        _write_line(line, self.stream)
        self.last_print = now
        self.printed_done = self.done

    def update(self, done: int, total: int) -> None:
        """Record the new count; print when it changed and the last line is old enough (or it is the end)."""
        with self._lock:
            if self.first_done is None and done > 0:
                self.first_done = (self.clock(), done)
            self.done, self.total = done, total
            if total <= 0 or done == self.printed_done:  # nothing counted yet: the heartbeat says so
                return
            finished = total > 0 and done >= total
            if finished or self.clock() - self.last_print >= self.min_interval_s:
                self._emit()

    def beat(self) -> None:
        """Print the current state when nothing was printed for ``heartbeat_s``."""
        with self._lock:
            if self.clock() - self.last_print >= self.heartbeat_s:
                self._emit()

    def start(self) -> None:
        with self._lock:
            if self.total > 0:
                self._emit()
        if self.heartbeat_s > 0:
            self._thread = threading.Thread(
                target=self._run, name=f"progress {self.description}", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        tick = min(1.0, self.heartbeat_s / 4)
        while not self._stop.wait(tick):
            self.beat()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            if self.total > 0 and self.printed_done != self.done:
                self._emit()


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[[int, int], None]]:
    """Yield ``update(done, total)``; draws a bar on a terminal and plain lines otherwise.

    Count the units that cost time (model calls, not records settled without one), so the
    estimate of the time left means something.
    """
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        plain = PlainProgress(description, total)
        plain.start()
        try:
            yield plain.update
        finally:
            plain.stop()
        return

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        # The mean pace since the start: the default 30 s speed window would forget every
        # model call but the last and show no estimate between calls 30 s apart.
        TimeRemainingColumn(elapsed_when_finished=True),
        console=console,
        transient=False,
        speed_estimate_period=3600.0,
    ) as bar:
        task = bar.add_task(description, total=total)

        def update(done: int, new_total: int) -> None:
            bar.update(task, completed=done, total=new_total)

        yield update


@contextmanager
def heartbeat(description: str, *, every_s: float = PLAIN_HEARTBEAT_S) -> Iterator[None]:
    """For a stage with nothing to count (report, track): ``[track] working, 40 s elapsed`` lines.

    Printed every ``every_s`` while the block runs and only in logs (no terminal), where a silent
    stage looks hung; the first line comes after ``every_s``, so a quick stage prints nothing.
    """
    from rich.console import Console

    if Console(stderr=True).is_terminal or every_s <= 0:
        yield
        return
    stop = threading.Event()
    started = time.monotonic()

    def beat() -> None:
        while not stop.wait(every_s):
            _write_line(f"[{description}] working, {format_duration(time.monotonic() - started)} elapsed")

    thread = threading.Thread(target=beat, name=f"heartbeat {description}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


_WRITE_LOCK = threading.Lock()


def _write_line(line: str, stream: TextIO | None = None) -> None:
    """One whole line per write: stages running in threads (generate) must not interleave."""
    out = stream or sys.stderr
    with _WRITE_LOCK:
        out.write(line + "\n")
        out.flush()


def note(message: str) -> None:
    _write_line(message)
