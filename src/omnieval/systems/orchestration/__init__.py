"""``orchestration``: a planner writes the narration and plans the picture and the spoken line;
modality experts render them (the paradigm of Omni-StoryBench's section 4; the benchmark words the
plan). Registered on import."""

from omnieval.systems._page import ExpertPair, fail_all, write_text
from omnieval.systems._plan import (
    check_plan,
    image_prompt_problem,
    label_problem,
    label_word,
    plan_check,
    schema,
    speech_labels,
    user_prompt,
)
from omnieval.systems.orchestration._system import OrchestrationConfig, OrchestrationSystem

__all__ = [
    "ExpertPair",
    "OrchestrationConfig",
    "OrchestrationSystem",
    "check_plan",
    "fail_all",
    "image_prompt_problem",
    "label_problem",
    "label_word",
    "plan_check",
    "schema",
    "speech_labels",
    "user_prompt",
    "write_text",
]
