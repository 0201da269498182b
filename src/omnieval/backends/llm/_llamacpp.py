"""llama.cpp backend: a GGUF model in-process (the packaged Qwen2.5-Coder-1.5B judge on CPU).

Text only. A JSON schema constrains the answer in one of two ways:

- ``skeleton`` (greedy decoding of a fixed-shape schema such as a judge verdict): the decoder
  writes the JSON skeleton itself and the model generates only the values (scores restricted to the
  allowed integers, rationales up to their length bound). See :mod:`._skeleton`.
- ``grammar`` (anything else, e.g. the repair schema's ``anyOf``): llama.cpp's JSON-schema grammar
  through ``response_format={"type": "json_object", "schema": ...}``. Its check runs over the whole
  vocabulary at every token, which was several times slower per token on CPU.

Both keep llama.cpp's KV cache between requests and re-evaluate only the part of the prompt that
differs from the previous one, so requests sharing a long prefix (one transition judged for several
systems) are much cheaper sent one after the other.
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from omnieval.backends.llm._config import LlamaCppConfig
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


def auto_threads(max_threads: int = 4) -> int:
    """Threads for llama.cpp: the cores not already busy (1-minute load average), at least one."""
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    idle = cores - os.getloadavg()[0]
    return max(1, min(max_threads, cores, int(idle + 0.5)))


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
        log.info("loaded %s in %.1f s (%d threads)", self.path.name, self.load_s, self.threads)

    def identity(self) -> ModelIdentity:
        return self._identity

    def chat(self, request: ChatRequest) -> Completion:
        messages: list[dict[str, str]] = []
        for message in request.messages:
            if message.has_media:
                raise UnsupportedInput("the llama.cpp backend takes text only (no images or audio)")
            messages.append({"role": message.role, "content": message.text})
        decoding = request.decoding
        if request.json_schema is not None and self.config.constrained_decoding == "skeleton":
            plan = plan_schema(request.json_schema)
            greedy = decoding.temperature == 0 and decoding.repetition_penalty == 1.0
            if plan is not None and greedy:
                return self._skeleton_chat(messages, plan, decoding.max_tokens)
        kwargs: dict[str, Any] = {
            "messages": messages,
            "temperature": decoding.temperature,
            "top_p": decoding.top_p,
            "repeat_penalty": decoding.repetition_penalty,
            "max_tokens": decoding.max_tokens,
        }
        if decoding.top_k is not None:
            kwargs["top_k"] = decoding.top_k
        if decoding.seed is not None:
            kwargs["seed"] = decoding.seed
        if request.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": dict(request.json_schema)}
        started = time.perf_counter()
        try:
            out = self._llm.create_chat_completion(**kwargs)
        except ValueError as exc:
            # llama.cpp raises ValueError when the prompt does not fit the context window.
            raise BackendError(f"llama.cpp: {exc}") from None
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

    def _prime(self, text: str) -> np.ndarray:
        """Evaluate ``text`` reusing the longest prefix already in the KV cache; return next-token logits."""
        llm = self._llm
        tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        if len(tokens) >= llm.n_ctx():
            raise BackendError(f"llama.cpp: prompt of {len(tokens)} tokens does not fit n_ctx={llm.n_ctx()}")
        cached = llm.input_ids[: llm.n_tokens]
        limit = min(len(cached), len(tokens) - 1)
        same = 0
        if limit > 0:
            diff = np.nonzero(cached[:limit] != np.asarray(tokens[:limit], dtype=cached.dtype))[0]
            same = int(diff[0]) if diff.size else limit
        llm.n_tokens = same
        llm.eval(tokens[same:])
        self._evaluated += len(tokens) - same
        return self._logits()

    def _position(self) -> int:
        """Tokens in the KV cache now (where the next evaluated token goes)."""
        return int(self._llm.n_tokens)

    def _advance(self, token: int, at: int | None = None) -> np.ndarray:
        """Evaluate ``token`` after the cache's first ``at`` tokens (default: all); next-token logits."""
        llm = self._llm
        if at is not None:
            llm.n_tokens = at
        if llm.n_tokens + 1 >= llm.n_ctx():
            raise BackendError(f"llama.cpp: answer exceeds n_ctx={llm.n_ctx()}")
        llm.eval([token])
        return self._logits()

    def _skeleton_chat(
        self, messages: list[dict[str, str]], plan: list[Segment], max_tokens: int
    ) -> Completion:
        started = time.perf_counter()
        prompt = self._chat_prompt(messages)
        self._evaluated = 0
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
                value, used, complete, dist = self._choose_int(prompt + out, segment, budget)
                if dist is not None:
                    probs[segment.path] = dist
            else:
                value, used, complete = self._write_text(prompt + out, segment, budget)
            budget -= used
            out += value
            if not complete:
                # Out of tokens mid-value: return the truncated answer; the ledger will not accept it.
                finish = "length"
                break
        return Completion(
            text=out,
            finish_reason=finish,
            prompt_tokens=self._evaluated,
            completion_tokens=max_tokens - budget,
            latency_s=time.perf_counter() - started,
            value_probs=probs,
        )

    def _choose_int(
        self, context: str, segment: IntChoice, budget: int
    ) -> tuple[str, int, bool, dict[int, float] | None]:
        """Greedy integer from ``segment.values``, and the decoder's probability of every allowed value.

        The distribution is the one this constrained decoder samples from: at each digit position
        the model's probabilities of the allowed digit tokens, plus (once the digits so far form a
        valid value) "the number ends here" = the mass of all non-digit tokens, renormalized over
        those options. For 1-10 with one token per digit: p(k) for k = 2..9 from the first position;
        p(1) = p("1") x p(end | "1") and p(10) = p("1") x p("0" | "1"), the second factor from one
        extra forward pass over "1" when the greedy choice did not already need it.
        """
        tables = self._tables()
        root = self._prime(context)
        base = self._position()
        texts = [str(v) for v in segment.values]
        memo: dict[str, np.ndarray] = {"": root}

        def options(prefix: str) -> tuple[list[int], list[str], bool]:
            _, complete = int_continuations(prefix, segment.values)
            pieces = [p for p in tables.digit_pieces if any(t.startswith(prefix + p) for t in texts)]
            return [tables.digit_pieces[p] for p in pieces], pieces, complete

        def logits_after(prefix: str, path: list[int]) -> np.ndarray:
            # Depth-first order keeps path[:-1] in the KV cache, so one token is evaluated per prefix.
            if prefix not in memo:
                memo[prefix] = self._advance(path[-1], at=base + len(path) - 1)
            return memo[prefix]

        def distribution(prefix: str, path: list[int]) -> dict[str, float]:
            ids, pieces, complete = options(prefix)
            logp = _log_softmax(logits_after(prefix, path))
            masses = [float(logp[i]) for i in ids]
            if complete:
                masses.append(_logsumexp(logp[tables.non_digit]))
            shares = _normalized(masses)
            out: dict[str, float] = {prefix: shares[-1]} if complete else {}
            for token, piece, share in zip(ids, pieces, shares, strict=False):
                more, _ = int_continuations(prefix + piece, segment.values)
                below = distribution(prefix + piece, [*path, token]) if more else {prefix + piece: 1.0}
                for text, p in below.items():
                    out[text] = out.get(text, 0.0) + share * p
            return out

        prefixes = {t[:i] for t in texts for i in range(1, len(t))}
        dist: dict[int, float] | None = None
        if len(prefixes) <= _MAX_PROB_PREFIXES:
            dist = {int(text): p for text, p in distribution("", []).items() if text in texts}

        digits = ""
        path: list[int] = []
        used = 0
        while used < budget:
            allowed, _, complete = options(digits)
            if not allowed:
                break
            logits = logits_after(digits, path)
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

    def _write_text(self, context: str, segment: Text, budget: int) -> tuple[str, int, bool]:
        tables = self._tables()
        logits = self._prime(context)
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
            logits = self._advance(token)
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
