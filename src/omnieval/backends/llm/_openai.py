"""OpenAI-compatible chat client: vLLM servers (``vllm serve``), llama.cpp's server, hosted APIs.

The request body carries the decoding exactly as configured: each field that is set (temperature,
top_p, seed, max_tokens and, for vLLM, its extra sampling fields ``repetition_penalty``, ``top_k``,
``stop_token_ids``) and no other, so the server's defaults govern what is left unset; a vLLM-only
field set for a plain OpenAI API is refused rather than dropped. Also for vLLM, chat-template switches (``chat_template_kwargs``, e.g. ``{"enable_thinking": false}``). A JSON
schema is sent as OpenAI ``response_format`` (json_schema), vLLM's ``guided_json`` or its
``structured_outputs``. Images travel as ``image_url`` data URLs, audio as ``input_audio``, video
as ``video_url`` data URLs (vLLM's form for omni models); ``use_audio_in_video`` makes vLLM decode
a video's own soundtrack with its frames instead of dropping it.

The API key is read from the named environment variable when each request is sent; it is never
stored on the object, logged, or included in error messages.

A config with ``endpoints`` opens a :class:`~omnieval.backends.llm._endpoints.MultiEndpointBackend`
instead: one client per server, calls spread over them (see that module).
"""

from __future__ import annotations

import base64
import logging
import mimetypes
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from omnieval.backends.llm._config import HttpClientSettings, OpenAIBackendConfig, SchemaField
from omnieval.backends.llm._identity import served_identity
from omnieval.backends.llm._types import (
    AudioPart,
    BackendError,
    BackendUnavailable,
    ChatRequest,
    Completion,
    ImagePart,
    Message,
    ModelIdentity,
    TextPart,
    TransientBackendError,
    UnsupportedInput,
    VideoPart,
    chat_concurrently,
)
from omnieval.security import redact, register_secret_env

log = logging.getLogger(__name__)

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_VLLM_SAMPLING = frozenset({"repetition_penalty", "top_k", "stop_token_ids"})
"""Decoding fields only vLLM's OpenAI-compatible server takes (its sampling extensions)."""


def redact_url(url: str) -> str:
    """``url`` without user-info (``https://user:secret@host/v1`` -> ``https://host/v1``).

    Example:
        >>> redact_url("https://me:sk-123@gpu-7:8000/v1")
        'https://gpu-7:8000/v1'
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _data_url(path: Path, default_mime: str) -> tuple[str, str]:
    mime = mimetypes.guess_type(path.name)[0] or default_mime
    return mime, base64.b64encode(path.read_bytes()).decode("ascii")


def message_payload(message: Message) -> dict[str, Any]:
    """One chat message in OpenAI form; text-only messages keep a plain string content."""
    if not message.has_media:
        return {"role": message.role, "content": message.text}
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            mime, data = _data_url(part.path, "image/png")
            content.append({"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}})
        elif isinstance(part, AudioPart):
            _, data = _data_url(part.path, "audio/wav")
            fmt = part.path.suffix.lstrip(".").lower() or "wav"
            content.append({"type": "input_audio", "input_audio": {"data": data, "format": fmt}})
        elif isinstance(part, VideoPart):
            mime, data = _data_url(part.path, "video/mp4")
            content.append({"type": "video_url", "video_url": {"url": f"data:{mime};base64,{data}"}})
    return {"role": message.role, "content": content}


def request_body(
    request: ChatRequest,
    *,
    model: str,
    schema_field: SchemaField = "response_format",
    vllm_extensions: bool = True,
    use_audio_in_video: bool = False,
) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions`` for one request.

    With ``use_audio_in_video``, a request carrying a video part also asks vLLM to decode each
    video's own soundtrack in time with its frames (``mm_processor_kwargs``); requests without video
    (e.g. a text-only repair) are left as they are.
    """
    sent = request.decoding.sent()
    if not vllm_extensions:
        # A plain OpenAI API has no such fields; a repetition penalty of 1 is no penalty, which is
        # what it does without one. Anything else would be silently ignored: refuse it instead.
        if sent.get("repetition_penalty") == 1.0:
            del sent["repetition_penalty"]
        extra = sorted(set(sent) & _VLLM_SAMPLING)
        if extra:
            raise UnsupportedInput(
                f"{model}: {', '.join(extra)} need vLLM's sampling extensions (vllm_extensions: true)"
            )
    body: dict[str, Any] = {
        "model": model,
        "messages": [message_payload(m) for m in request.messages],
        # Only the decoding fields that are set: the server's defaults govern the rest.
        **{key: list(value) if key == "stop_token_ids" else value for key, value in sent.items()},
        "stream": False,
    }
    if vllm_extensions and request.chat_template_kwargs:
        body["chat_template_kwargs"] = dict(request.chat_template_kwargs)
    if use_audio_in_video and any(isinstance(p, VideoPart) for m in request.messages for p in m.parts):
        body["mm_processor_kwargs"] = {"use_audio_in_video": True}
    if request.json_schema is not None:
        schema = dict(request.json_schema)
        if schema_field == "response_format":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judge_verdict", "schema": schema, "strict": True},
            }
        elif schema_field == "json_object":
            # llama-cpp-python's server constrains only by this form (a json_schema format is
            # accepted and ignored there).
            body["response_format"] = {"type": "json_object", "schema": schema}
        elif schema_field == "guided_json":
            body["guided_json"] = schema
        else:
            body["structured_outputs"] = {"json": schema}
    return body


class OpenAIChatBackend:
    """Chat completions over HTTP; ``chat_many`` keeps up to ``concurrency`` requests in flight."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        revision: str = "",
        served_model: str | None = None,
        api_key_env: str | None = None,
        settings: HttpClientSettings | None = None,
    ) -> None:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - httpx is in the lock
            raise BackendUnavailable("httpx is not installed (pip install httpx)") from exc
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.revision = revision
        self.served_model = served_model or model
        self.api_key_env = api_key_env
        # The key's variable may have any name (JUDGE_CRED): log redaction must know it.
        register_secret_env(api_key_env)
        self.settings = settings or HttpClientSettings()
        self._client = httpx.Client(
            timeout=httpx.Timeout(self.settings.timeout_s, connect=min(30.0, self.settings.timeout_s))
        )

    @classmethod
    def from_config(cls, config: OpenAIBackendConfig, *, model: str, revision: str = "") -> OpenAIChatBackend:
        base_url = config.base_url or (os.environ.get(config.base_url_env, "") if config.base_url_env else "")
        if not base_url:
            where = f"${config.base_url_env}" if config.base_url_env else "base_url"
            raise BackendUnavailable(f"no server address for {model}: set {where}")
        settings = HttpClientSettings(**{k: getattr(config, k) for k in HttpClientSettings.model_fields})
        return cls(
            base_url,
            model=model,
            revision=revision,
            served_model=config.served_model,
            api_key_env=config.api_key_env,
            settings=settings,
        )

    def __repr__(self) -> str:
        return f"OpenAIChatBackend({redact_url(self.base_url)!r}, model={self.served_model!r})"

    def identity(self) -> ModelIdentity:
        """What the server says it serves (``GET /models``): see :func:`served_identity`."""
        return served_identity(
            self.base_url,
            model=self.model,
            served_model=self.served_model,
            revision=self.revision,
            api_key_env=self.api_key_env,
            timeout_s=min(30.0, self.settings.timeout_s),
        )

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise BackendUnavailable(f"the API key variable ${self.api_key_env} is not set")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def body(self, request: ChatRequest) -> dict[str, Any]:
        return request_body(
            request,
            model=self.served_model,
            schema_field=self.settings.schema_field,
            vllm_extensions=self.settings.vllm_extensions,
            use_audio_in_video=self.settings.use_audio_in_video,
        )

    def chat(self, request: ChatRequest) -> Completion:
        import httpx

        started = time.perf_counter()
        try:
            response = self._client.post(
                f"{self.base_url}/chat/completions", json=self.body(request), headers=self._headers()
            )
        except httpx.TimeoutException:
            raise TransientBackendError(
                f"{self.served_model}: request timed out after {self.settings.timeout_s} s"
            ) from None
        except httpx.TransportError as exc:
            raise TransientBackendError(
                f"{self.served_model}: {type(exc).__name__} talking to {redact_url(self.base_url)}"
            ) from None
        latency = time.perf_counter() - started
        if response.status_code != 200:
            # A proxy may echo request headers back: the body is masked before it is kept anywhere.
            detail = redact(response.text[:300].replace("\n", " "))
            message = f"{self.served_model}: HTTP {response.status_code}: {detail}"
            if response.status_code in TRANSIENT_STATUS:
                raise TransientBackendError(message)
            raise BackendError(message)
        try:
            data = response.json()
            choice = data["choices"][0]
            content = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError):
            raise BackendError(
                f"{self.served_model}: malformed response: {redact(response.text[:200])!r}"
            ) from None
        usage = data.get("usage") or {}
        return Completion(
            text=str(content),
            finish_reason=str(choice.get("finish_reason") or ""),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_s=latency,
        )

    def try_chat(self, request: ChatRequest) -> Completion | BackendError:
        """:meth:`chat` with the failure returned instead of raised."""
        try:
            return self.chat(request)
        except BackendError as exc:
            return exc

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        return chat_concurrently(self.chat, requests, self.settings.concurrency)

    def close(self) -> None:
        self._client.close()
