"""Requests to an omni model and the reading of its answers, as pure functions.

The wire format is OpenAI chat completions with audio output: the request names
``modalities: ["text", "audio"]`` and ``audio: {voice, format: "wav"}``; the answer carries the text
in ``message.content`` (or ``message.audio.transcript``) and the speech as base64 WAV in
``message.audio.data``. Some servers (vLLM-Omni) put text and audio in separate choices, so every
choice is read.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnieval.backends.llm import AudioPart, ImagePart, Message, TextPart, message_payload
from omnieval.systems.openai_omni._config import OpenAIOmniConfig


@dataclass(frozen=True)
class OmniAnswer:
    """What one chat completion returned.

    Attributes:
        text: The text answer (content, else the audio's transcript); '' when none.
        audio: The decoded audio bytes (WAV as requested); None when the answer had no audio.
        finish_reason: The first choice's finish reason.
    """

    text: str
    audio: bytes | None
    finish_reason: str


def _system(config: OpenAIOmniConfig) -> Message:
    return Message.text_only("system", config.prompts.system)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def narration_messages(inputs: Any, config: OpenAIOmniConfig) -> tuple[Message, ...]:
    """storybench: ask for the next page's narration (text only).

    ``inputs`` are storybench's visible inputs: ``current_text``, ``current_image``, ``metadata``
    and ``condition`` (the next page's condition object).
    """
    image: Path | None = inputs.current_image if config.sends_images else None
    text = config.prompts.narration.format(
        metadata=_json(inputs.metadata.as_dict()),
        current_text=inputs.current_text,
        condition=_json(inputs.condition.as_dict()),
        image_note="The current page's picture is attached.\n\n" if image is not None else "",
    )
    parts: tuple[ImagePart | TextPart, ...] = (
        (ImagePart(image), TextPart(text)) if image else (TextPart(text),)
    )
    return (_system(config), Message("user", parts))


def speech_messages(inputs: Any, narration: str, config: OpenAIOmniConfig) -> tuple[Message, ...]:
    """storybench: ask for the line a character speaks on the next page (text and audio)."""
    text = config.prompts.speech.format(
        metadata=_json(inputs.metadata.as_dict()),
        condition=_json(inputs.condition.as_dict()),
        narration=narration or "(not available)",
    )
    return (_system(config), Message.text_only("user", text))


def delivery_messages(inputs: Any, config: OpenAIOmniConfig) -> tuple[Message, ...]:
    """acbench: read the script with the delivery the condition's context implies (text and audio).

    ``inputs`` are acbench's visible inputs for one condition: the spoken instruction travels as an
    ``input_audio`` part, the picture as an ``image_url`` part; their text stand-ins (instruction
    text, image keywords) and, under ``oracle``, the target statement as text parts.
    """
    parts: list[TextPart | ImagePart | AudioPart] = []
    context = []
    if inputs.instruction_audio is not None:
        parts += [TextPart("Instruction (spoken):"), AudioPart(inputs.instruction_audio)]
    elif inputs.instruction_text is not None:
        parts.append(TextPart(f"Instruction: {inputs.instruction_text}"))
    if inputs.image is not None and config.sends_images:
        parts += [TextPart("Picture:"), ImagePart(inputs.image)]
        context.append("picture")
    elif inputs.image is not None:
        context.append("picture (not sent: sends_images is off)")
    elif inputs.image_keywords is not None:
        parts.append(TextPart(f"The picture shows: {', '.join(inputs.image_keywords)}"))
        context.append("picture description")
    if inputs.target_statement is not None:
        parts.append(TextPart(f"Target: {inputs.target_statement}"))
    note = f" (with the {' and '.join(context)})" if context else ""
    prompt = config.prompts.delivery.format(script=inputs.script, context=note)
    return (_system(config), Message("user", _joined([*parts, TextPart(prompt)])))


def _joined(
    parts: Sequence[TextPart | ImagePart | AudioPart],
) -> tuple[TextPart | ImagePart | AudioPart, ...]:
    """Adjacent text parts as one, line by line (a text-only message is sent as one string)."""
    out: list[TextPart | ImagePart | AudioPart] = []
    for part in parts:
        if isinstance(part, TextPart) and out and isinstance(out[-1], TextPart):
            out[-1] = TextPart(f"{out[-1].text}\n{part.text}")
        else:
            out.append(part)
    return tuple(out)


def request_body(messages: Sequence[Message], config: OpenAIOmniConfig, *, audio: bool) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions``; ``audio`` asks for a spoken answer too."""
    body: dict[str, Any] = {
        "model": config.model,
        "messages": [message_payload(m) for m in messages],
        "modalities": ["text", "audio"] if audio else ["text"],
        "max_tokens": config.max_tokens,
        "temperature": config.temperature,
        "stream": False,
    }
    if audio:
        body["audio"] = {"voice": config.voice, "format": "wav"}
    if config.seed is not None:
        body["seed"] = config.seed
    return body


def parse_answer(data: Mapping[str, Any]) -> OmniAnswer:
    """Read text and audio from a chat completion.

    Raises:
        ValueError: the answer has no choices, or its audio is not valid base64.

    >>> parse_answer({"choices": [{"message": {"content": "Hi", "audio": {"data": "UklGRg=="}}}]})
    OmniAnswer(text='Hi', audio=b'RIFF', finish_reason='')
    """
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ValueError("the answer has no choices")
    text = ""
    audio: bytes | None = None
    for choice in choices:
        message = choice.get("message") if isinstance(choice, Mapping) else None
        if not isinstance(message, Mapping):
            continue
        found = message.get("audio")
        spoken: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        content = message.get("content")
        if not text and isinstance(content, str) and content.strip():
            text = content.strip()
        if not text and isinstance(spoken.get("transcript"), str):
            text = spoken["transcript"].strip()
        if audio is None and isinstance(spoken.get("data"), str) and spoken["data"]:
            try:
                audio = base64.b64decode(spoken["data"], validate=True)
            except (binascii.Error, ValueError):
                raise ValueError("the answer's audio.data is not valid base64") from None
    first = choices[0] if isinstance(choices[0], Mapping) else {}
    return OmniAnswer(text, audio, str(first.get("finish_reason") or ""))


__all__ = [
    "OmniAnswer",
    "delivery_messages",
    "narration_messages",
    "parse_answer",
    "request_body",
    "speech_messages",
]
