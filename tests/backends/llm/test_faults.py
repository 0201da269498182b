"""The fault-injecting backend: seeded draws, rates, transport vs content faults, cache separation."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from omnieval.backends.llm import (
    BackendConfig,
    ChatRequest,
    Completion,
    Message,
    TransientBackendError,
    backend_identity,
    open_backend,
    output_fingerprint,
)
from omnieval_testkit import FAULT_KINDS, FaultsConfig, ScriptedConfig, request_digest
from omnieval_testkit.faults import FaultInjectingBackend, draw_fault

VERDICT = {"alignment_with_metadata": {"score": 7, "rationale": "fits the book"}}
ANSWERED: list[str] = []


def answer(request: ChatRequest) -> str:
    ANSWERED.append(request.messages[-1].text)
    return json.dumps(VERDICT)


INNER = {"kind": "scripted", "script": f"{__name__}:answer"}


def _faults(**kwargs: object) -> FaultsConfig:
    return TypeAdapter(BackendConfig).validate_python({"kind": "faults", "inner": INNER, **kwargs})  # type: ignore[return-value]


def _request(i: int) -> ChatRequest:
    return ChatRequest(messages=(Message.text_only("user", f"judge page {i}"),))


def _open(config: FaultsConfig) -> FaultInjectingBackend:
    backend = open_backend(config, model="scripted/m")
    assert isinstance(backend, FaultInjectingBackend)
    return backend


def test_rate_is_spread_evenly_and_draws_match_the_rates() -> None:
    config = _faults(rate=0.35, seed=3)
    assert config.rates() == pytest.approx({k: 0.05 for k in FAULT_KINDS})
    n = 20_000
    counts = Counter(draw_fault(3, f"r{i}", 0, config.rates()) for i in range(n))
    for kind in FAULT_KINDS:
        # Binomial(20000, 0.05): sd ~31; 5 sd either side.
        assert abs(counts[kind] - 0.05 * n) < 160, (kind, counts[kind])
    assert abs(counts[None] - 0.65 * n) < 340


def test_draws_are_reproducible_per_seed_request_and_attempt() -> None:
    rates = _faults(rate=0.5).rates()
    a = [draw_fault(1, f"r{i}", k, rates) for i in range(200) for k in range(3)]
    assert a == [draw_fault(1, f"r{i}", k, rates) for i in range(200) for k in range(3)]
    assert a != [draw_fault(2, f"r{i}", k, rates) for i in range(200) for k in range(3)]
    # Attempts draw afresh: the first attempt's fault does not decide the second's.
    assert any(draw_fault(1, f"r{i}", 0, rates) != draw_fault(1, f"r{i}", 1, rates) for i in range(50))


def test_transport_faults_never_reach_the_inner_model_and_retries_recover() -> None:
    backend = _open(_faults(http_429=0.5, http_5xx=0.25, timeout=0.25, timeout_s=0.0))
    ANSWERED.clear()
    requests = [_request(i) for i in range(20)]
    first = backend.chat_many(requests)
    assert len(first) == 20
    # Every attempt faults: all transient, nothing answered.
    assert all(isinstance(r, TransientBackendError) and r.transient for r in first)
    assert ANSWERED == []
    kinds = Counter(e.fault for e in backend.events)
    assert sum(kinds.values()) == 20 and set(kinds) <= {"http_429", "http_5xx", "timeout"}
    assert backend.events and all(e.attempt == 0 for e in backend.events)
    backend.chat_many(requests)
    assert [e.attempt for e in backend.events[20:]] == [1] * 20

    half = _open(_faults(dropped_connection=0.5, seed=11))
    ANSWERED.clear()
    pending = list(range(20))
    for _attempt in range(30):
        results = half.chat_many([_request(i) for i in pending])
        pending = [i for i, r in zip(pending, results, strict=True) if not isinstance(r, Completion)]
        if not pending:
            break
    assert pending == []
    # Each request reached the inner model once: on the attempt that was not dropped.
    assert sorted(ANSWERED) == sorted(f"judge page {i}" for i in range(20))


def test_content_faults_damage_answers_and_slow_tails_do_not() -> None:
    request = _request(1)
    clean = json.dumps(VERDICT)

    malformed = _open(_faults(malformed_json=1.0)).chat(request)
    with pytest.raises(ValueError):
        json.loads(malformed.text)
    assert "7" in malformed.text and "fits the book" in malformed.text

    truncated = _open(_faults(truncated_json=1.0)).chat(request)
    assert truncated.finish_reason == "length"
    assert clean.startswith(truncated.text) and 0 < len(truncated.text) < len(clean)

    slow = _open(_faults(slow_tail=1.0, slow_tail_s=0.05)).chat(request)
    assert slow.text == clean and slow.latency_s >= 0.05


def test_same_seed_same_run() -> None:
    config = _faults(rate=0.6, seed=5, timeout_s=0.0, slow_tail_s=0.0)

    def run() -> list[str]:
        backend = _open(config)
        out = []
        for _ in range(3):
            for r in backend.chat_many([_request(i) for i in range(30)]):
                out.append(r.text if isinstance(r, Completion) else f"error: {r}")
        return out

    assert run() == run()


def test_cache_identity_and_fingerprint() -> None:
    inner = ScriptedConfig(script=f"{__name__}:answer")
    a, b = _faults(rate=0.1, seed=7), _faults(rate=0.1, seed=8)
    # Same weights, so lineage names the wrapped model ...
    assert backend_identity(a, model="m") == backend_identity(inner, model="m")
    # ... but a faulty suite's answers are keyed apart from a clean one's and from another seed's.
    assert output_fingerprint(a) != output_fingerprint(inner)
    assert output_fingerprint(a) != output_fingerprint(b)
    assert output_fingerprint(a)["inner"] == output_fingerprint(inner)
    # Speed settings do not change answers, so they stay out of the key.
    assert output_fingerprint(a) == output_fingerprint(_faults(rate=0.1, seed=7, slow_tail_s=9.0))


def test_config_errors() -> None:
    with pytest.raises(ValidationError, match="not both"):
        _faults(rate=0.1, http_429=0.1)
    with pytest.raises(ValidationError, match="more than 1"):
        _faults(http_429=0.6, http_5xx=0.6)
    with pytest.raises(ValidationError):
        _faults(rate=0.1, brownout=0.1)


def test_request_digest_follows_media_content(tmp_path: Path) -> None:
    from omnieval.backends.llm import ImagePart

    first, second = tmp_path / "a.png", tmp_path / "b.png"
    first.write_bytes(b"same")
    second.write_bytes(b"same")

    def with_image(path: Path) -> ChatRequest:
        return ChatRequest(messages=(Message("user", (ImagePart(path),)),))

    assert request_digest(with_image(first)) == request_digest(with_image(second))
    second.write_bytes(b"other")
    assert request_digest(with_image(first)) != request_digest(with_image(second))


def test_usable_from_a_panel_yaml(tmp_path: Path) -> None:
    import omnieval.benchmarks  # noqa: F401  (registers the rubrics panels refer to)
    from omnieval.judges._panels import load_panel

    panel = tmp_path / "faulty.yaml"
    panel.write_text(
        textwrap.dedent(
            f"""\
            name: faulty
            tracks:
              text:
                judges:
                  - id: j
                    model: scripted/j
                    backend: {{kind: faults, rate: 0.1, seed: 7, inner: {{kind: scripted, script: "{__name__}:answer"}}}}
              image: {{unavailable: none}}
            """
        ),
        encoding="utf-8",
    )
    judge = load_panel(str(panel)).tracks["text"].judges[0]
    assert isinstance(judge.backend, FaultsConfig) and judge.backend.seed == 7
    assert isinstance(judge.backend.inner, ScriptedConfig)
