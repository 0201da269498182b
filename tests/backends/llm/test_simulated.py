"""The simulated judge server: deterministic valid verdicts, failure rate, latency law, virtual time."""

from __future__ import annotations

import math
import random
import statistics

import pytest

import omnieval.benchmarks  # noqa: F401  (storybench registers the judge tracks these verdicts use)
from omnieval.backends.llm import (
    BackendError,
    ChatRequest,
    Completion,
    Message,
    backend_identity,
    open_backend,
)
from omnieval.judges import TRACKS, parse_verdict, schema_example, verdict_schema
from omnieval_testkit import SimulatedConfig
from omnieval_testkit.simulated import SimulatedChatBackend, lognormal_params, makespan


def _request(text: str, schema: dict[str, object] | None = None) -> ChatRequest:
    return ChatRequest(
        messages=(Message.text_only("system", "judge"), Message.text_only("user", text)), json_schema=schema
    )


def _backend(**kwargs: object) -> SimulatedChatBackend:
    return SimulatedChatBackend(SimulatedConfig(**kwargs), model="sim/judge")  # type: ignore[arg-type]


def test_answers_depend_only_on_the_request() -> None:
    requests = [_request(f"candidate {i}", verdict_schema("text")) for i in range(50)]
    first = _backend(seed=1).chat_many(requests)
    second = _backend(seed=2, latency_median_s=0.1, latency_p99_s=0.2).chat_many(list(reversed(requests)))
    texts = [r.text for r in first if isinstance(r, Completion)]
    assert texts == [r.text for r in reversed(second) if isinstance(r, Completion)]
    assert len(set(texts)) == 50  # the digest picks different verdicts for different requests
    scores = [parse_verdict(t, "text").scores for t in texts]
    assert {s for verdict in scores for s in verdict.values()} == set(range(1, 11))


@pytest.mark.parametrize("track", list(TRACKS))
def test_every_answer_is_a_verdict_the_ledger_reads(track: str) -> None:
    backend = _backend()
    schema = verdict_schema(track, rationale_max_chars=12, rationale_first=True)
    answer = backend.chat(_request("x", schema)).text
    reading = parse_verdict(answer, track)
    assert reading.ok and list(reading.scores) == list(TRACKS[track].criteria)
    assert reading.rationales
    assert all(len(r) <= 12 for r in reading.rationales.values())
    first = next(iter(__import__("json").loads(answer).values()))
    assert list(first) == ["rationale", "score"]  # the schema's field order
    # Without a schema the criteria are the keys of the answer shape the prompt shows.
    shown = backend.chat(
        _request(f"Answer with JSON only, in exactly this shape:\n{schema_example(track)}")
    ).text
    reading = parse_verdict(shown, track)
    assert reading.ok and list(reading.scores) == list(TRACKS[track].criteria)


def test_without_a_schema_or_a_shape_the_answer_uses_the_fallback_keys() -> None:
    # JSON in the inputs (no score-and-rationale entries) is not mistaken for the answer shape.
    answer = _backend().chat(_request('metadata {"hero": {"name": "Pip"}} and nothing else')).text
    assert parse_verdict(answer, "text").ok


def test_failure_rate_and_reproducible_failures() -> None:
    requests = [_request(f"r{i}") for i in range(4000)]
    runs = []
    for _ in range(2):
        backend = _backend(failure_rate=0.2, seed=7)
        results = [r for start in range(0, 4000, 64) for r in backend.chat_many(requests[start : start + 64])]
        runs.append([isinstance(r, BackendError) for r in results])
        failed = [r for r in results if isinstance(r, BackendError)]
        assert 600 < len(failed) < 1000  # ~20 % of 4,000
        assert all(r.transient for r in failed)
        assert backend.stats.failures == len(failed) and backend.stats.calls == 4000
    assert runs[0] == runs[1]
    share = sum(runs[0]) / 4000
    assert abs(share - 0.2) < 0.03  # binomial sd 0.006
    assert sum(isinstance(r, BackendError) for r in _backend().chat_many(requests[:500])) == 0


def test_latency_follows_the_lognormal_law() -> None:
    mu, sigma = lognormal_params(2.0, 20.0)
    assert math.exp(mu) == pytest.approx(2.0)
    assert math.exp(mu + 2.3263478740408408 * sigma) == pytest.approx(20.0)
    backend = _backend(latency_median_s=2.0, latency_p99_s=20.0)
    results = backend.chat_many([_request(f"q{i}") for i in range(20000)])
    lat = sorted(r.latency_s for r in results if isinstance(r, Completion))
    assert statistics.median(lat) == pytest.approx(2.0, rel=0.05)
    assert lat[int(0.99 * len(lat))] == pytest.approx(20.0, rel=0.12)
    with pytest.raises(BackendError, match="below"):
        _backend(latency_median_s=3.0, latency_p99_s=1.0)


def test_makespan_by_hand() -> None:
    # Two slots: 3 on one; 1, 1, 1 one after another on the other -> both end at 3.
    assert makespan([3.0, 1.0, 1.0, 1.0], 2) == 3.0
    assert makespan([1.0, 1.0, 1.0], 1) == 3.0
    assert makespan([2.0, 5.0, 1.0], 8) == 5.0
    assert makespan([], 4) == 0.0
    # Independent check: a plain loop over slots, always the least-loaded one.
    rng = random.Random(0)
    lat = [rng.uniform(0.1, 3.0) for _ in range(40)]
    slots = [0.0] * 6
    for x in lat:
        i = min(range(6), key=lambda k: slots[k])
        slots[i] += x
    assert makespan(lat, 6) == pytest.approx(max(slots))


def test_virtual_time_and_sleep_scale() -> None:
    backend = _backend(latency_median_s=1.0, latency_p99_s=1.0 + 1e-9, concurrency=4, time_scale=0.001)
    backend.chat_many([_request(f"s{i}") for i in range(8)])  # 8 calls of ~1 s on 4 slots: ~2 s
    assert backend.stats.model_time_s == pytest.approx(2.0, rel=1e-6)
    assert backend.stats.slept_s == pytest.approx(0.002, rel=1e-6)
    assert backend.stats.busy_s >= backend.stats.slept_s


def test_registered_as_a_backend_kind() -> None:
    config = SimulatedConfig(failure_rate=0.0)
    backend = open_backend(config, model="sim/x")
    assert backend.identity() == backend_identity(config, model="sim/x")
    assert parse_verdict(backend.chat(_request("hi", verdict_schema("image"))).text, "image").ok
    backend.close()
