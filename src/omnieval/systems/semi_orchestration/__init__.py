"""``semi-orchestration``: a backbone writes the narration itself; experts render the picture and the
spoken line from it (Omni-StoryBench section 4). Registered on import."""

from omnieval.systems.semi_orchestration._system import (
    BackboneConfig,
    SemiOrchestrationConfig,
    SemiOrchestrationSystem,
    first_sentence,
    speaker_emotion,
    spoken_line,
)

__all__ = [
    "BackboneConfig",
    "SemiOrchestrationConfig",
    "SemiOrchestrationSystem",
    "first_sentence",
    "speaker_emotion",
    "spoken_line",
]
