"""An omni model behind an OpenAI-compatible chat API that answers with text and audio: its suite
entry, the requests sent to it and the reading of its answers, and the client that sends them.

Shared by the ``openai-omni`` kind and the ``semi-orchestration`` kind's ``openai-omni`` backbone
(no system kind imports another). What the model is asked is the benchmark's: the requests
(:class:`~omnieval.systems.Ask`) come with the task's brief; a suite entry may replace a request's
template by its name (``prompts.<name>``) and gives the system message.

The wire format is OpenAI chat completions with audio output: the request names
``modalities: ["text", "audio"]`` and ``audio: {voice, format: "wav"}``; the answer carries the text
in ``message.content`` (or ``message.audio.transcript``) and the speech as base64 WAV in
``message.audio.data``. Some servers (vLLM-Omni) put text and audio in separate choices, so every
choice is read.
"""

from __future__ import annotations

import base64
import binascii
import os
import string
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from omnieval.backends.llm import AudioPart, ImagePart, Message, TextPart, Usage, message_payload, redact_url
from omnieval.errors import ConfigError
from omnieval.security import redact, register_secret_env
from omnieval.systems._spec import SystemSpec
from omnieval.systems._task import AUDIO_ROLE, IMAGE_ROLE, Ask

#: Qwen2.5-Omni answers with speech only under this system prompt (its model card says so).
QWEN_OMNI_SYSTEM = (
    "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
    "auditory and visual inputs, as well as generating text and speech."
)


def _template_fields(template: str) -> set[str]:
    """The placeholders of a ``str.format`` template.

    Raises:
        ValueError: the template is not a valid format string.
    """
    return {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}


class OmniPrompts(BaseModel):
    """The system message and, by request name, templates replacing the benchmark's own.

    Every key but ``system`` names a request the benchmark makes (docs/generation.md lists them)
    and holds a template for it; its ``{name}`` placeholders must be among those the request fills,
    which is checked on the first example of that benchmark. Unset requests use the benchmark's
    wording.
    """

    model_config = ConfigDict(frozen=True, extra="allow")
    __pydantic_extra__: dict[str, str] = Field(init=False)

    system: str = QWEN_OMNI_SYSTEM
    """System message (Qwen2.5-Omni needs its own to speak; other omni models may need another)."""

    @model_validator(mode="after")
    def _templates(self) -> OmniPrompts:
        for name, template in self.templates().items():
            try:
                _template_fields(template)
            except ValueError as exc:
                raise ValueError(f"prompts.{name}: not a valid template: {exc}") from None
        return self

    def templates(self) -> dict[str, str]:
        """Request name -> the template that replaces the benchmark's."""
        return dict(self.__pydantic_extra__ or {})


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
    """Attach the task's input pictures as ``image_url`` parts (the benchmark words its requests
    for a model that sees them, or one that does not)."""
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


@dataclass(frozen=True)
class CallOutcome:
    """One request: the answer, or why there is none (``transient``: worth retrying on a rerun)."""

    answer: OmniAnswer | None
    error: str = ""
    transient: bool = False
    seconds: float = 0.0


def ask_template(ask: Ask, prompts: OmniPrompts) -> str:
    """The template of ``ask``: the suite's replacement where it gives one, else the benchmark's.

    Raises:
        ConfigError: the replacement uses a placeholder the request does not fill.
    """
    template = prompts.templates().get(ask.name, ask.template)
    unknown = _template_fields(template) - ask.placeholders()
    if unknown:
        raise ConfigError(
            f"prompts.{ask.name}: unknown placeholders {sorted(unknown)}; allowed: {sorted(ask.placeholders())}"
        )
    return template


def check_prompt_names(asks: Sequence[Ask], prompts: OmniPrompts, benchmark: str) -> None:
    """Every template the suite gives replaces a request of the benchmark.

    Raises:
        ConfigError: a ``prompts`` key names no request of ``benchmark`` (a typo would be ignored).
    """
    names = {ask.name for ask in asks}
    unknown = sorted(set(prompts.templates()) - names)
    if unknown:
        raise ConfigError(
            f"prompts.{unknown[0]}: {benchmark} makes no request of that name; it makes "
            f"{', '.join(sorted(names)) or 'none'}"
        )


def ask_messages(
    ask: Ask, files: Mapping[str, Path], answers: Mapping[str, str], prompts: OmniPrompts
) -> tuple[Message, ...]:
    """The system message and the user message of one request.

    ``files`` are the task's input media by role; ``answers`` the text answers of the earlier
    requests by name ('' or absent: the request's :attr:`~omnieval.systems.Ask.unanswered`).
    """
    values = dict(ask.values)
    for placeholder, source in ask.earlier.items():
        values[placeholder] = answers.get(source) or ask.unanswered
    parts: list[TextPart | ImagePart | AudioPart] = []
    for part in ask.parts:
        if not part.media:
            parts.append(TextPart(part.text))
            continue
        path = files.get(part.media)
        if path is None:
            raise ValueError(f"request {ask.name}: the task has no {part.media} file")
        if part.media == IMAGE_ROLE:
            parts.append(ImagePart(path))
        elif part.media == AUDIO_ROLE:
            parts.append(AudioPart(path))
        else:
            raise ValueError(f"request {ask.name}: no message part for media role {part.media!r}")
    parts.append(TextPart(ask_template(ask, prompts).format(**values)))
    return (Message.text_only("system", prompts.system), Message("user", _joined(parts)))


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


#: HTTP statuses worth another try (the server is busy or restarting).
TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class OmniClient:
    """Sends chat completions to the configured server, retrying transient failures.

    Opened on the first call; ``usage`` counts the requests, the server's reported tokens and
    their seconds.
    """

    retries: int = 2
    """Further attempts at once after a transient failure."""
    retry_wait_s: float = 2.0
    """Seconds before the n-th retry, times n."""

    def __init__(self, config: OpenAIOmniConfig, system_id: str = "") -> None:
        self.spec = config
        self.system_id = system_id
        self._client: Any = None
        self._base_url = ""
        self.usage = Usage()
        """Requests, tokens (the server's ``usage``) and seconds of this process's calls."""
        # The key's variable may have any name: log redaction must know it.
        register_secret_env(config.api_key_env)

    def lineage(self) -> dict[str, Any]:
        """Model, revision, voice, the server (redacted) and what was spent."""
        server = redact_url(self.spec.base_url) if self.spec.base_url else f"${self.spec.base_url_env}"
        return {
            "model": self.spec.model,
            "revision": self.spec.revision,
            "voice": self.spec.voice,
            "server": server,
            "usage": {**self.usage.to_json(), "model": self.spec.model},
        }

    def open(self) -> None:
        """Connect (the address and key variables are read now).

        Raises:
            ConfigError: no address, or the key's variable is not set.
        """
        import httpx

        base_url = self.spec.base_url or os.environ.get(self.spec.base_url_env or "", "")
        if not base_url:
            raise ConfigError(f"system {self.system_id!r}: no server address: set ${self.spec.base_url_env}")
        if self.spec.api_key_env and not os.environ.get(self.spec.api_key_env):
            raise ConfigError(
                f"system {self.system_id!r}: the API key variable ${self.spec.api_key_env} is not set"
            )
        self._base_url = base_url.rstrip("/")
        self._client = httpx.Client(
            timeout=httpx.Timeout(self.spec.timeout_s, connect=min(30.0, self.spec.timeout_s))
        )

    def close(self) -> None:
        """Drop the connection (a later call opens another)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.spec.api_key_env:
            headers["Authorization"] = f"Bearer {os.environ.get(self.spec.api_key_env, '')}"
        return headers

    def call(self, messages: Sequence[Message], *, audio: bool) -> CallOutcome:
        """One chat completion, retried on transient failures; never raises for the server's faults."""
        if self._client is None:
            self.open()
        started = time.perf_counter()
        body = request_body(messages, self.spec, audio=audio)
        outcome = CallOutcome(None, "request failed: not sent")
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.retry_wait_s * attempt)
            outcome = self._post(body)
            if not outcome.transient:
                break
        return CallOutcome(outcome.answer, outcome.error, outcome.transient, time.perf_counter() - started)

    def _post(self, body: dict[str, Any]) -> CallOutcome:
        """One request; its time and the server's reported tokens go to :attr:`usage`."""
        started = time.perf_counter()
        outcome, tokens = self._post_once(body)
        self.usage.add_counts(*tokens, time.perf_counter() - started)
        return outcome

    def _post_once(self, body: dict[str, Any]) -> tuple[CallOutcome, tuple[int | None, int | None]]:
        import httpx

        unknown: tuple[int | None, int | None] = (None, None)
        where = redact_url(self._base_url)
        try:
            response = self._client.post(
                f"{self._base_url}/chat/completions", json=body, headers=self._headers()
            )
        except httpx.TimeoutException:
            return CallOutcome(
                None, f"request failed: timeout after {self.spec.timeout_s:g}s", transient=True
            ), unknown
        except httpx.TransportError as exc:
            return CallOutcome(
                None, f"request failed: {type(exc).__name__} talking to {where}", transient=True
            ), unknown
        if response.status_code != 200:
            # A proxy may echo request headers back: the body is masked before it is kept anywhere.
            detail = redact(response.text[:300].replace("\n", " "))
            return CallOutcome(
                None,
                f"request failed: HTTP {response.status_code}: {detail}",
                transient=response.status_code in TRANSIENT_STATUS,
            ), unknown
        try:
            data = response.json()
            answer = parse_answer(data)
        except ValueError as exc:
            return CallOutcome(None, f"request failed: malformed answer: {exc}"), unknown
        return CallOutcome(answer), _reported_tokens(data)


def _reported_tokens(data: Any) -> tuple[int | None, int | None]:
    """Prompt and completion tokens from a response's ``usage`` (None where it has none)."""
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return None, None

    def count(key: str) -> int | None:
        value = usage.get(key)
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

    return count("prompt_tokens"), count("completion_tokens")


def outcome_record(outcome: CallOutcome) -> dict[str, Any]:
    """What an example's raw record keeps of one request: the answer text, why it ended, audio size
    (bytes), the error and the seconds it took."""
    answer = outcome.answer
    return {
        "text": answer.text if answer else None,
        "finish_reason": answer.finish_reason if answer else None,
        "audio_bytes": len(answer.audio) if answer and answer.audio is not None else 0,
        "error": outcome.error or None,
        "seconds": round(outcome.seconds, 3),
    }


__all__ = [
    "QWEN_OMNI_SYSTEM",
    "TRANSIENT_STATUS",
    "CallOutcome",
    "OmniAnswer",
    "OmniClient",
    "OmniPrompts",
    "OpenAIOmniConfig",
    "ask_messages",
    "ask_template",
    "check_prompt_names",
    "outcome_record",
    "parse_answer",
    "request_body",
]
