"""The ``openai-omni`` system kind: an omni model behind an OpenAI-compatible API that answers with
text and audio (e.g. Qwen2.5-Omni served by vLLM-Omni). docs/generation.md describes it."""

from omnieval.systems._omni_client import (
    CallOutcome,
    OmniAnswer,
    OmniClient,
    OmniPrompts,
    OpenAIOmniConfig,
    parse_answer,
    request_body,
)
from omnieval.systems.openai_omni._system import OpenAIOmniSystem, unavailable

#: Why an image output is missing: the model writes text and speech only.
IMAGE_UNAVAILABLE = unavailable("image")

__all__ = [
    "IMAGE_UNAVAILABLE",
    "CallOutcome",
    "OmniAnswer",
    "OmniClient",
    "OmniPrompts",
    "OpenAIOmniConfig",
    "OpenAIOmniSystem",
    "parse_answer",
    "request_body",
    "unavailable",
]
