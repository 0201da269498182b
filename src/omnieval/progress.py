"""Progress display: stage, system, items done, elapsed and time left (rich, on stderr)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[[int, int], None]]:
    """Yield ``update(done, total)``; draws a bar on a terminal and plain lines otherwise."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    if not console.is_terminal:
        last = [-1]

        def plain(done: int, new_total: int) -> None:
            # One line per ~10 % so logs stay readable in CI.
            step = max(1, new_total // 10)
            if done == new_total or done - last[0] >= step:
                last[0] = done
                print(f"[{description}] {done}/{new_total}", file=sys.stderr, flush=True)

        yield plain
        return

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as bar:
        task = bar.add_task(description, total=total)

        def update(done: int, new_total: int) -> None:
            bar.update(task, completed=done, total=new_total)

        yield update


def note(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
