"""The one chat interface every LLM backend speaks: messages with text, image and audio parts in,
text (optionally constrained by a JSON schema) out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class TextPart:
    """A piece of text in a message."""

    text: str


@dataclass(frozen=True)
class ImagePart:
    """An image file attached at this position of the message."""

    path: Path


@dataclass(frozen=True)
class AudioPart:
    """An audio file (WAV) attached at this position of the message."""

    path: Path


@dataclass(frozen=True)
class VideoPart:
    """A video file (MP4, with its soundtrack) attached at this position of the message."""

    path: Path


Part = TextPart | ImagePart | AudioPart | VideoPart


@dataclass(frozen=True)
class Message:
    """One chat turn: a role and its parts, in the order the model should see them."""

    role: Role
    parts: tuple[Part, ...]

    @classmethod
    def text_only(cls, role: Role, text: str) -> Message:
        return cls(role, (TextPart(text),))

    @property
    def text(self) -> str:
        """The message's text parts joined (media parts skipped)."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def has_media(self) -> bool:
        return any(not isinstance(p, TextPart) for p in self.parts)


class Decoding(BaseModel):
    """Sampling settings of one request, sent exactly as configured.

    A field left unset (None; ``stop_token_ids`` empty) is not sent at all: the server or library
    applies its own default (e.g. the Gemini API's output cap, llama.cpp's temperature 0.2, a vLLM
    server's model-generation-config defaults). A judge that must decode greedily says so
    (``temperature: 0``) with whatever else its protocol states; a paper panel states only what
    its paper states. Unset fields are ``null`` in the dump, so cache keys and lineage tell "sent 1.0"
    from "left to the default".
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float | None = Field(default=None, ge=0.0)
    """Sampling temperature; 0 means greedy; None = the backend's default."""
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    """Nucleus sampling mass; None = the backend's default."""
    repetition_penalty: float | None = Field(default=None, gt=0.0)
    """Multiplicative repetition penalty (1 = none); None = the backend's default."""
    seed: int | None = None
    """Sampling seed sent with the request; None = the backend's default."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Most new tokens the model may generate; None = the backend's default cap."""
    top_k: int | None = None
    """Top-k cut-off; None = the backend's default."""
    stop_token_ids: tuple[int, ...] = ()
    """Extra token ids that end generation (e.g. Kimi-Audio's 151644); empty = none sent."""

    @property
    def greedy(self) -> bool:
        """Temperature 0 stated, and no repetition penalty other than 1 stated.

        An unset penalty counts as none: that is the default of llama.cpp and transformers, the
        decoders whose greedy answers carry value probabilities.

        Example:
            >>> Decoding(temperature=0.0).greedy, Decoding(temperature=0.0, repetition_penalty=1.1).greedy
            (True, False)
            >>> Decoding().greedy
            False
        """
        return self.temperature == 0 and self.repetition_penalty in (None, 1.0)

    def sent(self) -> dict[str, Any]:
        """The fields a request carries: every one that is set, under its own name.

        Example:
            >>> Decoding(temperature=0.0, max_tokens=64).sent()
            {'temperature': 0.0, 'max_tokens': 64}
        """
        return {
            name: value
            for name, value in self.model_dump().items()
            if value is not None and value != () and value != []
        }


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to run.

    Attributes:
        messages: the conversation, system message first when there is one.
        decoding: sampling settings.
        json_schema: when set, constrain the answer to this JSON schema (schema-guided decoding).
        chat_template_kwargs: extra arguments for the model's chat template, e.g.
            ``{"enable_thinking": False}`` or ``{"thinking_budget": 0}``.
    """

    messages: tuple[Message, ...]
    decoding: Decoding = field(default_factory=Decoding)
    json_schema: Mapping[str, Any] | None = None
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def media(self) -> list[Path]:
        """Every attached file, in order."""
        return [p.path for m in self.messages for p in m.parts if not isinstance(p, TextPart)]


@dataclass(frozen=True)
class Completion:
    """What a backend returned for one request.

    Attributes:
        text: the generated text ('' when the model produced nothing).
        finish_reason: ``stop``, ``length``... as reported by the backend ('' when unknown).
        prompt_tokens: prompt length in tokens, when the backend reports it.
        completion_tokens: generated tokens, when reported.
        latency_s: wall time of the call in seconds.
        value_probs: for constrained integer values, the decoder's own probability of each allowed
            value at that position, keyed by the value's path in the answer (object keys joined by
            ``/``, e.g. ``alignment_with_metadata/score``); each distribution sums to 1 over the
            allowed values. None when the backend does not report them (never estimated).
    """

    text: str
    finish_reason: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    value_probs: Mapping[str, Mapping[int, float]] | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "text": self.text,
                "finish_reason": self.finish_reason,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "latency_s": self.latency_s,
                # JSON keys are strings; from_json turns the values back into ints.
                "value_probs": (
                    {path: {str(k): p for k, p in dist.items()} for path, dist in self.value_probs.items()}
                    if self.value_probs is not None
                    else None
                ),
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, raw: str) -> Completion:
        data = json.loads(raw)
        probs = data.get("value_probs")
        return cls(
            text=str(data["text"]),
            finish_reason=str(data.get("finish_reason") or ""),
            prompt_tokens=data.get("prompt_tokens"),
            completion_tokens=data.get("completion_tokens"),
            latency_s=float(data.get("latency_s") or 0.0),
            value_probs=(
                {str(path): {int(k): float(p) for k, p in dist.items()} for path, dist in probs.items()}
                if isinstance(probs, dict)
                else None
            ),
        )


class BackendError(Exception):
    """A request failed. ``transient`` failures (timeouts, overload, connection drops) may be retried."""

    transient = False


class TransientBackendError(BackendError):
    """A failure worth retrying with backoff: timeout, HTTP 429/5xx, connection refused or reset."""

    transient = True


class BackendUnavailable(BackendError):
    """The model cannot be loaded or served on this machine (weights, runtime or GPU missing)."""


class UnsupportedInput(BackendError):
    """The backend cannot take this request (e.g. an image for a text-only model)."""


@dataclass(frozen=True)
class ModelIdentity:
    """What identifies the weights behind a backend, for caching and lineage.

    Attributes:
        model: model id (hub id or a local label).
        revision: commit, tag or package version ('' when unknown).
        weights_sha256: file name -> SHA-256 of each local weight file (empty when not local).
    """

    model: str
    revision: str = ""
    weights_sha256: Mapping[str, str] = field(default_factory=dict)

    @property
    def weights_digest(self) -> str:
        """One hash for all weight files: the file's own hash when there is one, else a digest of the list."""
        if not self.weights_sha256:
            return ""
        if len(self.weights_sha256) == 1:
            return next(iter(self.weights_sha256.values()))
        import hashlib

        listing = "\n".join(f"{name} {sha}" for name, sha in sorted(self.weights_sha256.items()))
        return hashlib.sha256(listing.encode()).hexdigest()


@runtime_checkable
class ChatBackend(Protocol):
    """A loaded model runtime. ``chat_many`` returns one result per request, errors in place."""

    def identity(self) -> ModelIdentity: ...

    def chat(self, request: ChatRequest) -> Completion: ...

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]: ...

    def close(self) -> None: ...


def chat_concurrently(
    chat: Callable[[ChatRequest], Completion], requests: Sequence[ChatRequest], concurrency: int
) -> list[Completion | BackendError]:
    """``chat`` over ``requests`` with at most ``concurrency`` in flight (threads: the requests wait on
    a server), one result per request in order, a :class:`BackendError` in place of a failed one."""

    def attempt(request: ChatRequest) -> Completion | BackendError:
        try:
            return chat(request)
        except BackendError as exc:
            return exc

    if len(requests) <= 1 or concurrency <= 1:
        return [attempt(r) for r in requests]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(concurrency, len(requests))) as pool:
        return list(pool.map(attempt, requests))


class SequentialChatMixin:
    """``chat_many`` as a loop over ``chat`` for backends that run one request at a time."""

    def chat(self, request: ChatRequest) -> Completion:  # pragma: no cover - overridden
        raise NotImplementedError

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        return chat_concurrently(self.chat, requests, 1)
