"""What an expert is: a model (or a renderer) that turns one planned field into one output file.

Orchestration-style kinds (``orchestration``, ``semi-orchestration``) hand an image expert an
:class:`ImageRequest` and a speech expert a :class:`SpeechPlan`. Experts are chosen by name from
:data:`IMAGE_EXPERTS` and :data:`SPEECH_EXPERTS`; each name has a typed config (frozen, no extra
keys) whose ``name`` field selects it in a suite::

    image: {name: drawn}
    speech: {name: espeak}

An expert is opened once per ``generate`` call (models loaded on first use), called once per
example, and closed after the last example; closing releases accelerator memory
(:func:`release_accelerator_memory`) so the next expert of the same process has the GPU to itself.
"""

from __future__ import annotations

import gc
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from omnieval.errors import OmnievalError
from omnieval.registry import Registry


class ExpertError(OmnievalError):
    """An expert could not produce its output for one example (the modality is then missing)."""


class ExpertConfig(BaseModel):
    """Base of every expert's config: ``name`` picks the expert."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str


@dataclass(frozen=True)
class ImageRequest:
    """What an image expert draws.

    Attributes:
        prompt: The planned image prompt (a description of the next page's picture).
        reference: The current page's picture, for image+prompt experts (None: text only).
        seed: A seed derived from the example, so a rerun draws the same picture.
    """

    prompt: str
    reference: Path | None = None
    seed: int = 0


@dataclass(frozen=True)
class SpeechPlan:
    """What a speech expert says and how (Omni-StoryBench's target speech vocabularies)."""

    text: str
    emotion: str = "neutral"
    gender: str = "female"
    speed: str = "normal"
    pitch: str = "normal"


C = TypeVar("C", bound=ExpertConfig)


class Expert(ABC, Generic[C]):
    """Shared shape of image and speech experts.

    Class attributes:
        runs_on: ``cpu`` or ``gpu`` (what the report and lineage say about where it is meant to run).
        is_generative_model: False for renderers that are not generative models (``drawn``, ``espeak``).
    """

    name: ClassVar[str]
    config_model: ClassVar[type[ExpertConfig]]
    runs_on: ClassVar[str] = "cpu"
    is_generative_model: ClassVar[bool] = True

    def __init__(self, config: C) -> None:
        self.config = config

    def open(self) -> None:
        """Load the model (called once, before the first example that needs it)."""

    def close(self) -> None:
        """Drop the model and release accelerator memory."""
        release_accelerator_memory()

    def identity(self) -> dict[str, Any]:
        """What identifies the expert's model without loading it (part of each example's cache key)."""
        return {"name": self.name, "config": self.config.model_dump(mode="json")}

    @abstractmethod
    def describe(self) -> str:
        """One honest sentence for lineage and the report (what the expert is, what it cannot do)."""

    def lineage(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "runs_on": self.runs_on,
            "generative_model": self.is_generative_model,
            "what": self.describe(),
            **self.identity(),
        }


class ImageExpert(Expert[C]):
    """Turns an :class:`ImageRequest` into a PNG."""

    @abstractmethod
    def render(self, request: ImageRequest, out: Path) -> dict[str, Any]:
        """Write ``out`` (PNG); return facts worth keeping in the example's raw record."""


class SpeechExpert(Expert[C]):
    """Turns a :class:`SpeechPlan` into a WAV."""

    @abstractmethod
    def speak(self, plan: SpeechPlan, out: Path) -> dict[str, Any]:
        """Write ``out`` (WAV); return facts (e.g. which requested labels were not rendered)."""


IMAGE_EXPERTS: Registry[type[ImageExpert[Any]]] = Registry("image expert")
SPEECH_EXPERTS: Registry[type[SpeechExpert[Any]]] = Registry("speech expert")

E = TypeVar("E", bound=Expert[Any])


def expert_code() -> tuple[str, ...]:
    """The module of every registered expert, as a path relative to the ``omnieval`` package.

    The generating kinds that use experts key their examples by this code (see
    :meth:`~omnieval.systems.GeneratingSystem.code_digest`). An expert registered from outside
    ``systems/experts`` (storybench's ``drawn`` paints with that benchmark's sample drawing code)
    thereby brings its own file into the key without the systems package naming it.
    """
    root = Path(__file__).resolve().parents[2]
    paths: set[str] = set()
    for registry in (IMAGE_EXPERTS, SPEECH_EXPERTS):
        for name in registry.names():
            source = getattr(sys.modules.get(registry.get(name).__module__), "__file__", None)
            if source is not None and Path(source).resolve().is_relative_to(root):
                paths.add(Path(source).resolve().relative_to(root).as_posix())
    return tuple(sorted(paths))


def release_accelerator_memory() -> None:
    """Collect garbage and, when torch is loaded and CUDA present, return cached GPU memory."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def folder_weights(folder: str | Path) -> dict[str, str]:
    """SHA-256 of every weight file under a local checkpoint folder (memoized beside big files)."""
    from omnieval.backends.llm import local_identity

    return dict(local_identity("", "", folder).weights_sha256)


def build_expert(registry: Registry[type[E]], config: ExpertConfig) -> E:
    """Instantiate the expert registered under ``config.name`` with its config."""
    cls = registry.get(config.name)
    return cls(config)


__all__ = [
    "IMAGE_EXPERTS",
    "SPEECH_EXPERTS",
    "Expert",
    "ExpertConfig",
    "ExpertError",
    "ImageExpert",
    "ImageRequest",
    "SpeechExpert",
    "SpeechPlan",
    "build_expert",
    "expert_code",
    "folder_weights",
    "release_accelerator_memory",
]
