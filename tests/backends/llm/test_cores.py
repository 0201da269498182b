"""llama.cpp's thread count: other processes' load counts, this process's own does not."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from omnieval.backends.llm import _cores
from omnieval.backends.llm._cores import (
    CpuSample,
    auto_threads,
    busy_cores_between,
    busy_cores_of_others,
    parse_proc_stat,
    parse_self_stat,
)
from omnieval.errors import ConfigError

LINUX = Path("/proc/stat").exists() and Path("/proc/self/stat").exists()


@pytest.fixture(autouse=True)
def _no_thread_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests set the cap themselves (tests/conftest.py sets one for pytest-xdist workers)."""
    monkeypatch.delenv(_cores.MAX_THREADS_ENV, raising=False)


def test_parse_proc_stat_counts_iowait_as_idle_and_ignores_guest_fields() -> None:
    text = (
        "cpu  100 10 50 800 40 5 5 0 30 0\n"
        "cpu0 50 5 25 400 20 2 3 0 15 0\n"
        "cpu1 50 5 25 400 20 3 2 0 15 0\n"
        "intr 1 2 3\n"
        "ctxt 7\n"
    )
    busy, total, cores = parse_proc_stat(text)
    # total = 100+10+50+800+40+5+5+0 (guest 30 is inside user already); idle = 800 + 40 iowait.
    assert (busy, total, cores) == (170, 1010, 2)


def test_parse_self_stat_survives_a_command_name_with_spaces_and_brackets() -> None:
    fields = ["S"] + [str(i) for i in range(4, 14)] + ["250", "70"] + ["0"] * 30
    assert parse_self_stat("1234 (my (odd) name) " + " ".join(fields)) == 320


def test_own_load_is_subtracted_and_other_load_is_kept() -> None:
    # 2 cores over 1 s at 100 ticks/s: 200 ticks in all.
    start = CpuSample(busy_ticks=0, total_ticks=0, own_ticks=0, wall_s=10.0)
    only_me = CpuSample(busy_ticks=180, total_ticks=200, own_ticks=180, wall_s=11.0)
    assert busy_cores_between(start, only_me, cores=2, ticks_per_s=100.0) == pytest.approx(0.0)
    me_and_another = CpuSample(busy_ticks=190, total_ticks=200, own_ticks=95, wall_s=11.0)
    assert busy_cores_between(start, me_and_another, cores=2, ticks_per_s=100.0) == pytest.approx(0.95)
    idle = CpuSample(busy_ticks=0, total_ticks=200, own_ticks=0, wall_s=11.0)
    assert busy_cores_between(start, idle, cores=2, ticks_per_s=100.0) == 0.0
    # a counter that did not move (or went back) is not a measurement of load
    assert busy_cores_between(start, start, cores=2, ticks_per_s=100.0) == 0.0


def test_thread_count_follows_the_other_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cores, "usable_cores", lambda: 2)
    for others, expected in ((0.0, 2), (0.4, 2), (0.6, 1), (1.0, 1), (2.0, 1), (3.5, 1)):
        monkeypatch.setattr(_cores, "busy_cores_of_others", lambda sample_s=0.5, v=others: v)
        assert auto_threads() == expected, others
    monkeypatch.setattr(_cores, "usable_cores", lambda: 8)
    monkeypatch.setattr(_cores, "busy_cores_of_others", lambda sample_s=0.5: 0.0)
    assert auto_threads(max_threads=4) == 4


def test_the_environment_caps_the_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cores, "usable_cores", lambda: 8)
    monkeypatch.setattr(_cores, "busy_cores_of_others", lambda sample_s=0.5: 0.0)
    monkeypatch.setenv(_cores.MAX_THREADS_ENV, "1")
    assert auto_threads() == 1
    monkeypatch.setenv(_cores.MAX_THREADS_ENV, "3")
    assert auto_threads(max_threads=4) == 3
    assert auto_threads(max_threads=2) == 2  # a cap never raises the count
    monkeypatch.setenv(_cores.MAX_THREADS_ENV, "0")
    assert auto_threads() == 1
    monkeypatch.setenv(_cores.MAX_THREADS_ENV, "two")
    with pytest.raises(ConfigError, match="OMNIEVAL_LLAMACPP_MAX_THREADS='two'"):
        auto_threads()


def test_without_proc_the_load_average_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cores, "usable_cores", lambda: 2)
    monkeypatch.setattr(_cores, "busy_cores_of_others", lambda sample_s=0.5: None)
    monkeypatch.setattr(_cores.os, "getloadavg", lambda: (1.5, 1.0, 1.0))
    assert auto_threads() == 1
    monkeypatch.setattr(_cores.os, "getloadavg", lambda: (0.1, 1.0, 1.0))
    assert auto_threads() == 2


def test_a_proc_stat_listing_other_cores_than_ours_is_not_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cores, "usable_cores", lambda: 1)
    monkeypatch.setattr(_cores, "read_sample", lambda: (CpuSample(0, 0, 0, time.monotonic()), 64))
    assert busy_cores_of_others(sample_s=0.01) is None


@pytest.mark.skipif(not LINUX, reason="platform: reads /proc (Linux only)")
def test_real_sampling_ignores_our_own_busy_thread_and_sees_a_busy_child() -> None:
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(1000))

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        with_own_load = busy_cores_of_others(sample_s=1.0)
    finally:
        stop.set()
        spinner.join()
    other = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        with_other_load = busy_cores_of_others(sample_s=1.0)
    finally:
        other.kill()
        other.wait()
    assert with_own_load is not None and with_other_load is not None
    # the busy child holds about one core; our own spinning thread must not count as "other"
    assert with_other_load >= 0.6
    assert with_other_load - with_own_load >= 0.4
