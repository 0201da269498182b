"""The ``openai-omni`` kind against a local server that speaks the OpenAI chat wire format with audio.

The server is the shared stub (tests/backends/llm/llm_stub_server.py) with a ``respond`` hook that
answers like vLLM serving Qwen2.5-Omni: text in ``message.content``, speech as base64 WAV in
``message.audio.data``.
"""

from __future__ import annotations

import base64
import io
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
import yaml

from omnieval.systems import GenerationRequest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backends" / "llm"))  # the shared stub server
from llm_stub_server import Recorded, Reply, StubServer

from omnieval.benchmarks import get_benchmark
from omnieval.candidates import Modality, read_candidate
from omnieval.systems import SYSTEMS, config_model
from omnieval.systems.openai_omni import (
    IMAGE_UNAVAILABLE,
    OmniClient,
    OpenAIOmniConfig,
    OpenAIOmniSystem,
    parse_answer,
)

KEY = "omni-key-93b7d1f0c2"
NARRATION = "Pip held the lantern up to the light and wondered who had lost it."
LINE = "Whose little lantern are you?"


def _wav(seconds: float = 0.5, rate: int = 24000) -> bytes:
    """A short 24 kHz tone as WAV bytes (what Qwen2.5-Omni's talker returns, in shape)."""
    t = np.arange(int(seconds * rate)) / rate
    buf = io.BytesIO()
    sf.write(
        buf, (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32), rate, format="WAV", subtype="PCM_16"
    )
    return buf.getvalue()


WAV = _wav()


def _answer(text: str, audio: bytes | None, *, split: bool = False) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    spoken = (
        {"id": "audio-1", "data": base64.b64encode(audio).decode(), "transcript": text} if audio else None
    )
    if spoken and split:
        # vLLM-Omni's shape: one choice with the text, another with the audio.
        choices = [
            {"index": 0, "message": message, "finish_reason": "stop"},
            {
                "index": 1,
                "message": {"role": "assistant", "content": None, "audio": spoken},
                "finish_reason": "stop",
            },
        ]
    else:
        if spoken:
            message["audio"] = spoken
        choices = [{"index": 0, "message": message, "finish_reason": "stop"}]
    return 200, {"id": "chatcmpl-1", "object": "chat.completion", "choices": choices}


def omni_like(recorded: Recorded, *, split: bool = False) -> Reply:
    if not recorded.path.endswith("/chat/completions"):
        return 404, {"error": "not found"}
    if recorded.headers.get("Authorization") != f"Bearer {KEY}":
        return 401, {"error": "bad key"}
    if "audio" in recorded.body.get("modalities", []):
        return _answer(LINE, WAV, split=split)
    return _answer(NARRATION, None)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[StubServer]:
    monkeypatch.setenv("OMNI_TEST_KEY", KEY)
    with StubServer(respond=omni_like) as stub:
        monkeypatch.setenv("OMNI_TEST_URL", stub.url)
        yield stub


def _system(tmp_path: Path, **extra: Any) -> OpenAIOmniSystem:
    config = OpenAIOmniConfig.model_validate(
        {
            "model": "Qwen/Qwen2.5-Omni-7B",
            "base_url_env": "OMNI_TEST_URL",
            "api_key_env": "OMNI_TEST_KEY",
            **extra,
        }
    )
    return OpenAIOmniSystem(config, system_id="omni", cache_dir=tmp_path / "cache")


def _user_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    user = [m for m in body["messages"] if m["role"] == "user"]
    assert len(user) == 1
    content = user[0]["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def test_registered_with_typed_config() -> None:
    assert SYSTEMS.get("openai-omni") is OpenAIOmniSystem
    assert config_model("openai-omni") is OpenAIOmniConfig
    with pytest.raises(ValueError, match="exactly one of base_url and base_url_env"):
        OpenAIOmniConfig(model="m")
    with pytest.raises(ValueError, match="credentials in the URL"):
        OpenAIOmniConfig(model="m", base_url="http://me:secret@gpu-7:8091/v1")
    with pytest.raises(ValueError, match=r"prompts.speech: not a valid template"):
        OpenAIOmniConfig.model_validate({"model": "m", "base_url": "http://h/v1", "prompts": {"speech": "{"}})


@pytest.mark.parametrize(
    "prompts,message",
    [
        ({"speech": "{next_text}"}, r"prompts.speech: unknown placeholders \['next_text'\]"),
        ({"narattion": "{metadata}"}, r"prompts.narattion: storybench makes no request of that name"),
    ],
)
def test_a_replaced_prompt_must_fit_the_benchmarks_request(
    tmp_path: Path, storybench_instances: tuple[Any, ...], prompts: dict[str, str], message: str
) -> None:
    # The requests are the benchmark's: a template replacing one is checked against it on the first
    # example, before any request is sent.
    from omnieval.errors import ConfigError

    bench = get_benchmark("storybench")
    config = OpenAIOmniConfig.model_validate(
        {"model": "m", "base_url": "http://127.0.0.1:9/v1", "prompts": prompts}
    )
    system = OpenAIOmniSystem(config, system_id="o", cache_dir=tmp_path / "cache")
    with pytest.raises(ConfigError, match=message):
        system.generate(
            GenerationRequest(
                storybench_instances[:1],
                tmp_path / "cand",
                visible=bench.visible_task,
                modalities=bench.modalities,
            )
        )
    assert system.client._client is None


def test_a_replaced_prompt_is_sent(
    tmp_path: Path, server: StubServer, storybench_instances: tuple[Any, ...]
) -> None:
    bench = get_benchmark("storybench")
    system = _system(tmp_path, prompts={"speech": "Speak after: {narration}"})
    system.generate(
        GenerationRequest(
            storybench_instances[:1],
            tmp_path / "cand",
            visible=bench.visible_task,
            modalities=bench.modalities,
        )
    )
    told, spoken = (r.body for r in server.state.requests)
    assert _user_parts(spoken)[-1]["text"] == f"Speak after: {NARRATION}"
    assert _user_parts(told)[-1]["text"].startswith("You are continuing an illustrated")


def test_prism_suites_refuse_it(tmp_path: Path) -> None:
    from omnieval.config import load_suite
    from omnieval.errors import ConfigError

    path = tmp_path / "suite.yaml"
    entry = {"kind": "openai-omni", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    path.write_text(yaml.safe_dump({"suite": "s", "benchmark": "prism", "systems": {"omni": entry}}))
    with pytest.raises(ConfigError, match="unknown system 'openai-omni' for benchmark prism"):
        load_suite(path)
    path.write_text(yaml.safe_dump({"suite": "s", "benchmark": "acbench", "systems": {"omni": entry}}))
    assert isinstance(load_suite(path).systems["omni"], OpenAIOmniConfig)


def test_a_task_asking_for_neither_text_nor_speech_gets_nothing_and_no_request(tmp_path: Path) -> None:
    # The kind sends the requests of the task's brief, never chosen by the benchmark's name: a task
    # without a brief (video alone is nothing it can write) gets every modality missing and no call.
    from omnieval.systems import Task

    system = OpenAIOmniSystem(OpenAIOmniConfig(model="m", base_url="http://127.0.0.1:9/v1"), system_id="o")
    result = system.run_example(Task("clips", 0, "c0", "", None, modalities=("video",)), tmp_path)
    assert result.written == {}
    assert result.missing == {"video": "unavailable: openai-omni returns no video"}
    assert system.client._client is None


def test_storybench_narration_then_spoken_line(
    tmp_path: Path, server: StubServer, storybench_instances: tuple[Any, ...]
) -> None:
    bench = get_benchmark("storybench")
    out = tmp_path / "cand"
    summary = _system(tmp_path).generate(
        GenerationRequest(
            storybench_instances[:1], out, visible=bench.visible_task, modalities=bench.modalities
        )
    )
    assert summary.missing == {"image": 1}
    assert (out / "text" / "0" / "generated.txt").read_text(encoding="utf-8").strip() == NARRATION
    assert (out / "image" / "0" / "missing.txt").read_text().strip() == IMAGE_UNAVAILABLE
    speech = read_candidate(out, Modality.SPEECH, 0)
    assert speech.present and speech.path is not None
    audio, rate = sf.read(speech.path)
    assert rate == 24000 and len(audio) == 12000

    told, spoken = (r.body for r in server.state.requests)
    assert told["modalities"] == ["text"] and "audio" not in told
    assert told["model"] == "Qwen/Qwen2.5-Omni-7B" and told["stream"] is False
    assert told["messages"][0] == {
        "role": "system",
        "content": OpenAIOmniConfig(model="m", base_url="http://h/v1").prompts.system,
    }
    parts = _user_parts(told)
    assert parts[0]["type"] == "image_url" and parts[0]["image_url"]["url"].startswith(
        "data:image/png;base64,"
    )
    assert storybench_instances[0].current_text in parts[1]["text"]
    assert spoken["modalities"] == ["text", "audio"]
    assert spoken["audio"] == {"voice": "Chelsie", "format": "wav"}
    assert NARRATION in _user_parts(spoken)[0]["text"]

    raw = json.loads((out / "raw" / "0" / "generated_raw.json").read_text())
    assert raw["openai_omni"]["speech"]["text"] == LINE
    assert raw["openai_omni"]["speech"]["audio_bytes"] == len(WAV)
    assert set(raw["seconds"]) == {"text", "speech"}
    assert KEY not in json.dumps(raw) and KEY not in json.dumps(summary.lineage)


@pytest.mark.parametrize("split", [False, True], ids=["one-choice", "vllm-omni-two-choices"])
def test_acbench_sends_the_spoken_instruction_and_takes_the_audio(
    tmp_path: Path, acbench_instances: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch, split: bool
) -> None:
    monkeypatch.setenv("OMNI_TEST_KEY", KEY)
    bench = get_benchmark("acbench")
    instance = acbench_instances[0]
    with StubServer(respond=lambda r: omni_like(r, split=split)) as stub:
        monkeypatch.setenv("OMNI_TEST_URL", stub.url)
        system = _system(tmp_path, voice="Ethan")
        for condition in ("original", "all_to_t", "oracle"):
            out = tmp_path / condition
            summary = system.generate(
                GenerationRequest(
                    (instance,),
                    out,
                    visible=bench.visible_task,
                    modalities=bench.modalities,
                    condition=condition,
                )
            )
            assert summary.missing == {}, condition
            speech = read_candidate(out, Modality.SPEECH, 0)
            assert speech.path is not None and speech.path.read_bytes() == WAV
        original, written, oracle = (r.body for r in stub.state.requests)

    assert original["modalities"] == ["text", "audio"] and original["audio"] == {
        "voice": "Ethan",
        "format": "wav",
    }
    parts = _user_parts(original)
    audio = [p for p in parts if p["type"] == "input_audio"]
    assert audio == [
        {
            "type": "input_audio",
            "input_audio": {
                "data": base64.b64encode(instance.instruction_audio.read_bytes()).decode(),
                "format": "wav",
            },
        }
    ]
    assert [p["type"] for p in parts].count("image_url") == 1
    assert instance.script in parts[-1]["text"]
    assert not any(instance.instruction_text in p.get("text", "") for p in parts)
    assert [p["type"] for p in parts] == ["text", "input_audio", "text", "image_url", "text"]

    parts = _user_parts(written)
    assert {p["type"] for p in parts} == {"text"}
    texts = " ".join(p["text"] for p in parts)
    assert instance.instruction_text in texts and instance.image_keywords[0] in texts
    assert "Target:" not in texts
    assert "\nTarget: Deliver the script" in _user_parts(oracle)[0]["text"]


def _failing(status: int, calls: list[int]) -> Callable[[Recorded], Reply]:
    def respond(recorded: Recorded) -> Reply:
        calls.append(status)
        return status, {"error": {"message": f"failure {status} for Bearer {KEY}"}}

    return respond


@pytest.mark.parametrize("status,retried", [(503, True), (400, False)])
def test_failed_requests_cost_one_example_and_transient_ones_are_retried_on_rerun(
    tmp_path: Path,
    acbench_instances: tuple[Any, ...],
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    retried: bool,
) -> None:
    monkeypatch.setenv("OMNI_TEST_KEY", KEY)
    monkeypatch.setattr(OmniClient, "retry_wait_s", 0.0)
    bench = get_benchmark("acbench")
    calls: list[int] = []
    with StubServer(respond=_failing(status, calls)) as stub:
        monkeypatch.setenv("OMNI_TEST_URL", stub.url)
        out = tmp_path / "cand"

        def run() -> None:
            _system(tmp_path).generate(
                GenerationRequest(
                    acbench_instances[:2],
                    out,
                    visible=bench.visible_task,
                    modalities=bench.modalities,
                    condition="original",
                )
            )

        run()
        attempts = 1 + OmniClient.retries if retried else 1
        assert len(calls) == 2 * attempts
        reason = (out / "speech" / "1" / "missing.txt").read_text().strip()
        assert reason.startswith(f"request failed: HTTP {status}: ") and KEY not in reason and "***" in reason
        run()
        assert len(calls) == (4 * attempts if retried else 2)


def test_an_answer_without_audio_is_not_written(
    tmp_path: Path, acbench_instances: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNI_TEST_KEY", KEY)
    bench = get_benchmark("acbench")
    with StubServer(respond=lambda r: _answer("I can only answer in text.", None)) as stub:
        monkeypatch.setenv("OMNI_TEST_URL", stub.url)
        out = tmp_path / "cand"
        _system(tmp_path).generate(
            GenerationRequest(
                acbench_instances[:1],
                out,
                visible=bench.visible_task,
                modalities=bench.modalities,
                condition="s_to_t",
            )
        )
    assert (
        out / "speech" / "0" / "missing.txt"
    ).read_text().strip() == "not written: the answer has no audio"


def test_parse_answer_rejects_bad_audio() -> None:
    with pytest.raises(ValueError, match="base64"):
        parse_answer({"choices": [{"message": {"content": "x", "audio": {"data": "!!not base64!!"}}}]})
    with pytest.raises(ValueError, match="no choices"):
        parse_answer({"choices": []})


def test_usage_counts_the_servers_tokens_and_each_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, storybench_instances: tuple[Any, ...]
) -> None:
    """The generation summary's ``usage`` (the run's ``usage.json``) sums the server's ``usage``
    per request; a server that reports none leaves the tokens unknown."""

    def with_usage(recorded: Recorded) -> Reply:
        code, payload = omni_like(recorded)
        audio = "audio" in recorded.body.get("modalities", [])
        payload["usage"] = {"prompt_tokens": 40 if audio else 30, "completion_tokens": 9 if audio else 5}
        return code, payload

    monkeypatch.setenv("OMNI_TEST_KEY", KEY)
    bench = get_benchmark("storybench")
    with StubServer(respond=with_usage) as stub:
        monkeypatch.setenv("OMNI_TEST_URL", stub.url)
        summary = _system(tmp_path).generate(
            GenerationRequest(
                storybench_instances[:1],
                tmp_path / "cand",
                visible=bench.visible_task,
                modalities=bench.modalities,
            )
        )
    usage = summary.lineage["usage"]
    assert (usage["calls"], usage["prompt_tokens"], usage["completion_tokens"]) == (2, 70, 14)
    assert usage["model"] == "Qwen/Qwen2.5-Omni-7B" and usage["seconds"] > 0

    with StubServer(respond=omni_like) as stub:  # answers without ``usage``
        monkeypatch.setenv("OMNI_TEST_URL", stub.url)
        quiet = _system(tmp_path / "quiet").generate(
            GenerationRequest(
                storybench_instances[:1],
                tmp_path / "q",
                visible=bench.visible_task,
                modalities=bench.modalities,
            )
        )
    assert quiet.lineage["usage"]["calls"] == 2 and quiet.lineage["usage"]["prompt_tokens"] is None
