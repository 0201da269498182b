"""The served llama.cpp judge (``llamacpp-server``): command line, request bodies, the managed
server's lifecycle and watchdog on stand-in servers, and, behind the ``slow`` marker, two verdicts
through llama.cpp's real OpenAI-compatible server compared with the in-process ``cpu`` judge."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from omnieval.backends.llm import (
    BackendUnavailable,
    ChatRequest,
    Decoding,
    LlamaCppServerConfig,
    Message,
    open_backend,
    output_fingerprint,
    reports_value_probs,
)
from omnieval.backends.llm._llamacpp_server import _LlamaCppChatClient, llamacpp_server_command
from omnieval.backends.llm._openai import request_body
from omnieval.backends.llm._process import ServerProcess, _alive

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def test_command_line() -> None:
    config = LlamaCppServerConfig(
        n_ctx=2048, n_threads=1, chat_format="chatml", extra_args=("--verbose", "true")
    )
    cmd = llamacpp_server_command(
        config, python="/py", model_path=Path("/m/q.gguf"), alias="org/q", port=9000, threads=1
    )
    assert cmd[:3] == ["/py", "-m", "llama_cpp.server"]
    pairs = dict(zip(cmd[3::2], cmd[4::2], strict=False))
    assert pairs["--model"] == "/m/q.gguf" and pairs["--model_alias"] == "org/q" and pairs["--port"] == "9000"
    assert pairs["--n_ctx"] == "2048" and pairs["--chat_format"] == "chatml"
    assert cmd[-2:] == ["--verbose", "true"]


def test_json_object_schema_field() -> None:
    request = ChatRequest(messages=(Message.text_only("user", "hi"),), json_schema=SCHEMA)
    body = request_body(request, model="m", schema_field="json_object")
    assert body["response_format"] == {"type": "json_object", "schema": SCHEMA}


def test_chat_body_takes_llamacpp_names_and_in_process_defaults() -> None:
    client = _LlamaCppChatClient(
        "http://127.0.0.1:1/v1", model="q", settings=LlamaCppServerConfig(), served_model=None
    )
    try:
        body = client.body(
            ChatRequest(
                messages=(Message.text_only("user", "hi"),),
                decoding=Decoding(temperature=0.0, repetition_penalty=1.0, max_tokens=8),
                json_schema=SCHEMA,
            )
        )
    finally:
        client.close()
    assert body["repeat_penalty"] == 1.0 and "repetition_penalty" not in body
    assert body["temperature"] == 0.0 and body["max_tokens"] == 8
    # Unset fields: llama-cpp-python's in-process defaults, not the server's (0.8, 1.1).
    assert body["top_p"] == 0.95 and body["top_k"] == 40 and body["min_p"] == 0.05
    assert body["response_format"]["type"] == "json_object"


def test_fingerprint_and_value_probs() -> None:
    config = LlamaCppServerConfig(skeleton_text_sentences=1)
    assert output_fingerprint(config) == {
        "kind": "llamacpp-server",
        "constrained_decoding": "skeleton",
        "chat_format": None,
        "schema_field": "json_object",
        "top_logprobs": 20,
        "skeleton_text_sentences": 1,
    }
    assert reports_value_probs(config, schema_constrained=True, greedy=True)
    assert not reports_value_probs(config, schema_constrained=True, greedy=False)


def _fake_python(tmp_path: Path, body: str) -> str:
    """A stand-in for the interpreter that runs ``-m llama_cpp.server``."""
    script = tmp_path / "fake-python"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


@pytest.fixture
def gguf(tmp_path: Path) -> str:
    from omnieval.backends.llm._llamacpp import resolve_model_path

    try:
        return str(resolve_model_path("packaged:qwen2.5-coder-1.5b-gguf"))
    except BackendUnavailable as exc:  # pragma: no cover - the lock installs it
        pytest.skip(str(exc))


def test_server_that_exits_names_its_log(tmp_path: Path, gguf: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNIEVAL_SERVER_LOG_DIR", str(tmp_path / "logs"))
    python = _fake_python(tmp_path, 'echo "cannot load the model" >&2; exit 3')
    with pytest.raises(BackendUnavailable) as caught:
        open_backend(LlamaCppServerConfig(model_path=gguf, python=python), model="q")
    message = str(caught.value)
    assert "exited with code 3" in message and "cannot load the model" in message
    logs = list((tmp_path / "logs").glob("llamacpp-server-q-*.log"))
    assert len(logs) == 1 and f"server log: {logs[0]}" in message


def test_never_healthy_server_is_stopped_and_named(
    tmp_path: Path, gguf: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNIEVAL_SERVER_LOG_DIR", str(tmp_path))
    pid_file = tmp_path / "pid"
    python = _fake_python(tmp_path, f'echo $$ > {pid_file}; echo "loading forever"; exec sleep 300')
    with pytest.raises(BackendUnavailable) as caught:
        open_backend(LlamaCppServerConfig(model_path=gguf, python=python, startup_timeout_s=2), model="q")
    assert "not healthy after 2 s (server log: " in str(caught.value)
    assert "loading forever" in str(caught.value)
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)


def test_watchdog_stops_the_server_when_its_parent_is_killed(tmp_path: Path) -> None:
    """A run killed with SIGKILL leaves no server behind: the watchdog stops its process group."""
    pid_file = tmp_path / "server.pid"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import time
                from pathlib import Path
                from omnieval.backends.llm._process import ServerProcess
                server = ServerProcess(["sleep", "300"], label="stand-in", base_url="http://127.0.0.1:1",
                                       health_path="/", log_path=Path({str(tmp_path / "s.log")!r}),
                                       startup_timeout_s=1)
                server.start()
                Path({str(pid_file)!r}).write_text(str(server.pid))
                time.sleep(300)
                """
            ),
        ],
        env={**os.environ},
    )
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        server = int(pid_file.read_text())
        assert _alive(server)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 30
        while _alive(server) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(server), "the server outlived its killed parent"
    finally:
        parent.kill()


def test_watchdog_leaves_with_the_server(tmp_path: Path) -> None:
    server = ServerProcess(
        ["sleep", "300"],
        label="stand-in",
        base_url="http://127.0.0.1:1",
        health_path="/",
        log_path=tmp_path / "s.log",
        startup_timeout_s=1,
    )
    server.start()
    watcher = server.watcher
    assert watcher is not None and watcher.poll() is None
    server.stop()
    assert watcher.wait(timeout=10) == 0


# -- the real server ------------------------------------------------------------------------------


def _cpu_judge_backends() -> tuple[object, object]:
    import omnieval.benchmarks  # noqa: F401  (registers the shipped panels)
    from omnieval.judges import load_panel

    cpu, served = load_panel("cpu"), load_panel("cpu-served")
    return cpu.tracks["text"].judges[0], served.tracks["text"].judges[0]


def _verdict_request(judge: object, candidate: str) -> ChatRequest:
    from omnieval.judges import JudgeInputs, render_messages, template, verdict_schema

    inputs = JudgeInputs(
        metadata={"genre": "fairy tale", "characters": [{"name": "Pip", "description": "a small fox"}]},
        condition={"scene": "the river bank", "text content": "Pip gives the lantern to the river mice"},
        current_text="Pip carried the lantern along the stream.",
        reference_text="At the river bank Pip set the lantern down, and the river mice cheered.",
        reference_speech={},
        candidate_text=candidate,
    )
    framing = judge.framing  # type: ignore[attr-defined]
    return ChatRequest(
        messages=render_messages(template("text"), inputs, framing),
        decoding=judge.decoding,  # type: ignore[attr-defined]
        json_schema=verdict_schema(
            "text", rationale_max_chars=framing.rationale_max_chars, rationale_first=framing.rationale_first
        ),
    )


def _scores(text: str) -> dict[str, int]:
    import json

    return {criterion: verdict["score"] for criterion, verdict in json.loads(text).items()}


VALUE_PROB_TOLERANCE = 0.001
"""Most a served value probability may differ from the in-process one: the mass outside the top 20
tokens, seen in p(1) and p(10) (measured up to 6e-5; docs/judges.md)."""


@pytest.mark.slow
def test_two_verdicts_through_the_real_server_equal_the_cpu_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The served path end to end: a real llama.cpp server started by omnieval, two verdicts equal to
    the in-process judge's (answer text) with value probabilities within tolerance, the server killed
    mid-request and restarted without losing the answer, and no server left after close."""
    monkeypatch.setenv("OMNIEVAL_SERVER_LOG_DIR", str(tmp_path))
    cpu_judge, served_judge = _cpu_judge_backends()
    candidates = [
        "At the river bank Pip set the lantern down, and the river mice cheered.",
        "The robot flew to the moon and ate a sandwich.",
    ]
    requests = [_verdict_request(cpu_judge, c) for c in candidates]
    assert requests == [_verdict_request(served_judge, c) for c in candidates]
    cpu = open_backend(cpu_judge.backend, model=cpu_judge.model, revision=cpu_judge.revision)  # type: ignore[attr-defined]
    try:
        expected = [cpu.chat(r) for r in requests]
    finally:
        cpu.close()

    served = open_backend(served_judge.backend, model=served_judge.model, revision=served_judge.revision)  # type: ignore[attr-defined]
    try:
        assert served.identity().weights_digest == cpu.identity().weights_digest
        first = served.chat(requests[0])
        server = served.server  # type: ignore[attr-defined]
        killed = server.pid
        # Kill the server while the second verdict is being decoded.
        timer = threading.Timer(3.0, lambda: os.killpg(killed, signal.SIGKILL))
        timer.start()
        second = served.chat(requests[1])
        timer.join()
        assert served.restarts == 1  # type: ignore[attr-defined]
        assert server.pid != killed
        answers = [first, second]
    finally:
        served.close()
    assert not _alive(killed)
    for got, want in zip(answers, expected, strict=True):
        # The server evaluates the in-process batches (docs/judges.md, "The served CPU panel"):
        # the same greedy answer, scores and rationales alike.
        assert got.text == want.text
        assert _scores(got.text) == _scores(want.text)
        assert got.value_probs is not None and want.value_probs is not None
        assert set(got.value_probs) == set(want.value_probs)
        for path, dist in want.value_probs.items():
            for value, p in dist.items():
                assert abs(got.value_probs[path].get(value, 0.0) - p) <= VALUE_PROB_TOLERANCE, (path, value)
    assert "Uvicorn running" in next(tmp_path.glob("llamacpp-server-*.log")).read_text()


def test_stream_reads_tokens_and_tells_a_cut_stream_from_its_end() -> None:
    from omnieval.backends.llm import TransientBackendError
    from omnieval.backends.llm._llamacpp_server import _Stream

    chunk = (
        'data: {"choices": [{"logprobs": {"tokens": ["The"], "top_logprobs": [{"The": -0.1, "A": -2.5}]}}]}'
    )
    closed: list[bool] = []
    stream = _Stream(iter([": ping", chunk, "", "data: [DONE]"]), lambda: closed.append(True))
    assert stream.next() == ("The", {"The": -0.1, "A": -2.5})
    assert stream.next() is None  # generation ended (end-of-generation token or max_tokens)
    stream.close()
    assert closed == [True] and stream.tokens == ["The"]
    cut = _Stream(iter([chunk]), lambda: None)
    cut.next()
    with pytest.raises(TransientBackendError):
        cut.next()  # the body ended without [DONE]: the server went away
