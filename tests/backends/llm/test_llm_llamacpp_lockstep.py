"""Lockstep decoding of several skeleton requests (llama.cpp sequences sharing one KV cache).

The scheduler is checked against the one-at-a-time decoder on a stand-in model whose logits are a
pure function of the tokens a sequence holds: if the lockstep bookkeeping (prefix copies, cuts,
positions) keeps every sequence's cache equal to what the one-at-a-time path would hold, the
answers are identical. Behind ``slow``: the packaged model, where one request decoded on the
lockstep context equals the one-at-a-time answer bit for bit.
"""

from __future__ import annotations

import itertools
import json
import string
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from omnieval.backends.llm import ChatRequest, Decoding, LlamaCppConfig, Message
from omnieval.backends.llm._llamacpp import (
    PROMPT_CHUNK,
    LlamaCppChatBackend,
    _common_prefix,
    _Lockstep,
    _VocabTables,
    prefix_order,
)

# One character per token, so that text and tokens convert both ways; "" (id 0) ends a string.
PIECES = ["", *string.printable[:95]]
IDS = {p: i for i, p in enumerate(PIECES)}


def _tokenize(text: bytes, add_bos: bool = True, special: bool = True) -> list[int]:
    return [0] + [IDS.get(c, IDS["?"]) for c in text.decode("utf-8")]


def _logits(tokens: Sequence[int]) -> np.ndarray:
    """Logits that depend on the whole context and nothing else (no call order, no cache layout)."""
    rng = np.random.default_rng(zlib.crc32(np.asarray(tokens, dtype=np.int32).tobytes()))
    logits = rng.normal(0.0, 1.0, len(PIECES)).astype(np.float32)
    # Favour letters and digits so rationales read like words and end by length or quote.
    for piece, bonus in (("e", 2.0), (" ", 1.5), ("7", 2.5), ("1", 2.0), (".", 0.8), ('"', 0.7)):
        logits[IDS[piece]] += bonus
    return logits


class _FakeLlm:
    tokenize = staticmethod(_tokenize)

    def n_vocab(self) -> int:
        return len(PIECES)


class _FakeLockstep(_Lockstep):
    """The scheduler of :class:`_Lockstep` over a cache simulated as one token list per sequence."""

    def __init__(self, n_seq: int, n_ctx: int) -> None:  # no llama.cpp context
        self.llm = _FakeLlm()
        self.n_seq, self.n_ctx_seq = n_seq, n_ctx
        self.capacity = n_seq * n_ctx
        self.cached = [[] for _ in range(n_seq)]
        self.kv: list[list[int]] = [[] for _ in range(n_seq)]
        self.batch_sizes: list[int] = []
        self.copied = 0

    def _decode(
        self,
        copies: list[tuple[int, int, int]],
        cuts: list[tuple[int, int]],
        entries: list[tuple[int, int, int, bool]],
    ) -> dict[int, np.ndarray] | None:
        snapshot = [list(k) for k in self.kv]
        for source, target, count in copies:
            assert count <= len(snapshot[source])
            self.kv[target] = snapshot[source][:count]
            self.copied += count
        for s, first in cuts:
            self.kv[s] = self.kv[s][:first]
        rows: dict[int, np.ndarray] = {}
        for s, pos, token, wants in entries:
            assert pos == len(self.kv[s]), "positions of a sequence must follow on"
            self.kv[s].append(token)
            if wants:
                rows[s] = _logits(self.kv[s])
        self.batch_sizes.append(len(entries))
        return rows

    def clear(self) -> None:
        self.kv = [[] for _ in range(self.n_seq)]
        self.cached = [[] for _ in range(self.n_seq)]


class _FakeBackend(LlamaCppChatBackend):
    """The real decoder and scheduler over :func:`_logits` instead of a model."""

    def __init__(self, parallel: int, n_ctx: int = 4096) -> None:  # no model is loaded
        from omnieval.backends.llm._llamacpp import DecodeStats

        self.config = LlamaCppConfig(n_ctx=n_ctx, skeleton_text_sentences=1, parallel_sequences=parallel)
        self._vocab = _VocabTables([p.encode() for p in PIECES])
        self._evaluated = 0
        self.stats = DecodeStats()
        self.parallel = parallel
        self._batch = _FakeLockstep(parallel, n_ctx) if parallel > 1 else None
        self.tokens: list[int] = []
        self.n_ctx = n_ctx

    def _chat_prompt(self, messages: list[dict[str, str]]) -> str:
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def _prime(self, text: str, *, canonical: bool = False) -> np.ndarray:
        self.tokens = _tokenize(text.encode())
        return _logits(self.tokens)

    def _position(self) -> int:
        return len(self.tokens)

    def _advance(self, token: int, at: int | None = None) -> np.ndarray:
        if at is not None:
            self.tokens = self.tokens[:at]
        self.tokens.append(token)
        return _logits(self.tokens)


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "first": {
            "type": "object",
            "properties": {
                "rationale": {"type": "string", "minLength": 1, "maxLength": 24},
                "score": {"type": "integer", "enum": list(range(1, 11))},
            },
            "required": ["rationale", "score"],
        },
        "second": {
            "type": "object",
            "properties": {
                "rationale": {"type": "string", "minLength": 1, "maxLength": 24},
                "score": {"type": "integer", "enum": list(range(1, 11))},
            },
            "required": ["rationale", "score"],
        },
        # Two-digit values: the decoder backs up to try "2" after "1", so not every step appends.
        "count": {"type": "integer", "minimum": 0, "maximum": 25},
    },
    "required": ["first", "second", "count"],
}


def _requests(n: int) -> list[ChatRequest]:
    rubric = "Judge the candidate against the rubric. " * 4
    out = []
    for i in range(n):
        row = f"Row {i // 3}: the fox and the lantern, page {i // 3}. "
        out.append(
            ChatRequest(
                messages=(
                    Message.text_only("system", rubric),
                    Message.text_only("user", row * 3 + f"Candidate {i}: {'abc' * (i + 1)}"),
                ),
                decoding=Decoding(temperature=0.0, max_tokens=120),
                json_schema=SCHEMA,
            )
        )
    return out


@pytest.mark.parametrize("parallel", [2, 3, 8])
def test_lockstep_answers_equal_one_at_a_time(parallel: int) -> None:
    requests = _requests(7)
    sequential = _FakeBackend(1)
    expected = [sequential.chat(r) for r in requests]
    assert len(expected) == 7
    assert all(json.loads(c.text)["first"]["score"] in range(1, 11) for c in expected)
    lockstep = _FakeBackend(parallel)
    # Two calls: the second starts from the sequences the first left in the cache.
    got = lockstep.chat_many(requests[:4]) + lockstep.chat_many(requests[4:])
    for want, answer in zip(expected, got, strict=True):
        assert not isinstance(answer, Exception)
        assert answer.text == want.text
        assert answer.finish_reason == want.finish_reason
        assert answer.completion_tokens == want.completion_tokens
        assert answer.value_probs == want.value_probs
    fake = lockstep._batch
    assert isinstance(fake, _FakeLockstep)
    # Several sequences went through one decode, and shared prefixes were copied, not evaluated.
    assert max(fake.batch_sizes) > 1 and fake.copied > 0
    evaluated = lockstep.stats.prompt_tokens + lockstep.stats.generated_tokens
    assert evaluated == sum(fake.batch_sizes)


def test_lockstep_reports_requests_that_do_not_fit() -> None:
    backend = _FakeBackend(4, n_ctx=700)
    requests = _requests(3)
    long = ChatRequest(
        messages=(Message.text_only("user", "x" * 800),),
        decoding=Decoding(temperature=0.0, max_tokens=50),
        json_schema=SCHEMA,
    )
    results = backend.chat_many([requests[0], long, requests[1]])
    assert isinstance(results[1], Exception) and "does not fit n_ctx=700" in str(results[1])
    # The others are unaffected: same answers as one at a time.
    sequential = _FakeBackend(1, n_ctx=700)
    for i, result in ((0, results[0]), (1, results[2])):
        want = sequential.chat(requests[i])
        assert not isinstance(result, Exception) and result.text == want.text


def _adjacent_shared(texts: Sequence[str]) -> int:
    total = 0
    for a, b in itertools.pairwise(texts):
        k = 0
        while k < len(a) and k < len(b) and a[k] == b[k]:
            k += 1
        total += k
    return total


def test_prefix_order_maximizes_shared_prefixes() -> None:
    texts = [
        "rubric/speech/row1/c",
        "rubric/text/row2/a",
        "rubric/speech/row1/b",
        "rubric/text/row1/a",
        "rubric/text/row2/b",
        "other",
    ]
    order = prefix_order(texts)
    assert sorted(order) == list(range(len(texts)))
    best = max(_adjacent_shared(p) for p in itertools.permutations(texts))
    assert _adjacent_shared([texts[i] for i in order]) == best
    assert prefix_order(["b", "a", "b"]) == [1, 0, 2]  # ties keep their order


def test_common_prefix() -> None:
    assert _common_prefix([1, 2, 3, 4], [1, 2, 5], 10) == 2
    assert _common_prefix([1, 2, 3], [1, 2, 3, 4], 10) == 3
    assert _common_prefix([1, 2, 3], [1, 2, 3, 4], 2) == 2
    assert _common_prefix([], [1], 5) == 0


@pytest.fixture(scope="module")
def qwen_lockstep() -> Iterator[LlamaCppChatBackend]:
    config = LlamaCppConfig(n_ctx=1024, parallel_sequences=2)
    backend = LlamaCppChatBackend(config, model="qwen2.5-coder-1.5b", revision="test")
    yield backend
    backend.close()


def _verdict_request(candidate: str) -> ChatRequest:
    """A short verdict request under the text track's schema. The rubric's long prompt is left out on
    purpose: bit-equality of the two paths does not depend on the prompt's length, and a short
    prompt keeps the four real verdicts cheap (the full prompts run in the e2e nightly)."""
    import omnieval.benchmarks  # noqa: F401  (registers the story-continuation rubrics)
    from omnieval.judges import verdict_schema

    return ChatRequest(
        messages=(
            Message.text_only("system", "Score a story continuation on four criteria, 1 to 10, JSON only."),
            Message.text_only(
                "user",
                "Reference: At the river bank Pip set the lantern down, and the river mice cheered.\n"
                f"Candidate: {candidate}",
            ),
        ),
        decoding=Decoding(temperature=0.0, max_tokens=120),
        json_schema=verdict_schema("text", rationale_max_chars=30, rationale_first=True),
    )


@pytest.mark.slow
def test_packaged_qwen_lockstep_matches_one_at_a_time(qwen_lockstep: LlamaCppChatBackend) -> None:
    from omnieval.judges import parse_verdict

    backend = qwen_lockstep
    first = _verdict_request("Pip set the lantern down by the river, and the mice cheered.")
    second = _verdict_request("The moon rose over the quiet hills.")
    # Same cache layout (one sequence from an empty cache, the prompt evaluated in one batch, as
    # the lockstep context does): the same logits, bit for bit.
    alone = backend.chat_many([first])[0]
    backend.parallel, backend.prompt_chunk = 1, backend.config.n_ctx
    try:
        backend.reset_cache()
        reference = backend.chat(first)
    finally:
        backend.parallel, backend.prompt_chunk = 2, PROMPT_CHUNK
    assert not isinstance(alone, Exception)
    assert alone.text == reference.text
    assert alone.value_probs == reference.value_probs
    # Two sequences in one batch: both verdicts are complete and valid.
    backend._lockstep().clear()
    both = backend.chat_many([first, second])
    for answer in both:
        assert not isinstance(answer, Exception)
        assert parse_verdict(answer.text, "text").status == "ok", answer.text
        assert answer.value_probs
        for dist in answer.value_probs.values():
            assert sum(dist.values()) == pytest.approx(1.0)
