"""Start, health-check and stop ``vllm serve`` from its own environment, with the paper's settings.

vLLM never lives in the main environment (STACK.md): it is a separate install whose launcher is
given by ``executable``, ``$OMNIEVAL_VLLM_BIN`` or ``vllm`` on PATH. omnieval builds the command
line from the panel config (model, revision, dtype, tensor parallel, swap, context, GPU memory,
concurrency, seed, multimodal limits), starts it in its own process group with its output in a log
file, waits for ``GET /health``, talks to it over the OpenAI-compatible API and stops it (SIGTERM,
then SIGKILL) when the judge is done or the run is interrupted.

An API key for the server is handed over through the environment (``VLLM_API_KEY``), never on the
command line, so it appears in no log, process list or lineage.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from omnieval.backends.llm._config import HttpClientSettings, VllmServerConfig
from omnieval.backends.llm._identity import hf_identity
from omnieval.backends.llm._openai import OpenAIChatBackend
from omnieval.backends.llm._types import (
    BackendError,
    BackendUnavailable,
    ChatRequest,
    Completion,
    ModelIdentity,
)

log = logging.getLogger(__name__)

VLLM_BIN_ENV = "OMNIEVAL_VLLM_BIN"


def find_executable(config: VllmServerConfig) -> str:
    """The vLLM launcher to run; BackendUnavailable when there is none."""
    candidate = config.executable or os.environ.get(VLLM_BIN_ENV) or "vllm"
    found = shutil.which(candidate)
    if found is None:
        raise BackendUnavailable(
            f"vLLM launcher {candidate!r} not found: install vLLM in its own environment and set "
            f"${VLLM_BIN_ENV} to its `vllm` executable (GPU machines only)"
        )
    return found


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def vllm_command(
    config: VllmServerConfig, *, executable: str, model: str, revision: str, port: int
) -> list[str]:
    """The ``vllm serve`` argument list for one judge model.

    Example:
        >>> cfg = VllmServerConfig(max_model_len=8192, max_num_seqs=16, seed=0)
        >>> " ".join(vllm_command(cfg, executable="vllm", model="Qwen/Qwen3-30B-A3B-Instruct-2507", revision="",
        ...                       port=8000))  # doctest: +NORMALIZE_WHITESPACE
        'vllm serve Qwen/Qwen3-30B-A3B-Instruct-2507 --host 127.0.0.1 --port 8000
         --served-model-name Qwen/Qwen3-30B-A3B-Instruct-2507 --dtype bfloat16 --tensor-parallel-size 1
         --swap-space 8 --gpu-memory-utilization 0.9 --max-model-len 8192 --max-num-seqs 16 --seed 0'
    """
    cmd = [
        executable,
        "serve",
        model,
        "--host",
        config.host,
        "--port",
        str(port),
        "--served-model-name",
        model,
        "--dtype",
        config.dtype,
        "--tensor-parallel-size",
        str(config.tensor_parallel_size),
        "--swap-space",
        f"{config.swap_space_gib:g}",
        "--gpu-memory-utilization",
        f"{config.gpu_memory_utilization:g}",
    ]
    if revision:
        cmd += ["--revision", revision]
    if config.max_model_len is not None:
        cmd += ["--max-model-len", str(config.max_model_len)]
    if config.max_num_seqs is not None:
        cmd += ["--max-num-seqs", str(config.max_num_seqs)]
    if config.seed is not None:
        cmd += ["--seed", str(config.seed)]
    if config.trust_remote_code:
        cmd.append("--trust-remote-code")
    if config.limit_mm_per_prompt:
        cmd += ["--limit-mm-per-prompt", json.dumps(config.limit_mm_per_prompt, sort_keys=True)]
    cmd += list(config.extra_args)
    return cmd


class VllmServer:
    """One ``vllm serve`` process: ``start()``, ``wait_healthy()``, ``stop()`` (or use as a context manager)."""

    def __init__(
        self, config: VllmServerConfig, *, model: str, revision: str = "", log_dir: Path | None = None
    ) -> None:
        self.config = config
        self.model = model
        self.revision = revision
        self.port = config.port or free_port(config.host)
        self.executable = find_executable(config)
        self.command = vllm_command(
            config, executable=self.executable, model=model, revision=revision, port=self.port
        )
        folder = log_dir or Path(os.environ.get("OMNIEVAL_VLLM_LOG_DIR") or tempfile.gettempdir())
        folder.mkdir(parents=True, exist_ok=True)
        self.log_path = folder / f"vllm-{model.replace('/', '--')}-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.config.api_key_env:
            key = os.environ.get(self.config.api_key_env)
            if not key:
                raise BackendUnavailable(f"the API key variable ${self.config.api_key_env} is not set")
            env["VLLM_API_KEY"] = key
        return env

    def start(self) -> None:
        log.info("starting %s (log: %s)", " ".join(self.command), self.log_path)
        with self.log_path.open("ab") as out:
            self.process = subprocess.Popen(
                self.command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._env(),
                start_new_session=True,
            )

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(
                self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            )
        except OSError:
            return ""

    def wait_healthy(self, timeout_s: float | None = None, poll_s: float = 1.0) -> float:
        """Block until ``/health`` answers 200; return the seconds waited. Raise if the server dies or times out."""
        import httpx

        if self.process is None:
            raise BackendError("the vLLM server was not started")
        limit = self.config.startup_timeout_s if timeout_s is None else timeout_s
        started = time.monotonic()
        while True:
            code = self.process.poll()
            if code is not None:
                raise BackendUnavailable(
                    f"vllm serve {self.model} exited with code {code} before becoming healthy; log tail:\n"
                    + self.log_tail()
                )
            try:
                if httpx.get(f"{self.base_url}/health", timeout=5.0).status_code == 200:
                    waited = time.monotonic() - started
                    log.info("vLLM server for %s healthy after %.1f s", self.model, waited)
                    return waited
            except httpx.HTTPError:
                pass
            if time.monotonic() - started > limit:
                self.stop()
                raise BackendUnavailable(
                    f"vllm serve {self.model} not healthy after {limit:.0f} s; log tail:\n" + self.log_tail()
                )
            time.sleep(poll_s)

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM the server's process group, then SIGKILL it after ``grace_s``."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            log.warning("vLLM server for %s ignored SIGTERM; killing it", self.model)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def __enter__(self) -> VllmServer:
        self.start()
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ManagedVllmBackend:
    """A judge backend that owns its vLLM server: started when opened, stopped on ``close``."""

    def __init__(self, config: VllmServerConfig, *, model: str, revision: str = "") -> None:
        self.config = config
        self.server = VllmServer(config, model=model, revision=revision)
        self.server.__enter__()
        settings = HttpClientSettings(**{k: getattr(config, k) for k in HttpClientSettings.model_fields})
        self.client = OpenAIChatBackend(
            f"{self.server.base_url}/v1",
            model=model,
            revision=revision,
            api_key_env=config.api_key_env,
            settings=settings,
        )

    def identity(self) -> ModelIdentity:
        return hf_identity(self.client.model, self.client.revision)

    def chat(self, request: ChatRequest) -> Completion:
        return self.client.chat(request)

    def chat_many(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        return self.client.chat_many(requests)

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            self.server.stop()
