"""The ``openai-omni`` system kind: an omni model behind an OpenAI-compatible API that answers with
text and audio (e.g. Qwen2.5-Omni served by vLLM-Omni). docs/generation.md describes it."""

from omnieval.systems.openai_omni._config import OmniPrompts, OpenAIOmniConfig
from omnieval.systems.openai_omni._requests import OmniAnswer, parse_answer, request_body
from omnieval.systems.openai_omni._system import IMAGE_UNAVAILABLE, OpenAIOmniSystem

__all__ = [
    "IMAGE_UNAVAILABLE",
    "OmniAnswer",
    "OmniPrompts",
    "OpenAIOmniConfig",
    "OpenAIOmniSystem",
    "parse_answer",
    "request_body",
]
