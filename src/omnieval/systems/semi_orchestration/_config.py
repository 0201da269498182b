"""The ``semi-orchestration`` kind's suite entry: its backbone (a text-only chat model or a
two-modality backbone) and the experts of the modalities the backbone does not write.

Kept apart from :mod:`._system` so that :mod:`._two` (the two-modality runner) can name the config
without importing the system that imports it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from omnieval.backends.llm import BackendConfig, Decoding
from omnieval.systems._command_config import CommandConfig
from omnieval.systems._omni_client import OpenAIOmniConfig
from omnieval.systems._spec import SystemSpec
from omnieval.systems.experts import DrawnConfig, EspeakConfig, ImageExpertConfig, SpeechExpertConfig
from omnieval.systems.semi_orchestration._backbones import ScriptedBackboneConfig


class BackboneConfig(BaseModel):
    """The model that writes the narration (any :mod:`omnieval.backends.llm` backend)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    revision: str = ""
    backend: BackendConfig
    decoding: Decoding = Decoding(temperature=0.0, top_p=1.0, repetition_penalty=1.0, seed=0, max_tokens=160)
    """Sampling settings, sent exactly as given (a field left out is the backend's default); without a
    ``decoding`` block, greedy with seed 0 and 160 new tokens."""
    sees_images: bool = False
    """Attach the current picture (backends that take images)."""
    timeout_s: float = Field(default=300.0, gt=0)


def _backbone_kind(value: Any) -> str:
    """A backbone block's tag: its ``kind`` (two-modality backbones), else ``llm`` (text-only)."""
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return str(kind) if kind else "llm"


#: ``backbone:`` of a suite entry: a text-only chat model (no ``kind``), or a two-modality backbone.
BackboneChoice = Annotated[
    Annotated[BackboneConfig, Tag("llm")]
    | Annotated[CommandConfig, Tag("command")]
    | Annotated[OpenAIOmniConfig, Tag("openai-omni")]
    | Annotated[ScriptedBackboneConfig, Tag("scripted")],
    Discriminator(_backbone_kind),
]


class SemiOrchestrationConfig(SystemSpec):
    """``semi-orchestration``: a backbone writes some modalities, experts the rest.

    Example (suite YAML), a two-modality backbone with an image expert for the third::

        semi-ts:
          kind: semi-orchestration
          produces: text+speech
          backbone:
            kind: command
            argv: ["/opt/envs/emova/bin/python", "backbone.py", "{input_dir}", "{output_dir}"]
            timeout_s: 600
          image: {name: drawn}
    """

    kind: Literal["semi-orchestration"] = "semi-orchestration"
    produces: Literal["text", "text+speech", "text+image"] = Field(
        default="text", exclude_if=lambda value: value == "text"
    )
    """What the backbone writes itself: ``text`` (a chat model's narration; experts render image
    and speech from it by fixed rules), or two modalities plus the intermediate fields from which
    the third modality's expert (``image`` for ``text+speech``, ``speech`` for ``text+image``)
    renders it. Left out of dumps while ``text``, so the configs of suites that never set it stay
    byte-identical."""
    backbone: BackboneChoice
    """``produces: text``: a chat model (``model``, ``backend``...). Two modalities: a ``kind``:
    ``command`` (any program, the ``command`` protocol plus ``intermediate.json``), ``openai-omni``
    (``text+speech`` only) or ``scripted`` (tests)."""
    image: ImageExpertConfig = DrawnConfig()
    """The image expert (unused when the backbone makes the image)."""
    speech: SpeechExpertConfig = EspeakConfig()
    """The speech expert (unused when the backbone makes the speech)."""
    voice_gender: Literal["female", "male"] = "female"
    current_text_max_chars: int = Field(default=600, ge=40)

    @model_validator(mode="after")
    def _backbone_fits(self) -> SemiOrchestrationConfig:
        text_only = isinstance(self.backbone, BackboneConfig)
        if self.produces == "text" and not text_only:
            raise ValueError(
                f"backbone kind {_backbone_kind(self.backbone)!r} makes two modalities: set produces to "
                "text+speech or text+image"
            )
        if self.produces != "text" and text_only:
            raise ValueError(
                f"produces {self.produces}: the backbone needs a kind (command, openai-omni, scripted); "
                "a chat model backbone writes text only (produces: text)"
            )
        if self.produces == "text+image" and isinstance(self.backbone, OpenAIOmniConfig):
            raise ValueError("an openai-omni backbone makes text and speech: produces text+speech")
        own = {"text+speech": "speech", "text+image": "image"}.get(self.produces)
        if own is not None and own in self.model_fields_set:
            raise ValueError(f"the backbone makes {own} itself ({self.produces}): remove {own}:")
        return self


__all__ = ["BackboneChoice", "BackboneConfig", "SemiOrchestrationConfig"]
