"""Modality experts of orchestration-style systems: image experts and speech experts by name.

Image experts: ``drawn`` (CPU, the sample's painters, not a generative model; its code is
storybench's, registered when that benchmark is imported) and ``diffusers``
(text-to-image or image+prompt pipelines from a local folder, GPU). Speech experts: ``espeak``
(CPU, gender/speed/pitch), ``piper`` (CPU neural TTS, one voice: speed and pitch) and ``parler`` (description-conditioned TTS through transformers, GPU).
Heavy libraries (torch, diffusers, transformers) are imported when an expert opens.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from omnieval.systems.experts._base import (
    IMAGE_EXPERTS,
    SPEECH_EXPERTS,
    Expert,
    ExpertConfig,
    ExpertError,
    ImageExpert,
    ImageRequest,
    SpeechExpert,
    SpeechPlan,
    build_expert,
    expert_code,
    release_accelerator_memory,
)
from omnieval.systems.experts._diffusers import DiffusersConfig, DiffusersImageExpert
from omnieval.systems.experts._drawn import DrawnConfig
from omnieval.systems.experts._espeak import EspeakConfig, EspeakSpeechExpert
from omnieval.systems.experts._parler import ParlerConfig, ParlerSpeechExpert
from omnieval.systems.experts._piper import PiperConfig, PiperSpeechExpert

#: An image expert's config in a suite (``name`` selects the expert).
ImageExpertConfig = Annotated[DrawnConfig | DiffusersConfig, Field(discriminator="name")]
#: A speech expert's config in a suite (``name`` selects the expert).
SpeechExpertConfig = Annotated[EspeakConfig | PiperConfig | ParlerConfig, Field(discriminator="name")]


def image_expert(config: DrawnConfig | DiffusersConfig) -> ImageExpert[ExpertConfig]:
    """The image expert a config names."""
    return build_expert(IMAGE_EXPERTS, config)


def speech_expert(config: EspeakConfig | PiperConfig | ParlerConfig) -> SpeechExpert[ExpertConfig]:
    """The speech expert a config names."""
    return build_expert(SPEECH_EXPERTS, config)


__all__ = [
    "IMAGE_EXPERTS",
    "SPEECH_EXPERTS",
    "DiffusersConfig",
    "DiffusersImageExpert",
    "DrawnConfig",
    "EspeakConfig",
    "EspeakSpeechExpert",
    "Expert",
    "ExpertConfig",
    "ExpertError",
    "ImageExpert",
    "ImageExpertConfig",
    "ImageRequest",
    "ParlerConfig",
    "ParlerSpeechExpert",
    "PiperConfig",
    "PiperSpeechExpert",
    "SpeechExpert",
    "SpeechExpertConfig",
    "SpeechPlan",
    "expert_code",
    "image_expert",
    "release_accelerator_memory",
    "speech_expert",
]
