"""What the planning kinds share to turn a plan into an example's files: the pair of modality
experts, the text writer and the rule that a failed plan removes every output.

Used by ``orchestration`` and ``semi-orchestration`` (which render with experts what their model
does not write); no system kind imports another, so these live here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from omnieval.systems._generating import EXAMPLE_FILES, ExampleResult, timed
from omnieval.systems.experts import (
    ExpertConfig,
    ImageExpert,
    ImageRequest,
    SpeechExpert,
    SpeechPlan,
    image_expert,
    release_accelerator_memory,
    speech_expert,
)

#: What the planning kinds write for an example: a planning failure marks each of these missing
#: unless the task names the modalities its benchmark asks for.
PAGE_MODALITIES: tuple[str, ...] = ("text", "image", "speech")


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
    """Write the example's text output (stripped, one final newline) and time it as ``text``."""
    name = EXAMPLE_FILES_NAME["text"]
    with timed(result.seconds, "text"):
        (workdir / name).write_text(text.strip() + "\n", encoding="utf-8")
        result.written["text"] = name


def fail_all(result: ExampleResult, modalities: tuple[str, ...], reason: str) -> ExampleResult:
    """A failed plan removes every output of the example (Omni-StoryBench's rule)."""
    for modality in modalities:
        result.missing[modality] = reason
    return result


__all__ = ["EXAMPLE_FILES_NAME", "PAGE_MODALITIES", "ExpertPair", "fail_all", "write_text"]
