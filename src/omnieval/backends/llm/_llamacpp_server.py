"""llama.cpp's OpenAI-compatible server, started and watched by omnieval: the served ``cpu`` judge.

``python -m llama_cpp.server`` (llama-cpp-python's ``server`` extra) serves the packaged GGUF on a
free port, in its own process group, its output in a log file, stopped at the end and by a
watchdog when the run dies (:mod:`._process`); omnieval waits for ``GET /v1/models`` (the server
has no ``/health``). A server that dies under a run is started again (``max_restarts``) and the
request it was answering is sent again from its start, so no answer is lost or given twice.

Requests reach it over HTTP only. Two paths, chosen as the in-process backend chooses:

- **skeleton** (greedy, fixed-shape schema; every judge verdict): this process writes the JSON
  skeleton and runs the in-process skeleton decoder (:meth:`LlamaCppChatBackend._skeleton_steps`,
  the same code) with the model's next-token distribution read from the server's
  ``/v1/completions`` log-probabilities. An integer value costs one ``max_tokens: 1`` request per
  digit prefix; a text value is one streamed greedy generation whose tokens and per-position top
  log-probabilities feed the decoder step by step, and the stream is closed as soon as the decoder
  ends the value (closing quote, sentence end, length bound).
- **grammar** (anything else, e.g. the repair schema): ``/v1/chat/completions`` through the
  platform's OpenAI-compatible client, the schema as llama.cpp's ``json_object`` grammar, the
  unset decoding fields filled with llama-cpp-python's in-process defaults (the server's own
  defaults differ: temperature 0.8, repeat penalty 1.1).

What differs from in-process decoding, by construction:

- The decoder sees the top ``top_logprobs`` tokens of each position, not the whole vocabulary: a
  greedy choice is the same whenever an allowed token is among them (always seen so far), and a
  value probability misses the mass of the tokens outside them (renormalized over those seen).
- Log-probabilities come back as float32 (the in-process decoder works from float32 logits in
  float64): value probabilities agree to about 1e-6 on the same state.
- llama.cpp's CPU numbers depend on the batches a token was evaluated in, and the server evaluates
  a prompt from wherever its cache stops matching. Before each prompt one small request cuts the
  server's match point to where the in-process backend starts evaluating (a chunk boundary for a
  request's first prompt, the end of what the decoder evaluated for the later ones), and the server
  runs with ``--n_batch`` :data:`._llamacpp.PROMPT_CHUNK`, so it evaluates the same batches; without
  this a near tie (0.354 against 0.336) went the other way on one of 16 verdicts.
- A text value whose greedy first token the decoder forbids (empty, whitespace, a quote) goes on
  from the decoder's own choice, re-tokenized from text (logged; none seen in the shipped suites).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from omnieval.backends.llm._config import LlamaCppConfig, LlamaCppServerConfig
from omnieval.backends.llm._cores import auto_threads
from omnieval.backends.llm._llamacpp import (
    PROMPT_CHUNK,
    LlamaCppChatBackend,
    _Advance,
    _Answer,
    _common_prefix,
    _Prime,
    _text_messages,
    resolve_model_path,
)
from omnieval.backends.llm._openai import TRANSIENT_STATUS, OpenAIChatBackend, request_body
from omnieval.backends.llm._process import ServerProcess, free_port
from omnieval.backends.llm._skeleton import Fixed, Segment, Text
from omnieval.backends.llm._types import (
    BackendError,
    BackendUnavailable,
    ChatRequest,
    Completion,
    ModelIdentity,
    TransientBackendError,
    chat_concurrently,
)

log = logging.getLogger(__name__)

SERVER_LOG_DIR_ENV = "OMNIEVAL_SERVER_LOG_DIR"
"""Folder for the server's log (default: ``$OMNIEVAL_VLLM_LOG_DIR``, else the temp folder)."""

LLAMACPP_DEFAULTS: dict[str, Any] = {
    "temperature": 0.2,
    "top_p": 0.95,
    "top_k": 40,
    "min_p": 0.05,
    "repeat_penalty": 1.0,
}
"""``Llama.create_chat_completion``'s defaults (llama-cpp-python 0.3.36), sent for every field a
request leaves unset: what the in-process backend decodes with, where the server would otherwise
apply its own request defaults (temperature 0.8, repeat penalty 1.1)."""

_T = TypeVar("_T")


def llamacpp_server_command(
    config: LlamaCppServerConfig, *, python: str, model_path: Path, alias: str, port: int, threads: int
) -> list[str]:
    """The ``python -m llama_cpp.server`` argument list for one GGUF.

    Example:
        >>> cfg = LlamaCppServerConfig(n_ctx=4096)
        >>> " ".join(llamacpp_server_command(cfg, python="python", model_path=Path("/m/q.gguf"), alias="q",
        ...                                   port=8000, threads=2))  # doctest: +NORMALIZE_WHITESPACE
        'python -m llama_cpp.server --model /m/q.gguf --model_alias q --host 127.0.0.1 --port 8000
         --n_ctx 4096 --n_batch 32 --n_threads 2 --n_threads_batch 2 --use_mmap false --use_mlock false
         --interrupt_requests false'
    """
    cmd = [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--model_alias",
        alias,
        "--host",
        config.host,
        "--port",
        str(port),
        "--n_ctx",
        str(config.n_ctx),
        "--n_batch",
        # Skeleton decoding: the in-process backend's prompt batches (see _align), else as configured.
        str(PROMPT_CHUNK if config.constrained_decoding == "skeleton" else config.n_batch),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        # As in-process: read into memory once (mmap paging was slow on shared disks).
        "--use_mmap",
        "false",
        "--use_mlock",
        "false",
        # A waiting request must not end the stream being read (this client sends one at a time).
        "--interrupt_requests",
        "false",
    ]
    if config.chat_format is not None:
        cmd += ["--chat_format", config.chat_format]
    cmd += list(config.extra_args)
    return cmd


def server_log_dir() -> Path:
    """Where server logs go: ``$OMNIEVAL_SERVER_LOG_DIR``, ``$OMNIEVAL_VLLM_LOG_DIR`` or the temp folder."""
    raw = os.environ.get(SERVER_LOG_DIR_ENV) or os.environ.get("OMNIEVAL_VLLM_LOG_DIR")
    return Path(raw) if raw else Path(tempfile.gettempdir())


class LlamaCppServer(ServerProcess):
    """One ``llama_cpp.server`` process serving ``model_path`` as ``alias``."""

    def __init__(
        self,
        config: LlamaCppServerConfig,
        *,
        model_path: Path,
        alias: str,
        threads: int,
        log_dir: Path | None = None,
    ) -> None:
        self.config = config
        self.alias = alias
        self.port = config.port or free_port(config.host)
        folder = log_dir or server_log_dir()
        safe = alias.replace("/", "--")
        super().__init__(
            llamacpp_server_command(
                config,
                python=config.python or sys.executable,
                model_path=model_path,
                alias=alias,
                port=self.port,
                threads=threads,
            ),
            label=f"llama.cpp server for {alias}",
            base_url=f"http://{config.host}:{self.port}",
            health_path="/v1/models",
            log_path=folder / f"llamacpp-server-{safe}-{self.port}.log",
            startup_timeout_s=config.startup_timeout_s,
        )

    def _exited_message(self, code: int) -> str:
        return (
            f"{self.label} exited with code {code} before becoming healthy (server log: {self.log_path}); "
            "log tail:\n" + self.log_tail()
        )

    def _timeout_message(self, limit: float) -> str:
        return (
            f"{self.label} not healthy after {limit:.0f} s (server log: {self.log_path}); log tail:\n"
            + self.log_tail()
        )


class _RemoteDecoder(LlamaCppChatBackend):
    """The in-process skeleton decoder over a vocabulary-only GGUF: chat template, tokenizer and
    token tables, no weights. The logits it decodes from come from the server."""

    def __init__(self, config: LlamaCppConfig, path: Path) -> None:
        from llama_cpp import Llama

        self.config = config
        self.path = path
        self._llm: Any = Llama(model_path=str(path), vocab_only=True, verbose=False)
        self._formatter = None
        self._vocab = None
        self._batch = None
        self.parallel = 1
        by_text: dict[str, int] = {}
        for token, piece in enumerate(self._tables().pieces):
            by_text.setdefault(piece, token)
        self.token_of_text = by_text
        """Token id of each piece text (the server names tokens by text; the first id wins a tie)."""

    def tokens(self, text: str) -> list[int]:
        return [int(t) for t in self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)]

    def count_tokens(self, text: str) -> int:
        return len(self.tokens(text))

    def cut_prompt(self, tokens: list[int], keep: int) -> str | None:
        """A prompt the server reads as ``tokens[:keep]`` and one token that differs from
        ``tokens[keep]`` (an end-of-text marker); None when the text does not tokenize back so."""
        llm = self._llm
        for marker in (llm.token_bos(), llm.token_eos()):
            if marker < 0 or (keep < len(tokens) and tokens[keep] == marker):
                continue
            raw: bytes = llm.detokenize(tokens[:keep], special=True) + llm.detokenize([marker], special=True)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:  # the cut splits a character: no such prompt
                return None
            if self.tokens(text) == [*tokens[:keep], marker]:
                return text
        return None

    def end_logits(self) -> np.ndarray:
        """A logits row whose only token is end-of-generation."""
        row = np.full(self._llm.n_vocab(), -np.inf, dtype=np.float32)
        row[self._llm.token_eos()] = 0.0
        return row

    def sparse_logits(self, top: dict[str, float]) -> np.ndarray:
        """A logits row with the server's top log-probabilities and ``-inf`` elsewhere."""
        row = np.full(self._llm.n_vocab(), -np.inf, dtype=np.float32)
        for text, logprob in top.items():
            token = self.token_of_text.get(text)
            if token is not None and logprob > row[token]:
                row[token] = logprob
        return row


class _Stream:
    """A streamed greedy generation read one token at a time: ``(token text, top log-probs)``."""

    def __init__(self, lines: Iterator[str], close: Callable[[], None]) -> None:
        self._lines = lines
        self._close = close
        self.tokens: list[str] = []

    def next(self) -> tuple[str, dict[str, float]] | None:
        for line in self._lines:
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                return None
            choice = json.loads(payload)["choices"][0]
            logprobs = choice.get("logprobs") or {}
            tokens, tops = logprobs.get("tokens") or [], logprobs.get("top_logprobs") or []
            if not tokens or not tops:
                continue
            self.tokens.append(str(tokens[0]))
            return str(tokens[0]), {str(k): float(v) for k, v in (tops[0] or {}).items()}
        # The body ended without [DONE]: the server went away mid-answer (a kill, a crash).
        raise TransientBackendError("the server closed the stream mid-answer")

    def close(self) -> None:
        self._close()


class ServedLlamaCppBackend:
    """A judge backend that owns a llama.cpp server: started when opened, stopped on ``close``."""

    def __init__(self, config: LlamaCppServerConfig, *, model: str, revision: str = "") -> None:
        if config.python is None:
            import importlib.util

            missing = [
                m
                for m in ("llama_cpp", "sse_starlette", "starlette_context")
                if importlib.util.find_spec(m) is None
            ]
            if missing:
                raise BackendUnavailable(
                    f"llama-cpp-python's server is not installed ({', '.join(missing)} missing): "
                    "pip install 'llama-cpp-python[server]==0.3.36'"
                )
        import httpx

        from omnieval.backends.assets import file_sha256

        self.config = config
        self.model, self.revision = model, revision
        self.path = resolve_model_path(config.model_path)
        self._identity = ModelIdentity(
            model=model, revision=revision, weights_sha256={self.path.name: file_sha256(self.path)}
        )
        self.threads = config.n_threads or auto_threads()
        self.decoder = _RemoteDecoder(
            LlamaCppConfig(
                model_path=str(self.path),
                n_ctx=config.n_ctx,
                n_batch=config.n_batch,
                chat_format=config.chat_format,
                constrained_decoding=config.constrained_decoding,
                skeleton_text_sentences=config.skeleton_text_sentences,
            ),
            self.path,
        )
        self.server = LlamaCppServer(config, model_path=self.path, alias=model, threads=self.threads)
        self.restarts = 0
        self._canonical: list[int] = []
        """Prompt tokens whose server KV cache was evaluated in aligned PROMPT_CHUNK batches (the
        last request's prompt, whole chunks only); emptied when the server restarts."""
        self.aligned = 0
        """Requests whose server cache was cut to the in-process batch boundary first (see _align)."""
        self._lock = threading.Lock()
        self._http = httpx.Client(
            timeout=httpx.Timeout(config.timeout_s, connect=min(30.0, config.timeout_s))
        )
        self.server.__enter__()
        self.client = _LlamaCppChatClient(
            f"{self.server.base_url}/v1",
            model=model,
            revision=revision,
            settings=config.model_copy(update={"concurrency": 1}),
        )
        self.falls_back = 0
        """Text values whose server-greedy first token the decoder forbade (see the module notes)."""

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def identity(self) -> ModelIdentity:
        return self._identity

    # -- requests ------------------------------------------------------------------------------

    def chat(self, request: ChatRequest) -> Completion:
        messages = _text_messages(request)
        plan = self.decoder._skeleton_plan(request)
        if plan is None:
            return self._with_restarts(lambda: self.client.chat(request))
        budget = request.decoding.max_tokens or self.config.n_ctx
        return self._with_restarts(lambda: self._skeleton_chat(messages, plan, budget))

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        # One at a time: the server decodes one request at a time anyway, and the skeleton decoder
        # reads a stream that a second request would have to wait behind.
        return chat_concurrently(self.chat, requests, 1)

    def _with_restarts(self, call: Callable[[], _T]) -> _T:
        """``call()``; when it fails because the server died, start it again and call again."""
        with self._lock:
            while True:
                try:
                    return call()
                except TransientBackendError:
                    if not self._died_within(2.0):
                        raise
                    if self.restarts >= self.config.max_restarts:
                        raise BackendUnavailable(
                            f"{self.server.label} died {self.restarts + 1} times (server log: "
                            f"{self.server.log_path}); log tail:\n{self.server.log_tail()}"
                        ) from None
                    self.restarts += 1
                    log.warning(
                        "%s died (log: %s); starting it again (%d of %d) and resending the request",
                        self.server.label,
                        self.server.log_path,
                        self.restarts,
                        self.config.max_restarts,
                    )
                    self.server.stop(grace_s=5.0)
                    self._canonical = []
                    self.server.__enter__()

    def _died_within(self, seconds: float) -> bool:
        """Whether the server process is gone, waiting up to ``seconds`` for it: a killed server's
        connection can drop a moment before its process is reaped, and a dropped stream from a
        server still running is the request's failure, not the server's."""
        process = self.server.process
        if process is None:
            return True
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True

    # -- skeleton decoding over /v1/completions ------------------------------------------------

    def _completion_body(self, prompt: str, max_tokens: int, *, stream: bool) -> dict[str, Any]:
        return {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "logprobs": self.config.top_logprobs,
            # Greedy, nothing else: the skeleton decoder is greedy; the server's own defaults
            # (repeat penalty 1.1, min_p 0.05) must not reshape the distribution it reads.
            "temperature": 0.0,
            "top_p": 1.0,
            "top_k": 0,
            "min_p": 0.0,
            "repeat_penalty": 1.0,
            "stream": stream,
        }

    def _top_logprobs(self, prompt: str) -> dict[str, float]:
        """Top log-probabilities of the token after ``prompt`` (a one-token stream).

        Streamed, not a plain request: llama-cpp-python computes a plain request's log-probabilities
        as a log-softmax over its whole logits buffer (``n_ctx`` rows of the vocabulary, 2.5 GB at
        4096), seconds per request; a stream computes only the rows it returns.
        """
        stream = self._open_stream(prompt, 1)
        try:
            first = stream.next()
        finally:
            stream.close()
        if first is None:
            raise BackendError(f"{self.model}: the server generated nothing")
        return first[1]

    def _open_stream(self, prompt: str, max_tokens: int) -> _Stream:
        import httpx

        request = self._http.build_request(
            "POST",
            f"{self.server.base_url}/v1/completions",
            json=self._completion_body(prompt, max_tokens, stream=True),
        )
        try:
            response = self._http.send(request, stream=True)
        except httpx.TimeoutException:
            raise TransientBackendError(
                f"{self.model}: request timed out after {self.config.timeout_s} s"
            ) from None
        except httpx.TransportError as exc:
            raise TransientBackendError(
                f"{self.model}: {type(exc).__name__} talking to {self.server.base_url}"
            ) from None
        if response.status_code != 200:
            response.read()
            response.close()
            message = f"{self.model}: HTTP {response.status_code}: {response.text[:300]}"
            if response.status_code in TRANSIENT_STATUS:
                raise TransientBackendError(message)
            raise BackendError(message)

        def lines() -> Iterator[str]:
            try:
                yield from response.iter_lines()
            except httpx.TransportError as exc:
                raise TransientBackendError(
                    f"{self.model}: {type(exc).__name__} reading from {self.server.base_url}"
                ) from None

        return _Stream(lines(), response.close)

    def _align(self, tokens: list[int], keep: int) -> None:
        """Make the server re-evaluate ``tokens`` from position ``keep`` on, as the in-process
        backend does.

        llama.cpp's CPU kernels round a token's numbers differently with the shape of the batch it
        was evaluated in (rows are taken in groups of 4, the rest one by one), and the server
        evaluates a prompt from wherever its cache stops matching. The in-process backend evaluates
        a request's prompt in :data:`PROMPT_CHUNK`-token batches from a chunk boundary, and later
        prompts of a request from the end of what its own decoder evaluated. One small request
        (``tokens[:keep]`` and an end-of-text marker, nothing else) moves the server's match point
        to ``keep``; the server, run with ``--n_batch`` = :data:`PROMPT_CHUNK`, then evaluates the
        rest in the same batches.
        """
        prompt = self.decoder.cut_prompt(tokens, keep)
        if prompt is None:
            log.debug("%s: no cut prompt at %d tokens; the server keeps its own batches", self.model, keep)
            return
        body = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": 1,
            "temperature": 0.0,
            "top_p": 1.0,
            "repeat_penalty": 1.0,
            "stream": True,
        }
        import httpx

        try:
            with self._http.stream("POST", f"{self.server.base_url}/v1/completions", json=body) as response:
                for _ in response.iter_lines():
                    pass
        except httpx.TransportError as exc:
            raise TransientBackendError(
                f"{self.model}: {type(exc).__name__} talking to {self.server.base_url}"
            ) from None
        self.aligned += 1

    def _next_row(self, stream: _Stream) -> np.ndarray:
        """The logits row of the stream's next position. A stream that ends ([DONE]) stopped at the
        end-of-generation token, which it does not send: the row then holds only that token."""
        following = stream.next()
        if following is None:
            return self.decoder.end_logits()
        return self.decoder.sparse_logits(following[1])

    def _skeleton_chat(
        self, messages: list[dict[str, str]], plan: list[Segment], max_tokens: int
    ) -> Completion:
        started = time.perf_counter()
        decoder = self.decoder
        prompt = decoder._chat_prompt(messages)
        values = [segment for segment in plan if not isinstance(segment, Fixed)]
        steps = decoder._skeleton_steps(prompt, plan, max_tokens)
        primes = 0
        context, context_tokens = "", 0
        context_ids: list[int] = []
        advanced: list[int] = []
        stream: _Stream | None = None
        reply: Any = None
        try:
            while True:
                try:
                    step = steps.send(reply)
                except StopIteration as stop:
                    answer: _Answer = stop.value
                    break
                if stream is not None and not (isinstance(step, _Advance) and step.at is None):
                    stream.close()
                    stream = None
                if isinstance(step, _Prime):
                    segment = values[primes] if primes < len(values) else None
                    tokens = decoder.tokens(step.text)
                    if primes == 0:
                        # A request's first prompt: whole chunks it shares with the last prompt.
                        shared = _common_prefix(self._canonical, tokens, len(tokens) - 1)
                        keep = shared // PROMPT_CHUNK * PROMPT_CHUNK
                    else:
                        # Later prompts: from the end of what the decoder itself evaluated.
                        keep = _common_prefix(context_ids + advanced, tokens, len(tokens) - 1)
                    self._align(tokens, keep)
                    if primes == 0:
                        self._canonical = tokens[: len(tokens) // PROMPT_CHUNK * PROMPT_CHUNK]
                    primes += 1
                    context, context_ids, advanced = step.text, tokens, []
                    context_tokens = len(tokens)
                    if isinstance(segment, Text):
                        stream = self._open_stream(step.text, max_tokens)
                        reply = (self._next_row(stream), context_tokens)
                    else:
                        reply = (decoder.sparse_logits(self._top_logprobs(step.text)), context_tokens)
                    continue
                # _Advance: one more token after the context (text), or after a digit prefix (at).
                position = context_tokens + len(advanced) if step.at is None else step.at
                advanced = [*advanced[: position - context_tokens], step.token]
                piece = decoder._tables().pieces[step.token]
                if stream is not None and stream.tokens and stream.tokens[-1] == piece:
                    reply = self._next_row(stream)
                    continue
                if stream is not None:
                    # The decoder left the server's greedy path (a forbidden first token): go on
                    # from its own choice, re-tokenized from text.
                    self.falls_back += 1
                    log.info("%s: skeleton text left the server's greedy path at %r", self.model, piece)
                    stream.close()
                    stream = None
                raw = b"".join(decoder._tables().piece_bytes[t] for t in advanced)
                text = context + raw.decode("utf-8", errors="ignore")
                if step.at is None:
                    stream = self._open_stream(text, max_tokens)
                    context_ids = decoder.tokens(text)
                    context, context_tokens, advanced = text, len(context_ids), []
                    reply = self._next_row(stream)
                else:
                    reply = decoder.sparse_logits(self._top_logprobs(text))
        finally:
            if stream is not None:
                stream.close()
        return answer.completion(
            prompt_tokens=decoder.count_tokens(prompt),
            max_tokens=max_tokens,
            latency_s=time.perf_counter() - started,
        )

    def close(self) -> None:
        try:
            self.client.close()
            self._http.close()
            self.decoder.close()
        finally:
            self.server.stop()


class _LlamaCppChatClient(OpenAIChatBackend):
    """The platform's OpenAI-compatible client with llama.cpp's request names and in-process defaults."""

    def body(self, request: ChatRequest) -> dict[str, Any]:
        body = request_body(
            request,
            model=self.served_model,
            schema_field=self.settings.schema_field,
            vllm_extensions=True,
            use_audio_in_video=False,
        )
        body.pop("chat_template_kwargs", None)
        body.pop("stop_token_ids", None)
        if "repetition_penalty" in body:
            body["repeat_penalty"] = body.pop("repetition_penalty")
        for key, value in LLAMACPP_DEFAULTS.items():
            body.setdefault(key, value)
        return body
