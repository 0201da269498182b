"""Value probabilities of the llama.cpp skeleton decoder (scripted logits, hand-computed cases),
their trip through the response cache, and rationales cut at word boundaries."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import omnieval.benchmarks  # noqa: F401  (registers the judge tracks and rubrics used below)
from omnieval.backends.llm import ChatRequest, Completion, Decoding, LlamaCppConfig, Message
from omnieval.backends.llm._llamacpp import LlamaCppChatBackend, _VocabTables, cut_at_word
from omnieval.backends.llm._skeleton import IntChoice, plan_schema

PIECES = ["<eos>", "", "1", "0", "7", "The", " story", " fits", '"', '",', " well", ".", ",", "\\", "12"]
N_NON_DIGIT = sum(1 for p in PIECES if not p[:1].isdigit())  # 11 tokens that end a number


class _LogitLlm(LlamaCppChatBackend):
    """The skeleton decoder fed explicit logit vectors ({piece: logit}, others 0) instead of a model."""

    def __init__(self, steps: list[dict[str, float]]) -> None:  # no model is loaded
        self.config = LlamaCppConfig()
        self._vocab = _VocabTables([p.encode() for p in PIECES])
        self._steps = list(steps)
        self._evaluated = 0
        self.evaluated: list[tuple[str, int | None]] = []

    def _logits(self) -> np.ndarray:
        logits = np.zeros(len(PIECES), dtype=np.float32)
        for piece, value in self._steps.pop(0).items():
            logits[PIECES.index(piece)] = value
        return logits

    def _prime(self, text: str, *, canonical: bool = False) -> np.ndarray:
        return self._logits()

    def _advance(self, token: int, at: int | None = None) -> np.ndarray:
        self.evaluated.append((PIECES[token], at))
        return self._logits()

    def _position(self) -> int:
        return 100

    def _chat_prompt(self, messages: list[dict[str, str]]) -> str:
        return "PROMPT:"


GREEDY = Decoding(temperature=0.0, max_tokens=1024)
"""The skeleton decoder runs for a stated greedy temperature; 1024 new tokens at most."""

SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "enum": list(range(1, 11))}},
    "required": ["score"],
}


def _ask(backend: _LogitLlm) -> Completion:
    return backend.chat(
        ChatRequest(messages=(Message.text_only("user", "x"),), decoding=GREEDY, json_schema=SCHEMA)
    )


def test_probabilities_of_one_and_ten_need_the_second_digit() -> None:
    # First position: p("1") : p("7") = 1 : 3 (the other digits are not valid first digits).
    # After "1": "0" carries as much mass as the 11 non-digit tokens together, so p(10 | 1) = 1/2;
    # "7" and "12" after "1" would make invalid numbers and are ignored despite their large logits.
    backend = _LogitLlm(
        [{"1": 2.0, "7": 2.0 + math.log(3)}, {"0": math.log(N_NON_DIGIT), "7": 9.0, "12": 9.0}]
    )
    out = _ask(backend)
    assert json.loads(out.text) == {"score": 7}
    assert out.value_probs is not None
    dist = out.value_probs["score"]
    assert dist == pytest.approx({1: 0.125, 10: 0.125, 7: 0.75})
    # The greedy 7 never needed "1" evaluated: one extra forward pass, right after the prompt.
    assert backend.evaluated == [("1", 100)]


def test_greedy_one_reuses_the_evaluated_digit() -> None:
    # p("1") ~ 1; after it every non-digit token (logit 0) beats "0" (logit -1), so greedy ends the
    # number, and p(10 | 1) = e^-1 / (e^-1 + 11 e^0).
    backend = _LogitLlm([{"1": 30.0}, {"0": -1.0}])
    out = _ask(backend)
    assert json.loads(out.text) == {"score": 1}
    p10 = math.exp(-1) / (math.exp(-1) + N_NON_DIGIT)
    assert out.value_probs is not None
    assert out.value_probs["score"][10] == pytest.approx(p10, rel=1e-6)
    assert out.value_probs["score"][1] == pytest.approx(1 - p10, rel=1e-6)
    assert backend.evaluated == [("1", 100)]  # evaluated once, used for both the distribution and the choice


def test_plan_names_each_value_by_its_path() -> None:
    from omnieval.judges import verdict_schema

    plan = plan_schema(verdict_schema("text", rationale_first=True))
    assert plan is not None
    paths = [s.path for s in plan if isinstance(s, IntChoice)]
    assert paths[0] == "alignment_with_metadata/score" and len(paths) == 4


def test_value_probs_survive_the_cache_format() -> None:
    c = Completion(text="{}", finish_reason="stop", value_probs={"a/score": {1: 0.25, 10: 0.75}})
    back = Completion.from_json(c.to_json())
    assert back.value_probs == {"a/score": {1: 0.25, 10: 0.75}}
    assert Completion.from_json(Completion(text="x").to_json()).value_probs is None
    # Entries written before value_probs existed read as "not reported".
    assert Completion.from_json(json.dumps({"text": "x"})).value_probs is None


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("The fox runs home.", 40, "The fox runs home."),
        ("The fox runs home.", 11, "The fox"),  # "runs" would be split
        ("The fox runs home.", 12, "The fox runs"),  # the bound falls just before a space
        ("Unbreakable", 5, "Unbre"),  # one long word: nothing to cut at
    ],
)
def test_cut_at_word(text: str, limit: int, expected: str) -> None:
    out = cut_at_word(text, limit)
    assert out == expected and len(out) <= limit
    assert text.startswith(out)


def test_rationale_bound_cuts_at_a_word_boundary() -> None:
    schema = {"type": "object", "properties": {"r": {"type": "string", "maxLength": 12}}, "required": ["r"]}
    backend = _LogitLlm([{"The": 5}, {" story": 5}, {" fits": 5}, {" well": 5}])
    out = backend.chat(
        ChatRequest(messages=(Message.text_only("user", "x"),), decoding=GREEDY, json_schema=schema)
    )
    # "The story fits" is 14 characters: cut before "fits", never inside it.
    assert json.loads(out.text) == {"r": "The story"}


def test_rationale_ends_after_one_sentence_when_configured() -> None:
    schema = {"type": "object", "properties": {"r": {"type": "string", "maxLength": 60}}, "required": ["r"]}
    backend = _LogitLlm([{"The": 5}, {" story": 5}, {".": 5}, {" well": 5}, {" fits": 5}])
    backend.config = LlamaCppConfig(skeleton_text_sentences=1)
    out = backend.chat(
        ChatRequest(messages=(Message.text_only("user", "x"),), decoding=GREEDY, json_schema=schema)
    )
    # The sentence counts as ended once the next token starts a new one; that token is dropped.
    assert json.loads(out.text) == {"r": "The story."}
