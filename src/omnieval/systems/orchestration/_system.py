"""The ``orchestration`` kind (Omni-StoryBench): a planner and two modality experts.

Per example: the planner (any :mod:`omnieval.backends.llm` backend) reads the current narration,
the current picture when it takes images (``planner.sees_images``), the book metadata and the next
page's conditions, and answers with a plan (:mod:`._prompt`). The narration is the text output; the
image expert draws ``image_prompt``; the speech expert speaks ``speech.text`` with the planned
delivery. A failed plan removes all three outputs (the paper's rule), each ``missing.txt`` naming
the cause. An expert that fails costs only its own modality. Seconds are recorded per step:
``plan``, ``text``, ``image``, ``speech``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from omnieval.systems._base import SYSTEMS
from omnieval.systems._generating import EXAMPLE_FILES, ExampleResult, GeneratingSystem, Task, timed
from omnieval.systems._planner import Planner, PlannerConfig
from omnieval.systems._spec import SystemSpec
from omnieval.systems.experts import (
    DrawnConfig,
    EspeakConfig,
    ExpertConfig,
    ImageExpert,
    ImageExpertConfig,
    ImageRequest,
    SpeechExpert,
    SpeechExpertConfig,
    SpeechPlan,
    image_expert,
    release_accelerator_memory,
    speech_expert,
)
from omnieval.systems.orchestration._prompt import (
    SYSTEM_PROMPT,
    check_plan,
    schema,
    speech_labels,
    user_prompt,
)

#: What the planning kinds write for an example: a planning failure marks each of these missing
#: unless the task names the modalities its benchmark asks for.
PAGE_MODALITIES: tuple[str, ...] = ("text", "image", "speech")


class OrchestrationConfig(SystemSpec):
    """``orchestration`` (storybench): planner + image expert + speech expert.

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
    """The current narration is shortened to this many characters in the planner's prompt."""


class ExpertPair:
    """An image and a speech expert, each built once, opened on first use and closed together."""

    def __init__(self, image: ExpertConfig, speech: ExpertConfig) -> None:
        self.image: ImageExpert[Any] = image_expert(image)  # type: ignore[arg-type]
        self.speech: SpeechExpert[Any] = speech_expert(speech)  # type: ignore[arg-type]
        self._identity: dict[str, Any] | None = None

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            self._identity = {"image": self.image.identity(), "speech": self.speech.identity()}
        return self._identity

    def lineage(self) -> dict[str, Any]:
        return {"image": self.image.lineage(), "speech": self.speech.lineage()}

    def label(self) -> str:
        """How the report names the experts, e.g. ``drawn images (not a generative model), espeak voice``."""

        def one(expert: Any, what: str) -> str:
            note = "" if expert.is_generative_model else " (not a generative model)"
            return f"{expert.name} {what}{note}"

        return f"{one(self.image, 'images')}, {one(self.speech, 'voice')}"

    def close(self) -> None:
        self.image.close()
        self.speech.close()
        release_accelerator_memory()

    def draw(self, result: ExampleResult, workdir: Path, request: ImageRequest) -> None:
        """Image expert call: the file, or the modality missing with the expert's error."""
        self._call(result, workdir, "image", self.image, lambda out: self.image.render(request, out))

    def say(self, result: ExampleResult, workdir: Path, plan: SpeechPlan) -> None:
        """Speech expert call: the file, or the modality missing with the expert's error."""
        self._call(result, workdir, "speech", self.speech, lambda out: self.speech.speak(plan, out))

    @staticmethod
    def _call(
        result: ExampleResult,
        workdir: Path,
        modality: str,
        expert: ImageExpert[Any] | SpeechExpert[Any],
        make: Callable[[Path], dict[str, Any]],
    ) -> None:
        name = EXAMPLE_FILES_NAME[modality]
        with timed(result.seconds, modality):
            try:
                expert.open()
                facts = make(workdir / name)
                result.written[modality] = name
                result.raw[f"{modality}_expert"] = facts
            except Exception as exc:  # an expert failure costs only its own modality
                result.missing[modality] = (
                    f"{modality} expert {expert.name} failed: {type(exc).__name__}: {exc}"
                )
            finally:
                release_accelerator_memory()


EXAMPLE_FILES_NAME: dict[str, str] = {m.value: name for m, name in EXAMPLE_FILES.items()}


def write_text(result: ExampleResult, workdir: Path, text: str) -> None:
    name = EXAMPLE_FILES_NAME["text"]
    with timed(result.seconds, "text"):
        (workdir / name).write_text(text.strip() + "\n", encoding="utf-8")
        result.written["text"] = name


def fail_all(result: ExampleResult, modalities: tuple[str, ...], reason: str) -> ExampleResult:
    """A failed plan removes every output of the example (Omni-StoryBench's rule)."""
    for modality in modalities:
        result.missing[modality] = reason
    return result


@SYSTEMS.register("orchestration")
class OrchestrationSystem(GeneratingSystem):
    """Planner + image expert + speech expert (see the module docstring)."""

    kind: ClassVar[str] = "orchestration"
    config_model: ClassVar[type[SystemSpec]] = OrchestrationConfig

    def __init__(self, config: SystemSpec, *, system_id: str = "", cache_dir: Path | None = None) -> None:
        super().__init__(config, system_id=system_id, cache_dir=cache_dir)
        assert isinstance(config, OrchestrationConfig)
        self.spec = config
        self.planner = Planner(config.planner)
        self.experts = ExpertPair(config.image, config.speech)
        self.schema = schema(
            config.narration_max_chars, config.image_prompt_max_chars, config.line_max_chars, config.labels
        )
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
        inputs = task.inputs
        result = ExampleResult()
        plan = self.planner.plan(
            SYSTEM_PROMPT,
            user_prompt(inputs, current_max_chars=self.spec.current_text_max_chars, labels=self.spec.labels),
            self.schema,
            images=[inputs.current_image],
            check=check_plan,
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
            ImageRequest(str(fields["image_prompt"]).strip(), inputs.current_image, task.index),
        )
        labels = speech_labels(fields)
        self.experts.say(result, workdir, SpeechPlan(text=str(fields["speech"]["text"]).strip(), **labels))
        return result
