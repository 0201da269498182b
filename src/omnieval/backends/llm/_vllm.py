"""Start, health-check and stop ``vllm serve`` from its own environment, with the paper's settings.

vLLM never lives in the main environment (STACK.md): it is a separate install whose launcher is
given by ``executable``, ``$OMNIEVAL_VLLM_BIN`` or ``vllm`` on PATH. omnieval builds the command
line from the panel config (model, revision, dtype, tensor parallel, swap, context, GPU memory,
concurrency, seed, multimodal limits), starts it in its own process group with its output in a log
file, waits for ``GET /health``, talks to it over the OpenAI-compatible API and stops it (SIGTERM,
then SIGKILL) when the judge is done or the run is interrupted; a watchdog stops it when the run is
killed outright (:mod:`._process`).

An API key for the server is handed over through the environment (``VLLM_API_KEY``), never on the
command line, so it appears in no log, process list or lineage.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from omnieval.backends.llm._config import HttpClientSettings, VllmServerConfig
from omnieval.backends.llm._identity import hf_identity
from omnieval.backends.llm._openai import OpenAIChatBackend
from omnieval.backends.llm._process import ServerProcess, free_port
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


class VllmServer(ServerProcess):
    """One ``vllm serve`` process: ``start()``, ``wait_healthy()``, ``stop()`` (or use as a context manager)."""

    not_started = "the vLLM server was not started"

    def __init__(
        self, config: VllmServerConfig, *, model: str, revision: str = "", log_dir: Path | None = None
    ) -> None:
        self.config = config
        self.model = model
        self.revision = revision
        self.port = config.port or free_port(config.host)
        self.executable = find_executable(config)
        folder = log_dir or Path(
            os.environ.get("OMNIEVAL_VLLM_LOG_DIR")
            or os.environ.get("OMNIEVAL_SERVER_LOG_DIR")
            or tempfile.gettempdir()
        )
        folder.mkdir(parents=True, exist_ok=True)
        super().__init__(
            vllm_command(config, executable=self.executable, model=model, revision=revision, port=self.port),
            label=f"vllm serve {model}",
            base_url=f"http://{config.host}:{self.port}",
            health_path="/health",
            log_path=folder / f"vllm-{model.replace('/', '--')}-{self.port}.log",
            startup_timeout_s=config.startup_timeout_s,
        )

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.config.api_key_env:
            key = os.environ.get(self.config.api_key_env)
            if not key:
                raise BackendUnavailable(f"the API key variable ${self.config.api_key_env} is not set")
            env["VLLM_API_KEY"] = key
        return env

    def __enter__(self) -> VllmServer:
        super().__enter__()
        return self


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
