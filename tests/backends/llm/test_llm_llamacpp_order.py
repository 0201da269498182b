"""A llama.cpp answer does not depend on the requests answered before it in the same process.

llama.cpp's CPU kernels round differently with a batch's shape, so the numbers depend on which
tokens were evaluated in which batch. The stand-in model here has the same property, exaggerated:
each KV-cache cell is a digest of its token, the batch that evaluated it and the cell before it, and
the logits come from the last cell. On it, one request is answered fresh, after another request, and
after two others in another order: the answers must be equal, and with the old prefix reuse (the
whole shared prefix kept, the rest evaluated at once) they are not. Behind ``slow``: the same on the
packaged Qwen2.5-Coder-1.5B, byte-identical text and equal value probabilities.
"""

from __future__ import annotations

import json
import string
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from omnieval.backends.llm import ChatRequest, Completion, Decoding, LlamaCppConfig, Message
from omnieval.backends.llm._llamacpp import PROMPT_CHUNK, DecodeStats, LlamaCppChatBackend, _VocabTables

# One character per token, so that text and tokens convert both ways; "" (id 0) ends a string.
PIECES = ["", *string.printable[:95]]
IDS = {p: i for i, p in enumerate(PIECES)}


class _BatchShapedLlm:
    """The parts of ``llama_cpp.Llama`` the one-at-a-time decoder uses, over a simulated KV cache
    whose cells depend on how they were batched (``eval`` splits into ``n_batch`` like the real one)."""

    def __init__(self, n_ctx: int = 4096, n_batch: int = 512) -> None:
        self.n_batch = n_batch
        self.input_ids = np.zeros(n_ctx, dtype=np.intc)
        self.cells = np.zeros(n_ctx, dtype=np.uint32)
        self.n_tokens = 0
        self.batches: list[tuple[int, int]] = []
        """(first position, tokens) of every batch evaluated."""

    @staticmethod
    def tokenize(text: bytes, add_bos: bool = True, special: bool = True) -> list[int]:
        return [0] + [IDS.get(c, IDS["?"]) for c in text.decode("utf-8")]

    def n_ctx(self) -> int:
        return len(self.input_ids)

    def n_vocab(self) -> int:
        return len(PIECES)

    def eval(self, tokens: list[int]) -> None:
        for i in range(0, len(tokens), self.n_batch):
            batch = tokens[i : i + self.n_batch]
            start = self.n_tokens
            for k, token in enumerate(batch):
                pos = start + k
                before = int(self.cells[pos - 1]) if pos else 0
                shape = np.array([before, token, start, len(batch)], dtype=np.int64)
                self.cells[pos] = zlib.crc32(shape.tobytes())
                self.input_ids[pos] = token
            self.batches.append((start, len(batch)))
            self.n_tokens += len(batch)

    def last_cell(self) -> int:
        return int(self.cells[self.n_tokens - 1])


class _StandIn(LlamaCppChatBackend):
    """The real one-at-a-time decoder and prompt evaluation over :class:`_BatchShapedLlm`."""

    def __init__(self) -> None:  # no model is loaded
        self.config = LlamaCppConfig(skeleton_text_sentences=1)
        self._llm = _BatchShapedLlm()
        self._vocab = _VocabTables([p.encode() for p in PIECES])
        self._evaluated = 0
        self._canonical = 0
        self.stats = DecodeStats()
        self.parallel = 1
        self.prompt_chunk = PROMPT_CHUNK

    def _chat_prompt(self, messages: list[dict[str, str]]) -> str:
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def _logits(self) -> np.ndarray:
        rng = np.random.default_rng(self._llm.last_cell())
        logits = rng.normal(0.0, 1.0, len(PIECES)).astype(np.float32)
        # Favour letters and digits so rationales read like words and end by length or quote.
        for piece, bonus in (("e", 2.0), (" ", 1.5), ("7", 2.5), ("1", 2.0), (".", 0.8), ('"', 0.7)):
            logits[IDS[piece]] += bonus
        return logits


class _OldReuse(_StandIn):
    """The decoder before this fix: every evaluation reuses the longest prefix the cache holds."""

    def _prime(self, text: str, *, canonical: bool = False) -> np.ndarray:
        return super()._prime(text)


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "fit": {
            "type": "object",
            "properties": {
                "rationale": {"type": "string", "minLength": 1, "maxLength": 24},
                "score": {"type": "integer", "enum": list(range(1, 11))},
            },
            "required": ["rationale", "score"],
        },
        "count": {"type": "integer", "minimum": 0, "maximum": 25},
    },
    "required": ["fit", "count"],
}


def _request(candidate: str) -> ChatRequest:
    rubric = "Judge the candidate page against the rubric and the story so far. " * 5
    row = "Row 3: Pip carries the lantern along the stream to the river mice. " * 2
    return ChatRequest(
        messages=(
            Message.text_only("system", rubric),
            Message.text_only("user", f"{row}Candidate: {candidate}"),
        ),
        decoding=Decoding(temperature=0.0, max_tokens=80),
        json_schema=SCHEMA,
    )


TARGET = _request("Pip set the lantern down and the mice cheered.")
OTHERS = (_request("The moon rose over the quiet hills."), _request("Pip set off home."))


def _key(answer: Completion) -> tuple[Any, ...]:
    return answer.text, answer.finish_reason, answer.completion_tokens, answer.value_probs


def _histories(backend_type: type[_StandIn]) -> list[tuple[Completion, _StandIn]]:
    """The target answered first, after one other request, and after both others in reverse order."""
    out = []
    for before in ((), OTHERS[:1], OTHERS[::-1]):
        backend = backend_type()
        for request in before:
            backend.chat(request)
        out.append((backend.chat(TARGET), backend))
    return out


def test_an_answer_does_not_depend_on_the_requests_before_it() -> None:
    (fresh, _), *later = _histories(_StandIn)
    assert json.loads(fresh.text)["fit"]["score"] in range(1, 11)
    assert fresh.value_probs
    for answer, _ in later:
        assert _key(answer) == _key(fresh)
    # The same request again right after itself, too.
    backend = _StandIn()
    assert _key(backend.chat(TARGET)) == _key(fresh)
    assert _key(backend.chat(TARGET)) == _key(fresh)


def test_the_stand_in_changes_answers_with_the_old_prefix_reuse() -> None:
    """The check above has teeth: reusing the whole cached prefix changes the stand-in's answers."""
    (fresh, _), *later = _histories(_OldReuse)
    assert any(_key(answer) != _key(fresh) for answer, _ in later)


def test_a_request_reuses_whole_chunks_and_evaluates_the_rest_in_chunks() -> None:
    backend = _StandIn()
    backend.chat(OTHERS[0])
    llm = backend._llm
    llm.batches.clear()
    text = backend.prompt_text(TARGET)
    backend._prime(text, canonical=True)
    n = len(llm.tokenize(text.encode()))
    starts = [start for start, _ in llm.batches]
    # The rubric and row came from the cache, up to a chunk boundary; the rest went in chunks.
    assert starts[0] >= 4 * PROMPT_CHUNK and starts[0] % PROMPT_CHUNK == 0
    assert starts == list(range(starts[0], n, PROMPT_CHUNK))
    assert llm.n_tokens == n


@pytest.fixture(scope="module")
def fresh_qwen() -> Iterator[LlamaCppChatBackend]:
    config = LlamaCppConfig(n_ctx=2048, skeleton_text_sentences=1)
    backend = LlamaCppChatBackend(config, model="qwen2.5-coder-1.5b", revision="test")
    yield backend
    backend.close()


def _verdict_request(candidate: str, max_tokens: int) -> ChatRequest:
    import omnieval.benchmarks  # noqa: F401  (registers the story-continuation rubrics)
    from omnieval.judges import Framing, JudgeInputs, render_messages, template, verdict_schema

    inputs = JudgeInputs(
        metadata={"genre": "fairy tale", "characters": [{"name": "Pip", "description": "a small fox"}]},
        condition={"scene": "the river bank", "text content": "Pip gives the lantern to the river mice"},
        current_text="Pip carried the lantern along the stream.",
        reference_text="At the river bank Pip set the lantern down, and the river mice cheered.",
        reference_speech={},
        candidate_text=candidate,
    )
    framing = Framing(
        schema_constrained=True, rationale_max_chars=30, compact_json=True, rationale_first=True
    )
    return ChatRequest(
        messages=render_messages(template("text"), inputs, framing),
        decoding=Decoding(temperature=0.0, max_tokens=max_tokens),
        json_schema=verdict_schema("text", rationale_max_chars=30, rationale_first=True),
    )


def _expected(answer: Completion) -> dict[str, float]:
    """The probability-weighted score per criterion (what ``judge_expected`` is made from)."""
    return {path: sum(k * p for k, p in dist.items()) for path, dist in (answer.value_probs or {}).items()}


@pytest.mark.slow
def test_packaged_qwen_answers_the_same_whatever_came_before(fresh_qwen: LlamaCppChatBackend) -> None:
    from omnieval.judges import parse_verdict

    backend = fresh_qwen
    target = _verdict_request("Pip set the lantern down by the river, and the mice cheered.", 120)
    # Other candidates for the same transition (the runner's neighbours: same rubric and row); a
    # small budget keeps them cheap, and they still leave their own tokens in the cache.
    others = [_verdict_request(c, 12) for c in ("The moon rose over the quiet hills.", "Pip went home.")]
    first = backend.chat(target)  # (a) first in a fresh process
    assert parse_verdict(first.text, "text").status == "ok", first.text
    assert first.value_probs and len(first.value_probs) == 4
    backend.chat(others[0])
    after_one = backend.chat(target)  # (b) after another request
    for request in others[::-1]:
        backend.chat(request)
    after_two = backend.chat(target)  # (c) after two others, in the other order
    for answer in (after_one, after_two):
        assert answer.text == first.text
        assert answer.value_probs == first.value_probs
        assert _expected(answer) == _expected(first)
    # Most of the prompt still came from the cache.
    assert backend.stats.reused_tokens > backend.stats.prompt_tokens
