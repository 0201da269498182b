"""Systems under test: the registry, the shared write helpers, the generic ``import`` system and the
generating kinds (FORMATS.md section 9).

Each benchmark registers its own reference systems (and any generating kind that serves only it,
such as acbench's ``cascade``) when its package is imported (:mod:`omnieval.benchmarks`); importing
this package registers ``import`` and every benchmark-independent generating kind (each in its own
subpackage, registered where it is defined).
"""

from omnieval.systems import _import  # noqa: F401  (registration side effect)
from omnieval.systems._base import (
    SYSTEMS,
    GenerationSummary,
    Progress,
    System,
    clear_index,
    record_missing,
    write_image,
    write_text,
)
from omnieval.systems._budget import GenerationBudget, GenerationLimit
from omnieval.systems._generating import (
    EXAMPLE_FILES,
    PLANNING_CODE,
    ExampleResult,
    GeneratingSystem,
    PlanningFailure,
    Task,
    VisibleTask,
    describe,
    timed,
)
from omnieval.systems._import import resolve_candidates_root
from omnieval.systems._kinds import load_kinds
from omnieval.systems._planner import Planner, PlannerConfig
from omnieval.systems._spec import SystemConfig, SystemSpec

load_kinds()


def config_model(kind: str) -> type[SystemSpec]:
    """The typed config of a system kind: the generating kind's own model, else :class:`SystemConfig`."""
    factory = SYSTEMS.get(kind) if kind in SYSTEMS else None
    model = getattr(factory, "config_model", None)
    return model if isinstance(model, type) and issubclass(model, SystemSpec) else SystemConfig


def system_kinds_for(benchmark: str, declared: frozenset[str]) -> frozenset[str]:
    """The kinds ``benchmark`` accepts: exactly those it declares (``system_kinds`` in its
    ``benchmark.yaml``), generating kinds included. The benchmark says which kinds serve it; a kind
    names no benchmark, so adding a benchmark never means editing a system kind."""
    del benchmark  # kept in the signature for the callers that name it alongside its kinds
    return frozenset(declared)


__all__ = [
    "EXAMPLE_FILES",
    "PLANNING_CODE",
    "SYSTEMS",
    "ExampleResult",
    "GeneratingSystem",
    "GenerationBudget",
    "GenerationLimit",
    "GenerationSummary",
    "Planner",
    "PlannerConfig",
    "PlanningFailure",
    "Progress",
    "System",
    "SystemConfig",
    "SystemSpec",
    "Task",
    "VisibleTask",
    "clear_index",
    "config_model",
    "describe",
    "record_missing",
    "resolve_candidates_root",
    "system_kinds_for",
    "timed",
    "write_image",
    "write_text",
]
