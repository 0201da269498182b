"""Several judge endpoints against real local HTTP servers: spread, AIMD concurrency, health, no loss."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from llm_stub_server import Recorded, Reply, StubServer, completion

from omnieval.backends.llm import (
    ChatRequest,
    Completion,
    Message,
    OpenAIBackendConfig,
    TransientBackendError,
    open_backend,
)
from omnieval.backends.llm._config import EndpointHealthSettings
from omnieval.backends.llm._endpoints import MultiEndpointBackend, _Endpoint

SECRET = "sk-endpoints-91c2-never-log"
MODEL = "org/judge-model"


@dataclass
class Behaviour:
    """How one test server answers. ``mode``: ``ok``, ``die_after`` (answers ``limit`` requests, then
    drops every connection and shuts down) or ``throttle_first`` (HTTP 429 to the first ``limit``)."""

    mode: str = "ok"
    limit: int = 0
    delay_s: tuple[float, float] = (0.02, 0.05)
    seen: int = 0
    answered: Counter[str] = field(default_factory=Counter)
    throttled: int = 0
    dropped: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    authorizations: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Server(StubServer):
    """A stub chat-completions server on 127.0.0.1 (port 0) that answers ``echo:<user text>``."""

    def __init__(self, behaviour: Behaviour) -> None:
        super().__init__(respond=self._respond)
        self.behaviour = behaviour
        self.start()

    def _respond(self, request: Recorded) -> Reply | None:
        b = self.behaviour
        text = request.body["messages"][-1]["content"]
        with b.lock:
            b.seen += 1
            b.authorizations.add(request.headers.get("Authorization", ""))
            b.in_flight += 1
            b.max_in_flight = max(b.max_in_flight, b.in_flight)
            dying = b.mode == "die_after" and sum(b.answered.values()) >= b.limit
            throttle = b.mode == "throttle_first" and b.seen <= b.limit
        try:
            time.sleep(random.uniform(*b.delay_s))
            if dying:
                with b.lock:
                    b.dropped += 1
                # The server dies mid-request: the connection closes without an answer.
                threading.Thread(target=self.stop, daemon=True).start()
                return None
            if throttle:
                with b.lock:
                    b.throttled += 1
                return 429, {"error": "slow down"}
            with b.lock:
                b.answered[text] += 1
            return completion(f"echo:{text}")
        finally:
            with b.lock:
                b.in_flight -= 1


@pytest.fixture()
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


def _request(i: int) -> ChatRequest:
    return ChatRequest(messages=(Message.text_only("system", "judge"), Message.text_only("user", f"req-{i}")))


def _config(urls: list[str], **health: Any) -> OpenAIBackendConfig:
    return OpenAIBackendConfig(
        endpoints=tuple({"base_url": u, "max_concurrency": 4} for u in urls),  # type: ignore[misc]
        api_key_env="ENDPOINT_TEST_KEY",
        timeout_s=10.0,
        endpoint_health=EndpointHealthSettings(**health),
    )


def test_dying_and_throttled_endpoints_lose_nothing(
    servers: list[Server], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ENDPOINT_TEST_KEY", SECRET)
    healthy = Behaviour()
    dying = Behaviour(mode="die_after", limit=15)
    throttled = Behaviour(mode="throttle_first", limit=6)
    servers += [Server(healthy), Server(dying), Server(throttled)]
    config = _config([s.url for s in servers], increase_after=2, down_after=3, cooloff_s=0.05)
    backend = open_backend(config, model=MODEL)
    assert isinstance(backend, MultiEndpointBackend)
    n = 240
    caplog.set_level(logging.INFO, logger="omnieval.backends.llm._endpoints")
    try:
        # Several batches, as the judge runner sends them: the throttled endpoint recovers later.
        results: list[Completion | Exception] = []
        for start in range(0, n, 40):
            results += backend.chat_many([_request(i) for i in range(start, start + 40)])
        stats = backend.stats()
        history = backend.limit_history(2)
    finally:
        backend.close()

    # Exactly one answer per request, in request order, none lost.
    assert len(results) == n
    assert all(isinstance(r, Completion) for r in results), [
        r for r in results if not isinstance(r, Completion)
    ]
    assert [r.text for r in results if isinstance(r, Completion)] == [f"echo:req-{i}" for i in range(n)]
    answered = healthy.answered + dying.answered + throttled.answered
    assert set(answered) == {f"req-{i}" for i in range(n)}
    assert max(answered.values()) == 1, "a request was answered twice"

    # The dying endpoint answered its share, then dropped connections and went down for good.
    assert sum(dying.answered.values()) >= 15 and dying.dropped >= 1 and servers[1].stopped
    assert stats[1].healthy is False and stats[1].downs >= 1 and stats[1].failures >= 3
    # The throttled endpoint halved its limit on 429s, came back and grew again.
    assert throttled.throttled == 6
    assert stats[2].lowest_limit < 4 and stats[2].failures == 6
    low = history.index(min(history))
    assert max(history[low:]) > min(history), history
    assert stats[2].healthy and sum(throttled.answered.values()) > 0
    # The server never saw more requests at once than the endpoint's ceiling.
    assert max(b.max_in_flight for b in (healthy, dying, throttled)) <= 4
    # Counters add up: every call is an answer or a failure (dropped, throttled, refused).
    assert sum(s.calls for s in stats) == n + sum(s.failures for s in stats)

    messages = caplog.text
    assert "is down after" in messages and "is up again" in messages
    # The key travels as the bearer token and nowhere else.
    assert {f"Bearer {SECRET}"} == healthy.authorizations
    assert SECRET not in messages and SECRET not in repr(stats) and SECRET not in repr(backend)


def test_all_endpoints_down_fails_each_request(servers: list[Server]) -> None:
    servers += [Server(Behaviour()), Server(Behaviour())]
    urls = [s.url for s in servers]
    for server in servers:
        server.stop()
    config = OpenAIBackendConfig(
        endpoints=tuple({"base_url": u, "max_concurrency": 2} for u in urls),  # type: ignore[misc]
        endpoint_health=EndpointHealthSettings(down_after=1, cooloff_s=0.1, all_down_wait_s=0.5),
    )
    backend = open_backend(config, model=MODEL)
    # No timing assertion: a request that waited forever would hit pytest's own timeout.
    try:
        results = backend.chat_many([_request(i) for i in range(10)])
    finally:
        backend.close()
    assert len(results) == 10
    assert all(isinstance(r, TransientBackendError) for r in results)


def test_weights_spread_calls(servers: list[Server]) -> None:
    heavy, light = Behaviour(delay_s=(0.02, 0.02)), Behaviour(delay_s=(0.02, 0.02))
    servers += [Server(heavy), Server(light)]
    config = OpenAIBackendConfig(
        endpoints=(
            {"base_url": servers[0].url, "weight": 3.0, "max_concurrency": 3},  # type: ignore[arg-type]
            {"base_url": servers[1].url, "weight": 1.0, "max_concurrency": 3},  # type: ignore[arg-type]
        ),
    )
    backend = open_backend(config, model=MODEL)
    try:
        results = backend.chat_many([_request(i) for i in range(4)])
    finally:
        backend.close()
    assert [r.text for r in results if isinstance(r, Completion)] == [f"echo:req-{i}" for i in range(4)]
    # Least load per unit of weight: 3 go to the weight-3 endpoint, 1 to the other.
    assert (sum(heavy.answered.values()), sum(light.answered.values())) == (3, 1)


def test_one_overload_halves_once_not_per_failed_request() -> None:
    endpoint = _Endpoint("http://x/v1", None, 1.0, 8, EndpointHealthSettings(down_after=100))  # type: ignore[arg-type]
    sent_epoch = endpoint.epoch
    for _ in range(8):  # eight requests sent at limit 8 all come back 429
        endpoint.on_failure(sent_epoch)
    assert endpoint.limit == 4
    endpoint.on_failure(endpoint.epoch)  # a request sent after the decrease fails too
    assert endpoint.limit == 2
    for _ in range(3 * EndpointHealthSettings().increase_after):
        endpoint.on_success()
    assert endpoint.limit == 5 and endpoint.history == [8, 4, 2, 3, 4, 5]


def test_config_rejects_mixed_addresses_and_reads_env_urls(
    servers: list[Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="not both"):
        OpenAIBackendConfig(base_url="http://a/v1", endpoints=({"base_url": "http://b/v1"},))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="endpoints\\[0\\]"):
        OpenAIBackendConfig(endpoints=({"weight": 2.0},))  # type: ignore[arg-type]
    servers.append(Server(Behaviour()))
    monkeypatch.setenv("JUDGE_EP_A", servers[0].url)
    config = OpenAIBackendConfig(endpoints=({"base_url_env": "JUDGE_EP_A"},))  # type: ignore[arg-type]
    backend = open_backend(config, model=MODEL)
    try:
        assert backend.chat(_request(7)).text == "echo:req-7"
    finally:
        backend.close()
