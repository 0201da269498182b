"""Plain progress lines: done/total, elapsed and time left, on changes and on a heartbeat."""

from __future__ import annotations

import io
import time

import pytest

from omnieval.progress import PlainProgress, eta_seconds, format_duration, heartbeat, plain_line


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _plain(clock: _Clock, total: int = 4) -> tuple[PlainProgress, io.StringIO]:
    out = io.StringIO()
    progress = PlainProgress(
        "judge cpu", total, stream=out, heartbeat_s=15.0, min_interval_s=5.0, clock=clock
    )
    return progress, out


def test_heartbeat_prints_while_one_slow_call_runs() -> None:
    clock = _Clock()
    progress, out = _plain(clock)
    progress.start()
    for second in range(1, 46):
        clock.now = float(second)
        progress.beat()
    lines = out.getvalue().splitlines()
    # The start line and one line per 15 s of silence, each with done/total and elapsed time.
    assert lines == [
        "[judge cpu] 0/4 (0 %), 0 s elapsed, time left unknown until the first item is done",
        "[judge cpu] 0/4 (0 %), 15 s elapsed, time left unknown until the first item is done",
        "[judge cpu] 0/4 (0 %), 30 s elapsed, time left unknown until the first item is done",
        "[judge cpu] 0/4 (0 %), 45 s elapsed, time left unknown until the first item is done",
    ]


def test_pace_is_measured_from_the_first_item_and_the_end_always_prints() -> None:
    clock = _Clock()
    progress, out = _plain(clock)
    progress.start()
    clock.now = 100.0  # a slow model load before the first answer
    progress.update(1, 4)
    clock.now = 110.0
    progress.update(2, 4)
    clock.now = 111.0
    progress.update(3, 4)  # 1 s after the last line: rate-limited, not printed
    clock.now = 112.0
    progress.update(4, 4)  # the last item always prints
    progress.stop()
    lines = out.getvalue().splitlines()
    assert lines[1] == "[judge cpu] 1/4 (25 %), 1 min 40 s elapsed, ~5 min 00 s left"
    # 10 s per item since the first one (not 55 s, the mean since the start): 2 left -> 20 s.
    assert lines[2] == "[judge cpu] 2/4 (50 %), 1 min 50 s elapsed, ~20 s left"
    assert lines[3] == "[judge cpu] 4/4 (100 %), 1 min 52 s elapsed, done"
    assert len(lines) == 4


def test_nothing_counted_prints_nothing_at_the_end() -> None:
    clock = _Clock()
    progress, out = _plain(clock, total=0)
    progress.start()
    progress.update(0, 0)
    progress.stop()
    assert out.getvalue() == ""


def test_helpers() -> None:
    assert eta_seconds(1, 3, 30.0) == 60.0
    assert eta_seconds(3, 3, 30.0) == 0.0
    assert format_duration(59.6) == "1 min 00 s"
    assert plain_line("x", 2, 2, 3.0) == "[x] 2/2 (100 %), 3 s elapsed, done"


def test_a_stage_with_nothing_to_count_still_says_it_is_working(capsys: pytest.CaptureFixture[str]) -> None:
    with heartbeat("track", every_s=0.05):
        time.sleep(0.3)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 2
    assert all(line.startswith("[track] working, ") and line.endswith(" elapsed") for line in lines)
    with heartbeat("report", every_s=5.0):  # a quick stage prints nothing
        pass
    assert capsys.readouterr().err == ""
