"""llama.cpp backend: skeleton-constrained decoding (planner and decoder on scripted logits) and, behind the
``slow`` marker, the packaged Qwen2.5-Coder-1.5B GGUF producing real verdicts."""

from __future__ import annotations

import json

import numpy as np
import pytest

import omnieval.benchmarks  # noqa: F401  (registers the judge tracks and rubrics used below)
from omnieval.backends.llm import ChatRequest, Decoding, LlamaCppConfig, Message
from omnieval.backends.llm._llamacpp import LlamaCppChatBackend, _closing_quote, _VocabTables
from omnieval.backends.llm._skeleton import Fixed, IntChoice, Text, plan_schema
from omnieval.judges import parse_verdict, verdict_schema
from omnieval.judges._tracks import repair_schema

GREEDY = Decoding(temperature=0.0, max_tokens=1024)
"""The skeleton decoder runs for a stated greedy temperature; 1024 new tokens at most."""


def test_verdict_schema_plan() -> None:
    plan = plan_schema(verdict_schema("text", rationale_max_chars=50))
    assert plan is not None
    assert [type(s).__name__ for s in plan] == ["Fixed", "IntChoice", "Fixed", "Text"] * 4 + ["Fixed"]
    assert plan[0] == Fixed('{"alignment_with_metadata": {"score": ')
    assert plan[1] == IntChoice(tuple(range(1, 11)), "alignment_with_metadata/score")
    assert plan[3] == Text(1, 50)
    assert plan[-1] == Fixed('"}}')
    reason_first = plan_schema(verdict_schema("text", rationale_max_chars=50, rationale_first=True))
    assert reason_first is not None
    assert reason_first[0] == Fixed('{"alignment_with_metadata": {"rationale": "')
    assert [type(s).__name__ for s in reason_first] == ["Fixed", "Text", "Fixed", "IntChoice"] * 4 + ["Fixed"]


@pytest.mark.parametrize(
    "schema",
    [
        repair_schema("text"),  # anyOf
        {"type": "array", "items": {"type": "integer"}},
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": []},
        {"type": "string", "pattern": "^a+$"},
        {"type": "integer"},
    ],
)
def test_schemas_outside_the_skeleton_subset(schema: dict) -> None:  # type: ignore[type-arg]
    assert plan_schema(schema) is None


def test_closing_quote() -> None:
    assert _closing_quote('fits the book", "x') == 13
    assert _closing_quote(r"a \"quoted\" word") == -1
    assert _closing_quote("no end") == -1


PIECES = ["<eos>", "", "1", "0", "7", "The", " story", " fits", '"', '",', " well", ".", ",", "\\", "12"]


class _ScriptedLlm(LlamaCppChatBackend):
    """The skeleton decoder driven by scripted preferences instead of a model."""

    def __init__(self, preferences: list[str]) -> None:  # no model is loaded
        self.config = LlamaCppConfig()
        self._vocab = _VocabTables([p.encode() for p in PIECES])
        self._prefs = list(preferences)
        self._evaluated = 0
        self.contexts: list[str] = []

    def _logits(self) -> np.ndarray:
        logits = np.zeros(len(PIECES), dtype=np.float32)
        if self._prefs:
            for rank, piece in enumerate(reversed(self._prefs.pop(0).split("|"))):
                logits[PIECES.index(piece)] = 10.0 + rank
        return logits

    def _prime(self, text: str, *, canonical: bool = False) -> np.ndarray:
        self.contexts.append(text)
        return self._logits()

    def _advance(self, token: int, at: int | None = None) -> np.ndarray:
        return self._logits()

    def _position(self) -> int:
        return 0

    def _chat_prompt(self, messages: list[dict[str, str]]) -> str:
        return "PROMPT:"


def test_skeleton_decoding_with_scripted_preferences() -> None:
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "enum": list(range(1, 11))},
            "rationale": {"type": "string", "minLength": 1, "maxLength": 30},
        },
        "required": ["score", "rationale"],
    }
    # score: the model prefers "12" (not allowed), then "1", then wants "0" -> 10.
    # rationale: it first prefers the closing quote (forbidden while empty), then writes two words and closes.
    backend = _ScriptedLlm(["12|1", "0|,", '"|The', " story", " fits", '",'])
    request = ChatRequest(messages=(Message.text_only("user", "x"),), decoding=GREEDY, json_schema=schema)
    completion = backend.chat(request)
    assert json.loads(completion.text) == {"score": 10, "rationale": "The story fits"}
    assert completion.finish_reason == "stop"
    assert backend.contexts == ['PROMPT:{"score": ', 'PROMPT:{"score": 10, "rationale": "']


def test_skeleton_respects_length_bound_and_budget() -> None:
    schema = {"type": "object", "properties": {"r": {"type": "string", "maxLength": 9}}, "required": ["r"]}
    backend = _ScriptedLlm(["The", " story", " fits", " well"])
    out = backend.chat(
        ChatRequest(messages=(Message.text_only("user", "x"),), decoding=GREEDY, json_schema=schema)
    )
    assert json.loads(out.text) == {"r": "The story"}
    backend = _ScriptedLlm(["7", "The", " story"])
    verdict = {
        "type": "object",
        "properties": {"a": {"type": "integer", "enum": [1, 7]}, "b": {"type": "string"}},
        "required": ["a", "b"],
    }
    out = backend.chat(
        ChatRequest(
            messages=(Message.text_only("user", "x"),),
            json_schema=verdict,
            decoding=Decoding(temperature=0.0, max_tokens=2),
        )
    )
    assert out.finish_reason == "length" and out.completion_tokens == 2


@pytest.fixture(scope="module")
def qwen() -> LlamaCppChatBackend:
    backend = LlamaCppChatBackend(LlamaCppConfig(n_ctx=2048), model="qwen2.5-coder-1.5b", revision="test")
    yield backend  # type: ignore[misc]
    backend.close()


def _text_request(candidate: str) -> ChatRequest:
    from omnieval.judges import Framing, JudgeInputs, render_messages, template

    inputs = JudgeInputs(
        metadata={"genre": "fairy tale", "characters": [{"name": "Pip", "description": "a small fox"}]},
        condition={"scene": "the river bank", "text content": "Pip gives the lantern to the river mice"},
        current_text="Pip carried the lantern along the stream.",
        reference_text="At the river bank Pip set the lantern down, and the river mice cheered.",
        reference_speech={},
        candidate_text=candidate,
    )
    framing = Framing(schema_constrained=True, rationale_max_chars=40, compact_json=True)
    return ChatRequest(
        messages=render_messages(template("text"), inputs, framing),
        decoding=Decoding(temperature=0.0, max_tokens=200),
        json_schema=verdict_schema("text", rationale_max_chars=40),
    )


@pytest.mark.slow
def test_packaged_qwen_gives_valid_verdicts(qwen: LlamaCppChatBackend) -> None:
    answer = qwen.chat(
        _text_request("At the river bank Pip set the lantern down, and the river mice cheered.")
    )
    reading = parse_verdict(answer.text, "text")
    assert reading.status == "ok", answer.text
    assert reading.rationales
    assert all(len(r) <= 40 for r in reading.rationales.values())
    assert qwen.identity().weights_digest and len(qwen.identity().weights_digest) == 64


@pytest.mark.slow
def test_packaged_qwen_grammar_fallback(qwen: LlamaCppChatBackend) -> None:
    schema = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"unrecoverable": {"enum": [True]}},
                "required": ["unrecoverable"],
            }
        ]
    }
    request = ChatRequest(
        messages=(Message.text_only("user", 'Reply with {"unrecoverable": true}'),),
        decoding=Decoding(temperature=0.0, max_tokens=16),
        json_schema=schema,
    )
    assert json.loads(qwen.chat(request).text) == {"unrecoverable": True}
