"""Security guarantees (docs/security.md), each tested the way an attacker or an accident would hit it.

1. Keys and tokens never reach logs, MLflow, W&B, Prefect's store, the run folder or the state:
   planted values, a real flow run against a local OpenAI-compatible server that checks the key.
2. Servers omnieval starts listen on 127.0.0.1 unless told otherwise.
3. Paths in manifests and candidate folders cannot leave their folder.
4. YAML is loaded safely; nothing is unpickled; torch checkpoints load with ``weights_only=True``.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import re
import secrets
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent / "backends" / "llm"))  # the shared stub server
from llm_stub_server import Recorded, Reply, StubServer, completion

from omnieval.cli import main
from omnieval.security import (
    MASK,
    inside,
    install_log_redaction,
    is_secret_name,
    redact,
    register_secret_env,
    scrub_environment,
    secret_values,
)

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "omnieval"


# ---------------------------------------------------------------------------------------------
# A local OpenAI-compatible judge server that insists on the planted key
# ---------------------------------------------------------------------------------------------


@dataclass
class FakeOpenAI:
    """``/v1/chat/completions`` answering schema-shaped verdicts; ``/hook`` accepts webhooks.

    Every request's ``Authorization`` header is compared with ``key``: a wrong or absent key gets
    401 (and is counted), so a run that judged anything provably sent the planted key.
    """

    key: str
    echo_auth_in_errors: bool = False
    authorized: int = 0
    unauthorized: int = 0
    hooks: list[dict[str, str]] = field(default_factory=list)
    url: str = ""

    def verdict(self, body: dict[str, Any]) -> str:
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema") or {}
        if "anyOf" in schema:  # the repair schema: the verdict branch
            schema = schema["anyOf"][0]
        keys = list(schema.get("properties", {}))
        assert keys, "the judge request carries no verdict schema"
        return json.dumps({k: {"score": 7, "rationale": "the narration follows the page"} for k in keys})


@pytest.fixture()
def fake_openai() -> Iterator[FakeOpenAI]:
    state = FakeOpenAI(key="sk-planted-" + secrets.token_hex(16))

    def respond(request: Recorded) -> Reply:
        if request.path == "/hook":
            state.hooks.append(request.headers)
            return 200, {"ok": True}
        auth = request.headers.get("Authorization", "")
        if auth != f"Bearer {state.key}" or state.echo_auth_in_errors:
            state.unauthorized += 1
            # Some proxies echo the request's credentials back in their error body.
            detail = f"invalid credentials: {auth}" if state.echo_auth_in_errors else "invalid key"
            return 401, {"error": {"message": detail}}
        state.authorized += 1
        return completion(state.verdict(request.body))

    with StubServer(respond) as server:
        state.url = server.root
        yield state


# ---------------------------------------------------------------------------------------------
# 1. Redaction: unit level
# ---------------------------------------------------------------------------------------------


def test_secret_names_cover_the_common_variables() -> None:
    for name in (
        "OPENAI_API_KEY",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "WANDB_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "MLFLOW_TRACKING_PASSWORD",
        "MLFLOW_TRACKING_TOKEN",
        "GITHUB_TOKEN",
        "OMNIEVAL_TEST_KEY",
        "DATABASE_PASSWORD",
    ):
        assert is_secret_name(name), name
    for name in (
        "PATH",
        "HOME",
        "KEYBOARD",
        "MONKEY",
        "PREFECT_HOME",
        "TOKENIZERS_PARALLELISM",
        "SSH_AUTH_SOCK",
    ):
        assert not is_secret_name(name), name


def test_registered_variables_are_secret_whatever_their_name(monkeypatch: pytest.MonkeyPatch) -> None:
    value = secrets.token_hex(12)
    monkeypatch.setenv("OMNIEVAL_JUDGE_CRED_FOR_TEST", value)
    assert value not in secret_values()
    register_secret_env("OMNIEVAL_JUDGE_CRED_FOR_TEST")
    assert value in secret_values()
    assert redact(f"x {value} y") == f"x {MASK} y"


def test_redact_masks_env_values_and_token_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    planted = "pl4nted-" + secrets.token_hex(8)
    monkeypatch.setenv("SOME_SERVICE_TOKEN", planted)
    monkeypatch.setenv("SHORT_KEY", "abc")  # too short to be a secret: never masked
    google = "AIza" + "Sy" + "C-" * 6 + "x9" * 12  # a Google API key's shape (Gemini), 39 chars
    text = (
        f"url=http://h/?t={planted} auth: Bearer abc.DEF_123-xyz key sk-{'a' * 24} "
        f"hub hf_{'B' * 30} gemini https://g/v1beta/models/m:generateContent?key={google} abc is fine"
    )
    clean = redact(text)
    assert planted not in clean and "abc.DEF_123-xyz" not in clean
    assert "sk-aaaa" not in clean and "hf_BBBB" not in clean and google not in clean
    assert clean.endswith("abc is fine")
    # Independent check: no unmasked token shape is left.
    assert not re.search(r"sk-\w{16}|hf_\w{20}|AIza[\w-]{30}", clean)


def test_scrub_environment_masks_only_secret_variables() -> None:
    env = {"OPENAI_API_KEY": "sk-" + "x" * 30, "LANG": "C.UTF-8", "HF_TOKEN": "", "WANDB_MODE": "offline"}
    assert scrub_environment(env) == {
        "OPENAI_API_KEY": MASK,
        "LANG": "C.UTF-8",
        "HF_TOKEN": "",
        "WANDB_MODE": "offline",
    }


def test_log_records_of_every_logger_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    planted = "sk-planted-" + secrets.token_hex(16)
    monkeypatch.setenv("OPENAI_API_KEY", planted)
    install_log_redaction()
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Keep()
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    for name in ("httpx", "prefect.security_test", "mlflow.tracking", "omnieval.judges"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        try:
            logger.warning("sending headers %s", {"Authorization": f"Bearer {planted}"})
            try:
                raise RuntimeError(f"server said: bad key {planted}")
            except RuntimeError:
                logger.exception("request failed")
        finally:
            logger.removeHandler(handler)
    assert len(records) == 8
    assert all(planted not in r for r in records), records
    assert any(MASK in r for r in records)
    assert any("RuntimeError" in r for r in records)  # the traceback is kept, only the key is masked


def test_cli_error_messages_are_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    planted = "sk-planted-" + secrets.token_hex(16)
    monkeypatch.setenv("OPENAI_API_KEY", planted)
    # A config error that quotes the (mis-pasted) key value back must not print it.
    suite = tmp_path / "bad.yaml"
    suite.write_text(f"suite: s\nsystems: {{oracle: {{kind: oracle}}}}\napi_key: {planted}\n")
    assert main(["run", str(suite)]) == 2
    err = capsys.readouterr().err
    assert "api_key" in err and planted not in err


def test_openai_client_error_never_carries_the_key(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnieval.backends.llm import BackendError, ChatRequest, Message
    from omnieval.backends.llm._openai import OpenAIChatBackend

    monkeypatch.setenv("OMNIEVAL_TEST_KEY", fake_openai.key)
    fake_openai.echo_auth_in_errors = True
    backend = OpenAIChatBackend(f"{fake_openai.url}/v1", model="m", api_key_env="OMNIEVAL_TEST_KEY")
    try:
        with pytest.raises(BackendError) as info:
            backend.chat(ChatRequest((Message.text_only("user", "hi"),)))
    finally:
        backend.close()
    assert fake_openai.unauthorized == 1
    assert fake_openai.key not in str(info.value)
    assert fake_openai.key not in repr(backend)


def test_gemini_client_errors_never_carry_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Gemini-format server that echoes the request's key header back in its error bodies."""
    from omnieval.backends.llm import (
        BackendError,
        BackendUnavailable,
        ChatRequest,
        GeminiBackendConfig,
        Message,
    )
    from omnieval.backends.llm._gemini import GeminiChatBackend, forget_versions, gemini_identity

    key = "AIza" + secrets.token_hex(18)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", key)
    state = {"echo": False, "seen": 0}

    def respond(request: Recorded) -> Reply:
        sent = {k.lower(): v for k, v in request.headers.items()}.get("x-goog-api-key", "")
        state["seen"] += sent == key
        if state["echo"]:
            return 403, {"error": {"code": 403, "message": f"key {sent} is not allowed", "status": "DENIED"}}
        return 200, {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "ready"}]}, "finishReason": "STOP"}
            ],
            "modelVersion": "gemini-security-001",
        }

    forget_versions()
    with StubServer(respond) as server:
        config = GeminiBackendConfig(base_url=server.root + "/")
        backend = GeminiChatBackend(config, model="gemini-sec")
        try:
            state["echo"] = True
            with pytest.raises(BackendError) as info:
                backend.chat(ChatRequest((Message.text_only("user", "hi"),)))
            forget_versions()
            with pytest.raises(BackendUnavailable) as probe:
                gemini_identity(config, "gemini-sec", "")
        finally:
            backend.close()
            forget_versions()
    assert state["seen"] == 3  # the key did go out, as a header, on every request
    for text in (str(info.value), str(probe.value), repr(backend)):
        assert key not in text and "is not allowed" in str(info.value)
    assert key not in repr(config.model_dump())


def test_a_server_address_with_credentials_is_refused() -> None:
    from pydantic import ValidationError

    from omnieval.backends.llm._config import OpenAIBackendConfig

    with pytest.raises(ValidationError, match="credentials in the URL"):
        OpenAIBackendConfig(base_url="http://user:hunter2@gpu-7:8000/v1")
    with pytest.raises(ValidationError, match="credentials in the URL"):
        OpenAIBackendConfig(endpoints=({"base_url": "https://u:p@a.example/v1"},))
    assert OpenAIBackendConfig(base_url="http://gpu-7:8000/v1").base_url


def test_a_key_in_a_custom_variable_is_masked_once_a_backend_names_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from omnieval.backends.llm._openai import OpenAIChatBackend
    from omnieval.security import redact

    planted = "plain-" + secrets.token_hex(12)  # no token shape: only the registration masks it
    monkeypatch.setenv("JUDGE_CRED_FOR_TEST", planted)
    backend = OpenAIChatBackend("http://127.0.0.1:9/v1", model="m", api_key_env="JUDGE_CRED_FOR_TEST")
    backend.close()
    assert planted not in redact(f"header was {planted}")


# ---------------------------------------------------------------------------------------------
# 1. Planted secrets through a real flow run
# ---------------------------------------------------------------------------------------------


def _panel_yaml(url: str) -> str:
    judge = {
        "model": "planted/judge",
        "backend": {"kind": "openai", "base_url": f"{url}/v1", "api_key_env": "OMNIEVAL_TEST_KEY"},
        "decoding": {"temperature": 0.0, "max_tokens": 256},
        "framing": {"schema_constrained": True},
        "retries": 0,
    }
    return yaml.safe_dump(
        {
            "name": "security",
            "tracks": {
                "text": {"judges": [{"id": "http-judge", **judge}]},
                "speech": {"unavailable": "not judged in the security test"},
                "image": {"unavailable": "not judged in the security test"},
                "integrated": {"unavailable": "not judged in the security test"},
            },
            "repair": {"id": "http-repair", **judge},
        },
        sort_keys=False,
    )


def _files_holding(roots: list[Path], needles: dict[str, bytes], since: float, skip: set[Path]) -> list[str]:
    """``"<label> in <file>"`` for every file under ``roots`` (changed since ``since``, not in
    ``skip``) holding a needle."""
    hits = []
    for root in roots:
        if not root.exists():
            continue
        for path in [root] if root.is_file() else root.rglob("*"):
            if not path.is_file() or path.is_symlink() or path.stat().st_mtime < since or path in skip:
                continue
            data = path.read_bytes()
            hits += [f"{label} in {path}" for label, needle in needles.items() if needle in data]
    return hits


_THIS_PROCESS = "(this test process)"


def _listening_addresses() -> list[tuple[str, str]]:
    """(process, ip) of every TCP socket this process and its children listen on."""
    import psutil

    me = psutil.Process()
    out = []
    for proc in [me, *me.children(recursive=True)]:
        label = _THIS_PROCESS if proc.pid == me.pid else ""
        try:
            conns = proc.net_connections(kind="tcp")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        try:
            label = label or " ".join(proc.cmdline()[:4])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        out += [(label, c.laddr.ip) for c in conns if c.status == psutil.CONN_LISTEN]
    return out


@pytest.mark.e2e
@pytest.mark.slow
def test_planted_secrets_never_leave_the_process(
    fake_openai: FakeOpenAI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from omnieval.benchmarks._base import Benchmark

    started = time.time() - 1
    planted = {
        "OMNIEVAL_TEST_KEY": fake_openai.key,
        "OPENAI_API_KEY": "sk-planted-" + secrets.token_hex(16),
        "HF_TOKEN": "hf_planted" + secrets.token_hex(12),
        "WANDB_API_KEY": secrets.token_hex(20),
        "MLFLOW_TRACKING_TOKEN": "mlflow-planted-" + secrets.token_hex(12),
        "GEMINI_API_KEY": "AIza" + secrets.token_hex(18),
    }
    webhook_secret = "hook-planted-" + secrets.token_hex(12)
    for name, value in planted.items():
        monkeypatch.setenv(name, value)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("OMNIEVAL_MLFLOW_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv("OMNIEVAL_PROJECT_ROOT", str(ROOT))
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb"))
    panel = tmp_path / "security-panel.yaml"
    panel.write_text(_panel_yaml(fake_openai.url), encoding="utf-8")
    shipped = Benchmark.panel_names
    monkeypatch.setattr(Benchmark, "panel_names", lambda self: [*shipped(self), str(panel)])
    suite = {
        "suite": "security",
        "benchmark": "storybench",
        "dataset": {
            "name": "storybench-sample",
            "path": str(ROOT / "data" / "storybench-sample"),
            "limit": 2,
        },
        "systems": {"oracle": {"kind": "oracle"}, "copy-current": {"kind": "copy-current"}},
        "metrics": {"asr_model": None, "image_backbone": "efficientnet-lite0"},
        "judges": {"panels": [str(panel)]},
        "analyses": {"enabled": True, "seed": 0, "bootstrap_draws": 100},
        "tracking": {"experiment": "omnieval/security", "wandb": True},
        "state_dir": str(tmp_path / "state"),
        "runs_dir": str(tmp_path / "runs"),
        "regression": {
            "notify": [
                {
                    "kind": "webhook",
                    "url": f"{fake_openai.url}/hook",
                    "headers": {"Authorization": f"Bearer {webhook_secret}"},
                }
            ]
        },
    }
    suite_path = tmp_path / "security.yaml"
    suite_path.write_text(yaml.safe_dump(suite), encoding="utf-8")

    # Every logger at DEBUG (httpx/httpcore would log request details there), into one buffer.
    logs: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logs.append(self.format(record))

    keep = Keep(logging.DEBUG)
    keep.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root_logger = logging.getLogger()
    old_level = root_logger.level
    root_logger.addHandler(keep)
    root_logger.setLevel(logging.DEBUG)
    # Every socket the run's processes listen on while it runs (Prefect's temporary server, ...),
    # sampled from a thread: a server bound to 0.0.0.0 and stopped before the run returns is seen.
    heard: set[tuple[str, str]] = set()
    running = threading.Event()
    running.set()

    def sample() -> None:
        while running.is_set():
            heard.update(_listening_addresses())
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        code = main(["run", str(suite_path), "--json"])
    finally:
        running.clear()
        sampler.join(timeout=10)
        root_logger.removeHandler(keep)
        root_logger.setLevel(old_level)
    out, err = capfd.readouterr()
    assert code == 0, err[-3000:]

    # The key really was used: the judge answered, and never without it.
    assert fake_openai.authorized > 0 and fake_openai.unauthorized == 0
    summary = json.loads(out[out.index("{") :])
    folder = Path(summary["run_folder"])
    board = json.loads((folder / "leaderboard.json").read_text())
    assert board["systems"]["oracle"]["valid_only"]["judge.text"] == pytest.approx(7.0)
    # The verdict was notified (regression.notify sends every verdict, the first run's too) and the
    # webhook got its header: the secret is usable where it belongs, so the leak checks below look
    # for a secret the run really handled.
    sent = len(fake_openai.hooks)
    assert sent == 1, f"{sent} webhook notifications, expected 1"
    assert fake_openai.hooks[0]["Authorization"] == f"Bearer {webhook_secret}"

    needles = {name: value.encode() for name, value in planted.items()}
    needles["webhook header"] = webhook_secret.encode()
    prefect_home = Path(os.environ["PREFECT_HOME"])
    places = [tmp_path, prefect_home, Path(os.environ.get("OMNIEVAL_CACHE", ROOT / ".cache" / "omnieval"))]
    # The suite file is the test's own input (it holds the webhook header as the user wrote it).
    leaks = _files_holding(places, needles, since=started, skip={suite_path})
    leaks += [f"{label} in captured output" for label, n in needles.items() if n.decode() in out + err]
    leaks += [
        f"{label} in a log record" for label, n in needles.items() if any(n.decode() in r for r in logs)
    ]
    assert not leaks, leaks

    # What was checked is real: the places hold the run's files.
    assert (folder / "config.resolved.yaml").is_file() and (folder / "lineage.json").is_file()
    assert list((tmp_path / "artifacts").rglob("*.html")), "no MLflow artifacts were written"
    assert list(folder.rglob("*.wandb")), "no W&B offline run was written"
    assert "OMNIEVAL_TEST_KEY" in (folder / "config.resolved.yaml").read_text()  # the name, not the value
    assert len(logs) > 0

    # MLflow holds no environment dump: no param or tag value equals any planted value.
    import mlflow

    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["omnieval/security"], output_format="list")
    assert runs
    for run in runs:
        values = [*run.data.params.values(), *run.data.tags.values()]
        assert not any(v for v in values for s in planted.values() if s in v)

    # 2. Every socket the run left listening (Prefect's temporary server, ...) is on loopback.
    # The test's own fake server listens in this process; the run's child processes must have too.
    listening = heard | set(_listening_addresses())
    assert any(process != _THIS_PROCESS for process, _ in listening), (
        f"no server of the run was seen: {listening}"
    )
    assert all(ip in ("127.0.0.1", "::1") for _, ip in listening), listening


# ---------------------------------------------------------------------------------------------
# 2. Servers bound to 127.0.0.1
# ---------------------------------------------------------------------------------------------


def _make_target(name: str) -> str:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(rf"^{name}:.*?(?=^\S)", text, re.S | re.M)
    assert match, f"no {name} target"
    return match.group(0)


def test_make_ui_binds_loopback_by_default() -> None:
    import shlex

    target = _make_target("ui")
    mlflow_line = next(line for line in target.splitlines() if "mlflow ui" in line or "--host" in line)
    assert "--host" in target
    hosts = re.findall(r"--host\s+(\S+)", target)
    assert hosts and all(h in ("127.0.0.1", "$${MLFLOW_UI_HOST:-127.0.0.1}") for h in hosts), hosts
    assert "0.0.0.0" not in target
    assert shlex.split(mlflow_line.replace("$$", "$"))  # a well-formed command line


def test_vllm_server_defaults_to_loopback() -> None:
    from omnieval.backends.llm._config import VllmServerConfig
    from omnieval.backends.llm._vllm import free_port, vllm_command

    config = VllmServerConfig()
    assert config.host == "127.0.0.1"
    cmd = vllm_command(config, executable="vllm", model="m", revision="", port=free_port())
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"


def test_prefect_servers_default_to_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.settings import Settings

    from omnieval.flows import prepare_prefect_env

    for name in ("PREFECT_SERVER_API_HOST", "PREFECT_RUNNER_SERVER_HOST"):
        monkeypatch.delenv(name, raising=False)
    prepare_prefect_env()
    settings = Settings()
    assert settings.server.api.host == "127.0.0.1"  # `prefect server start`
    assert settings.runner.server.host == "127.0.0.1"  # a served flow's webserver, when enabled
    # Told otherwise, it listens elsewhere.
    monkeypatch.setenv("PREFECT_SERVER_API_HOST", "10.1.2.3")
    prepare_prefect_env()
    assert Settings().server.api.host == "10.1.2.3"


def test_prefect_temporary_server_binds_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary server `omnieval run` relies on is started with --host 127.0.0.1 (no server started here)."""
    import prefect.server.api.server as server_module

    seen: list[list[str]] = []

    class NoProcess:
        def __init__(self, args: list[str], **_: Any) -> None:
            seen.append(args)

    monkeypatch.setattr("prefect.server.api.server.subprocess.Popen", NoProcess)
    # Not SubprocessASGIServer.__new__: that hands out Prefect's per-port singleton, and changing its
    # port would break every later flow run in this process.
    server = object.__new__(server_module.SubprocessASGIServer)
    server.port = 4321
    server._run_uvicorn_command()
    args = seen[0]
    assert args[args.index("--host") + 1] == "127.0.0.1"


def test_dask_local_cluster_binds_loopback_without_a_dashboard() -> None:
    from omnieval.config import ExecutionConfig
    from omnieval.flows import _dask as dask

    runner = dask.dask_task_runner(ExecutionConfig(runner="dask"))
    kwargs = runner.cluster_kwargs
    assert kwargs["host"] == "127.0.0.1"
    # Dask's default dashboard address ":8787" listens on every interface.
    assert kwargs.get("dashboard_address", ":8787") is None or str(kwargs["dashboard_address"]).startswith(
        "127.0.0.1:"
    )


# ---------------------------------------------------------------------------------------------
# 3. Paths cannot leave their folder
# ---------------------------------------------------------------------------------------------


def test_inside_follows_dots_and_links(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside.txt"
    (root / "sub").mkdir(parents=True)
    outside.write_text("x")
    (root / "sub" / "ok.txt").write_text("y")
    (root / "link_out").symlink_to(outside)
    (root / "link_in").symlink_to(root / "sub" / "ok.txt")
    assert inside(root, root / "sub" / ".." / "sub" / "ok.txt")
    assert inside(root, root / "link_in")
    assert not inside(root, root / "link_out")
    assert not inside(root, root / ".." / "outside.txt")


def _candidates(tmp_path: Path) -> tuple[Path, Path]:
    """A candidate folder with one good text output, and a secret file beside it."""
    root = tmp_path / "cands"
    (root / "text" / "0").mkdir(parents=True)
    (root / "text" / "0" / "generated.txt").write_text("A fine narration.", encoding="utf-8")
    secret = tmp_path / "secret.txt"
    secret.write_text("id_rsa contents", encoding="utf-8")
    return root, secret


@pytest.mark.parametrize(
    "how", ["file link", "index folder link", "missing.txt link", "modality folder link"]
)
def test_candidate_links_out_of_the_folder_are_refused(tmp_path: Path, how: str) -> None:
    from omnieval.candidates import Modality, read_candidate
    from omnieval.errors import DataError

    root, secret = _candidates(tmp_path)
    if how == "file link":
        (root / "text" / "1").mkdir()
        (root / "text" / "1" / "generated.txt").symlink_to(secret)
    elif how == "index folder link":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "generated.txt").symlink_to(secret)
        (root / "text" / "1").symlink_to(elsewhere, target_is_directory=True)
    elif how == "missing.txt link":
        (root / "text" / "1").mkdir()
        (root / "text" / "1" / "missing.txt").symlink_to(secret)
    else:
        elsewhere = tmp_path / "other-text"
        (elsewhere / "1").mkdir(parents=True)
        (elsewhere / "1" / "generated.txt").write_text("Smuggled.", encoding="utf-8")
        os.rename(root / "text", tmp_path / "text-moved")
        (root / "text").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(
        DataError, match=r"text/1/(generated|missing)\.txt is a link that leaves the candidate folder"
    ):
        read_candidate(root, Modality.TEXT, 1)


def test_candidate_links_inside_the_folder_are_fine(tmp_path: Path) -> None:
    from omnieval.candidates import Modality, read_candidate

    root, _ = _candidates(tmp_path)
    (root / "text" / "1").mkdir()
    (root / "text" / "1" / "generated.txt").symlink_to(root / "text" / "0" / "generated.txt")
    found = read_candidate(root, Modality.TEXT, 1)
    assert found.present and found.path is not None


def test_import_system_with_an_escaping_link_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole path a user takes: `omnieval validate` is not enough, so run the candidates gate."""
    from omnieval.errors import DataError
    from omnieval.gates import gate_candidates

    root, secret = _candidates(tmp_path)
    (root / "text" / "1").mkdir()
    (root / "text" / "1" / "generated.txt").symlink_to(secret)
    with pytest.raises(DataError) as info:
        gate_candidates(root, 2, None, modalities=("text",))
    assert info.value.exit_code == 2
    assert "text/1/generated.txt" in str(info.value) and "leaves the candidate folder" in str(info.value)


def test_run_folder_copy_never_follows_a_link_out(tmp_path: Path) -> None:
    from omnieval.stages.track import _copy_tree

    root, secret = _candidates(tmp_path)
    (root / "notes.txt").symlink_to(secret)
    (root / "raw" / "0").mkdir(parents=True)
    (root / "raw" / "0" / "generated_raw.json").write_text("{}", encoding="utf-8")
    target = tmp_path / "run" / "candidates"
    _copy_tree(root, target)
    assert (target / "text" / "0" / "generated.txt").read_text() == "A fine narration."
    assert (target / "raw" / "0" / "generated_raw.json").is_file()
    assert not (target / "notes.txt").exists()
    assert not any(b"id_rsa" in p.read_bytes() for p in target.rglob("*") if p.is_file())


def _storybench_escape(root: Path, how: str, outside: Path) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(root / "data" / "omni_storybench.parquet")
    rows = table.to_pylist()
    if how == "dots":
        rows[1]["metadata_path"] = "../" + outside.name
        expect = "row 1 .*metadata_path.*leaves the dataset folder"
    elif how == "absolute":
        rows[1]["sample_path"] = str(outside)
        expect = "row 1 .*sample_path.*is absolute"
    else:  # a folder link: every image of the first book now lives outside
        book = Path(rows[0]["current_image"]).parent
        real = root / book
        moved = outside.parent / "moved-book"
        os.rename(real, moved)
        real.symlink_to(moved, target_is_directory=True)
        expect = "row 0 .*current_image.*leaves the dataset folder"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), root / "data" / "omni_storybench.parquet")
    return expect


def _jsonl_escape(root: Path, field_name: str, how: str, outside: Path) -> str:
    manifest = root / "manifest.jsonl"
    lines = [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines() if line.strip()]
    if how == "dots":
        lines[0][field_name] = "../" + outside.name
        expect = f"line 1 .*{field_name}: path '\\.\\./{outside.name}' leaves the dataset folder"
    elif how == "absolute":
        lines[0][field_name] = str(outside)
        expect = f"line 1 .*{field_name}: path '{re.escape(str(outside))}' is absolute"
    else:
        rel = lines[0][field_name]
        (root / rel).unlink()
        (root / rel).symlink_to(outside)
        expect = f"line 1 .*{field_name}: path '{re.escape(rel)}' leaves the dataset folder"
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return expect


@pytest.mark.parametrize("how", ["dots", "absolute", "folder link"])
@pytest.mark.parametrize(
    ("benchmark", "sample", "field_name"),
    [
        ("storybench", "storybench-sample", ""),
        ("acbench", "acbench-sample", "instruction_audio"),
        ("acbench", "acbench-sample", "image"),
        ("prism", "prism-sample", "reference_video"),
    ],
)
def test_dataset_paths_cannot_leave_the_folder(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    benchmark: str,
    sample: str,
    field_name: str,
    how: str,
) -> None:
    import shutil

    source = ROOT / "data" / sample
    assert source.is_dir(), f"{source} missing: run `make setup` (it pulls data/ from the DVC remote)"
    root = tmp_path / sample
    shutil.copytree(source, root)
    # A real, decodable file of the right kind outside the folder: only its location is wrong.
    suffix = {"instruction_audio": ".wav", "reference_video": ".mp4"}.get(field_name, ".png")
    outside = tmp_path / f"outside{suffix}"
    shutil.copyfile(next(p for p in sorted(root.rglob("*" + suffix)) if p.is_file()), outside)
    if benchmark == "storybench":
        expect = _storybench_escape(root, how, outside)
    elif how == "folder link":
        # Link the folder holding the first line's file out of the dataset.
        manifest = root / "manifest.jsonl"
        first = json.loads(manifest.read_text(encoding="utf-8").splitlines()[0])
        folder = (root / first[field_name]).parent
        moved = tmp_path / "moved"
        os.rename(folder, moved)
        folder.symlink_to(moved, target_is_directory=True)
        expect = f"line 1 .*{field_name}: path '{re.escape(first[field_name])}' leaves the dataset folder"
    else:
        expect = _jsonl_escape(root, field_name, how, outside)
    code = main(["validate", str(root), "--benchmark", benchmark])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert re.search(expect, err), err


# ---------------------------------------------------------------------------------------------
# 4. YAML loaded safely; nothing unpickled; torch checkpoints with weights_only=True
# ---------------------------------------------------------------------------------------------

_PAYLOAD = "!!python/object/apply:os.system ['touch {marker}']"


@pytest.mark.parametrize("where", ["suite", "panel", "prism panel", "training", "analysis", "registry"])
def test_python_tags_in_yaml_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    from omnieval.errors import ConfigError

    marker = tmp_path / "pwned"
    payload = _PAYLOAD.format(marker=marker)
    path = tmp_path / f"{where.replace(' ', '-')}.yaml"
    if where == "suite":
        path.write_text(f"suite: s\nsystems: {{oracle: {{kind: oracle}}}}\nnote: {payload}\n")
        code = main(["run", str(path)])
        assert code == 2
        err = capsys.readouterr().err
        assert str(path) in err and "python/object" in err
    elif where == "panel":
        from omnieval.judges import load_panel

        path.write_text(f"name: p\ndescription: {payload}\n")
        with pytest.raises(ConfigError, match=rf"{re.escape(str(path))}: not valid YAML.*python/object"):
            load_panel(str(path))
    elif where == "prism panel":
        from omnieval.benchmarks.prism._judge import load_prism_panel

        path.write_text(f"name: p\ndescription: {payload}\n")
        with pytest.raises(ConfigError, match=r"not valid YAML.*python/object"):
            load_prism_panel(str(path))
    elif where == "training":
        from omnieval.training._config import load_training_config

        path.write_text(f"name: {payload}\n")
        with pytest.raises(ConfigError, match=r"not valid YAML.*python/object"):
            load_training_config(path)
    elif where == "analysis":
        scores = tmp_path / "scores.parquet"
        scores.write_bytes(b"")
        path.write_text(f"seed: {payload}\n")
        code = main(["analyze", str(scores), "--config", str(path), "--out", str(tmp_path / "out")])
        assert code == 2
        assert "python/object" in capsys.readouterr().err
    else:
        from omnieval.judges import _registry

        path.write_text(f"judges:\n  j: {payload}\n")
        monkeypatch.setenv("OMNIEVAL_JUDGE_REGISTRY", str(path))
        with pytest.raises(ConfigError, match=r"invalid judge registry.*python/object"):
            _registry._load(path, path.stat().st_mtime_ns)
    assert not marker.exists(), "a YAML tag ran code"


@dataclass(frozen=True)
class UnsafeCall:
    file: str
    line: int
    what: str


_FORBIDDEN_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "joblib", "shelve", "marshal"}
_SAFE_YAML_LOADERS = {"SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_const(node: ast.expr | None, value: object) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def unsafe_calls(source: str, filename: str) -> list[UnsafeCall]:
    """Deserialisation that can run code: pickle-family imports, ``torch.load`` without
    ``weights_only=True``, ``yaml.load``/``unsafe_load``/``full_load`` without a safe loader,
    ``read_pickle``, ``np.load(allow_pickle=...)`` other than False, ``eval``/``exec``."""
    found: list[UnsafeCall] = []
    tree = ast.parse(source, filename)
    aliases: dict[str, str] = {}  # local name -> dotted origin (from-imports)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in _FORBIDDEN_MODULES:
                    found.append(UnsafeCall(filename, node.lineno, f"import {a.name}"))
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in _FORBIDDEN_MODULES:
                found.append(UnsafeCall(filename, node.lineno, f"from {node.module} import ..."))
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        head, _, rest = name.partition(".")
        name = f"{aliases[head]}.{rest}".rstrip(".") if head in aliases else name
        last = name.rsplit(".", 1)[-1]
        what = ""
        if name in ("eval", "exec"):
            what = name
        elif name.endswith("torch.load") or name == "torch.load":
            if not _is_const(_keyword(node, "weights_only"), True):
                what = "torch.load without weights_only=True"
        elif name.startswith("yaml.") and last in (
            "unsafe_load",
            "full_load",
            "unsafe_load_all",
            "full_load_all",
        ):
            what = name
        elif name.startswith("yaml.") and last in ("load", "load_all"):
            loader = _keyword(node, "Loader") or (node.args[1] if len(node.args) > 1 else None)
            if loader is None or _dotted(loader).rsplit(".", 1)[-1] not in _SAFE_YAML_LOADERS:
                what = f"{name} without a safe Loader"
        elif last == "read_pickle":
            what = name
        elif name in ("np.load", "numpy.load"):
            allow = _keyword(node, "allow_pickle")
            if allow is not None and not _is_const(allow, False):
                what = "np.load with allow_pickle"
        if what:
            found.append(UnsafeCall(filename, node.lineno, what))
    return found


def test_the_scanner_catches_each_unsafe_form() -> None:
    bad = textwrap.dedent(
        """
        import pickle
        import joblib as jl
        from dill import loads
        import torch, yaml, numpy as np, pandas as pd
        from torch import load as tload
        torch.load("x.pt")
        torch.load("x.pt", weights_only=False)
        tload("x.pt")
        yaml.load(text)
        yaml.load(text, Loader=yaml.FullLoader)
        yaml.unsafe_load(text)
        yaml.full_load(text)
        pd.read_pickle("x.pkl")
        np.load("x.npy", allow_pickle=True)
        eval("1")
        """
    )
    found = unsafe_calls(bad, "bad.py")
    assert len(found) == 13, found
    good = textwrap.dedent(
        """
        import torch, yaml, numpy as np
        torch.load("x.pt", map_location="cpu", weights_only=True)
        yaml.safe_load(text)
        yaml.load(text, Loader=yaml.SafeLoader)
        np.load("x.npz", allow_pickle=False)
        np.load("x.npy")
        model.eval()
        """
    )
    assert unsafe_calls(good, "good.py") == []


def test_no_unsafe_deserialisation_in_the_code() -> None:
    files = [p for top in ("src", "flows", "bench", "scripts") for p in (ROOT / top).rglob("*.py")]
    assert len(files) > 100
    found = [c for p in files for c in unsafe_calls(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert not found, "\n".join(f"{c.file}:{c.line}: {c.what}" for c in found)
    # The one torch checkpoint load in the library is there, and safe (not vacuous).
    loads = [p for p in files if "torch.load(" in p.read_text(encoding="utf-8")]
    assert loads, "expected at least one torch.load call to check"
