"""Benchmarks: one package per evaluation protocol, registered by name with :func:`benchmark`.

Importing this package imports every benchmark package in its folder, and each registers itself:
adding a benchmark is adding a folder. A benchmark may also live outside the package: a folder a
suite names by path (:func:`load_folder`, :func:`resolve_benchmark`) or an installed package's entry
point in the group ``omnieval.benchmarks`` (loaded the first time a name is missing or the names
are listed). Stages, the report and tracking look a benchmark up with :func:`get_benchmark` (the
suite's ``benchmark:`` key) and never name one. :class:`DeclaredBenchmark` is the short way to
write one: a record model and a metric function, the rest derived from declarations.

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
    DATASET_LIMIT,
    Benchmark,
    DatasetReport,
    DatasetSummary,
    GenerateJob,
    JudgeJob,
    JudgeOutput,
    Judging,
    Leaderboard,
    MetricsJob,
    MetricsOutput,
    ReportJob,
    ReportSuite,
    RunFacts,
    RunSettings,
    benchmark,
)
from omnieval.benchmarks._declared import (
    DeclaredBenchmark,
    DeclaredLeaderboard,
    Instance,
    NoOptions,
    Outputs,
    Record,
    RecordDataset,
    summarize,
)
from omnieval.benchmarks._external import (
    ENTRY_POINT_GROUP,
    benchmark_folder,
    enable_plugins,
    load_folder,
    resolve_benchmark,
)
from omnieval.lineage import Deviation


def _import_packages() -> None:
    """Import every benchmark package in this folder; each registers itself with ``@benchmark``.

    A package that fails to import fails loudly here (no warning-and-skip), so a broken benchmark is
    never silently missing from the registry.
    """
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_import_packages()
enable_plugins()


def get_benchmark(name: str) -> Benchmark:
    """The registered benchmark ``name`` (installed plugins included); raises with the known names
    when there is none. A folder benchmark is registered under its name once :func:`load_folder`
    (or loading a suite that names the folder) has imported it in this process."""
    return BENCHMARKS.get(name)


def detect_benchmark(root: Path) -> Benchmark | None:
    """The benchmark whose dataset layout ``root`` has (by its marker file), or None."""
    return next((b for b in map(BENCHMARKS.get, BENCHMARKS.names()) if b.detect(root)), None)


__all__ = [
    "BENCHMARKS",
    "DATASET_LIMIT",
    "ENTRY_POINT_GROUP",
    "Benchmark",
    "DatasetReport",
    "DatasetSummary",
    "DeclaredBenchmark",
    "DeclaredLeaderboard",
    "Deviation",
    "GenerateJob",
    "Instance",
    "JudgeJob",
    "JudgeOutput",
    "Judging",
    "Leaderboard",
    "MetricsJob",
    "MetricsOutput",
    "NoOptions",
    "Outputs",
    "Record",
    "RecordDataset",
    "ReportJob",
    "ReportSuite",
    "RunFacts",
    "RunSettings",
    "benchmark",
    "benchmark_folder",
    "detect_benchmark",
    "get_benchmark",
    "load_folder",
    "resolve_benchmark",
    "summarize",
]
