"""``orchestration``: a planner writes the narration and plans the picture and the spoken line;
modality experts render them (Omni-StoryBench section 4). Registered on import."""

from omnieval.systems.orchestration._prompt import (
    SPEECH_LABELS,
    check_plan,
    image_prompt_problem,
    schema,
    user_prompt,
)
from omnieval.systems.orchestration._system import (
    ExpertPair,
    OrchestrationConfig,
    OrchestrationSystem,
    fail_all,
    write_text,
)

__all__ = [
    "SPEECH_LABELS",
    "ExpertPair",
    "OrchestrationConfig",
    "OrchestrationSystem",
    "check_plan",
    "fail_all",
    "image_prompt_problem",
    "schema",
    "user_prompt",
    "write_text",
]
