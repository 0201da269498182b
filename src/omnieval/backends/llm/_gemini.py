"""Gemini chat backend on Google's ``google-genai`` SDK (PRISM-Bench's judge is a Gemini model).

What it sends: each message's parts in order, text as text and every image, audio and video file as
its own bytes with its MIME type (``video/mp4`` keeps picture and soundtrack together: Gemini hears
a video's audio track itself, so the two stay aligned in time). Media of one request larger than
``inline_media_max_mb`` go through the Files API first and are referred to by URI. A JSON schema
becomes Gemini's structured output (``response_mime_type: application/json`` with the schema as
``response_json_schema``, which takes JSON Schema as written rather than the SDK's OpenAPI subset).

Identity: a hosted alias such as ``gemini-3.1-pro-preview`` can move to new weights without notice,
so the model version the API itself reports (``modelVersion`` of a response) is the revision in
cache keys and lineage. :func:`gemini_identity` learns it from one minimal request per model and
process; every answer's version is checked against it, and an answer from another version is
refused rather than cached under the old one.

Retries belong to the judge runner (:func:`omnieval.judges._calls.send_with_retries`): the SDK's
own retrying is turned off, quota refusals (HTTP 429) and server errors come back as
:class:`TransientBackendError`, and ``requests_per_minute`` paces request starts for a project's
quota. The key is read from the environment when the client opens, handed to the SDK (which sends it
as the ``x-goog-api-key`` header), and never stored on this object, logged or put in an error.
"""

from __future__ import annotations

import logging
import mimetypes
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from omnieval.backends.llm._config import GEMINI_KEY_VARIABLES, GeminiBackendConfig
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

if TYPE_CHECKING:
    from google import genai
    from google.genai import types

log = logging.getLogger(__name__)

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses worth a resend (the same set as the OpenAI-compatible client's)."""
_DEFAULT_MIME = {ImagePart: "image/png", AudioPart: "audio/wav", VideoPart: "video/mp4"}
_FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}
_PROBE_MAX_TOKENS = 16
"""Output tokens of the identity probe: enough for a reply, few enough to cost next to nothing."""

_VERSIONS: dict[tuple[str, str, str], str] = {}
"""Model version reported by the API, by (address, API version, model): probed once per process."""
_VERSIONS_LOCK = threading.Lock()


def gemini_api_key(config: GeminiBackendConfig) -> str:
    """The key from the environment; BackendUnavailable naming the variables when none is set."""
    names = (config.api_key_env,) if config.api_key_env else GEMINI_KEY_VARIABLES
    # A custom variable name may not look secret: log redaction must know it.
    register_secret_env(*names)
    for name in names:
        value = os.environ.get(name, "")
        if value:
            return value
    raise BackendUnavailable(f"no Gemini API key: set ${' or $'.join(names)}")


def gemini_base_url(config: GeminiBackendConfig) -> str | None:
    """The configured API root, or None for the SDK's default (Google's endpoint)."""
    if config.base_url:
        return config.base_url
    if config.base_url_env:
        return os.environ.get(config.base_url_env) or None
    return None


def _where(config: GeminiBackendConfig) -> str:
    from omnieval.backends.llm._openai import redact_url

    url = gemini_base_url(config)
    return redact_url(url) if url else "the Gemini API"


def _client(config: GeminiBackendConfig, timeout_s: float) -> genai.Client:
    try:
        from google import genai
        from google.genai import types
    except ImportError as exc:  # pragma: no cover - google-genai is in the lock
        raise BackendUnavailable("google-genai is not installed (pip install google-genai)") from exc
    options = types.HttpOptions(
        base_url=gemini_base_url(config),
        api_version=config.api_version,
        timeout=int(timeout_s * 1000),
        # One attempt per call: resends are the judge runner's, with its backoff and counting.
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    return genai.Client(api_key=gemini_api_key(config), http_options=options)


def _mime(part: ImagePart | AudioPart | VideoPart) -> str:
    return mimetypes.guess_type(part.path.name)[0] or _DEFAULT_MIME[type(part)]


def _failure(model: str, exc: Exception, where: str) -> BackendError:
    """An SDK or transport exception as omnieval's error (transient when a resend may help)."""
    import httpx
    from google.genai import errors

    if isinstance(exc, errors.APIError):
        # An error body may echo request details: masked before it is kept anywhere.
        message = f"{model}: HTTP {exc.code} {exc.status or ''}: {redact(str(exc.message or ''))[:300]}"
        return TransientBackendError(message) if exc.code in TRANSIENT_STATUS else BackendError(message)
    if isinstance(exc, httpx.TimeoutException):
        return TransientBackendError(f"{model}: request to {where} timed out")
    if isinstance(exc, httpx.TransportError):
        return TransientBackendError(f"{model}: {type(exc).__name__} talking to {where}")
    return BackendError(f"{model}: {type(exc).__name__}: {redact(str(exc))[:300]}")


def _completion_parts(response: types.GenerateContentResponse) -> tuple[str, str]:
    """(answer text without thought parts, finish reason in omnieval's words)."""
    candidates = response.candidates or []
    if not candidates:
        feedback = response.prompt_feedback
        reason = feedback.block_reason if feedback is not None else None
        raise BackendError(f"no answer (prompt blocked: {reason})" if reason else "no answer candidates")
    candidate = candidates[0]
    parts = candidate.content.parts if candidate.content is not None else None
    text = "".join(p.text for p in parts or [] if p.text and not p.thought)
    raw = candidate.finish_reason
    name = str(getattr(raw, "value", raw) or "")
    return text, _FINISH.get(name, name.lower())


class _Pacer:
    """Spaces request starts at least ``60 / per_minute`` seconds apart (shared by all threads)."""

    def __init__(self, per_minute: float | None) -> None:
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            time.sleep(start - now)


def _probe_version(config: GeminiBackendConfig, model: str) -> str:
    """The ``modelVersion`` the API reports for ``model``, from one minimal request."""
    from google.genai import types

    client = _client(config, min(config.timeout_s, 120.0))
    try:
        response = client.models.generate_content(
            model=model,
            contents="Reply with the word ready.",
            config=types.GenerateContentConfig(temperature=0.0, max_output_tokens=_PROBE_MAX_TOKENS),
        )
    except Exception as exc:
        raise BackendUnavailable(f"cannot reach {model}: {_failure(model, exc, _where(config))}") from None
    finally:
        client.close()
    if not response.model_version:
        raise BackendUnavailable(f"{model}: {_where(config)} reported no model version")
    return str(response.model_version)


def gemini_identity(config: GeminiBackendConfig, model: str, revision: str) -> ModelIdentity:
    """The served model's version as the revision (asked once per process and model).

    A pinned ``revision`` must match what the API serves: a judge configured for one version is
    never silently answered by another. Raises BackendUnavailable without a key or a reachable API.
    """
    memo = (gemini_base_url(config) or "", config.api_version, model)
    with _VERSIONS_LOCK:
        version = _VERSIONS.get(memo)
    if version is None:
        version = _probe_version(config, model)
        with _VERSIONS_LOCK:
            _VERSIONS[memo] = version
    if revision and revision != version:
        raise BackendUnavailable(f"{model}: the judge pins version {revision!r}, the API serves {version!r}")
    return ModelIdentity(model=model, revision=version)


class GeminiChatBackend:
    """Gemini ``generateContent`` calls; ``chat_many`` keeps up to ``concurrency`` in flight."""

    def __init__(self, config: GeminiBackendConfig, *, model: str, revision: str = "") -> None:
        self.config = config
        self.model = model
        self.where = _where(config)
        self._identity = gemini_identity(config, model, revision)
        self._client = _client(config, config.timeout_s)
        self._pacer = _Pacer(config.requests_per_minute)

    def __repr__(self) -> str:
        return f"GeminiChatBackend({self.where!r}, model={self.model!r})"

    def identity(self) -> ModelIdentity:
        return self._identity

    # -- the request --------------------------------------------------------------------------------

    def _parts(self, message: Message, uploaded: dict[Path, types.File]) -> list[types.Part]:
        from google.genai import types

        parts: list[types.Part] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                parts.append(types.Part(text=part.text))
            elif part.path in uploaded:
                ref = uploaded[part.path]
                parts.append(
                    types.Part.from_uri(file_uri=str(ref.uri), mime_type=ref.mime_type or _mime(part))
                )
            else:
                parts.append(types.Part.from_bytes(data=part.path.read_bytes(), mime_type=_mime(part)))
        return parts

    def generation_config(self, request: ChatRequest) -> types.GenerateContentConfig:
        """The request's decoding, system text and schema in Gemini's terms."""
        from google.genai import types

        decoding = request.decoding
        # A repetition penalty of 1 is no penalty, which is what Gemini does without the field.
        if (
            decoding.repetition_penalty not in (None, 1.0)
            or decoding.stop_token_ids
            or request.chat_template_kwargs
        ):
            raise UnsupportedInput(
                f"{self.model}: Gemini takes no repetition_penalty, stop_token_ids or chat_template_kwargs"
            )
        system = "\n\n".join(m.text for m in request.messages if m.role == "system")
        # Only what the decoding sets: the SDK leaves None fields out of the request, so everything
        # unset (output cap, top_p, seed, candidate count) stays at the API's defaults.
        return types.GenerateContentConfig(
            system_instruction=system or None,
            temperature=decoding.temperature,
            top_p=decoding.top_p,
            top_k=decoding.top_k,
            seed=decoding.seed,
            max_output_tokens=decoding.max_tokens,
            response_mime_type="application/json" if request.json_schema is not None else None,
            response_json_schema=dict(request.json_schema) if request.json_schema is not None else None,
        )

    def contents(self, request: ChatRequest, uploaded: dict[Path, types.File]) -> list[types.Content]:
        """The conversation without its system text, ``assistant`` turns as Gemini's ``model``."""
        from google.genai import types

        return [
            types.Content(role="model" if m.role == "assistant" else "user", parts=self._parts(m, uploaded))
            for m in request.messages
            if m.role != "system"
        ]

    def _upload(self, request: ChatRequest) -> dict[Path, types.File]:
        """Upload the request's media through the Files API when they are too big to send inline."""
        from google.genai import types

        media = {p.path: p for m in request.messages for p in m.parts if not isinstance(p, TextPart)}
        total = sum(path.stat().st_size for path in media)
        if total <= self.config.inline_media_max_mb * 1_000_000:
            return {}
        uploaded: dict[Path, types.File] = {}
        deadline = time.monotonic() + self.config.timeout_s
        try:
            for path, part in media.items():
                upload = types.UploadFileConfig(mime_type=_mime(part))
                ref = self._client.files.upload(file=path, config=upload)
                # Video is processed after upload; it can be referred to once it is ACTIVE.
                while ref.state is not None and str(getattr(ref.state, "value", ref.state)) == "PROCESSING":
                    if time.monotonic() > deadline:
                        raise TransientBackendError(f"{self.model}: uploaded {path.name} still processing")
                    time.sleep(1.0)
                    ref = self._client.files.get(name=str(ref.name))
                if str(getattr(ref.state, "value", ref.state)) == "FAILED":
                    raise BackendError(f"{self.model}: the Files API could not process {path.name}")
                uploaded[path] = ref
        except BaseException:
            self._forget(uploaded)
            raise
        return uploaded

    def _forget(self, uploaded: dict[Path, types.File]) -> None:
        for ref in uploaded.values():
            try:
                self._client.files.delete(name=str(ref.name))
            except Exception as exc:  # the API deletes uploads after 48 hours anyway
                log.warning("%s: could not delete upload %s: %s", self.model, ref.name, type(exc).__name__)

    # -- calls --------------------------------------------------------------------------------------

    def chat(self, request: ChatRequest) -> Completion:
        config = self.generation_config(request)
        self._pacer.wait()
        started = time.perf_counter()
        uploaded: dict[Path, types.File] = {}
        try:
            uploaded = self._upload(request)
            response = self._client.models.generate_content(
                model=self.model, contents=self.contents(request, uploaded), config=config
            )
        except BackendError:
            raise
        except Exception as exc:
            raise _failure(self.model, exc, self.where) from None
        finally:
            if uploaded:
                self._forget(uploaded)
        latency = time.perf_counter() - started
        served = str(response.model_version or "")
        if served and served != self._identity.revision:
            raise BackendError(
                f"{self.model}: answered by version {served!r}, not {self._identity.revision!r} "
                "(the served model changed; rerun to re-identify it)"
            )
        try:
            text, finish = _completion_parts(response)
        except BackendError as exc:
            raise BackendError(f"{self.model}: {exc}") from None
        usage = response.usage_metadata
        prompt_tokens = usage.prompt_token_count if usage is not None else None
        # Thinking tokens are billed as output: they count as completion tokens here.
        generated = [usage.candidates_token_count, usage.thoughts_token_count] if usage is not None else []
        known = [n for n in generated if n is not None]
        return Completion(
            text=text,
            finish_reason=finish,
            prompt_tokens=prompt_tokens,
            completion_tokens=sum(known) if known else None,
            latency_s=latency,
        )

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        return chat_concurrently(self.chat, requests, self.config.concurrency)

    def close(self) -> None:
        self._client.close()


def forget_versions() -> None:
    """Drop the probed versions (tests; a long-lived process that wants to re-identify models)."""
    with _VERSIONS_LOCK:
        _VERSIONS.clear()


__all__ = ["GeminiChatBackend", "forget_versions", "gemini_api_key", "gemini_identity"]
