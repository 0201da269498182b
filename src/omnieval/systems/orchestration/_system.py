"""The ``orchestration`` kind (Omni-StoryBench's paradigm): a planner and two modality experts.

Per example: the planner (any :mod:`omnieval.backends.llm` backend) reads the benchmark's brief
(its context and plan instructions, :class:`~omnieval.systems.Brief`) and, when it takes images
(``planner.sees_images``), the task's input picture, and answers with a plan (:mod:`omnieval.systems._plan`). The narration is the text
output; the image expert draws ``image_prompt``; the speech expert speaks ``speech.text`` with the planned
delivery. A failed plan removes all three outputs (the paper's rule), each ``missing.txt`` naming
the cause. An expert that fails costs only its own modality. Seconds are recorded per step:
``plan``, ``text``, ``image``, ``speech``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from omnieval.systems._base import SYSTEMS
from omnieval.systems._generating import PLAN_CODE, PLANNING_CODE, ExampleResult, GeneratingSystem, Task
from omnieval.systems._page import PAGE_MODALITIES, ExpertPair, fail_all, write_text
from omnieval.systems._plan import plan_check, schema, speech_labels, user_prompt
from omnieval.systems._planner import Planner, PlannerConfig
from omnieval.systems._spec import SystemSpec
from omnieval.systems._task import IMAGE_ROLE
from omnieval.systems.experts import (
    DrawnConfig,
    EspeakConfig,
    ImageExpertConfig,
    ImageRequest,
    SpeechExpertConfig,
    SpeechPlan,
)


class OrchestrationConfig(SystemSpec):
    """``orchestration``: planner + image expert + speech expert.

    Example (suite YAML)::

        orchestrated-cpu:
          kind: orchestration
          planner:
            model: Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf
            backend: {kind: llamacpp, model_path: "packaged:qwen2.5-coder-1.5b-gguf"}
            decoding: {temperature: 0.0, max_tokens: 160}
          image: {name: drawn}
          speech: {name: espeak}
    """

    kind: Literal["orchestration"] = "orchestration"
    planner: PlannerConfig
    image: ImageExpertConfig = DrawnConfig()
    speech: SpeechExpertConfig = EspeakConfig()
    labels: Literal["words", "codes"] = "words"
    """How the plan states delivery labels: ``words`` (``"happy"``) or ``codes`` (``1``, an integer
    enum that llama.cpp's skeleton decoder constrains; the prompt lists each code's word)."""
    narration_max_chars: int = Field(default=360, ge=40)
    image_prompt_max_chars: int = Field(default=200, ge=20)
    line_max_chars: int = Field(default=140, ge=10)
    current_text_max_chars: int = Field(default=600, ge=40)
    """The longest input of the benchmark's context (the current text) is shortened to this many
    characters in the planner's prompt."""


@SYSTEMS.register("orchestration")
class OrchestrationSystem(GeneratingSystem):
    """Planner + image expert + speech expert (see the module docstring)."""

    kind: ClassVar[str] = "orchestration"
    config_model: ClassVar[type[SystemSpec]] = OrchestrationConfig
    depends_on: ClassVar[tuple[str, ...]] = (*PLANNING_CODE, *PLAN_CODE)

    def __init__(self, config: SystemSpec, *, system_id: str = "", cache_dir: Path | None = None) -> None:
        super().__init__(config, system_id=system_id, cache_dir=cache_dir)
        assert isinstance(config, OrchestrationConfig)
        self.spec = config
        self.planner = Planner(config.planner)
        self.experts = ExpertPair(config.image, config.speech)
        self._identity: dict[str, Any] | None = None

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            self._identity = {"planner": self.planner.identity(), "experts": self.experts.identity()}
        return self._identity

    def lineage(self) -> dict[str, Any]:
        planner = self.spec.planner
        return {
            "paradigm": "orchestration",
            "label": f"{planner.model} planner ({planner.backend.kind}), {self.experts.label()}",
            "planner": {
                "model": planner.model,
                "backend": planner.backend.kind,
                "sees_images": planner.sees_images,
                "schema_constrained": planner.schema_constrained,
            },
            "experts": self.experts.lineage(),
            # What the planner spent in this generation (the examples it planned, cache hits aside).
            "usage": {**self.planner.usage.to_json(), "model": planner.model},
        }

    def close(self) -> None:
        self.planner.close()
        self.experts.close()

    def run_example(self, task: Task, workdir: Path) -> ExampleResult:
        brief = task.briefed(self.kind)
        wanted = task.plan_request(self.kind)
        spec = self.spec
        picture = task.files.get(IMAGE_ROLE)
        result = ExampleResult()
        plan = self.planner.plan(
            wanted.system_prompt,
            user_prompt(brief, context_max_chars=spec.current_text_max_chars, style=spec.labels),
            schema(
                wanted.labels,
                spec.narration_max_chars,
                spec.image_prompt_max_chars,
                spec.line_max_chars,
                spec.labels,
            ),
            images=[picture] if picture is not None else [],
            check=plan_check(wanted),
        )
        result.seconds["plan"] = plan.seconds
        result.raw.update(plan.as_raw())
        if plan.failure is not None or plan.fields is None:
            cause = plan.failure.value if plan.failure else "unparseable_json"
            result.planning_failure = plan.failure
            reason = f"planning failure: {cause}: {plan.error}"
            return fail_all(result, task.modalities or PAGE_MODALITIES, reason)
        fields = plan.fields
        write_text(result, workdir, str(fields["narration"]))
        self.experts.draw(
            result,
            workdir,
            ImageRequest(str(fields["image_prompt"]).strip(), picture, task.index),
        )
        labels = speech_labels(fields, wanted.labels)
        self.experts.say(result, workdir, SpeechPlan(text=str(fields["speech"]["text"]).strip(), **labels))
        return result
