"""Decoding exactly as configured: a field left unset is not sent, a set one is sent as it is.

Each backend's request is inspected where it leaves the process: the Gemini and OpenAI-compatible
bodies as the local stub servers receive them, llama.cpp's ``create_chat_completion`` keywords and
transformers' ``generate`` keywords. The paper panels state only what their papers state; the CPU
panels' cache keys and judge identities are pinned to the values computed before this rule (their
cached verdicts and drift anchors stay valid).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from gemini_stub_server import GeminiStub, gemini_server
from llm_stub_server import StubServer

import omnieval.benchmarks  # noqa: F401  (registers the shipped panels)
from omnieval.backends.llm import (
    ChatRequest,
    Decoding,
    GeminiBackendConfig,
    HttpClientSettings,
    LlamaCppConfig,
    Message,
    UnsupportedInput,
    output_fingerprint,
)
from omnieval.backends.llm._gemini import GeminiChatBackend, forget_versions
from omnieval.backends.llm._llamacpp import LlamaCppChatBackend
from omnieval.backends.llm._openai import OpenAIChatBackend
from omnieval.backends.llm._transformers import generation_settings
from omnieval.benchmarks.prism._judge import load_prism_panel
from omnieval.judges import verdict_schema
from omnieval.judges._cache import MediaHasher, cache_key, canonical_json, request_material
from omnieval.judges._panels import JudgeConfig, load_panel

SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}

DECODINGS = [
    pytest.param(Decoding(), id="nothing-set"),
    pytest.param(Decoding(temperature=0.0), id="temperature-only"),
    pytest.param(Decoding(temperature=0.7, seed=3), id="temperature-seed"),
    pytest.param(Decoding(temperature=0.0, top_p=1.0, seed=0, max_tokens=256), id="four-fields"),
    pytest.param(Decoding(top_p=0.9, top_k=20, max_tokens=64), id="no-temperature"),
]

GEMINI_NAMES = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "seed": "seed",
    "max_tokens": "maxOutputTokens",
}
"""Decoding field -> its name in Gemini's ``generationConfig``."""
GEMINI_NOT_DECODING = {"responseMimeType", "responseJsonSchema"}
"""``generationConfig`` keys that say how to answer, not how to sample (sent with a JSON schema)."""
OPENAI_NOT_DECODING = {"model", "messages", "stream", "response_format", "guided_json", "structured_outputs"}


def _request(decoding: Decoding, json_schema: dict[str, Any] | None = None) -> ChatRequest:
    messages = (Message.text_only("system", "You judge."), Message.text_only("user", "Judge this."))
    return ChatRequest(messages=messages, decoding=decoding, json_schema=json_schema or SCHEMA)


# -- Gemini -----------------------------------------------------------------------------------------


@pytest.fixture()
def gemini(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiStub]:
    key = "AIza" + secrets.token_hex(16)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", key)
    forget_versions()
    with gemini_server(key) as stub:
        yield stub
    forget_versions()


def _gemini_config(stub: GeminiStub, decoding: Decoding) -> dict[str, Any]:
    """The ``generationConfig`` the stub received for one judge request with ``decoding``."""
    backend = GeminiChatBackend(GeminiBackendConfig(base_url=stub.url), model="gemini-test-pro")
    try:
        backend.chat(_request(decoding))
    finally:
        backend.close()
    judged = [r for r in stub.generate_requests() if r.body.get("systemInstruction")]
    assert len(judged) == 1
    config: dict[str, Any] = judged[0].body.get("generationConfig", {})
    return config


@pytest.mark.parametrize("decoding", DECODINGS)
def test_gemini_sends_exactly_the_set_fields(gemini: GeminiStub, decoding: Decoding) -> None:
    config = _gemini_config(gemini, decoding)
    sent = {k: v for k, v in config.items() if k not in GEMINI_NOT_DECODING}
    assert sent == {GEMINI_NAMES[k]: v for k, v in decoding.sent().items()}
    assert config["responseMimeType"] == "application/json"


def test_the_paper_judge_sends_temperature_only(gemini: GeminiStub) -> None:
    # PRISM-Bench states temperature 0 and leaves the rest at the API's defaults: no top_p, seed,
    # output cap or candidate count goes with the paper's (or its ablation's) Gemini judges.
    panels = [load_prism_panel("paper"), load_prism_panel("ablation")]
    judges = [
        j for p in panels for j in (*p.judges, p.repair) if j is not None and j.backend.kind == "gemini"
    ]
    assert len(judges) == 5  # paper: judge and repair; ablation: two judges and repair
    for judge in judges:
        assert judge.decoding.sent() == {"temperature": 0.0}, judge.id
    config = _gemini_config(gemini, judges[0].decoding)
    assert {k: v for k, v in config.items() if k not in GEMINI_NOT_DECODING} == {"temperature": 0.0}


def test_gemini_refuses_what_it_cannot_send(gemini: GeminiStub) -> None:
    backend = GeminiChatBackend(GeminiBackendConfig(base_url=gemini.url), model="gemini-test-pro")
    try:
        for decoding in (Decoding(repetition_penalty=1.1), Decoding(stop_token_ids=(7,))):
            with pytest.raises(UnsupportedInput, match="Gemini takes no"):
                backend.chat(_request(decoding))
        # No penalty is what Gemini does anyway: stated as 1.0 it is accepted and nothing is sent.
        backend.chat(_request(Decoding(temperature=0.0, repetition_penalty=1.0)))
    finally:
        backend.close()
    config = gemini.generate_requests()[-1].body["generationConfig"]
    assert {k for k in config if k not in GEMINI_NOT_DECODING} == {"temperature"}


# -- OpenAI-compatible (vLLM) -------------------------------------------------------------------------


@pytest.fixture()
def server() -> Iterator[StubServer]:
    with StubServer() as stub:
        yield stub


def _openai_body(server: StubServer, request: ChatRequest, **settings: Any) -> dict[str, Any]:
    backend = OpenAIChatBackend(server.url, model="org/judge", settings=HttpClientSettings(**settings))
    try:
        backend.chat(request)
    finally:
        backend.close()
    body: dict[str, Any] = server.state.requests[-1].body
    return body


VLLM_DECODINGS = [
    *DECODINGS,
    pytest.param(
        Decoding(temperature=0.0, top_p=1.0, repetition_penalty=1.0, seed=1234, max_tokens=2048),
        id="storybench-paper",
    ),
    pytest.param(Decoding(temperature=0.0, top_k=20, stop_token_ids=(151644,)), id="vllm-extras"),
]


@pytest.mark.parametrize("decoding", VLLM_DECODINGS)
def test_vllm_body_carries_exactly_the_set_fields(server: StubServer, decoding: Decoding) -> None:
    body = _openai_body(server, _request(decoding), schema_field="structured_outputs")
    sent = {k: v for k, v in body.items() if k not in OPENAI_NOT_DECODING}
    expected = {k: list(v) if k == "stop_token_ids" else v for k, v in decoding.sent().items()}
    assert sent == expected
    assert body["structured_outputs"] == {"json": SCHEMA} and body["stream"] is False


def test_the_panels_judges_reach_vllm_as_configured(server: StubServer) -> None:
    # Every OpenAI-compatible judge of a shipped panel: its body holds its decoding and nothing else.
    judges: list[JudgeConfig] = []
    for name in ("paper-a", "paper-b", "paper-c"):
        panel = load_panel(name)
        judges += [j for t in panel.tracks.values() for j in t.judges] + [panel.repair] * bool(panel.repair)  # type: ignore[list-item]
    for name in ("omni", "ablation"):
        panel = load_prism_panel(name)
        judges += [*panel.judges, *([panel.repair] if panel.repair else [])]
    served = [j for j in judges if j.backend.kind in ("openai", "vllm")]
    assert len(served) >= 10
    for judge in served:
        body = _openai_body(server, _request(judge.decoding))
        sent = {k: v for k, v in body.items() if k not in OPENAI_NOT_DECODING}
        sent.pop("chat_template_kwargs", None)
        expected = {k: list(v) if k == "stop_token_ids" else v for k, v in judge.decoding.sent().items()}
        assert sent == expected, judge.id
    qwen_omni = next(j for j in load_prism_panel("ablation").judges if j.backend.kind == "openai")
    assert qwen_omni.decoding.sent() == {"temperature": 0.0}  # as the paper states, nothing more


def test_plain_openai_refuses_vllm_only_fields(server: StubServer) -> None:
    for decoding in (Decoding(top_k=20), Decoding(stop_token_ids=(1,)), Decoding(repetition_penalty=1.05)):
        with pytest.raises(UnsupportedInput, match="vllm_extensions"):
            _openai_body(server, _request(decoding), vllm_extensions=False)
    assert server.state.requests == []  # refused before anything was sent
    # A penalty of 1 is no penalty: a plain API gets nothing for it.
    body = _openai_body(
        server, _request(Decoding(temperature=0.0, repetition_penalty=1.0)), vllm_extensions=False
    )
    assert {k for k in body if k not in OPENAI_NOT_DECODING} == {"temperature"}


# -- llama.cpp and transformers (in process) -------------------------------------------------------


class _RecordingLlama:
    """Stands in for ``llama_cpp.Llama``: records the keywords of each chat completion."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.metadata: dict[str, str] = {}
        self.n_tokens = 0

    def create_chat_completion(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        return {"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}], "usage": {}}


class _GrammarOnly(LlamaCppChatBackend):
    """The backend's request path without a model: grammar decoding goes to a recording Llama."""

    def __init__(self) -> None:  # no model is loaded
        self.config = LlamaCppConfig(constrained_decoding="grammar", chat_format="chatml")
        self._llm = _RecordingLlama()
        self._canonical = 0


@pytest.mark.parametrize(
    "decoding", [*DECODINGS, pytest.param(Decoding(repetition_penalty=1.1), id="penalty")]
)
def test_llamacpp_passes_only_the_set_fields(decoding: Decoding) -> None:
    backend = _GrammarOnly()
    backend.chat(_request(decoding))
    (call,) = backend._llm.calls  # type: ignore[attr-defined]
    names = {"repetition_penalty": "repeat_penalty"}
    assert {k: v for k, v in call.items() if k not in ("messages", "response_format")} == {
        names.get(k, k): v for k, v in decoding.sent().items()
    }


def test_llamacpp_refuses_stop_token_ids() -> None:
    with pytest.raises(UnsupportedInput, match="stop_token_ids"):
        _GrammarOnly().chat(_request(Decoding(temperature=0.0, stop_token_ids=(2,))))


def test_skeleton_needs_a_stated_greedy_temperature() -> None:
    # llama.cpp's own repeat_penalty default is 1.0, so an unset penalty is still greedy; an unset
    # temperature is llama.cpp's 0.2, which the greedy skeleton decoder cannot honour.
    backend = LlamaCppChatBackend.__new__(LlamaCppChatBackend)
    backend.config = LlamaCppConfig(constrained_decoding="skeleton")

    def plan(decoding: Decoding) -> object:
        return backend._skeleton_plan(_request(decoding, json_schema=verdict_schema("text")))

    assert plan(Decoding(temperature=0.0)) is not None
    assert plan(Decoding(temperature=0.0, repetition_penalty=1.0)) is not None
    assert plan(Decoding()) is None
    assert plan(Decoding(temperature=0.0, repetition_penalty=1.2)) is None


@pytest.mark.parametrize(
    ("decoding", "expected"),
    [
        (Decoding(), {}),
        (Decoding(seed=3), {}),  # the seed seeds torch's generator, not a generate() keyword
        (Decoding(max_tokens=8), {"max_new_tokens": 8}),
        (
            Decoding(temperature=0.0, repetition_penalty=1.0, max_tokens=8),
            {
                "do_sample": False,
                "temperature": None,
                "top_p": None,
                "top_k": None,
                "repetition_penalty": 1.0,
                "max_new_tokens": 8,
            },
        ),
        (Decoding(temperature=0.7, top_p=0.9), {"do_sample": True, "temperature": 0.7, "top_p": 0.9}),
        (Decoding(top_k=5), {"top_k": 5}),
    ],
)
def test_transformers_passes_only_the_set_fields(decoding: Decoding, expected: dict[str, Any]) -> None:
    assert generation_settings(decoding) == expected


# -- the CPU panels' cache keys are unchanged ------------------------------------------------------------

PINNED: dict[str, tuple[str, str]] = {
    # (cache key of the fixed request, SHA-256 of the judge's canonical dump), computed at c1d2525
    # before unset decoding fields stopped being sent.
    "cpu/text": (
        "11d0c8a5225f86512f7ef7e0797a7c541ad0350c794e7971296e28db7764ccca",
        "3cebaf7bc409e09829a9757cf93a4bd76dc8b3b952fdb70b0e3fc13f0d78dab2",
    ),
    "cpu/speech": (
        "11d0c8a5225f86512f7ef7e0797a7c541ad0350c794e7971296e28db7764ccca",
        "3cebaf7bc409e09829a9757cf93a4bd76dc8b3b952fdb70b0e3fc13f0d78dab2",
    ),
    "cpu/repair": (
        "b32f2111f9f895f7e3eb27598955d34b5d15164e3114a49cd2025649a5b6d9c2",
        "a483241ecf310c09ced2db9152a29b9c5db66b4b360410909f7e0e20753c9b9a",
    ),
    "cpu-cascade/judge": (
        "cc7a1d16ee820fdae7c096368285298574b042b96ccf33f96f42d86fe28a66eb",
        "6c0ad1da5b2a007d2118613d87dbd48b0a744fc8c89600d9e9e819f4ee900087",
    ),
    "cpu-cascade/repair": (
        "950eb2ce7e8e2987a5ca5bf312f715fd7bfb25d0df71d8f778a316fa39f19b55",
        "9d89e7c335e4d1f2dfe61333e0909703b68aa04999bb1b64cb2b6e8008daaaa2",
    ),
}


def _cpu_judges() -> dict[str, Any]:
    cpu = load_panel("cpu")
    cascade = load_prism_panel("cpu-cascade")
    return {
        "cpu/text": cpu.tracks["text"].judges[0],
        "cpu/speech": cpu.tracks["speech"].judges[0],
        "cpu/repair": cpu.repair,
        "cpu-cascade/judge": cascade.judges[0],
        "cpu-cascade/repair": cascade.repair,
    }


@pytest.mark.parametrize("name", sorted(PINNED))
def test_cpu_panel_cache_keys_are_unchanged(name: str) -> None:
    judge = _cpu_judges()[name]
    request = ChatRequest(
        messages=(
            Message.text_only("system", "Judge the page."),
            Message.text_only("user", "The page: a fox."),
        ),
        decoding=judge.decoding,
        json_schema={"type": "object", "properties": {"score": {"type": "integer"}}},
    )
    key = cache_key(
        model=judge.model,
        revision=judge.revision,
        weights="w" * 64,
        backend=output_fingerprint(judge.backend),
        prompt_sha256="p" * 64,
        request=request_material(request, MediaHasher()),
    )
    dump = hashlib.sha256(canonical_json(judge.model_dump(mode="json")).encode()).hexdigest()
    assert (key, dump) == PINNED[name]
    # Greedy and stated in full, so llama.cpp gets what it got before (skeleton decoding).
    assert judge.decoding.greedy and set(judge.decoding.sent()) == {
        "temperature",
        "top_p",
        "repetition_penalty",
        "seed",
        "max_tokens",
    }
