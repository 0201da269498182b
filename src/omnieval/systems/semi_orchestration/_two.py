"""One example of a two-modality backbone (``produces: text+speech`` or ``text+image``): the backbone's
own outputs, the intermediate fields classified, the third modality rendered by its expert.

What is kept when something fails follows the paper's failure analysis (Omni-StoryBench section 5,
Figure 4 and the valid-only vs zero-filled appendix): for its MMaDA, EMOVA and Emu3 backbones a
failed intermediate plan counts the example as failed on all three modalities, which is why one
coverage factor per backbone (713 of 900 examples for MMaDA, 850 of 900 for Emu3) scales every
zero-filled component alike. So:

- **unusable intermediate fields** (:func:`._fields.read_fields`: ``unparseable_json``,
  ``missing_field``, ``unusable_prompt``, ``refusal``): every output is missing with
  ``planning failure: <cause>: <detail>`` and the cause is counted. The backbone's own files are
  not candidates: they move to the example's :data:`UNSCORED_DIR` (placed under
  ``<candidates>/raw/<index>/unscored/``, beside ``generated_raw.json``, never scored);
- **the backbone failed** (crash, timeout, a failed second pass): every output is missing with the
  failure (a timeout is counted as ``timeout``; a crash is not a plan), and what it wrote is kept
  the same way;
- **except** outputs the backbone made apart from the fields (:attr:`BackboneRun.independent`):
  ``openai-omni``'s first-pass speech stays when its second pass fails (the paper's Qwen2.5-Omni
  case: text and image missing, speech available);
- **the expert failed**: only the third modality is missing (``<modality> expert <name> failed: ...``).
"""

from __future__ import annotations

import shutil
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
    BackboneRun,
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

#: The example folder's subfolder (and ``<candidates>/raw/<index>/``'s) holding the backbone's files
#: of a failed example: kept to look at, not candidates (FORMATS.md section 2 layout is untouched).
UNSCORED_DIR = "unscored"

#: Key of ``generated_raw.json`` naming those files: modality -> path relative to ``raw/<index>/``.
UNSCORED_KEY = "unscored"


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
            if run.fields is not None:
                result.raw["intermediate_fields"] = run.fields
            return self._fail(result, workdir, run, reason)
        labels = task.plan_request("semi-orchestration").labels
        outcome = read_fields(run.fields, self.third, labels)
        result.raw["intermediate_fields"] = outcome.fields if outcome.fields is not None else run.fields
        result.raw["intermediate_error"] = outcome.error or None
        if outcome.failure is not None:
            result.planning_failure = outcome.failure
            reason = f"planning failure: {outcome.failure.value}: {outcome.error}"
            return self._fail(result, workdir, run, reason)
        assert outcome.fields is not None
        fields = outcome.fields
        if run.text_in_fields:
            narration = fields.get("narration")
            if isinstance(narration, str) and narration.strip():
                write_text(result, workdir, narration)
            else:
                result.missing["text"] = "not written: no narration"
        if self.third not in (task.modalities or PAGE_MODALITIES):
            return result
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

    def _fail(self, result: ExampleResult, workdir: Path, run: BackboneRun, reason: str) -> ExampleResult:
        """The example failed: every output the plan or the failed run touches is missing with
        ``reason``; the backbone's files of those modalities move to :data:`UNSCORED_DIR` and are
        named in ``raw`` under :data:`UNSCORED_KEY`."""
        unscored: dict[str, str] = {}
        for modality in (*self.modalities, self.third):
            if modality in run.independent:
                if modality not in result.written:
                    result.missing.setdefault(modality, reason)
                continue
            name = result.written.pop(modality, None)
            if name is not None and (workdir / name).is_file():
                (workdir / UNSCORED_DIR).mkdir(exist_ok=True)
                shutil.move(workdir / name, workdir / UNSCORED_DIR / name)
                unscored[modality] = f"{UNSCORED_DIR}/{name}"
            result.missing[modality] = reason
        if unscored:
            result.raw[UNSCORED_KEY] = unscored
        return result


__all__ = ["UNSCORED_DIR", "UNSCORED_KEY", "TwoModalityRunner", "open_backbone"]
