"""The typed suite entry of an ``openai-omni`` system."""

from __future__ import annotations

import string
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from omnieval.systems._spec import SystemSpec

#: Qwen2.5-Omni answers with speech only under this system prompt (its model card says so).
QWEN_OMNI_SYSTEM = (
    "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
    "auditory and visual inputs, as well as generating text and speech."
)

NARRATION_PROMPT = """You are continuing an illustrated, narrated story book.

Book: {metadata}

Current page narration:
{current_text}

{image_note}What the next page must contain: {condition}

Write the narration of the next page only: a few sentences in the book's tense, perspective and style,
following the description above. Answer with the narration text and nothing else."""

SPEECH_PROMPT = """You are voicing a character in an illustrated story book.

Book: {metadata}

What the next page contains: {condition}

Next page narration:
{narration}

Say aloud the one short line a character of the next page speaks, in that character's voice and with
the emotion the page calls for. Answer with that spoken line only, no narration and no quotes."""

DELIVERY_PROMPT = """Read the script below aloud. The instruction{context} tells you how it should sound:
choose the pace, the voice, whispering or not, the emotion, the accent and the reading of any word
with two pronunciations accordingly. Say the script exactly, word for word, and nothing else.

Script: {script}"""

#: Placeholders each prompt may use (checked when the suite loads).
PROMPT_FIELDS: dict[str, frozenset[str]] = {
    "narration": frozenset({"metadata", "current_text", "condition", "image_note"}),
    "speech": frozenset({"metadata", "condition", "narration"}),
    "delivery": frozenset({"script", "context"}),
}


class OmniPrompts(BaseModel):
    """The prompts, written for this platform; ``{name}`` placeholders are filled per example."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    system: str = QWEN_OMNI_SYSTEM
    """System message (Qwen2.5-Omni needs its own to speak; other omni models may need another)."""
    narration: str = NARRATION_PROMPT
    """storybench, first call (text only): the next page's narration. Placeholders: ``{metadata}``,
    ``{current_text}``, ``{condition}``, ``{image_note}``."""
    speech: str = SPEECH_PROMPT
    """storybench, second call (text and audio): the spoken line. Placeholders: ``{metadata}``,
    ``{condition}``, ``{narration}``."""
    delivery: str = DELIVERY_PROMPT
    """acbench (text and audio): read the script with the delivery the context implies; the
    instruction (audio or text), the picture (image or keywords) and, under ``oracle``, the target
    statement follow as their own message parts. Placeholders: ``{script}``, ``{context}``."""

    @model_validator(mode="after")
    def _known_placeholders(self) -> OmniPrompts:
        for name, allowed in PROMPT_FIELDS.items():
            template = getattr(self, name)
            try:
                used = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
            except ValueError as exc:
                raise ValueError(f"prompts.{name}: not a valid template: {exc}") from None
            unknown = used - allowed
            if unknown:
                raise ValueError(
                    f"prompts.{name}: unknown placeholders {sorted(unknown)}; allowed: {sorted(allowed)}"
                )
        return self


class OpenAIOmniConfig(SystemSpec):
    """An omni model behind an OpenAI-compatible chat API that answers with text and audio
    (e.g. Qwen2.5-Omni served by vLLM-Omni).

    Example (suite YAML)::

        systems:
          qwen-omni:
            kind: openai-omni
            model: Qwen/Qwen2.5-Omni-7B
            base_url_env: OMNI_URL          # e.g. http://gpu-7:8091/v1
            api_key_env: OMNI_KEY           # optional
            voice: Chelsie
    """

    kind: Literal["openai-omni"] = "openai-omni"
    model: str = Field(min_length=1)
    """Model name the server expects in requests."""
    revision: str = ""
    """Checkpoint revision served (recorded in lineage; the server is not asked)."""
    base_url: str | None = None
    """Server root, e.g. ``http://gpu-7:8091/v1``; or give ``base_url_env``."""
    base_url_env: str | None = None
    """Environment variable holding the server root (read when the system starts)."""
    api_key_env: str | None = None
    """Environment variable holding the API key (sent as a bearer token, never recorded)."""
    voice: str = "Chelsie"
    """Speaker of the audio answer (Qwen2.5-Omni: ``Chelsie`` or ``Ethan``)."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Seconds one request may take (connect and read)."""
    max_tokens: int = Field(default=512, ge=1)
    """Most tokens of the text answer."""
    temperature: float = Field(default=0.0, ge=0)
    seed: int | None = 0
    """Sampling seed sent with each request (None = none sent)."""
    sends_images: bool = True
    """Attach pictures (storybench's current page, acbench's context image) as ``image_url`` parts."""
    prompts: OmniPrompts = OmniPrompts()

    @field_validator("base_url")
    @classmethod
    def _no_credentials(cls, value: str | None) -> str | None:
        if value is None:
            return value
        from urllib.parse import urlsplit

        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url: expected http(s)://host[:port]/v1, got {value!r}")
        if parts.username is not None or parts.password is not None:
            raise ValueError("base_url: credentials in the URL would be recorded; give api_key_env instead")
        return value

    @model_validator(mode="after")
    def _one_address(self) -> OpenAIOmniConfig:
        if (self.base_url is None) == (self.base_url_env is None):
            raise ValueError("give exactly one of base_url and base_url_env")
        return self


__all__ = ["PROMPT_FIELDS", "QWEN_OMNI_SYSTEM", "OmniPrompts", "OpenAIOmniConfig"]
