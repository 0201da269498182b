"""A backend that injects faults on purpose: wraps any backend and breaks a seeded share of its calls.

Transport faults (``timeout``, ``http_5xx``, ``http_429``, ``dropped_connection``) fail the attempt
with :class:`TransientBackendError` *before* the wrapped model is called, as a server that never
answered would; the judge runner retries them. Content faults (``malformed_json``,
``truncated_json``) call the wrapped model and damage its answer, which the validity ledger then
reads as a parse error (and the repair model may fix). ``slow_tail`` delivers the answer intact,
late.

Which fault an attempt gets is a pure function of the seed, the request's content (text, media
bytes, decoding, schema) and the attempt number (how often this backend instance saw the same
request before), so a run is reproducible and a retry of a failed request draws afresh.

Caching: a damaged answer is a Completion and the runner caches it like any other. The wrapper's
seed and rates are therefore part of the backend's output fingerprint (see
:func:`~omnieval.backends.llm.output_fingerprint`): a faulty suite never shares cache entries with a
clean one, and a rerun of the same faulty suite reuses its entries and reproduces its statuses.

Registered as the backend kind ``faults`` (entry point ``omnieval.llm_backends``) when imported.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from omnieval.backends.llm import (
    BackendConfig,
    BackendError,
    ChatBackend,
    ChatRequest,
    Completion,
    LlmBackendKind,
    ModelIdentity,
    PluginBackendConfig,
    TextPart,
    TransientBackendError,
    answers_depend_on_call_order,
    backend_identity,
    carries_video_audio,
    open_backend,
    output_fingerprint,
    register_llm_backend,
    reports_value_probs,
)

FAULT_KINDS: tuple[str, ...] = (
    "timeout",
    "http_5xx",
    "http_429",
    "dropped_connection",
    "malformed_json",
    "truncated_json",
    "slow_tail",
)
"""Faults the ``faults`` backend injects: four transport faults, two content faults, one slow answer."""


class FaultsConfig(PluginBackendConfig):
    """Wraps any backend and injects faults at seeded rates (tests, ``bench faults``, chaos suites).

    Each (request, attempt) draws its fault from ``seed``, the request's content and how often this
    backend saw the request before, so a run is reproducible and a retry may succeed. Give ``rate``
    (a total, spread evenly over the seven kinds) or a rate per kind.
    """

    kind: Literal["faults"] = "faults"
    inner: BackendConfig
    """The backend that answers when no transport fault fires (a built-in or another plugin's kind)."""
    seed: int = 0
    """Seed of the fault draws."""
    rate: float | None = Field(default=None, ge=0, le=1)
    """Total fault rate, split evenly over the kinds (instead of per-kind rates)."""
    timeout: float = Field(default=0.0, ge=0, le=1)
    """Share of attempts that wait ``timeout_s`` and fail with a transient timeout."""
    http_5xx: float = Field(default=0.0, ge=0, le=1)
    """Share of attempts that fail like an HTTP 503 (transient)."""
    http_429: float = Field(default=0.0, ge=0, le=1)
    """Share of attempts that fail like an HTTP 429 (transient)."""
    dropped_connection: float = Field(default=0.0, ge=0, le=1)
    """Share of attempts whose connection drops before an answer (transient)."""
    malformed_json: float = Field(default=0.0, ge=0, le=1)
    """Share of answers whose JSON punctuation is stripped (same words and numbers, not JSON)."""
    truncated_json: float = Field(default=0.0, ge=0, le=1)
    """Share of answers cut off mid-text, with finish_reason ``length``."""
    slow_tail: float = Field(default=0.0, ge=0, le=1)
    """Share of answers delivered intact after ``slow_tail_s`` extra seconds."""
    timeout_s: float = Field(default=0.5, ge=0)
    """Seconds a simulated timeout waits before failing."""
    slow_tail_s: float = Field(default=1.0, ge=0)
    """Extra seconds of a slow-tail answer."""

    @model_validator(mode="after")
    def _rates(self) -> FaultsConfig:
        explicit = {k: getattr(self, k) for k in FAULT_KINDS if getattr(self, k) > 0}
        if self.rate is not None and explicit:
            raise ValueError(
                f"give either rate or per-kind rates, not both (got rate and {sorted(explicit)})"
            )
        if sum(self.rates().values()) > 1.0 + 1e-9:
            raise ValueError("the fault rates add up to more than 1")
        return self

    def rates(self) -> dict[str, float]:
        """Fault kind -> probability per attempt (kinds in :data:`FAULT_KINDS` order)."""
        if self.rate is not None:
            return {k: self.rate / len(FAULT_KINDS) for k in FAULT_KINDS}
        return {k: float(getattr(self, k)) for k in FAULT_KINDS}


TRANSPORT_FAULTS = frozenset({"timeout", "http_5xx", "http_429", "dropped_connection"})
CONTENT_FAULTS = frozenset({"malformed_json", "truncated_json"})


def _unit(*parts: object) -> float:
    """A number in [0, 1) from a hash of ``parts`` (uniform over 2**64 steps)."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def draw_fault(seed: int, request_digest: str, attempt: int, rates: Mapping[str, float]) -> str | None:
    """The fault of one attempt, or None: kinds take consecutive slices of [0, 1) in ``rates`` order.

    Example:
        >>> draw_fault(7, "abc", 0, {"timeout": 0.0, "http_429": 1.0})
        'http_429'
        >>> draw_fault(7, "abc", 0, {"timeout": 0.0}) is None
        True
    """
    u = _unit("fault", seed, request_digest, attempt)
    edge = 0.0
    for kind, rate in rates.items():
        edge += rate
        if u < edge:
            return kind
    return None


def malform(text: str) -> str:
    """The answer with its JSON punctuation stripped: the same words and numbers, no longer JSON.

    Example:
        >>> malform('{"a": {"score": 7, "rationale": "fine"}}')
        'Verdict: a: score: 7, rationale: fine'
    """
    return "Verdict: " + "".join(ch for ch in text if ch not in '{}[]"')


def truncate(text: str, fraction: float) -> str:
    """The first ``fraction`` (0-1) of the answer, at least one character shorter than it.

    Example:
        >>> truncate('{"a": 1}', 0.5)
        '{"a"'
    """
    if len(text) <= 1:
        return ""
    return text[: min(len(text) - 1, max(1, int(len(text) * fraction)))]


class _MediaDigests:
    """SHA-256 of attached files, memoized per (path, size, mtime)."""

    def __init__(self) -> None:
        self._memo: dict[tuple[str, int, int], str] = {}

    def __call__(self, path: Path) -> str:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        if key not in self._memo:
            self._memo[key] = hashlib.sha256(path.read_bytes()).hexdigest()
        return self._memo[key]


def request_digest(request: ChatRequest, media: _MediaDigests | None = None) -> str:
    """SHA-256 of what decides a request's answer: messages (media by content), decoding, schema."""
    media = media or _MediaDigests()
    messages = [
        [m.role, [p.text if isinstance(p, TextPart) else media(p.path) for p in m.parts]]
        for m in request.messages
    ]
    material = {
        "messages": messages,
        "decoding": request.decoding.model_dump(mode="json"),
        "json_schema": request.json_schema,
        "chat_template_kwargs": dict(request.chat_template_kwargs),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class FaultEvent:
    """One attempt as the wrapper saw it: the request's digest, its attempt number and the fault."""

    digest: str
    attempt: int
    fault: str | None


_TRANSPORT_MESSAGES = {
    "timeout": "simulated timeout after {timeout_s} s",
    "http_5xx": "HTTP 503: simulated overload",
    "http_429": "HTTP 429: simulated rate limit",
    "dropped_connection": "RemoteProtocolError: simulated dropped connection",
}


class FaultInjectingBackend:
    """Wraps ``inner`` and injects the faults ``config`` asks for (see the module notes).

    Attributes:
        events: every attempt in order (digest, attempt number, fault or None).
        injected: fault kind -> how many attempts got it.
    """

    def __init__(self, config: FaultsConfig, inner: ChatBackend) -> None:
        self.config = config
        self.inner = inner
        self.rates = config.rates()
        self.events: list[FaultEvent] = []
        self.injected: Counter[str] = Counter()
        self._attempts: dict[str, int] = {}
        self._media = _MediaDigests()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FaultInjectingBackend(seed={self.config.seed}, inner={self.inner!r})"

    def identity(self) -> ModelIdentity:
        return self.inner.identity()

    def _draw(self, request: ChatRequest) -> FaultEvent:
        digest = request_digest(request, self._media)
        with self._lock:
            attempt = self._attempts.get(digest, 0)
            self._attempts[digest] = attempt + 1
            event = FaultEvent(digest, attempt, draw_fault(self.config.seed, digest, attempt, self.rates))
            self.events.append(event)
            if event.fault is not None:
                self.injected[event.fault] += 1
        return event

    def _damage(self, completion: Completion, event: FaultEvent) -> Completion:
        if event.fault == "malformed_json":
            return dataclasses.replace(completion, text=malform(completion.text), value_probs=None)
        if event.fault == "truncated_json":
            fraction = 0.2 + 0.6 * _unit("cut", self.config.seed, event.digest, event.attempt)
            return dataclasses.replace(
                completion,
                text=truncate(completion.text, fraction),
                finish_reason="length",
                value_probs=None,
            )
        if event.fault == "slow_tail":
            return dataclasses.replace(completion, latency_s=completion.latency_s + self.config.slow_tail_s)
        return completion

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        """One result per request, in order; the requests without a transport fault go to the
        wrapped backend as one batch. The batch waits once for its slowest simulated delay, as
        concurrent requests on a server would."""
        events = [self._draw(r) for r in requests]
        results: list[Completion | BackendError | None] = [None] * len(requests)
        delay = 0.0
        forward: list[int] = []
        for i, event in enumerate(events):
            if event.fault in TRANSPORT_FAULTS:
                message = _TRANSPORT_MESSAGES[event.fault].format(timeout_s=self.config.timeout_s)
                results[i] = TransientBackendError(f"faults: {message}")
                if event.fault == "timeout":
                    delay = max(delay, self.config.timeout_s)
            else:
                forward.append(i)
                if event.fault == "slow_tail":
                    delay = max(delay, self.config.slow_tail_s)
        if forward:
            answers = self.inner.chat_many([requests[i] for i in forward])
            for i, answer in zip(forward, answers, strict=True):
                results[i] = self._damage(answer, events[i]) if isinstance(answer, Completion) else answer
        if delay:
            time.sleep(delay)
        assert all(r is not None for r in results)
        return [r for r in results if r is not None]

    def chat(self, request: ChatRequest) -> Completion:
        (result,) = self.chat_many([request])
        if isinstance(result, BackendError):
            raise result
        return result

    def stats(self) -> dict[str, object]:
        """Attempts seen and faults injected per kind (every kind listed, zeros included)."""
        with self._lock:
            return {
                "attempts": len(self.events),
                "faults": {k: self.injected.get(k, 0) for k in FAULT_KINDS},
            }

    def close(self) -> None:
        self.inner.close()


def _open(config: FaultsConfig, model: str, revision: str) -> ChatBackend:
    return FaultInjectingBackend(config, open_backend(config.inner, model=model, revision=revision))


def _identity(config: FaultsConfig, model: str, revision: str) -> ModelIdentity:
    # Same weights as the wrapped model: lineage names the real model; the cache keys differ by
    # output_fingerprint instead.
    return backend_identity(config.inner, model=model, revision=revision)


def _output_settings(config: FaultsConfig) -> Mapping[str, Any]:
    # A faulty answer is cached like any other; keying it apart keeps it out of clean runs'
    # caches, while a rerun with the same seed and rates reuses it (and reproduces the run).
    return {
        "faults": {"seed": config.seed, "rates": config.rates()},
        "inner": output_fingerprint(config.inner),
    }


def _value_probs(config: FaultsConfig, schema_constrained: bool, greedy: bool) -> bool:
    return reports_value_probs(config.inner, schema_constrained=schema_constrained, greedy=greedy)


def _call_order(config: FaultsConfig) -> bool:
    return answers_depend_on_call_order(config.inner)


def _video_audio(config: FaultsConfig) -> bool:
    return carries_video_audio(config.inner)


FAULTS = register_llm_backend(
    "faults",
    LlmBackendKind(
        config=FaultsConfig,
        open=_open,
        identity=_identity,
        output_settings=_output_settings,
        reports_value_probs=_value_probs,
        answers_depend_on_call_order=_call_order,
        carries_video_audio=_video_audio,
    ),
)
"""The ``faults`` kind as registered (the entry point's value)."""
