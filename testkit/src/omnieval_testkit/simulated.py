"""A simulated judge server for scale runs: valid verdicts, lognormal latency, transient failures.

The answer is a function of the request alone (a BLAKE2 digest of its messages picks the four
scores), shaped by the request's JSON schema (criterion keys, field order, rationale length) or,
without one, by the answer shape the prompt shows, so the ledger reads it exactly as it reads a
real judge's answer and a cached answer equals a fresh one.

Time is simulated, not spent: each ``chat_many`` batch is placed on ``concurrency`` virtual server
slots (each request takes the earliest free slot, like a server with that many sequences in
flight), and the batch's makespan is the simulated model time. With ``time_scale`` > 0 the caller
really sleeps ``makespan * time_scale`` seconds, once per batch, so 345,600 calls of several
simulated seconds each run in minutes. Latency and failure draws come from a generator seeded by
``seed`` and the model id: the same run draws the same sequence.

Registered as the backend kind ``simulated`` (entry point ``omnieval.llm_backends``) when imported.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from omnieval.backends.llm import (
    BackendError,
    ChatBackend,
    ChatRequest,
    Completion,
    LlmBackendKind,
    ModelIdentity,
    PluginBackendConfig,
    TextPart,
    TransientBackendError,
    register_llm_backend,
)


class SimulatedConfig(PluginBackendConfig):
    """A simulated judge server for scale runs (``bench scale``): answers a valid verdict chosen
    from a hash of the request, after a latency drawn from a lognormal distribution. Never a judge."""

    kind: Literal["simulated"] = "simulated"
    latency_median_s: float = Field(default=1.5, gt=0)
    """Median simulated latency of one call, in seconds."""
    latency_p99_s: float = Field(default=8.0, gt=0)
    """99th percentile of the simulated latency (>= the median), in seconds."""
    failure_rate: float = Field(default=0.0, ge=0, lt=1)
    """Share of calls that fail with a transient error (HTTP 503-like)."""
    concurrency: int = Field(default=16, ge=1)
    """Requests the simulated server runs at once."""
    time_scale: float = Field(default=0.0, ge=0)
    """Real seconds slept per simulated second (0 = purely virtual time)."""
    seed: int = 0
    """Seed of the latency and failure draws (answers depend on the request only)."""


Z_99 = 2.3263478740408408
"""Standard normal quantile at 0.99: the lognormal's sigma is ln(p99 / median) / Z_99."""

_FALLBACK_CRITERIA = (
    "alignment_with_metadata",
    "natural_flow_from_current_narration",
    "satisfaction_of_generation_conditions",
    "semantic_consistency_with_ground_truth",
)


@dataclass
class SimulatedStats:
    """What one simulated backend did.

    Attributes:
        calls: requests answered or failed.
        failures: requests that failed (transient).
        model_time_s: simulated server time, the sum of every batch's makespan (virtual seconds).
        busy_s: real wall time spent inside ``chat_many`` (answer synthesis plus any sleeping).
        cpu_s: CPU time of the calling thread inside ``chat_many`` (answer synthesis).
        slept_s: real seconds slept (``model_time_s * time_scale``).
    """

    calls: int = 0
    failures: int = 0
    model_time_s: float = 0.0
    busy_s: float = 0.0
    cpu_s: float = 0.0
    slept_s: float = 0.0


def lognormal_params(median_s: float, p99_s: float) -> tuple[float, float]:
    """(mu, sigma) of the lognormal with this median and 99th percentile (seconds)."""
    if p99_s < median_s:
        raise BackendError(f"simulated backend: latency_p99_s {p99_s} is below latency_median_s {median_s}")
    return math.log(median_s), math.log(p99_s / median_s) / Z_99


def makespan(latencies: Sequence[float], concurrency: int) -> float:
    """Time to run ``latencies`` in order on ``concurrency`` slots, each job taking the earliest free slot."""
    slots = [0.0] * min(concurrency, max(len(latencies), 1))
    end = 0.0
    for latency in latencies:
        finish = heapq.heappop(slots) + latency
        heapq.heappush(slots, finish)
        end = max(end, finish)
    return end


def _criteria_fields(schema: Mapping[str, Any] | None) -> tuple[tuple[str, ...], tuple[str, ...], int | None]:
    """(criterion keys, field order inside a criterion, rationale maxLength) from a verdict schema."""
    if schema and "anyOf" in schema:  # the repair schema: the verdict is its first option
        schema = schema["anyOf"][0]
    props = schema.get("properties") if schema else None
    if not props:
        return _FALLBACK_CRITERIA, ("score", "rationale"), None
    first = next(iter(props.values()))
    inner = first.get("properties", {}) if isinstance(first, Mapping) else {}
    order = tuple(inner) or ("score", "rationale")
    limit = inner.get("rationale", {}).get("maxLength") if inner else None
    return tuple(props), order, limit


_SHAPE_ENTRY = re.compile(r'"(\w+)"\s*:\s*\{([^{}]*)\}')


def _prompt_criteria(text: str) -> tuple[str, ...]:
    """The criterion keys of the answer shape a schema-less prompt shows, in the prompt's order.

    A judge prompt without a JSON schema spells out the verdict it wants, one
    ``"<criterion>": {"score": ..., "rationale": ...}`` entry per criterion; those keys are the
    criteria. Reading them from the prompt keeps this backend free of any benchmark's or judge
    track's vocabulary. A prompt that shows no such entry gets :data:`_FALLBACK_CRITERIA`.
    """
    keys: dict[str, None] = {}
    for match in _SHAPE_ENTRY.finditer(text):
        body = match.group(2)
        if '"score"' in body and '"rationale"' in body:
            keys.setdefault(match.group(1), None)
    return tuple(keys) or _FALLBACK_CRITERIA


def simulated_answer(request: ChatRequest) -> str:
    """The verdict for ``request``: scores 1-10 from a digest of its messages, one line of JSON."""
    h = hashlib.blake2b(digest_size=16)
    for message in request.messages:
        h.update(message.role.encode())
        for part in message.parts:
            h.update(part.text.encode() if isinstance(part, TextPart) else str(part.path).encode())
            h.update(b"\x00")
    digest = h.digest()
    criteria, order, limit = _criteria_fields(request.json_schema)
    if request.json_schema is None:
        criteria = _prompt_criteria("".join(m.text for m in request.messages))
    tag = digest.hex()[:8]
    verdict: dict[str, dict[str, object]] = {}
    for i, criterion in enumerate(criteria):
        reason = f"simulated {tag} {i}"
        if limit is not None:
            reason = reason[:limit]
        fields = {"score": 1 + digest[i % len(digest)] % 10, "rationale": reason}
        verdict[criterion] = {k: fields[k] for k in order if k in fields}
    return json.dumps(verdict, separators=(",", ":"))


class SimulatedChatBackend:
    """A judge server that answers from a digest of the request after a simulated latency."""

    def __init__(self, config: SimulatedConfig, *, model: str, revision: str = "") -> None:
        self.config = config
        self.mu, self.sigma = lognormal_params(config.latency_median_s, config.latency_p99_s)
        self._identity = ModelIdentity(model=model, revision=revision or "simulated")
        self._rng = random.Random(f"{config.seed}:{model}")
        self.stats = SimulatedStats()

    def identity(self) -> ModelIdentity:
        return self._identity

    def chat(self, request: ChatRequest) -> Completion:
        result = self.chat_many([request])[0]
        if isinstance(result, BackendError):
            raise result
        return result

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        started, cpu_started = time.perf_counter(), time.thread_time()
        rng, cfg = self._rng, self.config
        latencies = [math.exp(rng.gauss(self.mu, self.sigma)) for _ in requests]
        failed = [rng.random() < cfg.failure_rate for _ in requests]
        results: list[Completion | BackendError] = []
        for request, latency, fail in zip(requests, latencies, failed, strict=True):
            if fail:
                results.append(TransientBackendError("simulated HTTP 503: server overloaded"))
                continue
            text = simulated_answer(request)
            results.append(
                Completion(
                    text=text,
                    finish_reason="stop",
                    # No tokenizer stands behind a simulated answer: its token counts are unknown,
                    # and usage totals must not count invented numbers as spent tokens.
                    prompt_tokens=None,
                    completion_tokens=None,
                    latency_s=latency,
                )
            )
        span = makespan(latencies, cfg.concurrency)
        if cfg.time_scale > 0 and span > 0:
            time.sleep(span * cfg.time_scale)
            self.stats.slept_s += span * cfg.time_scale
        self.stats.calls += len(requests)
        self.stats.failures += sum(failed)
        self.stats.model_time_s += span
        self.stats.busy_s += time.perf_counter() - started
        self.stats.cpu_s += time.thread_time() - cpu_started
        return results

    def close(self) -> None:
        return None


def _open(config: SimulatedConfig, model: str, revision: str) -> ChatBackend:
    return SimulatedChatBackend(config, model=model, revision=revision)


def _identity(config: SimulatedConfig, model: str, revision: str) -> ModelIdentity:
    return ModelIdentity(model=model, revision=revision or "simulated")


SIMULATED = register_llm_backend(
    "simulated", LlmBackendKind(config=SimulatedConfig, open=_open, identity=_identity)
)
"""The ``simulated`` kind as registered (the entry point's value)."""
