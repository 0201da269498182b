"""Benchmarks: one package per evaluation protocol, registered by name with :func:`benchmark`.

Importing this package registers the built-in benchmarks. Stages, the report and tracking look a
benchmark up with :func:`get_benchmark` (the suite's ``benchmark:`` key) and never name one.

Example:
    >>> from omnieval.benchmarks import BENCHMARKS
    >>> BENCHMARKS.names()
    ['acbench', 'storybench']
"""

from __future__ import annotations

from pathlib import Path

from omnieval.benchmarks._base import (
    BENCHMARKS,
    Benchmark,
    DatasetReport,
    DatasetSummary,
    GenerateJob,
    JudgeJob,
    JudgeOutput,
    Leaderboard,
    MetricsJob,
    MetricsOutput,
    ReportJob,
    RunFacts,
    benchmark,
)

# The built-in benchmarks register themselves when their package is imported.
from omnieval.benchmarks import acbench, storybench  # noqa: F401  isort: skip


def get_benchmark(name: str) -> Benchmark:
    """The registered benchmark ``name``; raises with the known names when there is none."""
    return BENCHMARKS.get(name)


def detect_benchmark(root: Path) -> Benchmark | None:
    """The benchmark whose dataset layout ``root`` has (by its marker file), or None."""
    for name in BENCHMARKS.names():
        bench = BENCHMARKS.get(name)
        if bench.detect(root):
            return bench
    return None


__all__ = [
    "BENCHMARKS",
    "Benchmark",
    "DatasetReport",
    "DatasetSummary",
    "GenerateJob",
    "JudgeJob",
    "JudgeOutput",
    "Leaderboard",
    "MetricsJob",
    "MetricsOutput",
    "ReportJob",
    "RunFacts",
    "benchmark",
    "detect_benchmark",
    "get_benchmark",
]
