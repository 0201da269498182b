"""The vLLM server manager (command line, health wait, stop) with a fake ``vllm`` launcher, and the
paper panels' request bodies end to end through run_judges against a local OpenAI-compatible server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from llm_stub_server import StubServer, completion

from omnieval.backends.llm import BackendUnavailable, ChatRequest, Message, VllmServerConfig, open_backend
from omnieval.backends.llm._vllm import VllmServer, vllm_command
from omnieval.judges import TRACKS, load_panel, run_judges, verdict_schema

# The paper panels and judge tracks are storybench's, registered when the benchmarks are imported.
import omnieval.benchmarks  # noqa: F401  isort: skip

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "judges"))  # the judge tests' synthetic story


@pytest.fixture()
def fake_vllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``vllm`` launcher that serves the OpenAI API and /health from the stub module."""
    launcher = tmp_path / "bin" / "vllm"
    launcher.parent.mkdir()
    launcher.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(HERE)!r})\n"
        "from llm_stub_server import _fake_vllm\nraise SystemExit(_fake_vllm(sys.argv[1:]))\n"
    )
    launcher.chmod(0o755)
    monkeypatch.setenv("FAKE_VLLM_RECORD", str(tmp_path / "argv.json"))
    monkeypatch.setenv("OMNIEVAL_VLLM_LOG_DIR", str(tmp_path / "logs"))
    return launcher


def _judge(panel: str, track: str, index: int = 0):  # type: ignore[no-untyped-def]
    return load_panel(panel).tracks[track].judges[index]


def _flag(cmd: list[str], name: str) -> str:
    return cmd[cmd.index(name) + 1]


def test_paper_command_lines() -> None:
    text = _judge("paper-a", "text")
    cmd = vllm_command(text.backend, executable="vllm", model=text.model, revision="abc123", port=8123)
    assert cmd[:3] == ["vllm", "serve", "Qwen/Qwen3-30B-A3B-Instruct-2507"]
    expected = {
        "--dtype": "bfloat16",
        "--tensor-parallel-size": "1",
        "--swap-space": "8",
        "--gpu-memory-utilization": "0.9",
        "--max-model-len": "8192",
        "--max-num-seqs": "16",
        "--seed": "0",
        "--port": "8123",
        "--revision": "abc123",
    }
    assert {k: _flag(cmd, k) for k in expected} == expected
    assert "--trust-remote-code" not in cmd and "--limit-mm-per-prompt" not in cmd

    omni = _judge("paper-a", "integrated")
    cmd = vllm_command(omni.backend, executable="vllm", model=omni.model, revision="", port=1)
    assert _flag(cmd, "--gpu-memory-utilization") == "0.95" and _flag(cmd, "--max-model-len") == "32768"
    assert _flag(cmd, "--max-num-seqs") == "4" and _flag(cmd, "--seed") == "1234"
    assert json.loads(_flag(cmd, "--limit-mm-per-prompt")) == {"image": 3, "audio": 1}
    assert "--revision" not in cmd
    assert omni.decoding.max_tokens == 2048 and omni.decoding.seed == 1234

    image = _judge("paper-b", "image")
    cmd = vllm_command(image.backend, executable="vllm", model=image.model, revision="", port=1)
    assert _flag(cmd, "--max-model-len") == "20000" and "--trust-remote-code" in cmd
    kimi = _judge("paper-c", "speech")
    assert kimi.decoding.stop_token_ids == (151644,) and kimi.backend.max_model_len == 8192
    assert _judge("paper-b", "speech").backend.max_model_len == 32768
    assert _judge("paper-a", "speech").backend.kind == "transformers"


def test_paper_decoding_is_greedy_everywhere() -> None:
    panel = load_panel("paper")
    judges = [j for _, j in panel.judges()] + [panel.repair]
    assert len(judges) == 13
    for judge in judges:
        d = judge.decoding
        assert (d.temperature, d.top_p, d.repetition_penalty) == (0.0, 1.0, 1.0), judge.id
    assert panel.repair is not None and panel.repair.model == "Qwen/Qwen3-30B-A3B-Instruct-2507"
    assert panel.repair.framing.schema_constrained


def test_managed_server_lifecycle(fake_vllm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_VLLM_KEY", "sk-server-secret")
    monkeypatch.setenv("FAKE_VLLM_ANSWER", "served answer")
    config = VllmServerConfig(
        executable=str(fake_vllm), max_model_len=8192, max_num_seqs=16, seed=0, api_key_env="MY_VLLM_KEY"
    )
    backend = open_backend(config, model="Qwen/Qwen3-30B-A3B-Instruct-2507")
    try:
        server = backend.server  # type: ignore[attr-defined]
        process = server.process
        assert process is not None and process.poll() is None
        record = json.loads((tmp_path / "argv.json").read_text())
        assert record["argv"] == server.command[1:]
        assert record["has_api_key"] is True and "sk-server-secret" not in " ".join(record["argv"])
        answer = backend.chat(ChatRequest(messages=(Message.text_only("user", "hi"),)))
        assert answer.text == "served answer"
    finally:
        backend.close()
    assert process.poll() is not None
    assert "sk-server-secret" not in server.log_path.read_text()


def test_server_that_dies_reports_its_log(fake_vllm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_VLLM_FAIL", "1")
    with pytest.raises(BackendUnavailable, match="CUDA out of memory"):
        open_backend(VllmServerConfig(executable=str(fake_vllm)), model="org/model")


def test_health_timeout_stops_the_server(fake_vllm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_VLLM_STARTUP_S", "30")
    server = VllmServer(VllmServerConfig(executable=str(fake_vllm), startup_timeout_s=1.0), model="org/model")
    server.start()
    process = server.process
    with pytest.raises(BackendUnavailable, match="not healthy after"):
        server.wait_healthy(poll_s=0.1)
    assert process is not None and process.poll() is not None


def test_missing_launcher_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNIEVAL_VLLM_BIN", "/nonexistent/vllm")
    with pytest.raises(BackendUnavailable, match="OMNIEVAL_VLLM_BIN"):
        open_backend(VllmServerConfig(), model="org/model")


def _answer_for(body: dict) -> tuple[int, dict]:  # type: ignore[type-arg]
    """Reply with a valid verdict for whichever track the request's schema describes."""
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema") or {}
    keys = list(schema.get("properties", {}))
    if not keys:
        text = json.dumps(body)
        track = next(t for t, spec in TRACKS.items() if spec.criteria[1] in text)
        keys = list(TRACKS[track].criteria)
    return completion(json.dumps({k: {"score": 7, "rationale": "reasonable"} for k in keys}))


def _panel_over_http(tmp_path: Path, url: str, picks: dict[str, tuple[str, int]]) -> Path:
    """A panel of paper judges (their decoding and framing) re-pointed at a local server."""
    tracks = {}
    for track, (panel, index) in picks.items():
        judge = _judge(panel, track, index).model_dump(mode="json")
        judge["backend"] = {"kind": "openai", "base_url": url, "concurrency": 2}
        tracks[track] = {"judges": [judge]}
    path = tmp_path / "http-panel.yaml"
    path.write_text(yaml.safe_dump({"name": "http", "tracks": tracks}))
    return path


def test_paper_framing_in_request_bodies(tmp_path: Path) -> None:
    from judge_fixtures import NARRATIONS, make_story

    story = make_story(tmp_path)
    systems = {"oracle": story.candidates("oracle", [n for _, n in NARRATIONS])}
    with StubServer() as server:
        server.state.default = _answer_for  # type: ignore[assignment]
        panel = _panel_over_http(
            tmp_path,
            server.url,
            {
                "text": ("paper-c", 0),
                "image": ("paper-b", 0),
                "speech": ("paper-b", 0),
                "integrated": ("paper-c", 0),
            },
        )
        result = run_judges(story.transitions, systems, panel=str(panel), cache_dir=tmp_path / "cache")
        bodies = [r.body for r in server.state.requests]
    assert set(result.scores["status"]) == {"ok"} and (result.scores["value"] == 7).all()
    by_model = {}
    for body in bodies:
        by_model.setdefault(body["model"], []).append(body)
    assert len(bodies) == 4 * 3

    nemotron = by_model["nvidia/Llama-3_3-Nemotron-Super-49B-v1_5"][0]
    assert nemotron["messages"][0]["role"] == "system"
    assert nemotron["messages"][0]["content"].startswith("/no_think\n")
    assert (nemotron["temperature"], nemotron["top_p"], nemotron["repetition_penalty"], nemotron["seed"]) == (
        0.0,
        1.0,
        1.0,
        0,
    )
    assert nemotron["max_tokens"] == 1024 and "response_format" not in nemotron

    internvl = by_model["OpenGVLab/InternVL3_5-38B-Instruct"][0]
    parts = internvl["messages"][1]["content"]
    assert [p["type"] for p in parts].count("image_url") == 3
    assert [p["type"] for p in parts][-1] == "text"  # closing instruction after the candidate image

    moss = by_model["OpenMOSS-Team/MOSS-Audio-8B-Instruct"][0]
    assert len(moss["messages"]) == 1  # the speech rubric is a single user turn
    assert moss["messages"][0]["content"][0]["type"] == "input_audio"  # audio first

    gemma = by_model["google/gemma-4-12B-it"][0]
    types = [p["type"] for p in gemma["messages"][1]["content"]]
    assert types[:3] == ["image_url"] * 3 and types[-1] == "input_audio"
    assert gemma["chat_template_kwargs"] == {"enable_thinking": False}
    assert gemma["seed"] == 1234 and gemma["max_tokens"] == 2048
    assert gemma["response_format"]["json_schema"]["schema"] == verdict_schema("integrated")
    text_parts = " ".join(p.get("text", "") for p in gemma["messages"][1]["content"])
    assert "Image 1 above" in text_parts and text_parts.index("Answer with JSON only") < text_parts.index(
        "candidate speech audio"
    )
