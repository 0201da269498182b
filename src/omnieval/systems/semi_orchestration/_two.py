"""One example of a two-modality backbone (``produces: text+speech`` or ``text+image``): the backbone's
own outputs, the intermediate fields classified, the third modality rendered by its expert.

What is kept when something fails (the paper's failure analysis, section 5 after Figure 4):

- **unusable intermediate fields** (:func:`._fields.read_fields`): the third modality is missing with
  ``planning failure: <cause>: <detail>`` and the cause is counted; the backbone's two outputs stay;
- **the backbone failed** (crash, timeout, a failed second pass): what it wrote before stays, the
  rest is missing with the failure (a timeout is counted as ``timeout``; a crash is not a plan);
- **the expert failed**: only the third modality is missing (``<modality> expert <name> failed: ...``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.backends.llm import Usage
from omnieval.systems._command_config import CommandConfig
from omnieval.systems._generating import ExampleResult, PlanningFailure, Task
from omnieval.systems._omni_client import OpenAIOmniConfig
from omnieval.systems._page import PAGE_MODALITIES, ExpertPair, write_text
from omnieval.systems._task import IMAGE_ROLE
from omnieval.systems.experts import image_expert, release_accelerator_memory, speech_expert
from omnieval.systems.semi_orchestration._backbones import (
    Backbone,
    CommandBackbone,
    OmniBackbone,
    ScriptedBackbone,
    ScriptedBackboneConfig,
)
from omnieval.systems.semi_orchestration._fields import (
    THIRD,
    backbone_modalities,
    image_request,
    read_fields,
    speech_plan,
)

if TYPE_CHECKING:
    from omnieval.systems.semi_orchestration._config import SemiOrchestrationConfig


def open_backbone(config: SemiOrchestrationConfig, system_id: str) -> Backbone:
    """The backbone a two-modality config names."""
    b = config.backbone
    if isinstance(b, CommandConfig):
        return CommandBackbone(b, system_id)
    if isinstance(b, OpenAIOmniConfig):
        return OmniBackbone(b, system_id, config.current_text_max_chars)
    if isinstance(b, ScriptedBackboneConfig):
        return ScriptedBackbone(b)
    raise TypeError(f"not a two-modality backbone: {type(b).__name__}")


class TwoModalityRunner:
    """The ``semi-orchestration`` examples of a two-modality backbone (see the module docstring)."""

    def __init__(self, config: SemiOrchestrationConfig, *, system_id: str) -> None:
        self.produces = config.produces
        self.modalities = backbone_modalities(config.produces)
        self.third = THIRD[config.produces]
        self.backbone = open_backbone(config, system_id)
        self.expert: Any = (
            image_expert(config.image) if self.third == "image" else speech_expert(config.speech)
        )
        self.usage = Usage()
        """Backbone runs of ``command`` and ``scripted`` backbones (``openai-omni`` keeps its own)."""

    def _usage(self) -> Usage:
        return self.backbone.client.usage if isinstance(self.backbone, OmniBackbone) else self.usage

    def identity(self) -> dict[str, Any]:
        return {
            "backbone": {"produces": self.produces, **self.backbone.identity()},
            "experts": {self.third: self.expert.identity()},
        }

    def label(self) -> str:
        """e.g. ``command backbone gen.py (text+speech), drawn images (not a generative model)``."""
        facts = self.backbone.lineage()
        what = facts["kind"]
        if what == "command":
            argv = facts.get("argv") or []
            named = [a for a in argv[1:] if not a.startswith("{") and not a.startswith("-")]
            what = f"command {Path(named[0] if named else argv[0]).name}"
        elif what == "openai-omni":
            what = str(facts.get("model"))
        note = "" if self.expert.is_generative_model else " (not a generative model)"
        noun = "images" if self.third == "image" else "voice"
        return f"{what} backbone ({self.produces}), {self.expert.name} {noun}{note}"

    def lineage(self) -> dict[str, Any]:
        return {
            "paradigm": "semi-orchestration",
            "label": self.label(),
            "backbone": {**self.backbone.lineage(), "produces": list(self.modalities)},
            "experts": {self.third: self.expert.lineage()},
            "intermediate_fields_for": self.third,
            "usage": self._usage().to_json(),
        }

    def close(self) -> None:
        self.backbone.close()
        self.expert.close()
        release_accelerator_memory()

    def run_example(self, task: Task, workdir: Path) -> ExampleResult:
        result = ExampleResult()
        run = self.backbone.run(task, workdir, self.modalities, self.third)
        if not isinstance(self.backbone, OmniBackbone):
            self.usage.add_call(None, sum(run.seconds.values()))
        result.written.update(run.written)
        result.missing.update(run.missing)
        result.seconds.update(run.seconds)
        result.raw["backbone"] = {**run.raw, "transient": run.transient}
        if run.failed:
            reason = run.failed
            if run.timed_out:
                result.planning_failure = PlanningFailure.TIMEOUT
                reason = f"planning failure: timeout: {run.failed}"
            for modality in (*self.modalities, self.third):
                if modality not in result.written:
                    result.missing.setdefault(modality, reason)
            return result
        labels = task.plan_request("semi-orchestration").labels
        outcome = read_fields(run.fields, self.third, labels)
        result.raw["intermediate_fields"] = outcome.fields if outcome.fields is not None else run.fields
        result.raw["intermediate_error"] = outcome.error or None
        reason = f"planning failure: {outcome.failure.value}: {outcome.error}" if outcome.failure else ""
        if run.text_in_fields:
            narration = (outcome.fields or {}).get("narration")
            if isinstance(narration, str) and narration.strip():
                write_text(result, workdir, narration)
            else:
                result.missing["text"] = reason if outcome.fields is None else "not written: no narration"
        if outcome.failure is not None:
            result.planning_failure = outcome.failure
            result.missing[self.third] = reason
            return result
        if self.third not in (task.modalities or PAGE_MODALITIES):
            return result
        assert outcome.fields is not None
        fields = outcome.fields
        if self.third == "image":
            request = image_request(fields, task.files.get(IMAGE_ROLE), task.index)
            result.raw["image_prompt"] = request.prompt
            ExpertPair._call(
                result, workdir, "image", self.expert, lambda out: self.expert.render(request, out)
            )
        else:
            plan = speech_plan(fields, labels)
            result.raw["speech_plan"] = plan.__dict__
            ExpertPair._call(result, workdir, "speech", self.expert, lambda out: self.expert.speak(plan, out))
        return result


__all__ = ["TwoModalityRunner", "open_backbone"]
