"""llama.cpp backend: a GGUF model in-process (the packaged Qwen2.5-Coder-1.5B judge on CPU).

Text only. A JSON schema constrains the answer in one of two ways:

- ``skeleton`` (greedy decoding of a fixed-shape schema such as a judge verdict): the decoder
  writes the JSON skeleton itself and the model generates only the values (scores restricted to the
  allowed integers, rationales up to their length bound). See :mod:`._skeleton`.
- ``grammar`` (anything else, e.g. the repair schema's ``anyOf``): llama.cpp's JSON-schema grammar
  through ``response_format={"type": "json_object", "schema": ...}``. Its check runs over the whole
  vocabulary at every token, which was several times slower per token on CPU.

Both keep llama.cpp's KV cache between requests, yet a request's answer does not depend on the
requests before it. llama.cpp's CPU kernels round differently with a batch's shape (a token
evaluated alone or inside a batch differs in the last bits), so the numbers depend on which tokens
were evaluated in which batch; a request's prompt is therefore always evaluated in the same batches:
chunks of :data:`PROMPT_CHUNK` tokens at fixed positions (0-31, 32-63, ...), from an empty cache or
from a chunk boundary. A request reuses the whole chunks it shares with what the cache holds (the
rubric and the transition of the previous request) and evaluates the rest in such chunks; the steps
of its answer then reuse the cache freely, since they follow from its prompt. The state it decodes
from is a function of its prompt alone, so its answer and value probabilities are the same first
in a process, after any other requests, and after a restart. (Grammar requests under a
``chat_format`` other than the GGUF's template start from an empty cache instead.)

With ``parallel_sequences > 1``, :meth:`LlamaCppChatBackend.chat_many` decodes the skeleton
requests of one call in lockstep: one llama.cpp sequence per request in a second context with a
unified KV cache, every step a single ``llama_decode`` over all of them (a CPU evaluates 8 tokens
in little more time than 1), and a new request copies the longest prompt prefix any sequence holds.
The decoder's choices are the same functions of the logits, but llama.cpp's CPU kernels round
differently with the batch's shape (a token evaluated alone or inside a batch differs in the last
bits, measured up to 0.6 on a logit), so an answer may differ from the one-at-a-time answer where
two choices are nearly tied, and which requests share a decode changes the numbers: lockstep
answers depend on the calls around them (see ``python -m bench judge``).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from omnieval.backends.llm._config import LlamaCppConfig
from omnieval.backends.llm._cores import auto_threads
from omnieval.backends.llm._skeleton import Fixed, IntChoice, Segment, Text, int_continuations, plan_schema
from omnieval.backends.llm._types import (
    BackendError,
    BackendUnavailable,
    ChatRequest,
    Completion,
    ModelIdentity,
    SequentialChatMixin,
    UnsupportedInput,
)

log = logging.getLogger(__name__)


def resolve_model_path(spec: str) -> Path:
    """A GGUF path from ``packaged:<asset>`` (assembled once from its packages) or a file path."""
    if spec.startswith("packaged:"):
        from omnieval.backends import assets

        name = spec.removeprefix("packaged:")
        getter = assets.ASSETS.get(name)
        if getter is None:
            raise BackendUnavailable(
                f"unknown packaged model {name!r}; known: {', '.join(sorted(assets.ASSETS))}"
            )
        try:
            return getter()
        except assets.ModelUnavailable as exc:
            raise BackendUnavailable(str(exc)) from None
    path = Path(spec).expanduser()
    if not path.is_file():
        raise BackendUnavailable(f"GGUF model file {path} not found")
    return path


def gguf_identity(config: LlamaCppConfig, model: str, revision: str) -> ModelIdentity:
    """Identity of the GGUF without loading it: the file's SHA-256 (memoized next to the file)."""
    from omnieval.backends.assets import file_sha256

    path = resolve_model_path(config.model_path)
    return ModelIdentity(model=model, revision=revision, weights_sha256={path.name: file_sha256(path)})


PROMPT_CHUNK = 32
"""Tokens per batch when a request's prompt is evaluated (at positions 0, 32, 64, ...): the fixed
batch shape that makes a request's answer independent of the requests before it. Smaller chunks
reuse more of a shared prefix (at most ``PROMPT_CHUNK - 1`` shared tokens are evaluated again) but
evaluate prompts more slowly (fewer tokens per matrix product)."""


@dataclass(frozen=True)
class _Prime:
    """Evaluate the whole context ``text`` (the cache keeps what it already has); the reply is
    ``(next-token logits, tokens in the sequence)``."""

    text: str


@dataclass(frozen=True)
class _Advance:
    """Evaluate ``token`` after the sequence's first ``at`` tokens (None: after all of them); the
    reply is the next-token logits."""

    token: int
    at: int | None


_T = TypeVar("_T")
_Steps = Generator[_Prime | _Advance, Any, _T]
"""A decoder coroutine: yields what to evaluate, receives the logits, returns its result."""


@dataclass(frozen=True)
class _Answer:
    """What the skeleton decoder wrote for one request."""

    text: str
    finish: str
    budget_left: int
    probs: dict[str, dict[int, float]]

    def completion(self, *, prompt_tokens: int, max_tokens: int, latency_s: float) -> Completion:
        return Completion(
            text=self.text,
            finish_reason=self.finish,
            prompt_tokens=prompt_tokens,
            completion_tokens=max_tokens - self.budget_left,
            latency_s=latency_s,
            value_probs=self.probs,
        )


@dataclass
class DecodeStats:
    """Where a backend's decoding time went since it was loaded (or since :meth:`reset`).

    ``prompt_*``: evaluation of prompt and skeleton text (many tokens per forward pass);
    ``generated_*``: one forward pass per chosen value token. Seconds are wall time.
    """

    prompt_tokens: int = 0
    """Prompt and skeleton tokens evaluated."""
    reused_tokens: int = 0
    """Prompt tokens found in the KV cache and not evaluated again."""
    prompt_s: float = 0.0
    generated_tokens: int = 0
    """Tokens evaluated one forward pass (or one batched step) at a time."""
    generated_s: float = 0.0
    steps: int = 0
    """llama.cpp decode calls."""

    def add_prompt(self, evaluated: int, reused: int, seconds: float) -> None:
        self.prompt_tokens += evaluated
        self.reused_tokens += reused
        self.prompt_s += seconds
        self.steps += 1

    def add_generated(self, tokens: int, seconds: float) -> None:
        self.generated_tokens += tokens
        self.generated_s += seconds
        self.steps += 1

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


class LlamaCppChatBackend(SequentialChatMixin):
    """Chat completions from a GGUF file via ``llama_cpp.Llama`` (loaded once, kept until ``close``)."""

    def __init__(self, config: LlamaCppConfig, *, model: str, revision: str = "") -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise BackendUnavailable(
                "llama-cpp-python is not installed (pip install llama-cpp-python==0.3.36)"
            ) from exc
        self.config = config
        self._identity = gguf_identity(config, model, revision)
        self.path = resolve_model_path(config.model_path)
        self.threads = config.n_threads or auto_threads()
        started = time.perf_counter()
        # use_mmap=False: the model is read into memory once; on shared CI disks mmap paging made
        # every call pay for page faults again.
        self._llm: Any = Llama(
            model_path=str(self.path),
            n_ctx=config.n_ctx,
            # Prompt evaluation gets the same count: its default (all cores) spun on busy machines.
            n_threads=self.threads,
            n_threads_batch=self.threads,
            n_batch=config.n_batch,
            use_mmap=False,
            chat_format=config.chat_format,
            verbose=False,
        )
        self.load_s = time.perf_counter() - started
        self._formatter: Any = None
        self._vocab: _VocabTables | None = None
        self._evaluated = 0
        self._canonical = 0
        """Leading KV-cache positions evaluated in whole :data:`PROMPT_CHUNK` chunks from an empty
        cache (a multiple of the chunk): the prefix a new request may reuse."""
        self.stats = DecodeStats()
        self.parallel = config.parallel_sequences
        """Sequences decoded together by :meth:`chat_many` (1: one request at a time)."""
        self.prompt_chunk = PROMPT_CHUNK
        """Batch size of a request's canonical prompt evaluation (see :data:`PROMPT_CHUNK`)."""
        self._batch: _Lockstep | None = None
        log.info("loaded %s in %.1f s (%d threads)", self.path.name, self.load_s, self.threads)

    def identity(self) -> ModelIdentity:
        return self._identity

    def chat(self, request: ChatRequest) -> Completion:
        messages = _text_messages(request)
        decoding = request.decoding
        plan = self._skeleton_plan(request)
        if plan is not None:
            return self._skeleton_chat(messages, plan, self._token_budget(request))
        # Only what the decoding sets, under llama-cpp-python's names; the library's defaults
        # (temperature 0.2, top_p 0.95, top_k 40, repeat_penalty 1.0, no cap) govern the rest.
        names = {"repetition_penalty": "repeat_penalty"}
        kwargs: dict[str, Any] = {
            "messages": messages,
            **{names.get(key, key): value for key, value in decoding.sent().items()},
        }
        if request.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": dict(request.json_schema)}
        started = time.perf_counter()
        prompt = self._grammar_prime(messages)
        try:
            out = self._llm.create_chat_completion(**kwargs)
        except ValueError as exc:
            # llama.cpp raises ValueError when the prompt does not fit the context window.
            raise BackendError(f"llama.cpp: {exc}") from None
        finally:
            self._after_grammar(prompt)
        latency = time.perf_counter() - started
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Completion(
            text=choice["message"].get("content") or "",
            finish_reason=str(choice.get("finish_reason") or ""),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_s=latency,
        )

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        """Answer ``requests``; with ``parallel > 1`` the skeleton-decoded ones run in lockstep.

        Up to ``parallel`` requests are decoded at once, one llama.cpp sequence each, every step
        one ``llama_decode`` over all of them; a new request starts from the longest prompt prefix
        any sequence already holds. Other requests (grammar decoding) run one at a time.
        """
        if self.parallel <= 1:
            return super().chat_many(requests)
        results: list[Completion | BackendError | None] = [None] * len(requests)
        batched: list[tuple[int, str, list[Segment], int]] = []
        for i, request in enumerate(requests):
            try:
                plan = self._skeleton_plan(request)
                if plan is None:
                    results[i] = self.chat(request)
                else:
                    prompt = self._chat_prompt(_text_messages(request))
                    batched.append((i, prompt, plan, self._token_budget(request)))
            except BackendError as exc:
                results[i] = exc
        if batched:
            for (i, *_), result in zip(batched, self._lockstep().run(self, batched), strict=True):
                results[i] = result
        assert all(r is not None for r in results)
        return [r for r in results if r is not None]

    def prompt_text(self, request: ChatRequest) -> str:
        """The prompt this backend evaluates for ``request`` (chat template applied)."""
        return self._chat_prompt(_text_messages(request))

    def _skeleton_plan(self, request: ChatRequest) -> list[Segment] | None:
        """The decoding plan when ``request`` is skeleton-decoded (greedy, fixed-shape schema).

        Greedy means :attr:`Decoding.greedy`: temperature 0 stated, and no repetition penalty (1.0,
        or unset, which is llama.cpp's own default ``repeat_penalty``).
        """
        decoding = request.decoding
        if decoding.stop_token_ids:
            # Every request passes here first; a set field this backend cannot honour is refused.
            raise UnsupportedInput("llama.cpp: stop_token_ids are not supported by this backend")
        if request.json_schema is None or self.config.constrained_decoding != "skeleton":
            return None
        if not decoding.greedy:
            return None
        return plan_schema(request.json_schema)

    def _token_budget(self, request: ChatRequest) -> int:
        """New tokens the skeleton decoder may spend: ``max_tokens``, or when unset llama.cpp's own
        default, no cap but the context window (the decoder stops with an error at ``n_ctx``)."""
        max_tokens = request.decoding.max_tokens
        return max_tokens if max_tokens is not None else int(self._llm.n_ctx())

    def _lockstep(self) -> _Lockstep:
        if self._batch is None:
            self._batch = _Lockstep(self._llm, self.parallel, self.config, self.threads)
        return self._batch

    # -- skeleton decoding ---------------------------------------------------------------------

    def _chat_prompt(self, messages: list[dict[str, str]]) -> str:
        if self._formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            llm = self._llm
            template = llm.metadata.get("tokenizer.chat_template")
            if not template:
                raise BackendError(
                    f"{self.path.name} has no chat template; set chat_format or use grammar decoding"
                )
            eos, bos = llm.token_eos(), llm.token_bos()
            self._formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
            )
        return str(self._formatter(messages=messages).prompt)

    def _tables(self) -> _VocabTables:
        if self._vocab is None:
            self._vocab = _VocabTables.build(self._llm)
        return self._vocab

    def _logits(self) -> np.ndarray:
        import llama_cpp

        llm = self._llm
        pointer = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),)).copy()

    def _prime(self, text: str, *, canonical: bool = False) -> np.ndarray:
        """Evaluate ``text`` reusing a prefix already in the KV cache; return next-token logits.

        ``canonical`` (a request's first evaluation): reuse only whole :data:`PROMPT_CHUNK` chunks
        that were evaluated from an empty cache in such chunks, and evaluate the rest in chunks at
        the same fixed positions, so the cache then holds what a fresh cache would after evaluating
        ``text``. Otherwise (within a request, whose start is already fixed) reuse the longest
        shared prefix and evaluate the rest at once.
        """
        llm = self._llm
        tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        if len(tokens) >= llm.n_ctx():
            raise BackendError(f"llama.cpp: prompt of {len(tokens)} tokens does not fit n_ctx={llm.n_ctx()}")
        chunk = self.prompt_chunk
        same = _common_prefix(llm.input_ids[: llm.n_tokens], tokens, len(tokens) - 1)
        if canonical:
            same = min(same, self._canonical) // chunk * chunk
        llm.n_tokens = same
        self._canonical = min(self._canonical, same)
        started = time.perf_counter()
        if canonical:
            for start in range(same, len(tokens), chunk):
                llm.eval(tokens[start : start + chunk])
            self._canonical = len(tokens) // chunk * chunk
        else:
            llm.eval(tokens[same:])
        logits = self._logits()
        self.stats.add_prompt(len(tokens) - same, same, time.perf_counter() - started)
        self._evaluated += len(tokens) - same
        return logits

    def _grammar_prime(self, messages: list[dict[str, str]]) -> list[int] | None:
        """Before a grammar-decoded request: leave the cache as a fresh one would hold it.

        With the GGUF's own chat template, the prompt is evaluated the canonical way here and
        llama-cpp-python then finds all of it cached and samples from these logits; the prompt's
        tokens are returned for :meth:`_after_grammar` to check. With another ``chat_format`` the
        cache is emptied (llama-cpp-python then evaluates the prompt from the start: the same
        batches every time, without reuse).
        """
        if self.config.chat_format is None and self._llm.metadata.get("tokenizer.chat_template"):
            self._prime(self._chat_prompt(messages), canonical=True)
            return [int(t) for t in self._llm.input_ids[: self._llm.n_tokens]]
        self.reset_cache()
        return None

    def _after_grammar(self, prompt: list[int] | None) -> None:
        """After a grammar-decoded request: keep the canonical prefix only if the request's prompt
        was the one :meth:`_grammar_prime` evaluated (nothing before its end was evaluated again)."""
        llm = self._llm
        if prompt is None or llm.n_tokens < len(prompt) or llm.input_ids[: len(prompt)].tolist() != prompt:
            self._canonical = 0

    def reset_cache(self) -> None:
        """Forget the KV cache: the next request evaluates its whole prompt."""
        self._llm.n_tokens = 0
        self._canonical = 0

    def _position(self) -> int:
        """Tokens in the KV cache now (where the next evaluated token goes)."""
        return int(self._llm.n_tokens)

    def _advance(self, token: int, at: int | None = None) -> np.ndarray:
        """Evaluate ``token`` after the cache's first ``at`` tokens (default: all); next-token logits."""
        llm = self._llm
        if at is not None:
            llm.n_tokens = at
        self._canonical = min(self._canonical, llm.n_tokens)
        if llm.n_tokens + 1 >= llm.n_ctx():
            raise BackendError(f"llama.cpp: answer exceeds n_ctx={llm.n_ctx()}")
        started = time.perf_counter()
        llm.eval([token])
        logits = self._logits()
        self.stats.add_generated(1, time.perf_counter() - started)
        return logits

    def _skeleton_chat(
        self, messages: list[dict[str, str]], plan: list[Segment], max_tokens: int
    ) -> Completion:
        """One request, one sequence: the decoder's steps run on the Llama's own KV cache.

        The first evaluation is canonical (see :meth:`_prime`): the decoder starts from the state a
        fresh cache would reach, whatever the requests before this one left in the cache.
        """
        started = time.perf_counter()
        prompt = self._chat_prompt(messages)
        self._evaluated = 0
        steps = self._skeleton_steps(prompt, plan, max_tokens)
        reply: Any = None
        first = True
        while True:
            try:
                step = steps.send(reply)
            except StopIteration as stop:
                answer: _Answer = stop.value
                break
            if isinstance(step, _Prime):
                reply = (self._prime(step.text, canonical=first), self._position())
                first = False
            else:
                reply = self._advance(step.token, step.at)
        return answer.completion(
            prompt_tokens=self._evaluated, max_tokens=max_tokens, latency_s=time.perf_counter() - started
        )

    def _skeleton_steps(self, prompt: str, plan: list[Segment], max_tokens: int) -> _Steps[_Answer]:
        """The skeleton decoder as a coroutine: it yields what to evaluate and receives the logits.

        The same steps drive one sequence (:meth:`_skeleton_chat`) or many in lockstep
        (:class:`_Lockstep`), so both paths make the same choices from the same logits.
        """
        out = ""
        budget = max_tokens
        finish = "stop"
        probs: dict[str, dict[int, float]] = {}
        for segment in plan:
            if isinstance(segment, Fixed):
                out += segment.text
                continue
            if budget <= 0:
                finish = "length"
                break
            if isinstance(segment, IntChoice):
                value, used, complete, dist = yield from self._choose_int(prompt + out, segment, budget)
                if dist is not None:
                    probs[segment.path] = dist
            else:
                value, used, complete = yield from self._write_text(prompt + out, segment, budget)
            budget -= used
            out += value
            if not complete:
                # Out of tokens mid-value: return the truncated answer; the ledger will not accept it.
                finish = "length"
                break
        return _Answer(out, finish, budget, probs)

    def _choose_int(
        self, context: str, segment: IntChoice, budget: int
    ) -> _Steps[tuple[str, int, bool, dict[int, float] | None]]:
        """Greedy integer from ``segment.values``, and the decoder's probability of every allowed value.

        The distribution is the one this constrained decoder samples from: at each digit position
        the model's probabilities of the allowed digit tokens, plus (once the digits so far form a
        valid value) "the number ends here" = the mass of all non-digit tokens, renormalized over
        those options. For 1-10 with one token per digit: p(k) for k = 2..9 from the first position;
        p(1) = p("1") x p(end | "1") and p(10) = p("1") x p("0" | "1"), the second factor from one
        extra forward pass over "1" when the greedy choice did not already need it.
        """
        tables = self._tables()
        root, base = yield _Prime(context)
        texts = [str(v) for v in segment.values]
        memo: dict[str, np.ndarray] = {"": root}

        def options(prefix: str) -> tuple[list[int], list[str], bool]:
            _, complete = int_continuations(prefix, segment.values)
            pieces = [p for p in tables.digit_pieces if any(t.startswith(prefix + p) for t in texts)]
            return [tables.digit_pieces[p] for p in pieces], pieces, complete

        def logits_after(prefix: str, path: list[int]) -> _Steps[np.ndarray]:
            # Depth-first order keeps path[:-1] in the KV cache, so one token is evaluated per prefix.
            if prefix not in memo:
                memo[prefix] = yield _Advance(path[-1], base + len(path) - 1)
            return memo[prefix]

        def distribution(prefix: str, path: list[int]) -> _Steps[dict[str, float]]:
            ids, pieces, complete = options(prefix)
            logp = _log_softmax((yield from logits_after(prefix, path)))
            masses = [float(logp[i]) for i in ids]
            if complete:
                masses.append(_logsumexp(logp[tables.non_digit]))
            shares = _normalized(masses)
            out: dict[str, float] = {prefix: shares[-1]} if complete else {}
            for token, piece, share in zip(ids, pieces, shares, strict=False):
                more, _ = int_continuations(prefix + piece, segment.values)
                below = (
                    (yield from distribution(prefix + piece, [*path, token]))
                    if more
                    else {prefix + piece: 1.0}
                )
                for text, p in below.items():
                    out[text] = out.get(text, 0.0) + share * p
            return out

        prefixes = {t[:i] for t in texts for i in range(1, len(t))}
        dist: dict[int, float] | None = None
        if len(prefixes) <= _MAX_PROB_PREFIXES:
            found = yield from distribution("", [])
            dist = {int(text): p for text, p in found.items() if text in texts}

        digits = ""
        path: list[int] = []
        used = 0
        while used < budget:
            allowed, _, complete = options(digits)
            if not allowed:
                break
            logits = yield from logits_after(digits, path)
            candidates = np.full(logits.shape, -np.inf, dtype=np.float32)
            candidates[allowed] = logits[allowed]
            if complete:
                # Any non-digit token means "the number ends here".
                candidates[tables.non_digit] = logits[tables.non_digit]
            token = int(np.argmax(candidates))
            if complete and tables.non_digit[token]:
                break
            digits += tables.pieces[token]
            path.append(token)
            used += 1
            more, _ = int_continuations(digits, segment.values)
            if not more:
                # Nothing can follow: the next prime evaluates this digit with the skeleton text.
                break
        return digits, used, digits in set(texts), dist

    def _write_text(self, context: str, segment: Text, budget: int) -> _Steps[tuple[str, int, bool]]:
        tables = self._tables()
        logits, _ = yield _Prime(context)
        raw = b""
        used = 0
        text = ""
        complete = False
        while used < budget:
            if len(text.strip()) < max(segment.min_chars, 1):
                logits = logits.copy()
                logits[tables.quote_or_empty] = -np.inf
            token = int(np.argmax(logits))
            piece = tables.piece_bytes[token]
            if not piece:
                complete = True
                break
            raw += piece
            used += 1
            text = raw.decode("utf-8", errors="ignore")
            end = _closing_quote(text)
            if end >= 0:
                text = text[:end]
                complete = True
                break
            stop = _sentences_end(text, self.config.skeleton_text_sentences)
            if stop >= 0:
                text = text[:stop]
                complete = True
                break
            # Strictly past the bound: the character after the cut tells whether a word was split.
            if segment.max_chars is not None and len(text) > segment.max_chars:
                complete = True
                break
            logits = yield _Advance(token, None)
        try:
            value = json.loads('"' + text + '"')
        except ValueError:
            value = text.replace('\\"', '"')
        value = " ".join(str(value).split())
        if segment.max_chars is not None:
            value = cut_at_word(value, segment.max_chars)
        # The plan's Fixed segments supply the quotes; return the escaped inside of the string.
        return json.dumps(value, ensure_ascii=False)[1:-1], used, complete and len(value) >= segment.min_chars

    def close(self) -> None:
        batch, self._batch = getattr(self, "_batch", None), None
        if batch is not None:
            batch.close()
        llm, self._llm = self._llm, None
        if llm is not None:
            llm.close()


_MAX_PROB_PREFIXES = 16
"""Integer choices whose value probabilities need more extra forward passes than this get none."""


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    top = float(np.max(x))
    return x - (top + float(np.log(np.sum(np.exp(x - top)))))


def _logsumexp(values: np.ndarray) -> float:
    x = np.asarray(values, dtype=np.float64)
    top = float(np.max(x))
    return top + float(np.log(np.sum(np.exp(x - top))))


def _normalized(log_masses: list[float]) -> list[float]:
    """Probabilities proportional to ``exp(log_masses)`` (summing to 1)."""
    x = np.asarray(log_masses, dtype=np.float64)
    w = np.exp(x - np.max(x))
    return [float(v) for v in w / w.sum()]


_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s")


def _sentences_end(text: str, sentences: int | None) -> int:
    """End index of the ``sentences``-th sentence of ``text`` (its closing punctuation included),
    or -1 while fewer sentences are complete (a sentence counts once a space follows it).

    Example:
        >>> text = "It fits. The fox is renamed. Then"
        >>> text[: _sentences_end(text, 1)], _sentences_end(text, 3), _sentences_end(text, None)
        ('It fits.', -1, -1)
    """
    if sentences is None:
        return -1
    for k, match in enumerate(_SENTENCE_END.finditer(text), 1):
        if k == sentences:
            return match.end() - 1
    return -1


def cut_at_word(text: str, limit: int) -> str:
    """``text`` shortened to at most ``limit`` characters without splitting a word.

    Example:
        >>> cut_at_word("The fox runs home.", 11)
        'The fox'
        >>> cut_at_word("The fox runs home.", 12)
        'The fox runs'
        >>> cut_at_word("Unbreakable", 5)
        'Unbre'
    """
    if len(text) <= limit:
        return text
    head = text[:limit]
    if text[limit].isspace():
        return head.rstrip()
    space = head.rfind(" ")
    # A single word longer than the bound has no boundary to cut at: cut it (rare, bounded).
    return head[:space].rstrip() if space > 0 else head


def _closing_quote(text: str) -> int:
    """Index of the first unescaped double quote, or -1."""
    escaped = False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            return i
    return -1


class _VocabTables:
    """Per-model token facts the skeleton decoder needs (built once per loaded model, ~1 s)."""

    def __init__(self, piece_bytes: list[bytes]) -> None:
        self.piece_bytes = piece_bytes
        self.pieces = [p.decode("utf-8", errors="ignore") for p in piece_bytes]
        size = len(piece_bytes)
        self.non_digit = np.ones(size, dtype=bool)
        self.quote_or_empty = np.zeros(size, dtype=bool)
        self.digit_pieces: dict[str, int] = {}
        for token, piece in enumerate(self.pieces):
            if piece[:1].isdigit():
                self.non_digit[token] = False
                if piece.isdigit() and piece.isascii() and len(piece) <= 3:
                    self.digit_pieces.setdefault(piece, token)
            if not piece.strip() or '"' in piece or "\\" in piece:
                self.quote_or_empty[token] = True

    @classmethod
    def build(cls, llm: Any) -> _VocabTables:
        return cls([llm.detokenize([token]) for token in range(llm.n_vocab())])


def _text_messages(request: ChatRequest) -> list[dict[str, str]]:
    messages: list[dict[str, str]] = []
    for message in request.messages:
        if message.has_media:
            raise UnsupportedInput("the llama.cpp backend takes text only (no images or audio)")
        messages.append({"role": message.role, "content": message.text})
    return messages


def prefix_order(texts: Sequence[str]) -> list[int]:
    """Indices of ``texts`` in an order where neighbours share the longest prefixes.

    Lexicographic order walks the prefix tree depth first, so every text follows the one it shares
    the most with among those before it, and a shared prefix is evaluated once per run of
    neighbours. Ties keep their given order.

    Example:
        >>> prefix_order(["rubric B: x", "rubric A: y", "rubric B: w", "rubric A: z"])
        [1, 3, 2, 0]
    """
    return sorted(range(len(texts)), key=lambda i: texts[i])


def _common_prefix(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    """Length of the common prefix of two token lists, at most ``limit``."""
    n = min(len(a), len(b), limit)
    if n <= 0:
        return 0
    diff = np.nonzero(np.asarray(a[:n]) != np.asarray(b[:n]))[0]
    return int(diff[0]) if diff.size else n


_DEFER_TOKENS = 64
"""A new prompt waits one step when a prompt being evaluated in this step would give it this many
more shared tokens than any sequence holds now (it then copies them instead of evaluating them)."""


@dataclass
class _Slot:
    """One request being decoded on one sequence of the lockstep context."""

    index: int
    steps: _Steps[_Answer]
    step: _Prime | _Advance
    max_tokens: int
    started: float
    evaluated: int = 0
    tokens: list[int] | None = None
    """Tokens of the pending :class:`_Prime` (tokenized once, even when the step waits)."""


class _Lockstep:
    """A second llama.cpp context holding ``n_seq`` sequences in one unified KV cache.

    Each sequence may hold ``config.n_ctx`` tokens (the limit a single request has on the Llama's
    own context), so the cache has room for every sequence at its longest. A sequence's tokens stay
    in the cache after its request ends, so the next request on any sequence can copy the prefix
    it shares with them (``llama_memory_seq_cp`` shares the cells; nothing is evaluated again).
    """

    def __init__(self, llm: Any, n_seq: int, config: LlamaCppConfig, threads: int) -> None:
        import llama_cpp

        self.llm = llm
        self.n_seq = n_seq
        self.n_ctx_seq = config.n_ctx
        params = type(llm.context_params).from_buffer_copy(llm.context_params)
        params.n_ctx = config.n_ctx * n_seq
        # One decode takes every sequence's step (a new prompt each, at worst); llama.cpp splits it
        # into micro-batches of the single-sequence batch size.
        params.n_batch = config.n_ctx * n_seq
        params.n_ubatch = min(config.n_batch, llm.context_params.n_ubatch or config.n_batch)
        params.n_seq_max = n_seq
        params.kv_unified = True
        params.n_threads = params.n_threads_batch = threads
        self.ctx = llama_cpp.llama_init_from_model(llm._model.model, params)
        if not self.ctx:
            raise BackendError(f"llama.cpp: could not create a context for {n_seq} sequences")
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.batch = llama_cpp.llama_batch_init(params.n_batch, 0, 1)
        self.capacity = params.n_batch
        self.n_vocab = llm.n_vocab()
        self.cached: list[list[int]] = [[] for _ in range(n_seq)]
        """Tokens each sequence holds in the cache, in position order."""

    def close(self) -> None:
        import llama_cpp

        if self.batch is not None:
            llama_cpp.llama_batch_free(self.batch)
            self.batch = None
        if self.ctx:
            llama_cpp.llama_free(self.ctx)
            self.ctx = None

    def run(
        self, backend: LlamaCppChatBackend, jobs: Sequence[tuple[int, str, list[Segment], int]]
    ) -> list[Completion | BackendError]:
        """Decode ``(index, prompt, plan, max_tokens)`` jobs, up to ``n_seq`` at a time."""
        results: dict[int, Completion | BackendError] = {}
        queue = list(reversed(jobs))
        slots: list[_Slot | None] = [None] * self.n_seq
        while queue or any(slots):
            for s in range(self.n_seq):
                while slots[s] is None and queue:
                    index, prompt, plan, max_tokens = queue.pop()
                    steps = backend._skeleton_steps(prompt, plan, max_tokens)
                    started = time.perf_counter()
                    try:
                        slots[s] = _Slot(index, steps, next(steps), max_tokens, started)
                    except StopIteration as stop:  # nothing for the model to choose
                        results[index] = stop.value.completion(
                            prompt_tokens=0, max_tokens=max_tokens, latency_s=time.perf_counter() - started
                        )
            if any(slots):
                self._step(backend, slots, results)
        return [results[index] for index, *_ in jobs]

    def _step(
        self,
        backend: LlamaCppChatBackend,
        slots: list[_Slot | None],
        results: dict[int, Completion | BackendError],
    ) -> None:
        """One ``llama_decode`` over the pending step of every slot (a prompt may wait one step)."""
        tokenize = self.llm.tokenize
        before = [list(c) for c in self.cached]
        entries: list[tuple[int, int, int, bool]] = []  # (sequence, position, token, wants logits)
        copies: list[tuple[int, int, int]] = []  # (source, destination, tokens)
        cuts: list[tuple[int, int]] = []  # (sequence, first position removed)
        pending: dict[int, list[int]] = {}
        sources: set[int] = set()
        targets: set[int] = set()
        prompt_tokens = generated_tokens = 0
        for s, slot in enumerate(slots):
            if slot is None:
                continue
            step = slot.step
            if isinstance(step, _Prime):
                if slot.tokens is None:
                    slot.tokens = tokenize(step.text.encode("utf-8"), add_bos=True, special=True)
                tokens = slot.tokens
                if len(tokens) >= self.n_ctx_seq:
                    self._fail(
                        slots,
                        s,
                        results,
                        f"prompt of {len(tokens)} tokens does not fit n_ctx={self.n_ctx_seq}",
                    )
                    continue
                limit = len(tokens) - 1
                source, same = s, _common_prefix(before[s], tokens, limit)
                if s not in sources:
                    for o in range(self.n_seq):
                        if o != s and o not in targets:
                            shared = _common_prefix(before[o], tokens, limit)
                            if shared > same:
                                source, same = o, shared
                waiting = max((_common_prefix(t, tokens, limit) for t in pending.values()), default=0)
                if waiting - same >= _DEFER_TOKENS:
                    continue
                if source != s:
                    copies.append((source, s, same))
                    sources.add(source)
                    targets.add(s)
                else:
                    cuts.append((s, same))
                entries.extend((s, same + k, t, same + k == limit) for k, t in enumerate(tokens[same:]))
                pending[s] = tokens
                self.cached[s] = list(tokens)
                slot.evaluated += len(tokens) - same
                prompt_tokens += len(tokens) - same
                backend.stats.reused_tokens += same
            else:
                at = len(before[s]) if step.at is None else step.at
                if at + 1 >= self.n_ctx_seq:
                    self._fail(slots, s, results, f"answer exceeds n_ctx={self.n_ctx_seq}")
                    continue
                cuts.append((s, at))
                entries.append((s, at, step.token, True))
                self.cached[s] = [*before[s][:at], step.token]
                generated_tokens += 1
        if not entries:
            return
        started = time.perf_counter()
        rows = self._decode(copies, cuts, entries)
        if rows is None:
            # The cache no longer matches what we think it holds: start every sequence afresh.
            self.clear()
            for s, slot in enumerate(slots):
                if slot is not None:
                    self._fail(slots, s, results, "llama_decode failed")
            return
        elapsed = time.perf_counter() - started
        # A step mixes prompt and generated tokens; its time is split by their token counts.
        share = prompt_tokens / (prompt_tokens + generated_tokens)
        backend.stats.prompt_tokens += prompt_tokens
        backend.stats.prompt_s += elapsed * share
        backend.stats.generated_tokens += generated_tokens
        backend.stats.generated_s += elapsed * (1 - share)
        backend.stats.steps += 1
        for s, logits in rows.items():
            slot = slots[s]
            assert slot is not None
            reply: Any = (logits, len(self.cached[s])) if isinstance(slot.step, _Prime) else logits
            slot.tokens = None
            try:
                slot.step = slot.steps.send(reply)
            except StopIteration as stop:
                answer: _Answer = stop.value
                results[slot.index] = answer.completion(
                    prompt_tokens=slot.evaluated,
                    max_tokens=slot.max_tokens,
                    latency_s=time.perf_counter() - slot.started,
                )
                slots[s] = None

    def _decode(
        self,
        copies: list[tuple[int, int, int]],
        cuts: list[tuple[int, int]],
        entries: list[tuple[int, int, int, bool]],
    ) -> dict[int, np.ndarray] | None:
        """Apply the step's cache edits, decode ``entries`` in one batch; logits per sequence.

        ``copies``: (source, destination, tokens): the destination is emptied, then shares the
        source's first tokens; ``cuts``: (sequence, position): its cells from there on are dropped;
        ``entries``: (sequence, position, token, wants logits). Copies come first, so a source cut
        in the same step still hands over what it held. None when llama.cpp refused the batch.
        """
        import llama_cpp

        for source, target, count in copies:
            llama_cpp.llama_memory_seq_rm(self.memory, target, -1, -1)
            llama_cpp.llama_memory_seq_cp(self.memory, source, target, 0, count)
        for s, first in cuts:
            llama_cpp.llama_memory_seq_rm(self.memory, s, first, -1)
        batch = self.batch
        assert len(entries) <= self.capacity
        for i, (s, pos, token, wants) in enumerate(entries):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = s
            batch.logits[i] = wants
        batch.n_tokens = len(entries)
        code = llama_cpp.llama_decode(self.ctx, batch)
        if code != 0:
            log.warning("llama_decode returned %d for a batch of %d tokens", code, len(entries))
            return None
        rows: dict[int, np.ndarray] = {}
        for i, (s, _, _, wants) in enumerate(entries):
            if wants:
                pointer = llama_cpp.llama_get_logits_ith(self.ctx, i)
                rows[s] = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)).copy()
        return rows

    def clear(self) -> None:
        """Empty every sequence (the next requests evaluate their prompts from the start)."""
        import llama_cpp

        llama_cpp.llama_memory_clear(self.memory, True)
        self.cached = [[] for _ in range(self.n_seq)]

    def _fail(
        self, slots: list[_Slot | None], s: int, results: dict[int, Completion | BackendError], why: str
    ) -> None:
        slot = slots[s]
        assert slot is not None
        results[slot.index] = BackendError(f"llama.cpp: {why}")
        slots[s] = None
