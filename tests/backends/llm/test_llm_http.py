"""The OpenAI-compatible client against a local stub server: request bodies, sampling, schemas, errors, keys."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import numpy as np
import pytest
from llm_stub_server import StubServer, completion

from omnieval.backends.llm import (
    AudioPart,
    BackendError,
    BackendUnavailable,
    ChatRequest,
    Decoding,
    HttpClientSettings,
    ImagePart,
    Message,
    OpenAIBackendConfig,
    TextPart,
    TransientBackendError,
    UnsupportedInput,
    open_backend,
)
from omnieval.backends.llm._openai import OpenAIChatBackend
from omnieval.judges import verdict_schema

SECRET = "sk-test-7f3a-do-not-log"


@pytest.fixture()
def server():  # type: ignore[no-untyped-def]
    with StubServer() as stub:
        yield stub


def _request(**kwargs: object) -> ChatRequest:
    messages = (Message.text_only("system", "You judge."), Message.text_only("user", "Judge this."))
    return ChatRequest(messages=messages, **kwargs)  # type: ignore[arg-type]


def _client(server: StubServer, **settings: object) -> OpenAIChatBackend:
    return OpenAIChatBackend(
        server.url, model="Qwen/Qwen3-30B-A3B-Instruct-2507", settings=HttpClientSettings(**settings)
    )  # type: ignore[arg-type]


def test_body_carries_protocol_decoding_and_schema(server: StubServer) -> None:
    schema = verdict_schema("text")
    request = _request(
        decoding=Decoding(temperature=0.0, top_p=1.0, repetition_penalty=1.0, seed=1234, max_tokens=2048),
        json_schema=schema,
        chat_template_kwargs={"enable_thinking": False},
    )
    server.state.replies.append(completion("  answer  ", finish="length"))
    result = _client(server).chat(request)
    assert result.text == "  answer  " and result.finish_reason == "length"
    assert (result.prompt_tokens, result.completion_tokens) == (11, 7)
    (recorded,) = server.state.requests
    body = recorded.body
    assert recorded.path == "/v1/chat/completions"
    assert body["model"] == "Qwen/Qwen3-30B-A3B-Instruct-2507"
    assert body["messages"] == [
        {"role": "system", "content": "You judge."},
        {"role": "user", "content": "Judge this."},
    ]
    assert (body["temperature"], body["top_p"], body["repetition_penalty"]) == (0.0, 1.0, 1.0)
    assert (body["seed"], body["max_tokens"], body["stream"]) == (1234, 2048, False)
    assert "n" not in body  # one choice is every server's default
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == schema
    assert "guided_json" not in body and "top_k" not in body and "stop_token_ids" not in body


@pytest.mark.parametrize(
    ("field", "check"),
    [
        ("guided_json", lambda body, schema: body["guided_json"] == schema),
        ("structured_outputs", lambda body, schema: body["structured_outputs"] == {"json": schema}),
    ],
)
def test_vllm_schema_fields(server: StubServer, field: str, check) -> None:  # type: ignore[no-untyped-def]
    schema = verdict_schema("speech")
    _client(server, schema_field=field).chat(_request(json_schema=schema))
    body = server.state.requests[0].body
    assert check(body, schema) and "response_format" not in body


def test_vllm_extras_and_plain_openai(server: StubServer) -> None:
    decoding = Decoding(top_k=20, stop_token_ids=(151644,), seed=None)
    _client(server).chat(_request(decoding=decoding, chat_template_kwargs={"thinking_budget": 0}))
    # A plain OpenAI API has no vLLM sampling fields: refused, never silently dropped.
    with pytest.raises(UnsupportedInput, match="stop_token_ids, top_k"):
        _client(server, vllm_extensions=False).chat(_request(decoding=decoding))
    _client(server, vllm_extensions=False).chat(
        _request(decoding=Decoding(temperature=0.0), chat_template_kwargs={"thinking_budget": 0})
    )
    vllm_body, plain_body = (r.body for r in server.state.requests)
    assert vllm_body["stop_token_ids"] == [151644] and vllm_body["top_k"] == 20
    assert vllm_body["chat_template_kwargs"] == {"thinking_budget": 0} and "seed" not in vllm_body
    for key in ("repetition_penalty", "top_k", "stop_token_ids", "chat_template_kwargs"):
        assert key not in plain_body


def test_media_parts_in_order(server: StubServer, tmp_path: Path) -> None:
    import soundfile as sf
    from PIL import Image

    image = tmp_path / "scene.png"
    Image.new("RGB", (8, 8), (200, 10, 10)).save(image)
    audio = tmp_path / "line.wav"
    sf.write(audio, np.zeros(1600, dtype=np.float32), 16000)
    message = Message("user", (TextPart("first"), ImagePart(image), TextPart("then"), AudioPart(audio)))
    _client(server).chat(ChatRequest(messages=(message,)))
    content = server.state.requests[0].body["messages"][0]["content"]
    assert [c["type"] for c in content] == ["text", "image_url", "text", "input_audio"]
    url = content[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == image.read_bytes()
    assert content[3]["input_audio"]["format"] == "wav"
    assert base64.b64decode(content[3]["input_audio"]["data"]) == audio.read_bytes()


def test_api_key_from_environment_never_logged(server: StubServer, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("JUDGE_API_KEY", SECRET)
    config = OpenAIBackendConfig(base_url=server.url, api_key_env="JUDGE_API_KEY", served_model="judge")
    with caplog.at_level(logging.DEBUG):
        backend = open_backend(config, model="org/judge")
        backend.chat(_request())
        server.state.replies.append((401, {"error": "bad key"}))
        with pytest.raises(BackendError) as err:
            backend.chat(_request())
    assert server.state.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in caplog.text and SECRET not in str(err.value) and SECRET not in repr(backend)
    assert SECRET not in json.dumps(config.model_dump()) and SECRET not in json.dumps(
        server.state.requests[0].body
    )
    monkeypatch.delenv("JUDGE_API_KEY")
    with pytest.raises(BackendUnavailable, match=r"\$JUDGE_API_KEY is not set"):
        backend.chat(_request())


def test_error_classes(server: StubServer) -> None:
    client = _client(server, timeout_s=0.5)
    server.state.replies.extend(
        [(503, {"error": "overloaded"}), (429, {"error": "slow down"}), (400, {"error": "bad"})]
    )
    with pytest.raises(TransientBackendError, match="HTTP 503"):
        client.chat(_request())
    with pytest.raises(TransientBackendError, match="HTTP 429"):
        client.chat(_request())
    with pytest.raises(BackendError, match="HTTP 400") as err:
        client.chat(_request())
    assert not err.value.transient
    server.state.replies.append((200, {"unexpected": True}))
    with pytest.raises(BackendError, match="malformed"):
        client.chat(_request())
    server.state.delay_s = 1.5
    with pytest.raises(TransientBackendError, match="timed out"):
        client.chat(_request())


def test_connection_refused_is_transient() -> None:
    from llm_stub_server import StubServer as Fresh

    stub = Fresh()
    url = stub.url
    stub.httpd.server_close()  # never served: the port refuses connections
    with pytest.raises(TransientBackendError):
        OpenAIChatBackend(url, model="m").chat(_request())


def test_chat_many_keeps_order_and_errors_in_place(server: StubServer) -> None:
    def echo(body: dict) -> tuple[int, dict]:  # type: ignore[type-arg]
        text = body["messages"][-1]["content"]
        return (500, {"error": "boom"}) if text == "fail" else completion(text.upper())

    server.state.default = echo  # type: ignore[assignment]
    server.state.replies.clear()
    server.state.delay_s = 0.05
    requests = [ChatRequest(messages=(Message.text_only("user", t),)) for t in ("a", "b", "fail", "d")]
    results = _client(server, concurrency=4).chat_many(requests)
    assert [getattr(r, "text", None) for r in results] == ["A", "B", None, "D"]
    assert isinstance(results[2], TransientBackendError)
    assert len(server.state.requests) == 4
