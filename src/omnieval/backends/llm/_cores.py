"""How many CPU cores other processes keep busy right now, for picking llama.cpp's thread count.

llama.cpp's threads spin-wait on each other, so running more threads than there are free cores
makes every token several times slower; running fewer than there are free cores leaves them idle.
The 1-minute load average cannot tell the two apart at the start of the judge stage: it still
counts the metrics stage that *this* process ran a moment before, so an idle 2-core machine looked
half busy and the whole judge stage ran on one thread. :func:`busy_cores_of_others` samples
``/proc`` instead and subtracts this process's own CPU time.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import NamedTuple

from omnieval.errors import ConfigError

PROC_STAT = Path("/proc/stat")
PROC_SELF_STAT = Path("/proc/self/stat")


class CpuSample(NamedTuple):
    """One reading of the machine's and this process's CPU counters (clock ticks)."""

    busy_ticks: int
    """Ticks all cores spent on anything but idle and I/O wait."""
    total_ticks: int
    """Ticks all cores spent in total."""
    own_ticks: int
    """User + system ticks of this process (every thread)."""
    wall_s: float
    """``time.monotonic()`` at the reading."""


def parse_proc_stat(text: str) -> tuple[int, int, int]:
    """``(busy_ticks, total_ticks, cores)`` from the text of ``/proc/stat``.

    >>> parse_proc_stat("cpu  10 0 5 80 5 0 0 0 0 0\\ncpu0 5 0 2 40 3 0 0 0 0 0\\ncpu1 5 0 3 40 2 0 0 0 0 0\\n")
    (15, 100, 2)
    """
    lines = text.splitlines()
    fields = [int(value) for value in lines[0].split()[1:]]
    # guest time is already counted in user/nice (proc(5)), so only the first 8 fields add up.
    total = sum(fields[:8])
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    cores = sum(1 for line in lines[1:] if line.startswith("cpu") and line[3:4].isdigit())
    return total - idle, total, cores


def parse_self_stat(text: str) -> int:
    """User + system clock ticks from the text of ``/proc/self/stat``.

    The command name (field 2) may hold spaces, so fields are counted after its closing bracket.

    >>> parse_self_stat("42 (python x) R 1 2 3 4 5 6 7 8 9 10 120 30 0 0 20 0 3")
    150
    """
    after_name = text.rsplit(")", 1)[1].split()
    # after the name: state is field 3, utime field 14 and stime field 15 (proc(5)).
    return int(after_name[11]) + int(after_name[12])


def busy_cores_between(before: CpuSample, after: CpuSample, cores: int, ticks_per_s: float) -> float:
    """Cores other processes kept busy between two samples (0 when nothing else ran).

    >>> busy_cores_between(CpuSample(0, 0, 0, 0.0), CpuSample(150, 200, 50, 1.0), 2, 100.0)
    1.0
    """
    total = after.total_ticks - before.total_ticks
    elapsed = after.wall_s - before.wall_s
    if total <= 0 or elapsed <= 0:
        return 0.0
    machine_busy = (after.busy_ticks - before.busy_ticks) / total * cores
    own_busy = (after.own_ticks - before.own_ticks) / ticks_per_s / elapsed
    return max(0.0, machine_busy - own_busy)


def read_sample() -> tuple[CpuSample, int]:
    """The current :class:`CpuSample` and the number of cores ``/proc/stat`` lists."""
    busy, total, cores = parse_proc_stat(PROC_STAT.read_text())
    own = parse_self_stat(PROC_SELF_STAT.read_text())
    return CpuSample(busy, total, own, time.monotonic()), cores


def busy_cores_of_others(sample_s: float = 0.5) -> float | None:
    """Cores kept busy by other processes over the next ``sample_s`` seconds.

    None where ``/proc`` cannot say (not Linux) or describes other cores than this process may use
    (a container whose ``/proc/stat`` lists the host's); callers then fall back to the load average.
    """
    try:
        first, listed = read_sample()
        time.sleep(sample_s)
        second, _ = read_sample()
        ticks_per_s = float(os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None
    if listed != usable_cores():
        return None
    return busy_cores_between(first, second, listed, ticks_per_s)


def usable_cores() -> int:
    """Cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


MAX_THREADS_ENV = "OMNIEVAL_LLAMACPP_MAX_THREADS"
"""Environment variable capping :func:`auto_threads` (e.g. 1 per process when several processes
share the cores for their whole life, as pytest-xdist workers do: one sampling at load time may see
the others idle and take every core, then spin against them for the rest of the run)."""


def auto_threads(max_threads: int = 4) -> int:
    """Threads for llama.cpp: the cores no other process keeps busy now, at least one.

    At most ``max_threads``, and at most ``$OMNIEVAL_LLAMACPP_MAX_THREADS`` where that is set.
    Falls back to the 1-minute load average (which also counts this process) where ``/proc`` is not
    usable.
    """
    capped = os.environ.get(MAX_THREADS_ENV, "").strip()
    if capped:
        try:
            max_threads = min(max_threads, max(1, int(capped)))
        except ValueError:
            raise ConfigError(f"{MAX_THREADS_ENV}={capped!r}: expected a whole number of threads") from None
    cores = usable_cores()
    others = busy_cores_of_others()
    if others is None:
        others = os.getloadavg()[0]
    return max(1, min(max_threads, cores, int(cores - others + 0.5)))
