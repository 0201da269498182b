"""One judge model served by several OpenAI-compatible endpoints: spread, adaptive, health-checked.

Each endpoint keeps its own in-flight limit, adjusted AIMD-style: a transient failure (HTTP 429/5xx,
timeout, connection refused or dropped) halves it, at most once per round of requests sent at the
same limit (so a burst of failures from one overload halves once, not eight times); a run of
``increase_after`` successes raises it by one, up to the endpoint's ``max_concurrency``. New
requests go to the endpoint with the fewest requests in flight per unit of ``weight``.

``down_after`` transient failures in a row mark an endpoint down for ``cooloff_s``; then one probe
request is sent to it; a success brings it back, a failure doubles the cool-off (up to 8x). A line
is logged when an endpoint goes down or comes back.

A request that fails transiently is sent again within the same :meth:`MultiEndpointBackend.chat_many`
call, to an endpoint it has not tried yet when one is up, up to ``max_attempts`` times; so an
endpoint that dies mid-run costs time, never an answer. When every endpoint is down, the batch
waits for cool-offs at most ``all_down_wait_s`` in all, then each waiting request gets a
:class:`TransientBackendError` (the judge runner's own retries take over). Results come back in
request order, exactly one per request.

The API key is read from the environment at each send by the per-endpoint clients; endpoint names in
logs and :meth:`~MultiEndpointBackend.stats` are URLs with any user-info removed.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from omnieval.backends.llm._config import (
    EndpointHealthSettings,
    HttpClientSettings,
    OpenAIBackendConfig,
)
from omnieval.backends.llm._identity import hf_identity
from omnieval.backends.llm._openai import OpenAIChatBackend, redact_url
from omnieval.backends.llm._types import (
    BackendError,
    BackendUnavailable,
    ChatBackend,
    ChatRequest,
    Completion,
    ModelIdentity,
    TransientBackendError,
)

log = logging.getLogger(__name__)

COOLOFF_GROWTH_CAP = 8.0
"""A failed probe doubles the cool-off, up to this multiple of ``cooloff_s``."""


def decreased_limit(limit: int) -> int:
    """Multiplicative decrease: half the in-flight limit, never below one.

    Example:
        >>> [decreased_limit(n) for n in (8, 5, 1)]
        [4, 2, 1]
    """
    return max(1, limit // 2)


def increased_limit(limit: int, ceiling: int) -> int:
    """Additive increase: one more request in flight, never above ``ceiling``.

    Example:
        >>> increased_limit(3, 4), increased_limit(4, 4)
        (4, 4)
    """
    return min(ceiling, limit + 1)


@dataclass(frozen=True)
class EndpointStats:
    """One endpoint's counters at the time of :meth:`MultiEndpointBackend.stats`.

    Attributes:
        name: the endpoint's URL (user-info removed).
        calls: requests sent to it.
        failures: transient failures it returned.
        in_flight: requests on it now.
        limit: its current in-flight limit.
        lowest_limit: the smallest limit it had so far.
        max_concurrency: its ceiling.
        healthy: False while it is marked down.
        downs: how often it was marked down.
    """

    name: str
    calls: int
    failures: int
    in_flight: int
    limit: int
    lowest_limit: int
    max_concurrency: int
    healthy: bool
    downs: int


@dataclass
class _Endpoint:
    name: str
    client: OpenAIChatBackend
    weight: float
    max_concurrency: int
    health: EndpointHealthSettings
    limit: int = 0
    lowest_limit: int = 0
    in_flight: int = 0
    calls: int = 0
    failures: int = 0
    successes_in_row: int = 0
    failures_in_row: int = 0
    epoch: int = 0
    """Bumped at every decrease; a failure of a request sent in an older epoch does not halve again."""
    down_until: float | None = None
    cooloff_s: float = 0.0
    probing: bool = False
    downs: int = 0
    history: list[int] = field(default_factory=list)
    """Every limit the endpoint had, in order (the first is its ceiling)."""

    def __post_init__(self) -> None:
        self.limit = self.lowest_limit = self.max_concurrency
        self.cooloff_s = self.health.cooloff_s
        self.history.append(self.limit)

    @property
    def down(self) -> bool:
        return self.down_until is not None

    def usable(self) -> bool:
        """Up, or down with its cool-off over (then one probe may go)."""
        return self.down_until is None or time.monotonic() >= self.down_until

    def has_room(self) -> bool:
        if self.down_until is None:
            return self.in_flight < self.limit
        return time.monotonic() >= self.down_until and self.in_flight == 0

    def _set_limit(self, limit: int) -> None:
        if limit != self.limit:
            self.limit = limit
            self.lowest_limit = min(self.lowest_limit, limit)
            self.history.append(limit)

    def on_success(self) -> None:
        self.failures_in_row = 0
        if self.down:
            self.down_until, self.probing, self.cooloff_s = None, False, self.health.cooloff_s
            log.warning("judge endpoint %s is up again (limit %d)", self.name, self.limit)
        self.successes_in_row += 1
        if self.successes_in_row >= self.health.increase_after:
            self.successes_in_row = 0
            self._set_limit(increased_limit(self.limit, self.max_concurrency))

    def on_answered(self) -> None:
        """The server answered, though with a final error (e.g. HTTP 400): alive, no growth."""
        self.failures_in_row = 0

    def on_failure(self, sent_epoch: int) -> None:
        self.failures += 1
        self.successes_in_row = 0
        self.failures_in_row += 1
        if sent_epoch == self.epoch:
            self.epoch += 1
            self._set_limit(decreased_limit(self.limit))
        if self.probing:
            self.probing = False
            self.cooloff_s = min(self.cooloff_s * 2, self.health.cooloff_s * COOLOFF_GROWTH_CAP)
            self.down_until = time.monotonic() + self.cooloff_s
            log.info("judge endpoint %s: probe failed; next probe in %.1f s", self.name, self.cooloff_s)
        elif not self.down and self.failures_in_row >= self.health.down_after:
            self.downs += 1
            self.down_until = time.monotonic() + self.cooloff_s
            log.warning(
                "judge endpoint %s is down after %d failures in a row; probing again in %.1f s",
                self.name,
                self.failures_in_row,
                self.cooloff_s,
            )

    def stats(self) -> EndpointStats:
        return EndpointStats(
            name=self.name,
            calls=self.calls,
            failures=self.failures,
            in_flight=self.in_flight,
            limit=self.limit,
            lowest_limit=self.lowest_limit,
            max_concurrency=self.max_concurrency,
            healthy=not self.down,
            downs=self.downs,
        )


@dataclass(frozen=True)
class _Attempt:
    index: int
    tries: int
    tried: frozenset[int]


@dataclass(frozen=True)
class _Sent:
    attempt: _Attempt
    endpoint: int
    epoch: int


class MultiEndpointBackend:
    """Chat completions spread over several servers of one model (see the module notes)."""

    def __init__(
        self,
        clients: Sequence[tuple[OpenAIChatBackend, float, int]],
        *,
        model: str,
        revision: str = "",
        health: EndpointHealthSettings | None = None,
    ) -> None:
        """``clients``: (client, weight, max_concurrency) per endpoint."""
        if not clients:
            raise BackendUnavailable(f"{model}: no endpoints given")
        self.model, self.revision = model, revision
        self.health = health or EndpointHealthSettings()
        self.endpoints = [
            _Endpoint(redact_url(client.base_url), client, weight, ceiling, self.health)
            for client, weight, ceiling in clients
        ]
        self.max_attempts = self.health.max_attempts or len(self.endpoints) + 1
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(
            max_workers=sum(e.max_concurrency for e in self.endpoints), thread_name_prefix="judge-endpoint"
        )

    @classmethod
    def from_config(
        cls, config: OpenAIBackendConfig, *, model: str, revision: str = ""
    ) -> MultiEndpointBackend:
        settings = HttpClientSettings(**{k: getattr(config, k) for k in HttpClientSettings.model_fields})
        clients: list[tuple[OpenAIChatBackend, float, int]] = []
        for i, endpoint in enumerate(config.endpoints):
            url = endpoint.base_url or (
                os.environ.get(endpoint.base_url_env, "") if endpoint.base_url_env else ""
            )
            if not url:
                raise BackendUnavailable(
                    f"no server address for {model} endpoints[{i}]: set ${endpoint.base_url_env}"
                )
            ceiling = endpoint.max_concurrency or settings.concurrency
            client = OpenAIChatBackend(
                url,
                model=model,
                revision=revision,
                served_model=config.served_model,
                api_key_env=config.api_key_env,
                settings=settings.model_copy(update={"concurrency": ceiling}),
            )
            clients.append((client, endpoint.weight, ceiling))
        return cls(clients, model=model, revision=revision, health=config.endpoint_health)

    def __repr__(self) -> str:
        return f"MultiEndpointBackend({[e.name for e in self.endpoints]!r}, model={self.model!r})"

    def identity(self) -> ModelIdentity:
        return hf_identity(self.model, self.revision)

    def stats(self) -> list[EndpointStats]:
        """Per-endpoint counters, in config order (safe to call from another thread)."""
        with self._lock:
            return [e.stats() for e in self.endpoints]

    def limit_history(self, endpoint: int) -> list[int]:
        """Every in-flight limit endpoint ``endpoint`` had so far, in order."""
        with self._lock:
            return list(self.endpoints[endpoint].history)

    def _pick(self, tried: frozenset[int]) -> int | None:
        """The endpoint for a request that already failed on ``tried``, or None to wait."""
        untried_usable = [i for i, e in enumerate(self.endpoints) if i not in tried and e.usable()]
        pool = untried_usable or range(len(self.endpoints))
        best: int | None = None
        best_load = 0.0
        for i in pool:
            e = self.endpoints[i]
            if not e.has_room():
                continue
            load = (e.in_flight + 1) / e.weight
            if best is None or load < best_load:
                best, best_load = i, load
        return best

    def _next_wake(self) -> float | None:
        """Seconds until the next cool-off ends (None when no endpoint is cooling off)."""
        now = time.monotonic()
        ends = [e.down_until for e in self.endpoints if e.down_until is not None and e.down_until > now]
        return min(ends) - now if ends else None

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        results: list[Completion | BackendError | None] = [None] * len(requests)
        queue: deque[_Attempt] = deque(_Attempt(i, 0, frozenset()) for i in range(len(requests)))
        flying: dict[Future[Completion | BackendError], _Sent] = {}
        waited = 0.0
        while queue or flying:
            with self._lock:
                self._dispatch(requests, queue, flying)
            if flying:
                with self._lock:
                    wake = self._next_wake()
                done, _ = wait(list(flying), timeout=wake, return_when=FIRST_COMPLETED)
                with self._lock:
                    for future in done:
                        self._settle(flying.pop(future), future.result(), queue, results)
                continue
            # Nothing in flight and nothing could be sent: every endpoint is down.
            with self._lock:
                # Never a busy loop: a cool-off that is over but blocked by another call's
                # in-flight request is checked again shortly.
                wake = max(self._next_wake() or 0.0, 0.01)
            if waited + wake > self.health.all_down_wait_s:
                names = ", ".join(e.name for e in self.endpoints)
                while queue:
                    attempt = queue.popleft()
                    results[attempt.index] = TransientBackendError(
                        f"{self.model}: all {len(self.endpoints)} endpoints are down ({names})"
                    )
                break
            time.sleep(wake)
            waited += wake
        assert all(r is not None for r in results)
        return [r for r in results if r is not None]

    def _dispatch(
        self,
        requests: Sequence[ChatRequest],
        queue: deque[_Attempt],
        flying: dict[Future[Completion | BackendError], _Sent],
    ) -> None:
        """Send queued requests while some endpoint has room; the rest wait in order."""
        waiting: deque[_Attempt] = deque()
        while queue:
            if not any(e.has_room() for e in self.endpoints):
                break
            attempt = queue.popleft()
            chosen = self._pick(attempt.tried)
            if chosen is None:
                waiting.append(attempt)
                continue
            endpoint = self.endpoints[chosen]
            if endpoint.down:
                endpoint.probing = True
            endpoint.in_flight += 1
            endpoint.calls += 1
            future = self._pool.submit(endpoint.client.try_chat, requests[attempt.index])
            flying[future] = _Sent(attempt, chosen, endpoint.epoch)
        queue.extendleft(reversed(waiting))

    def _settle(
        self,
        sent: _Sent,
        result: Completion | BackendError,
        queue: deque[_Attempt],
        results: list[Completion | BackendError | None],
    ) -> None:
        endpoint = self.endpoints[sent.endpoint]
        endpoint.in_flight -= 1
        attempt = sent.attempt
        if isinstance(result, Completion):
            endpoint.on_success()
            results[attempt.index] = result
        elif result.transient:
            endpoint.on_failure(sent.epoch)
            tries = attempt.tries + 1
            if tries < self.max_attempts:
                # First in line: a retried request should not wait behind the whole batch.
                queue.appendleft(_Attempt(attempt.index, tries, attempt.tried | {sent.endpoint}))
            else:
                results[attempt.index] = result
        else:
            endpoint.on_answered()
            results[attempt.index] = result

    def chat(self, request: ChatRequest) -> Completion:
        (result,) = self.chat_many([request])
        if isinstance(result, BackendError):
            raise result
        return result

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        for endpoint in self.endpoints:
            endpoint.client.close()


def open_openai_backend(config: OpenAIBackendConfig, *, model: str, revision: str = "") -> ChatBackend:
    """The client for ``config``: one server, or several spread by
    :class:`MultiEndpointBackend` when ``endpoints`` is given."""
    if config.endpoints:
        return MultiEndpointBackend.from_config(config, model=model, revision=revision)
    return OpenAIChatBackend.from_config(config, model=model, revision=revision)
