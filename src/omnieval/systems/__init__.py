"""Systems under test: the registry, the shared write helpers, the generic ``import`` system and the
generating kinds (FORMATS.md section 9).

Each benchmark registers its own reference systems (and any generating kind that serves only it,
such as acbench's ``cascade``) when its package is imported (:mod:`omnieval.benchmarks`); importing
this package registers ``import`` and every benchmark-independent generating kind (each in its own
subpackage, registered where it is defined). Installed packages add kinds through the entry-point
group ``omnieval.systems`` (name = the ``kind:`` a suite uses; loaded the first time a kind is not
found or the kinds are listed).
"""

from omnieval.systems import _import  # noqa: F401  (registration side effect)
from omnieval.systems._base import (
    SYSTEMS,
    GenerationRequest,
    GenerationSummary,
    Progress,
    System,
    VisibleTask,
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
    describe,
    timed,
)
from omnieval.systems._import import resolve_candidates_root
from omnieval.systems._kinds import load_kinds
from omnieval.systems._planner import Planner, PlannerConfig
from omnieval.systems._spec import ImportConfig, SystemConfig, SystemSpec
from omnieval.systems._task import AUDIO_ROLE, IMAGE_ROLE, Answer, Ask, Brief, LabelStyle, Part, PlanRequest

load_kinds()

ENTRY_POINT_GROUP = "omnieval.systems"
"""Entry-point group of installed system-kind plugins (name = the suite's ``kind:``)."""


def _enable_plugins() -> None:
    from omnieval.errors import ConfigError

    SYSTEMS.use_entry_points(ENTRY_POINT_GROUP, error=ConfigError)


_enable_plugins()


def system_kind(kind: str) -> type[System]:
    """The class registered as ``kind``, checked against the one protocol (:class:`System`).

    Raises:
        UnknownComponentError: no kind of that name is registered (nor installed).
        ConfigError: what is registered under ``kind`` is not a :class:`System` subclass (a plugin
            written against another protocol): said when the suite loads, before anything runs.
    """
    from omnieval.errors import ConfigError

    registered: object = SYSTEMS.get(kind)
    if not (isinstance(registered, type) and issubclass(registered, System)):
        raise ConfigError(
            f"system kind {kind!r} is registered as {registered!r}, which is not a subclass of "
            "omnieval.systems.System (implement generate(GenerationRequest) -> GenerationSummary)"
        )
    return registered


def config_model(kind: str) -> type[SystemSpec]:
    """The typed config of a system kind (its class's ``config_model``); :class:`SystemConfig` for
    a name no kind is registered under, so the suite's check of ``kind`` says what is wrong."""
    return system_kind(kind).config_model if kind in SYSTEMS else SystemConfig


def system_kinds_for(benchmark: str, declared: frozenset[str]) -> frozenset[str]:
    """The kinds ``benchmark`` accepts: exactly those it declares (``system_kinds`` in its
    ``benchmark.yaml``), generating kinds included. The benchmark says which kinds serve it; a kind
    names no benchmark, so adding a benchmark never means editing a system kind."""
    del benchmark  # kept in the signature for the callers that name it alongside its kinds
    return frozenset(declared)


__all__ = [
    "AUDIO_ROLE",
    "EXAMPLE_FILES",
    "IMAGE_ROLE",
    "PLANNING_CODE",
    "SYSTEMS",
    "Answer",
    "Ask",
    "Brief",
    "ExampleResult",
    "GeneratingSystem",
    "GenerationBudget",
    "GenerationLimit",
    "GenerationRequest",
    "GenerationSummary",
    "ImportConfig",
    "LabelStyle",
    "Part",
    "PlanRequest",
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
    "system_kind",
    "system_kinds_for",
    "timed",
    "write_image",
    "write_text",
]
