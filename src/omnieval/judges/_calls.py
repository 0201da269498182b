"""Sending judge requests, shared by every benchmark's judging: cache, model-major batches, retries.

A benchmark's judging builds *jobs* (one request each, with what to do with its answer) and hands
them to :meth:`CallRunner.run_jobs`, which

1. answers each job it can from the response cache (:mod:`._cache`);
2. groups the rest by loaded model (:func:`backend_group_key`), so a model is loaded once and every
   request that needs it goes through while it is loaded, in the jobs' own order (consecutive
   requests then share their longest prompt prefix);
3. sends each group in batches of the judges' ``batch_size`` and writes every answer to the cache
   the moment it arrives, so a killed run resumes where it stopped without asking twice;
4. resends transient failures (timeouts, 5xx, 429) after an exponential wait with jitter
   (:func:`send_with_retries`, via tenacity), up to each judge's ``retries``.

What a job's answer means (a verdict, a stage reading, a repair) stays with the benchmark.
"""

from __future__ import annotations

import json
import logging
import math
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_result
from tenacity.wait import wait_base

from omnieval.backends.llm import (
    BackendError,
    ChatBackend,
    ChatRequest,
    Completion,
    LlamaCppConfig,
    Message,
    ModelIdentity,
    OpenAIBackendConfig,
    Usage,
    backend_identity,
    open_backend,
    output_fingerprint,
    usage_table,
)
from omnieval.judges._budget import active_limit
from omnieval.judges._cache import MediaHasher, ResponseCache, cache_key, canonical_json, request_material
from omnieval.judges._panels import JudgeConfig
from omnieval.judgments import LEDGER_TAIL
from omnieval.scores import Status

if TYPE_CHECKING:
    from omnieval.judges._repair import RepairOutcome

log = logging.getLogger(__name__)

UNAVAILABLE_JUDGE = "unavailable"
"""The ``judge`` column of a call whose track or panel has no judge that can run here."""
RETRY_WAIT_MAX_S = 300.0
"""The longest wait before a resend, however many attempts came before."""


# -- retries ---------------------------------------------------------------------------------------

J = TypeVar("J")


class _DoublingWithJitter(wait_base):
    """tenacity wait: ``backoff_s * 2**(n-1)`` plus uniform jitter in ``[0, backoff_s]``, capped.

    Written against ``wait_base`` because tenacity's own ``wait_exponential_jitter`` takes no
    multiplier before 9.2, and google-genai pins tenacity below 9.2.
    """

    def __init__(self, backoff_s: float) -> None:
        self.backoff_s = backoff_s

    def __call__(self, retry_state: RetryCallState) -> float:
        # The exponent is capped so a long run of failures cannot overflow the float.
        doubling = 2.0 ** min(retry_state.attempt_number - 1, 64)
        return min(RETRY_WAIT_MAX_S, self.backoff_s * doubling + random.uniform(0.0, self.backoff_s))


def retry_wait(backoff_s: float) -> wait_base:
    """The wait before resend ``n`` (1, 2, ...): ``backoff_s * 2**(n-1)`` plus up to ``backoff_s`` of
    random jitter, at most :data:`RETRY_WAIT_MAX_S`.

    The jitter keeps several runs sharing one server (a rate-limited API, a busy vLLM) from all
    coming back in the same instant after a 429; it is proportional to the backoff so a panel that
    asks for no wait (``retry_backoff_s: 0``, as the tests do) gets none.
    """
    return _DoublingWithJitter(backoff_s)


def _log_resend(state: RetryCallState) -> None:
    outcome = state.outcome
    pending = outcome.result() if outcome is not None and not outcome.failed else ()
    wait = state.next_action.sleep if state.next_action is not None else 0.0
    log.warning("%d transient failures; retrying in %.1f s", len(pending), wait)


def send_with_retries(
    send: Callable[[list[J], int], list[J]],
    batch: list[J],
    backoff_s: Callable[[list[J]], float],
) -> None:
    """Send ``batch``, then resend what ``send`` hands back until it hands back nothing.

    ``send(pending, attempt)`` (``attempt`` 0 for the first sending) settles every job it can and
    returns the ones to send again (transient failures that still have retries left): it decides
    when a job has had enough, so judges with different ``retries`` can share a batch. Between two
    sendings it waits :func:`retry_wait` of ``backoff_s(<the jobs to resend>)``. An exception from
    ``send`` is raised as is, never retried.
    """
    pending = batch

    def wait(state: RetryCallState) -> float:
        return retry_wait(backoff_s(pending))(state)

    retrying = Retrying(retry=retry_if_result(bool), wait=wait, before_sleep=_log_resend, reraise=True)
    for attempt in retrying:
        with attempt:
            pending = send(pending, attempt.retry_state.attempt_number - 1)
        outcome = attempt.retry_state.outcome
        if outcome is not None and not outcome.failed:
            attempt.retry_state.set_result(pending)


# -- loaded models ---------------------------------------------------------------------------------


def backend_group_key(judge: JudgeConfig) -> str:
    """Jobs sharing a key share one loaded model (one server, one in-process model)."""
    return canonical_json(
        {"model": judge.model, "revision": judge.revision, "backend": judge.backend.model_dump()}
    )


def quick_unavailable(judge: JudgeConfig) -> str | None:
    """Why a judge surely cannot run here, found without loading anything (None = try it): a
    server judge without an address or API key, an in-process judge whose weights are not found."""
    import os

    backend = judge.backend
    if isinstance(backend, OpenAIBackendConfig):
        url = backend.base_url or (os.environ.get(backend.base_url_env, "") if backend.base_url_env else "")
        if not url:
            where = f"${backend.base_url_env}" if backend.base_url_env else "base_url"
            return f"no server address for {judge.model}: set {where}"
        if backend.api_key_env and not os.environ.get(backend.api_key_env):
            return f"the API key variable ${backend.api_key_env} is not set"
    if isinstance(backend, LlamaCppConfig):
        from omnieval.backends.llm import resolve_model_path

        try:
            resolve_model_path(backend.model_path)
        except BackendError as exc:
            return str(exc)
    return None


class BackendPool:
    """Loaded backends by group key; closed explicitly (and always at the end).

    Args:
        factory: Opens a judge's backend (tests pass scripted ones); default :func:`open_backend`.
        what: How log lines name the models (``judge``, or a benchmark's own word for its judges).
    """

    def __init__(
        self, factory: Callable[[JudgeConfig], ChatBackend] | None = None, what: str = "judge"
    ) -> None:
        self.factory = factory
        self.what = what
        self.open: dict[str, ChatBackend] = {}
        self.failed: dict[str, str] = {}
        """Why a group's backend cannot be used, by group key (failed opens and callers' findings)."""
        self.threads: dict[str, int] = {}
        """CPU threads each opened in-process backend ran with, by group key (kept after close)."""

    def get(self, judge: JudgeConfig) -> ChatBackend | None:
        key = backend_group_key(judge)
        if key in self.failed:
            return None
        if key not in self.open:
            try:
                if self.factory is not None:
                    self.open[key] = self.factory(judge)
                else:
                    log.info("loading %s model %s (%s)", self.what, judge.model, judge.backend.kind)
                    self.open[key] = open_backend(judge.backend, model=judge.model, revision=judge.revision)
            except BackendError as exc:
                self.failed[key] = str(exc)
                log.error("%s model %s unavailable: %s", self.what, judge.model, exc)
                return None
            threads = getattr(self.open[key], "threads", None)
            if isinstance(threads, int):
                self.threads[key] = threads
        return self.open[key]

    def close(self, key: str) -> None:
        backend = self.open.pop(key, None)
        if backend is not None:
            backend.close()

    def close_all(self) -> None:
        for key in list(self.open):
            self.close(key)


# -- calls and jobs --------------------------------------------------------------------------------


class Reading(Protocol):
    """What the runner and the judgments table use of any benchmark's reading of an answer."""

    @property
    def ok(self) -> bool: ...
    @property
    def scores(self) -> Mapping[str, int]: ...
    @property
    def error(self) -> str: ...
    @property
    def normalizations(self) -> Sequence[str]: ...


R = TypeVar("R", bound=Reading)


@dataclass(kw_only=True)
class CallState(Generic[R]):
    """Where one judge call stands: what a runner fills in as it builds, sends, reads and repairs.

    Each benchmark's call record extends it with what identifies the call (system, item, track or
    stage); ``R`` is its reading of an answer (one verdict, or both clips of a blind pair).
    ``judge`` is None when no judge can run the call here (it is settled as unavailable).
    """

    judge: JudgeConfig | None
    status: str = ""
    note: str = ""
    prompt_sha256: str = ""
    revision: str = ""
    request: ChatRequest | None = None
    key: str = ""
    completion: Completion | None = None
    cache_hit: bool = False
    repair_history: list[dict[str, Any]] = field(default_factory=list)
    reading: R | None = None

    @property
    def judge_id(self) -> str:
        return self.judge.id if self.judge is not None else UNAVAILABLE_JUDGE

    def ledger_columns(self, reading: R | None) -> dict[str, Any]:
        """The judgments-table columns every benchmark writes alike: who judged, with which prompt,
        the outcome, and the :data:`LEDGER_TAIL` (answer text, timing, repairs, cache use)."""
        completion = self.completion
        return {
            "judge": self.judge_id,
            "model": self.judge.model if self.judge else "",
            "revision": self.revision or (self.judge.revision if self.judge else ""),
            "prompt_sha256": self.prompt_sha256,
            "status": str(self.status),
            "raw_response": completion.text if completion else "",
            "error": reading.error if reading is not None else "",
            "normalizations": json.dumps(list(reading.normalizations) if reading else []),
            "repair_history": json.dumps(self.repair_history, ensure_ascii=False),
            "cache_key": self.key,
            "cache_hit": self.cache_hit,
            "latency_s": completion.latency_s if completion else math.nan,
            "finish_reason": completion.finish_reason if completion else "",
            "note": self.note,
        }


class Job(Protocol):
    """One request and what to do with its answer (the benchmark's side of :meth:`CallRunner.run_jobs`)."""

    @property
    def judge(self) -> JudgeConfig: ...
    @property
    def request(self) -> ChatRequest: ...
    @property
    def key(self) -> str:
        """The response-cache key of ``request``."""
        ...

    @property
    def order(self) -> tuple[Any, ...]:
        """Where the job goes among its model's requests (jobs sharing a prompt prefix sort together)."""
        ...

    @property
    def meta(self) -> Mapping[str, Any]:
        """Kept beside the cached answer (for people reading the cache, never part of the key)."""
        ...

    # A job may also carry ``system: str``, the system whose candidate it judges; the runner then
    # counts its usage per system too (:attr:`CallRunner.usage_by_system`). It is read with
    # getattr, so jobs of benchmarks from outside the package need not have it.

    def on_done(self, completion: Completion, cached: bool) -> None: ...
    def on_error(self, error: BackendError) -> None: ...
    def on_unavailable(self, reason: str) -> None: ...


@dataclass
class CallCounters:
    calls: int = 0
    """Requests sent to a model (resends included)."""
    hits: int = 0
    """Requests answered from the cache."""
    done: int = 0
    """Progress: units of work finished so far (what a unit is, is the runner's choice)."""
    total: int = 0
    """Progress: units of work expected so far."""
    latencies: list[float] = field(default_factory=list)
    """Seconds of each answer a model gave in this run (cache hits excluded)."""


JobT = TypeVar("JobT", bound=Job)
CallT = TypeVar("CallT", bound=CallState[Any])


class CallJob(Generic[R]):
    """A call's judging request (a :class:`Job`): its answer is read with ``read`` and settles the
    call ``ok`` or ``parse_error``; a failed request settles it ``inference_error``, a judge that
    cannot run ``not_applicable`` with ``unavailable(reason)`` as its note."""

    def __init__(
        self,
        runner: CallRunner,
        call: CallState[R],
        read: Callable[[str], R],
        *,
        order: tuple[Any, ...],
        meta: Mapping[str, Any],
        system: str,
        unavailable: Callable[[str], str],
    ) -> None:
        assert call.judge is not None and call.request is not None
        self.runner, self.call, self.read, self.unavailable = runner, call, read, unavailable
        self.judge, self.request, self.key = call.judge, call.request, call.key
        self.order, self.meta, self.system = order, meta, system

    def on_done(self, completion: Completion, cached: bool) -> None:
        call = self.call
        if not cached:
            self.runner.counters.latencies.append(completion.latency_s)
        call.completion, call.cache_hit = completion, cached
        call.reading = reading = self.read(completion.text)
        self.runner.settle(call, Status.OK if reading.ok else Status.PARSE_ERROR)

    def on_error(self, error: BackendError) -> None:
        self.runner.settle(self.call, Status.INFERENCE_ERROR, f"{type(error).__name__}: {error}")

    def on_unavailable(self, reason: str) -> None:
        self.runner.settle(self.call, Status.NOT_APPLICABLE, self.unavailable(reason))


@dataclass(frozen=True)
class RepairLog:
    """How a benchmark's judgments table records repair attempts (``repair_history`` entries).

    Attributes:
        detailed: entries name the repair model's revision, and failed requests keep the request's
            ``raw_response``/``cache_key``/``cache_hit`` too (storybench's entries); without it an
            answered repair keeps those three and a failed one only model, outcome and detail.
        unavailable: a repair model that cannot run, by reason -> (outcome, detail).
    """

    detailed: bool
    unavailable: Callable[[str], tuple[str, str]]


class RepairJob(Generic[R]):
    """The repair request for a call's unreadable answer (a :class:`Job`): ``decide(original,
    repair answer)`` says whether the repair is a pure format fix (:mod:`._repair`)."""

    def __init__(
        self,
        runner: CallRunner,
        call: CallState[R],
        judge: JudgeConfig,
        request: ChatRequest,
        key: str,
        *,
        decide: Callable[[str, str], RepairOutcome[R]],
        log: RepairLog,
        order: tuple[Any, ...],
        meta: Mapping[str, Any],
        system: str,
    ) -> None:
        self.runner, self.call, self.decide, self.log = runner, call, decide, log
        self.judge, self.request, self.key = judge, request, key
        self.order, self.meta, self.system = order, meta, system

    def _entry(self, outcome: str, detail: str, raw: str | None = None, cached: bool = False) -> None:
        entry: dict[str, Any] = {"model": self.judge.model}
        if self.log.detailed:
            entry["revision"] = self.judge.revision
        entry |= {"outcome": outcome, "detail": detail}
        if raw is not None or self.log.detailed:
            entry |= {"raw_response": raw or "", "cache_key": self.key, "cache_hit": cached}
        self.call.repair_history.append(entry)

    def on_done(self, completion: Completion, cached: bool) -> None:
        call = self.call
        assert call.completion is not None
        if not cached:
            self.runner.counters.latencies.append(completion.latency_s)
        decision = self.decide(call.completion.text, completion.text)
        self._entry(decision.status, decision.reason, completion.text, cached)
        call.status = decision.status
        if decision.reading is not None:
            call.reading = decision.reading

    def on_error(self, error: BackendError) -> None:
        self._entry("inference_error", f"{type(error).__name__}: {error}")

    def on_unavailable(self, reason: str) -> None:
        self._entry(*self.log.unavailable(reason))


def status_ledger(calls: Sequence[CallState[Any]], statuses: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per judge id: how many calls ended with each status (``statuses`` listed first, as 0s)."""
    out: dict[str, dict[str, int]] = {}
    for call in calls:
        per = out.setdefault(call.judge_id, dict.fromkeys(statuses, 0))
        per[str(call.status)] = per.get(str(call.status), 0) + 1
    return out


class CallRunner:
    """What every benchmark's judge runner shares: response cache, loaded models, identities, and
    :meth:`run_jobs`.

    Subclasses set :attr:`counters` (a :class:`CallCounters`, perhaps extended) and may override
    :meth:`_sent` to report progress in model calls.

    Args:
        cache_dir: the response cache's folder (safe to share between runs and benchmarks).
        pool: the loaded-model pool (default: models opened with :func:`open_backend`).
    """

    close_groups: bool = True
    """Close each model once its group is answered (the ``keep_open`` group aside); False keeps
    every model loaded until :meth:`BackendPool.close_all`."""

    def __init__(self, cache_dir: Path, pool: BackendPool | None = None) -> None:
        self.cache = ResponseCache(cache_dir)
        self.hasher = MediaHasher()
        self.pool = pool if pool is not None else BackendPool()
        self.counters = CallCounters()
        self.identities: dict[str, ModelIdentity] = {}
        self.identity_errors: dict[str, str] = {}
        self.usage: dict[str, Usage] = {}
        """What each judge (by id, repair models included) spent in this runner: calls, cache hits,
        tokens, seconds (:meth:`usage_json`)."""
        self.usage_by_system: dict[str, dict[str, Usage]] = {}
        """The same split by the system whose candidate each call judged (system -> judge id ->
        usage), for jobs that name one (:meth:`usage_by_system_json`)."""

    def _usage(self, job: Job) -> list[Usage]:
        """The entries one job's call counts in: its judge's, and its (system, judge)'s when the job
        names the system it judges (a ``system`` attribute; a repair counts for the judged system)."""
        entries = [self.usage.setdefault(job.judge.id, Usage())]
        system = getattr(job, "system", None)
        if isinstance(system, str) and system:
            entries.append(self.usage_by_system.setdefault(system, {}).setdefault(job.judge.id, Usage()))
        return entries

    def usage_json(self) -> dict[str, Any]:
        """``{judge id: usage entry}`` for the benchmark's lineage (the judge stage sums it)."""
        return usage_table(self.usage)

    def usage_by_system_json(self) -> dict[str, Any]:
        """``{system: {judge id: usage entry}}`` for the benchmark's lineage (``usage_by_system``)."""
        return {system: usage_table(self.usage_by_system[system]) for system in sorted(self.usage_by_system)}

    def identity(self, judge: JudgeConfig) -> ModelIdentity | None:
        """The judge's model as it will be loaded (None, with the reason in :attr:`identity_errors`,
        when it cannot be found); asked once per group."""
        key = backend_group_key(judge)
        if key not in self.identities and key not in self.identity_errors:
            try:
                self.identities[key] = backend_identity(
                    judge.backend, model=judge.model, revision=judge.revision
                )
            except BackendError as exc:
                self.identity_errors[key] = str(exc)
        return self.identities.get(key)

    def availability(self, judge: JudgeConfig) -> str | None:
        """Why ``judge`` cannot run here (recorded for its whole group), or None: what the quick
        check finds without loading (skipped when the pool's factory builds the backends), else
        whether its model can be identified."""
        key = backend_group_key(judge)
        if key in self.pool.failed:
            return self.pool.failed[key]
        reason = quick_unavailable(judge) if self.pool.factory is None else None
        if reason is None and self.identity(judge) is None:
            reason = self.identity_errors[key]
        if reason is not None:
            self.pool.failed[key] = reason
        return reason

    def request_key(
        self,
        identity: ModelIdentity,
        judge: JudgeConfig,
        prompt_sha256: str,
        request: ChatRequest,
        **extra: str,
    ) -> str:
        """The response-cache key of ``request`` to ``judge`` (``extra``: more key material, such as
        the benchmark a judging namespaces its answers by)."""
        return cache_key(
            **extra,
            model=identity.model,
            revision=identity.revision,
            weights=identity.weights_digest,
            backend=output_fingerprint(judge.backend),
            prompt_sha256=prompt_sha256,
            request=request_material(request, self.hasher),
        )

    def ask(
        self,
        call: CallState[Any],
        judge: JudgeConfig,
        prompt_sha256: str,
        messages: Sequence[Message],
        schema: Mapping[str, Any] | None,
        **extra: str,
    ) -> None:
        """Fill in ``call``'s request to ``judge`` (identified before) and its cache key; ``schema``
        constrains the answer only for a judge framed ``schema_constrained``."""
        identity = self.identities[backend_group_key(judge)]
        call.revision, call.prompt_sha256 = identity.revision, prompt_sha256
        call.request = ChatRequest(
            messages=tuple(messages),
            decoding=judge.decoding,
            json_schema=dict(schema) if schema is not None and judge.framing.schema_constrained else None,
            chat_template_kwargs=dict(judge.framing.chat_template_kwargs),
        )
        call.key = self.request_key(identity, judge, prompt_sha256, call.request, **extra)

    def settle(self, call: CallState[Any], status: str, note: str = "") -> None:
        """End ``call`` with ``status`` (and ``note``, when given); :meth:`_settled` follows."""
        call.status = status
        if note:
            call.note = note
        self._settled(call)

    def _settled(self, call: CallState[Any]) -> None:
        """Called as each call settles: a hook for runners that report progress in calls."""

    def repair_round(
        self,
        calls: Sequence[CallT],
        repair: JudgeConfig | None,
        unavailable: Callable[[JudgeConfig], str | None],
        job: Callable[[CallT, int, ModelIdentity], Job],
        keep_open: str | None = None,
    ) -> None:
        """Send every unreadable, non-empty answer to the ``repair`` model: ``job(call, position,
        identity)`` builds each request; when the panel has no repair model, or ``unavailable``
        gives the reason it cannot run, each call's history says the repair was skipped."""
        unreadable = [
            c for c in calls if c.status == Status.PARSE_ERROR and c.completion and c.completion.text.strip()
        ]
        if not unreadable:
            return
        reason = None if repair is None else unavailable(repair)
        if repair is None or reason is not None:
            detail = (
                "the panel has no repair model" if repair is None else f"repair model unavailable: {reason}"
            )
            for call in unreadable:
                call.repair_history.append({"outcome": "skipped", "detail": detail})
            return
        identity = self.identities[backend_group_key(repair)]
        self.run_jobs([job(call, position, identity) for position, call in enumerate(unreadable)], keep_open)

    def _sent(self, count: int, resend: bool) -> None:
        """Called after each batch went to a model: ``count`` requests, ``resend`` when they had been
        sent before. Counts them; runners that report progress in model calls extend this."""
        self.counters.calls += count

    def _misses(self, count: int) -> None:
        """Called once the cache is read: ``count`` jobs need a model. A hook for progress."""

    def run_jobs(self, jobs: Sequence[JobT], keep_open: str | None = None) -> None:
        """Answer every job: cache first, then model by model over the misses.

        ``keep_open``: the group key of a model needed again afterwards (the repair model): its group
        runs last and stays loaded.
        """
        misses: list[JobT] = []
        for job in jobs:
            cached = self.cache.get(job.key)
            if cached is None:
                misses.append(job)
            else:
                self.counters.hits += 1
                # A cache hit costs nothing now; the entry keeps the original call's usage.
                for entry in self._usage(job):
                    entry.add_cached()
                job.on_done(cached, True)
        self._misses(len(misses))
        groups: dict[str, list[JobT]] = {}
        for job in misses:
            groups.setdefault(backend_group_key(job.judge), []).append(job)
        for key in sorted(groups, key=lambda k: k == keep_open):
            group = sorted(groups[key], key=lambda j: j.order)
            if self._withheld(group, 0):
                continue  # the budget is used: do not even load the model
            backend = self.pool.get(group[0].judge)
            if backend is None:
                reason = self.pool.failed[key]
                for job in group:
                    job.on_unavailable(reason)
                continue
            try:
                size = max(job.judge.batch_size for job in group)
                for start in range(0, len(group), size):
                    if self._withheld(group, start):
                        break
                    send_with_retries(
                        partial(self._send, backend),
                        group[start : start + size],
                        lambda pending: pending[0].judge.retry_backoff_s,
                    )
            finally:
                if self.close_groups and key != keep_open:
                    self.pool.close(key)

    @staticmethod
    def _withheld(group: Sequence[JobT], start: int) -> bool:
        """When a judge budget is in force and used, settle ``group[start:]`` as not judged (the
        budget's reason as note) and return True; else False."""
        limit = active_limit()
        if limit is None or limit.allows():
            return False
        withheld = group[start:]
        limit.withhold(len(withheld))
        for job in withheld:
            job.on_unavailable(limit.reason)
        return True

    def _send(self, backend: ChatBackend, pending: list[JobT], attempt: int) -> list[JobT]:
        """One batch to the model; every answer is cached at once. Returns the jobs to resend."""
        started = time.perf_counter()
        results = backend.chat_many([job.request for job in pending])
        # A batch is answered together (concurrently on a server, in lockstep in llama.cpp): each
        # request gets an equal share of its wall time, so per-judge seconds add up to the time
        # the model was busy, not to the sum of overlapping latencies.
        share = (time.perf_counter() - started) / max(1, len(pending))
        limit = active_limit()
        self._sent(len(pending), attempt > 0)
        resend: list[JobT] = []
        for job, result in zip(pending, results, strict=True):
            for entry in self._usage(job):
                entry.add_call(result if isinstance(result, Completion) else None, share)
            if limit is not None:
                tokens = None
                if isinstance(result, Completion) and result.prompt_tokens is not None:
                    tokens = result.prompt_tokens + (result.completion_tokens or 0)
                limit.spend(calls=1, tokens=tokens)
            if isinstance(result, Completion):
                self.cache.put(job.key, result, job.meta)
                job.on_done(result, False)
            elif result.transient and attempt < job.judge.retries:
                resend.append(job)
            else:
                job.on_error(result)
        return resend


# -- lineage and tags ------------------------------------------------------------------------------


def judge_lineage_entry(judge: JudgeConfig, identity: ModelIdentity | None) -> dict[str, Any]:
    """A judge's lineage entry: model, revision and weights as loaded (or as configured when the
    model could not be identified), backend settings, and an empty ``roles`` for the caller."""
    entry: dict[str, Any] = {
        "model": judge.model,
        "revision": identity.revision if identity else judge.revision,
        "weights_sha256": dict(identity.weights_sha256) if identity else {},
        "weights_digest": identity.weights_digest if identity else "",
        "backend": judge.backend.model_dump(mode="json"),
        "roles": {},
    }
    if identity is not None and identity.model != judge.model:
        # A server's own name for what it loaded (vLLM's root: a folder, another hub id): the
        # model the answers came from, recorded only where it differs from the configured one.
        entry["identified_model"] = identity.model
    return entry


def judges_lineage(runner: CallRunner, roles: Sequence[tuple[str, JudgeConfig]]) -> dict[str, Any]:
    """A run's ``judges`` lineage: one :func:`judge_lineage_entry` per judge id, with how it was
    asked in each of its ``(role, judge)`` roles."""
    judges: dict[str, Any] = {}
    for role, judge in roles:
        identity = runner.identities.get(backend_group_key(judge))
        info = judges.setdefault(judge.id, judge_lineage_entry(judge, identity))
        info["roles"][role] = role_lineage(judge)
    return judges


def role_lineage(judge: JudgeConfig) -> dict[str, Any]:
    """How a judge was asked in one role (judging, repair): its decoding and framing."""
    return {
        "decoding": judge.decoding.model_dump(mode="json"),
        "framing": judge.framing.model_dump(mode="json"),
    }


_TAG_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /]")


def mlflow_tag_part(text: str) -> str:
    """``text`` with the characters MLflow refuses in tag keys replaced by ``_``."""
    return _TAG_UNSAFE.sub("_", text)


def judge_tags(judges: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """``omnieval.judge.<id>.revision`` (``unpinned`` when none) and ``.sha256`` (when the weights
    were hashed) for each judge of a lineage's ``judges`` entry."""
    tags: dict[str, str] = {}
    for judge_id, info in judges.items():
        tags[f"omnieval.judge.{judge_id}.revision"] = info.get("revision") or "unpinned"
        if info.get("weights_digest"):
            tags[f"omnieval.judge.{judge_id}.sha256"] = info["weights_digest"]
    return tags


__all__ = [
    "LEDGER_TAIL",
    "UNAVAILABLE_JUDGE",
    "BackendPool",
    "CallCounters",
    "CallJob",
    "CallRunner",
    "CallState",
    "Job",
    "RepairJob",
    "RepairLog",
    "backend_group_key",
    "judge_lineage_entry",
    "judge_tags",
    "judges_lineage",
    "mlflow_tag_part",
    "quick_unavailable",
    "retry_wait",
    "role_lineage",
    "send_with_retries",
    "status_ledger",
]
