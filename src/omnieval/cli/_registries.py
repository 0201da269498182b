"""The registries the benchmarks fill when imported, filled before a command reads them.

Analyses, analysis contexts, judge tracks, rubrics and panels, system kinds, image and speech
experts, metrics and the benchmarks themselves are registered by the benchmark packages when
``omnieval.benchmarks`` is imported (it imports every one). A command run from a fresh shell has
imported none of them, so a handler that reads one of those registries calls :func:`load_benchmarks`
first; otherwise ``omnieval analyze --list`` prints nothing and a table's analyses are silently
zero. Handlers call it, never module level: the import takes seconds and ``omnieval --help`` builds
every subcommand's parser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omnieval.benchmarks import Benchmark
    from omnieval.registry import Registry


def load_benchmarks() -> Registry[Benchmark]:
    """Import every benchmark package (each registers its components) and return the benchmarks."""
    from omnieval.benchmarks import BENCHMARKS

    return BENCHMARKS


def registered_benchmark(name: str) -> Benchmark:
    """The registered benchmark ``name``; an unknown name is a ConfigError listing the known ones."""
    from omnieval.errors import ConfigError

    benchmarks = load_benchmarks()
    if name not in benchmarks:
        raise ConfigError(f"unknown benchmark {name!r}; known: {', '.join(benchmarks.names())}")
    return benchmarks.get(name)
