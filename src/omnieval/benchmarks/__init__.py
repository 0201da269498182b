"""Benchmarks: one package per evaluation protocol, registered by name with :func:`benchmark`.

Importing this package imports every benchmark package in its folder, and each registers itself:
adding a benchmark is adding a folder. Stages, the report and tracking look a benchmark up with
:func:`get_benchmark` (the suite's ``benchmark:`` key) and never name one.

Example:
    >>> from omnieval.benchmarks import BENCHMARKS
    >>> BENCHMARKS.names()
    ['acbench', 'prism', 'storybench']
"""

from __future__ import annotations

import importlib
import pkgutil
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
    ReportSuite,
    RunFacts,
    benchmark,
)


def _import_packages() -> None:
    """Import every benchmark package in this folder; each registers itself with ``@benchmark``.

    A package that fails to import fails loudly here (no warning-and-skip), so a broken benchmark is
    never silently missing from the registry.
    """
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_import_packages()


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
    "ReportSuite",
    "RunFacts",
    "benchmark",
    "detect_benchmark",
    "get_benchmark",
]
