"""Systems under test: the registry, the shared write helpers, the generic ``import`` system and the
generating kinds (FORMATS.md section 9).

Each benchmark registers its own reference systems when its package is imported
(:mod:`omnieval.benchmarks`); importing this package registers ``import`` and every generating kind
that is defined (each in its own subpackage, registered where it is defined).
"""

from omnieval.systems import _import  # noqa: F401  (registration side effect)
from omnieval.systems._base import SYSTEMS, GenerationSummary, System
from omnieval.systems._generating import (
    EXAMPLE_FILES,
    ExampleResult,
    GeneratingSystem,
    PlanningFailure,
    Task,
    describe,
    timed,
)
from omnieval.systems._import import resolve_candidates_root
from omnieval.systems._kinds import load_kinds
from omnieval.systems._spec import SystemConfig, SystemSpec

load_kinds()


def config_model(kind: str) -> type[SystemSpec]:
    """The typed config of a system kind: the generating kind's own model, else :class:`SystemConfig`."""
    factory = SYSTEMS.get(kind) if kind in SYSTEMS else None
    model = getattr(factory, "config_model", None)
    return model if isinstance(model, type) and issubclass(model, SystemSpec) else SystemConfig


def system_kinds_for(benchmark: str, declared: frozenset[str]) -> frozenset[str]:
    """The kinds a benchmark accepts: its own declared kinds plus every generating kind serving it."""
    generating = {
        name
        for name in SYSTEMS.names()
        if isinstance(SYSTEMS.get(name), type)
        and issubclass(SYSTEMS.get(name), GeneratingSystem)  # type: ignore[arg-type]
        and benchmark in SYSTEMS.get(name).benchmarks  # type: ignore[attr-defined]
    }
    return frozenset(declared) | frozenset(generating)


__all__ = [
    "EXAMPLE_FILES",
    "SYSTEMS",
    "ExampleResult",
    "GeneratingSystem",
    "GenerationSummary",
    "PlanningFailure",
    "System",
    "SystemConfig",
    "SystemSpec",
    "Task",
    "config_model",
    "describe",
    "resolve_candidates_root",
    "system_kinds_for",
    "timed",
]
