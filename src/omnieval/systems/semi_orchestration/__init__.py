"""``semi-orchestration``: a backbone writes the narration itself (``produces: text``), or two
modalities plus the intermediate fields from which an expert renders the third (``text+speech``,
``text+image``; Omni-StoryBench section 5.1). Registered on import."""

from omnieval.systems.semi_orchestration._backbones import (
    INTERMEDIATE_FILE,
    BackboneRun,
    ScriptedBackboneConfig,
)
from omnieval.systems.semi_orchestration._config import BackboneConfig, SemiOrchestrationConfig
from omnieval.systems.semi_orchestration._fields import THIRD, FieldsOutcome, intermediate_schema, read_fields
from omnieval.systems.semi_orchestration._system import (
    SemiOrchestrationSystem,
    first_sentence,
    spoken_line,
)

__all__ = [
    "INTERMEDIATE_FILE",
    "THIRD",
    "BackboneConfig",
    "BackboneRun",
    "FieldsOutcome",
    "ScriptedBackboneConfig",
    "SemiOrchestrationConfig",
    "SemiOrchestrationSystem",
    "first_sentence",
    "intermediate_schema",
    "read_fields",
    "spoken_line",
]
