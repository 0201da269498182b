"""The shared call machinery (``omnieval.judges._calls``): jittered retries, cache, model groups.

Both judge runners (the panel runner and PRISM's) send every request through
:meth:`CallRunner.run_jobs`, so what is checked here holds for both.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tenacity import RetryCallState

from omnieval.backends.llm._types import (
    BackendError,
    ChatBackend,
    ChatRequest,
    Completion,
    Message,
    ModelIdentity,
    TextPart,
    TransientBackendError,
)
from omnieval.judges._calls import (
    RETRY_WAIT_MAX_S,
    BackendPool,
    CallRunner,
    retry_wait,
    send_with_retries,
)
from omnieval.judges._panels import JudgeConfig


def _state(attempt: int) -> RetryCallState:
    state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    state.attempt_number = attempt
    return state


def test_retry_wait_doubles_with_at_most_one_backoff_of_jitter() -> None:
    for attempt in range(1, 6):
        floor = 2.0 * 2 ** (attempt - 1)
        waits = [retry_wait(2.0)(_state(attempt)) for _ in range(200)]
        assert len(waits) == 200
        assert all(floor <= w <= floor + 2.0 for w in waits)
        assert len(set(waits)) > 1  # jittered, not a fixed schedule
    assert retry_wait(2.0)(_state(30)) == RETRY_WAIT_MAX_S
    assert retry_wait(0.0)(_state(3)) == 0.0  # no backoff asked, no wait added


def test_send_with_retries_resends_what_send_hands_back(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    sent: list[tuple[list[str], int]] = []

    def send(pending: list[str], attempt: int) -> list[str]:
        sent.append((list(pending), attempt))
        return pending[1:]  # the first job of each sending is settled, the rest fail transiently

    send_with_retries(send, ["a", "b", "c"], lambda pending: 1.0)
    assert sent == [(["a", "b", "c"], 0), (["b", "c"], 1), (["c"], 2)]
    assert len(slept) == 2 and 1.0 <= slept[0] <= 2.0 and 2.0 <= slept[1] <= 3.0


def test_send_with_retries_never_retries_an_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "sleep", lambda s: pytest.fail("slept before re-raising"))
    calls: list[int] = []

    def send(pending: list[str], attempt: int) -> list[str]:
        calls.append(attempt)
        raise RuntimeError("backend crashed")

    with pytest.raises(RuntimeError, match="backend crashed"):
        send_with_retries(send, ["a"], lambda pending: 0.0)
    assert calls == [0]


# -- CallRunner.run_jobs -------------------------------------------------------------------------


def _judge(judge_id: str, *, retries: int, model: str = "scripted/m", batch_size: int = 2) -> JudgeConfig:
    return JudgeConfig.model_validate(
        {
            "id": judge_id,
            "model": model,
            "backend": {"kind": "scripted", "script": "tests:unused"},
            "retries": retries,
            "retry_backoff_s": 0.0,
            "batch_size": batch_size,
        }
    )


class _Backend:
    """Answers ``echo:<text>``; the first ``failures[text]`` sendings of a request fail transiently."""

    def __init__(self, failures: dict[str, int]) -> None:
        self.failures = dict(failures)
        self.batches: list[list[str]] = []
        self.closed = False

    def identity(self) -> ModelIdentity:
        return ModelIdentity(model="scripted/m", revision="", weights_sha256={})

    def chat(self, request: ChatRequest) -> Completion:
        result = self.chat_many([request])[0]
        if isinstance(result, BackendError):
            raise result
        return result

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        texts = [_text(r) for r in requests]
        self.batches.append(texts)
        out: list[Completion | BackendError] = []
        for text in texts:
            if self.failures.get(text, 0) > 0:
                self.failures[text] -= 1
                out.append(TransientBackendError(f"429 for {text}"))
            else:
                out.append(Completion(text=f"echo:{text}", latency_s=0.5))
        return out

    def close(self) -> None:
        self.closed = True


def _text(request: ChatRequest) -> str:
    part = request.messages[0].parts[0]
    assert isinstance(part, TextPart)
    return part.text


@dataclass
class _Job:
    judge: JudgeConfig
    text: str
    order: tuple[Any, ...]
    outcome: list[str] = field(default_factory=list)

    @property
    def request(self) -> ChatRequest:
        return ChatRequest(messages=(Message(role="user", parts=(TextPart(self.text),)),))

    @property
    def key(self) -> str:
        return f"{self.judge.id}-{self.text}".ljust(64, "0")

    @property
    def meta(self) -> dict[str, Any]:
        return {"judge": self.judge.id}

    def on_done(self, completion: Completion, cached: bool) -> None:
        self.outcome.append(f"{'cached' if cached else 'sent'} {completion.text}")

    def on_error(self, error: BackendError) -> None:
        self.outcome.append(f"error {error}")

    def on_unavailable(self, reason: str) -> None:
        self.outcome.append(f"unavailable {reason}")


def _runner(tmp_path: Path, backend: _Backend | None) -> CallRunner:
    def factory(judge: JudgeConfig) -> ChatBackend:
        if backend is None:
            raise BackendError("no such model here")
        return backend

    return CallRunner(tmp_path / "cache", BackendPool(factory))


def test_run_jobs_retries_transient_failures_per_judge_and_caches_answers(tmp_path: Path) -> None:
    patient, impatient = _judge("patient", retries=2), _judge("impatient", retries=0)
    backend = _Backend({"p1": 1, "p2": 2, "i1": 1})
    jobs = [
        _Job(patient, "p1", (1,)),
        _Job(patient, "p2", (2,)),
        _Job(impatient, "i1", (0,)),
        _Job(patient, "p3", (3,)),
    ]
    runner = _runner(tmp_path, backend)
    runner.run_jobs(jobs)
    assert [j.outcome for j in jobs] == [
        ["sent echo:p1"],
        ["sent echo:p2"],
        ["error 429 for i1"],  # no retries for this judge, though it shares the model and the batch
        ["sent echo:p3"],
    ]
    # Model order (the jobs' ``order``), batches of two, each resend only of what failed.
    assert backend.batches == [["i1", "p1"], ["p1"], ["p2", "p3"], ["p2"], ["p2"]]
    assert runner.counters.calls == 7 and runner.counters.hits == 0
    assert backend.closed  # its group was answered and nothing asked to keep it open

    again = [_Job(j.judge, j.text, j.order) for j in jobs]
    rerun = _runner(tmp_path, _Backend({}))
    rerun.run_jobs(again)
    assert [j.outcome for j in again[:2]] == [["cached echo:p1"], ["cached echo:p2"]]
    assert again[2].outcome == ["sent echo:i1"]  # a failure is never cached: asked again
    assert rerun.counters.hits == 3 and rerun.counters.calls == 1


def test_run_jobs_settles_a_group_whose_model_cannot_open(tmp_path: Path) -> None:
    jobs = [_Job(_judge("j", retries=1), "x", (0,))]
    runner = _runner(tmp_path, None)
    runner.run_jobs(jobs)
    assert jobs[0].outcome == ["unavailable no such model here"]
    assert runner.counters.calls == 0


# -- usage ---------------------------------------------------------------------------------------


def test_run_jobs_counts_tokens_and_seconds_per_judge_from_an_http_server(tmp_path: Path) -> None:
    """Tokens come from the server's ``usage``; a rerun answers from the cache at no token cost,
    with the cache keys (and so the cached entries) unchanged."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backends" / "llm"))
    from llm_stub_server import StubServer

    from omnieval.backends.llm._openai import OpenAIChatBackend

    judge_a, judge_b = _judge("a", retries=0), _judge("b", retries=0)
    with StubServer() as server:

        def factory(judge: JudgeConfig) -> ChatBackend:
            return OpenAIChatBackend(server.url, model="stub")

        jobs = [_Job(judge_a, "x", (0,)), _Job(judge_a, "y", (1,)), _Job(judge_b, "z", (2,))]
        runner = CallRunner(tmp_path / "cache", BackendPool(factory))
        runner.run_jobs(jobs)
        usage = runner.usage_json()
        # The stub reports 11 prompt and 7 completion tokens per answer.
        assert usage["a"]["calls"] == 2 and usage["a"]["cached_calls"] == 0
        assert (usage["a"]["prompt_tokens"], usage["a"]["completion_tokens"]) == (22, 14)
        assert (usage["b"]["prompt_tokens"], usage["b"]["completion_tokens"]) == (11, 7)
        assert usage["a"]["seconds"] > 0 and usage["a"]["calls_with_tokens"] == 2
        sent = len(server.state.requests)

        again = [_Job(j.judge, j.text, j.order) for j in jobs]
        rerun = CallRunner(tmp_path / "cache", BackendPool(factory))
        rerun.run_jobs(again)
        assert len(server.state.requests) == sent  # every answer came from the cache
    cached = rerun.usage_json()
    assert cached["a"] == {
        "calls": 0,
        "cached_calls": 2,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "calls_with_tokens": 0,
        "seconds": 0.0,
    }
    # The cache entry still holds the original call's usage (the value is not part of the key).
    entry = runner.cache.get(jobs[0].key)
    assert entry is not None and (entry.prompt_tokens, entry.completion_tokens) == (11, 7)


def test_usage_of_a_backend_that_reports_no_tokens_is_unknown_not_zero(tmp_path: Path) -> None:
    backend = _Backend({"f": 1})
    jobs = [_Job(_judge("j", retries=0), "ok", (0,)), _Job(_judge("j", retries=0), "f", (1,))]
    runner = _runner(tmp_path, backend)
    runner.run_jobs(jobs)
    entry = runner.usage_json()["j"]
    # Two calls (the failed one took time too), no token counts reported by this backend.
    assert entry["calls"] == 2 and entry["calls_with_tokens"] == 0
    assert entry["prompt_tokens"] is None and entry["completion_tokens"] is None


# -- budget --------------------------------------------------------------------------------------


def test_a_used_budget_withholds_the_rest_and_a_larger_one_finishes_from_the_cache(tmp_path: Path) -> None:
    from pydantic import ValidationError

    from omnieval.judges import JudgeBudget, spending_limit

    judge, other = _judge("a", retries=0, batch_size=2), _judge("b", retries=0, model="scripted/other")
    texts = ["t1", "t2", "t3", "t4", "t5"]
    jobs = [_Job(judge, t, (i,)) for i, t in enumerate(texts)] + [_Job(other, "o1", (9,))]
    backend = _Backend({})
    with spending_limit(JudgeBudget(max_calls=3)) as limit:
        _runner(tmp_path, backend).run_jobs(jobs)
    assert limit is not None
    # Checked between batches: two batches of two went out (4 calls, one batch past the cap of 3),
    # then the rest of the group and the other model's group (never loaded) were withheld.
    assert backend.batches == [["t1", "t2"], ["t3", "t4"]]
    assert [j.outcome[0].split(" ")[0] for j in jobs] == ["sent"] * 4 + ["unavailable"] * 2
    assert "judge budget used: 4 of max_calls 3 calls made" in jobs[4].outcome[0]
    assert limit.calls == 4 and limit.withheld == 2

    again = [_Job(j.judge, j.text, j.order) for j in jobs]
    rerun_backend = _Backend({})
    with spending_limit(JudgeBudget(max_calls=10)) as larger:
        _runner(tmp_path, rerun_backend).run_jobs(again)
    assert [j.outcome[0].split(" ")[0] for j in again] == ["cached"] * 4 + ["sent"] * 2
    assert rerun_backend.batches == [["t5"], ["o1"]]  # only what was withheld is paid for
    assert larger is not None and larger.calls == 2 and larger.withheld == 0

    with spending_limit(None) as none:  # no budget: nothing tracked, nothing withheld
        assert none is None
    with pytest.raises(ValidationError, match="max_calls or max_tokens"):
        JudgeBudget()
