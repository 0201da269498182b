"""The ``semi-orchestration`` kind (Omni-StoryBench's paradigm): a backbone writes some modalities
itself, experts render the rest; what the backbone is told is the benchmark's brief.

Two kinds of backbone (``produces`` in the config):

- ``produces: text+speech`` or ``text+image`` (the paper's semi-orchestration, section 5.1): the
  backbone (:mod:`._backbones`: ``command``, ``openai-omni``, ``scripted``) writes those two
  modalities and the intermediate fields (:mod:`._fields`) from which one expert renders the third.
  By the paper's failure rule (:mod:`._two`), unusable fields (``unparseable_json``,
  ``missing_field``, ``unusable_prompt``, ``refusal``) or a backbone timeout (``timeout``) leave
  all three outputs missing with that cause, counted as a planning failure; a crash does the same
  without a count. The backbone's files of such an example are kept for inspection under
  ``<candidates>/raw/<index>/unscored/`` (never scored); only ``openai-omni``'s first-pass speech,
  made apart from the fields, stays a candidate. An expert failure costs only the third modality.
  Seconds: ``backbone`` (or ``backbone_speech`` and ``backbone_plan``) and the third modality.
- ``produces: text`` (the default, below): a text-only backbone.

With a text-only backbone, unlike ``orchestration``, the backbone is not asked for a plan: told
the brief's writer prompt and context, it writes the output's narration as plain text (its own text
output, no JSON), and the other modalities are derived from that text and the brief by fixed rules,
then rendered by experts:

- **image**: the image expert draws "<the brief's picture note>. <the narration's first sentence>";
- **speech**: the speech expert speaks the narration's first quoted line (straight or curly
  quotes), else its first sentence, with the brief's delivery (the emotion the benchmark's
  conditions imply, else ``neutral``), ``voice_gender`` and normal speed and pitch.

Backbone failures are planning failures that remove all three outputs: ``timeout``, ``refusal`` (an
answer that declines), ``missing_field`` (no usable narration: the backend failed to answer, the
answer is empty, or it has fewer than :data:`MIN_WORDS` words).
Seconds per step: ``backbone`` (the text), ``text``, ``image``, ``speech``.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any, ClassVar

from omnieval.backends.llm import (
    BackendError,
    ChatBackend,
    ChatRequest,
    ImagePart,
    Message,
    TextPart,
    TransientBackendError,
    Usage,
    backend_identity,
    open_backend,
)
from omnieval.candidates import Modality
from omnieval.systems._base import SYSTEMS
from omnieval.systems._generating import (
    COMMAND_CODE,
    OMNI_CODE,
    PLAN_CODE,
    PLANNING_CODE,
    ExampleResult,
    GeneratingSystem,
    PlanningFailure,
    Task,
)
from omnieval.systems._page import PAGE_MODALITIES, ExpertPair, fail_all, write_text
from omnieval.systems._planner import _REFUSAL
from omnieval.systems._spec import SystemSpec
from omnieval.systems._task import IMAGE_ROLE
from omnieval.systems.experts import (
    ImageRequest,
    SpeechPlan,
)
from omnieval.systems.semi_orchestration._config import BackboneConfig, SemiOrchestrationConfig
from omnieval.systems.semi_orchestration._two import UNSCORED_DIR, UNSCORED_KEY, TwoModalityRunner

MIN_WORDS = 5
_QUOTED = re.compile(r"[\"“]([^\"”]{2,200})[\"”]")
_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)")


def first_sentence(text: str) -> str:
    """The text up to its first sentence end (all of it when none), whitespace collapsed.

    >>> first_sentence("It rained. Then it stopped.")
    'It rained.'
    """
    text = " ".join(text.split())
    found = _SENTENCE.match(text)
    return found.group(1) if found else text


def spoken_line(narration: str) -> str:
    """The first quoted line of the narration, else its first sentence.

    >>> spoken_line('Pip ran. "Wait for me!" he called.')
    'Wait for me!'
    >>> spoken_line("Pip ran home.")
    'Pip ran home.'
    """
    found = _QUOTED.search(narration)
    return found.group(1).strip() if found else first_sentence(narration)


@SYSTEMS.register("semi-orchestration")
class SemiOrchestrationSystem(GeneratingSystem):
    """Backbone narration + experts (see the module docstring)."""

    kind: ClassVar[str] = "semi-orchestration"
    config_model: ClassVar[type[SystemSpec]] = SemiOrchestrationConfig
    depends_on: ClassVar[tuple[str, ...]] = (
        *PLANNING_CODE,
        *PLAN_CODE,
        *COMMAND_CODE,
        *OMNI_CODE,
    )

    def __init__(self, config: SystemSpec, *, system_id: str = "", cache_dir: Path | None = None) -> None:
        super().__init__(config, system_id=system_id, cache_dir=cache_dir)
        assert isinstance(config, SemiOrchestrationConfig)
        self.spec = config
        self.experts = ExpertPair(config.image, config.speech)
        self._backend: ChatBackend | None = None
        self._identity: dict[str, Any] | None = None
        self.usage = Usage()
        """Calls, tokens and seconds of the backbone in this process (the run's ``usage.json``)."""
        self.two: TwoModalityRunner | None = (
            TwoModalityRunner(config, system_id=self.system_id) if config.produces != "text" else None
        )
        """The two-modality backbone's runner (``produces`` other than ``text``)."""

    def identity(self) -> dict[str, Any]:
        if self.two is not None:
            return self.two.identity()
        if self._identity is None:
            b = self.spec.backbone
            assert isinstance(b, BackboneConfig)
            ident = backend_identity(b.backend, model=b.model, revision=b.revision)
            self._identity = {
                "backbone": {
                    "model": ident.model,
                    "revision": ident.revision,
                    "weights_sha256": dict(ident.weights_sha256),
                    "backend": b.backend.kind,
                    "decoding": b.decoding.model_dump(mode="json"),
                    "sees_images": b.sees_images,
                },
                "experts": self.experts.identity(),
            }
        return self._identity

    def lineage(self) -> dict[str, Any]:
        if self.two is not None:
            return self.two.lineage()
        b = self.spec.backbone
        assert isinstance(b, BackboneConfig)
        return {
            "paradigm": "semi-orchestration",
            "label": f"{b.model} backbone text ({b.backend.kind}), {self.experts.label()}",
            "backbone": {"model": b.model, "backend": b.backend.kind, "produces": ["text"]},
            "experts": self.experts.lineage(),
            "usage": {**self.usage.to_json(), "model": b.model},
        }

    def close(self) -> None:
        if self.two is not None:
            self.two.close()
            return
        if self._backend is not None:
            self._backend.close()
            self._backend = None
        self.experts.close()

    def _write(self, task: Task) -> tuple[str, PlanningFailure | None, str, float]:
        b = self.spec.backbone
        assert isinstance(b, BackboneConfig)
        if self._backend is None:
            self._backend = open_backend(b.backend, model=b.model, revision=b.revision)
        brief = task.briefed(self.kind)
        picture = task.files.get(IMAGE_ROLE)
        parts: list[TextPart | ImagePart] = (
            [ImagePart(picture)] if b.sees_images and picture is not None else []
        )
        parts.append(TextPart(brief.context(self.spec.current_text_max_chars)))
        request = ChatRequest(
            messages=(Message.text_only("system", brief.writer_prompt), Message("user", tuple(parts))),
            decoding=b.decoding,
        )
        start = time.perf_counter()
        try:
            completion = self._backend.chat(request)
            text = completion.text
        except TransientBackendError as exc:
            seconds = time.perf_counter() - start
            self.usage.add_call(None, seconds)
            if "timeout" in str(exc).lower() or "timed out" in str(exc).lower():
                return "", PlanningFailure.TIMEOUT, str(exc), seconds
            raise
        except BackendError as exc:
            self.usage.add_call(None, time.perf_counter() - start)
            return "", PlanningFailure.MISSING_FIELD, f"backbone error: {exc}", time.perf_counter() - start
        seconds = time.perf_counter() - start
        self.usage.add_call(completion, seconds)
        if seconds > b.timeout_s:
            return text, PlanningFailure.TIMEOUT, f"answer took {seconds:.1f} s", seconds
        narration = " ".join(text.split())
        if _REFUSAL.search(narration) and not _QUOTED.search(narration):
            return text, PlanningFailure.REFUSAL, "the backbone declined", seconds
        if len(narration.split()) < MIN_WORDS:
            return text, PlanningFailure.MISSING_FIELD, f"narration has fewer than {MIN_WORDS} words", seconds
        return narration, None, "", seconds

    def run_example(self, task: Task, workdir: Path) -> ExampleResult:
        if self.two is not None:
            return self.two.run_example(task, workdir)
        result = ExampleResult()
        narration, failure, error, seconds = self._write(task)
        result.seconds["backbone"] = seconds
        result.raw["backbone_output"] = narration
        if failure is not None:
            result.planning_failure = failure
            result.raw["planning_error"] = error
            reason = f"planning failure: {failure.value}: {error}"
            return fail_all(result, task.modalities or PAGE_MODALITIES, reason)
        write_text(result, workdir, narration)
        brief = task.briefed(self.kind)
        prompt = f"{brief.picture.strip().rstrip('.')}. {first_sentence(narration)}"
        result.raw["image_prompt"] = prompt
        self.experts.draw(result, workdir, ImageRequest(prompt, task.files.get(IMAGE_ROLE), task.index))
        plan = SpeechPlan(
            text=spoken_line(narration),
            emotion=brief.delivery.get("emotion", "neutral"),
            gender=self.spec.voice_gender,
        )
        result.raw["speech_plan"] = plan.__dict__
        self.experts.say(result, workdir, plan)
        return result

    def _load(self, key: str) -> tuple[ExampleResult, Path] | None:
        stored = super()._load(key)
        if stored is None:
            return None
        result, folder = stored
        # A backbone server that was down or busy says nothing about the model: generate again.
        if result.raw.get("backbone", {}).get("transient"):
            return None
        # An entry whose kept backbone files are gone is incomplete, like one missing an output.
        if not all((folder / rel).is_file() for rel in _unscored(result).values()):
            return None
        return stored

    def _place(
        self,
        out_root: Path,
        task: Task,
        result: ExampleResult,
        folder: Path,
        wanted: tuple[Modality, ...],
        missing: dict[str, int],
    ) -> None:
        """The driver's candidate layout, then the backbone's files of a failed example copied to
        ``raw/<index>/unscored/`` (written aside and renamed: never half there, never stale)."""
        super()._place(out_root, task, result, folder, wanted, missing)
        target = out_root / "raw" / str(task.index) / UNSCORED_DIR
        _remove(target)
        files = _unscored(result)
        if not files:
            return
        partial = target.with_name(f".{UNSCORED_DIR}.{os.getpid()}.partial")
        _remove(partial)
        partial.mkdir()
        for rel in files.values():
            shutil.copyfile(folder / rel, partial / Path(rel).name)
        partial.rename(target)

    def _withhold(
        self, out_root: Path, task: Task, wanted: tuple[Modality, ...], missing: dict[str, int], reason: str
    ) -> None:
        """The driver's withheld example, without the kept files of an earlier run."""
        super()._withhold(out_root, task, wanted, missing, reason)
        _remove(out_root / "raw" / str(task.index) / UNSCORED_DIR)


def _unscored(result: ExampleResult) -> dict[str, str]:
    """Modality -> the kept backbone file (relative to the example folder) of a failed example."""
    named = result.raw.get(UNSCORED_KEY) or {}
    return {str(m): str(rel) for m, rel in named.items()} if isinstance(named, dict) else {}


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
