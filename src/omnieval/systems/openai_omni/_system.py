"""The ``openai-omni`` kind: an omni model behind an OpenAI-compatible API that speaks its answers."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from omnieval.backends.llm import Message, Usage, redact_url
from omnieval.candidates import Modality
from omnieval.errors import ConfigError
from omnieval.security import redact, register_secret_env
from omnieval.systems._base import SYSTEMS
from omnieval.systems._generating import EXAMPLE_FILES, ExampleResult, GeneratingSystem, Task, timed
from omnieval.systems._spec import SystemSpec
from omnieval.systems.openai_omni._config import OpenAIOmniConfig
from omnieval.systems.openai_omni._requests import (
    OmniAnswer,
    delivery_messages,
    narration_messages,
    parse_answer,
    request_body,
    speech_messages,
)

#: Why storybench's image is missing: the model writes text and speech only.
IMAGE_UNAVAILABLE = "unavailable: openai-omni returns no image"

TEXT_FILE = EXAMPLE_FILES[Modality.TEXT]
SPEECH_FILE = EXAMPLE_FILES[Modality.SPEECH]

#: HTTP statuses worth another try (the server is busy or restarting).
TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class CallOutcome:
    """One request: the answer, or why there is none (``transient``: worth retrying on a rerun)."""

    answer: OmniAnswer | None
    error: str = ""
    transient: bool = False
    seconds: float = 0.0


@SYSTEMS.register("openai-omni")
class OpenAIOmniSystem(GeneratingSystem):
    """Generates through chat completions with audio output (e.g. Qwen2.5-Omni on vLLM-Omni).

    What it writes follows from the modalities the task asks for (benchmarks list ``openai-omni``
    in their ``system_kinds``):

    - text asked (storybench's page turn): one text-only call writes the next page's narration
      (``text``); a second call, given that narration, speaks the line a character says on the page
      (``speech``, the answer's audio). An image is missing with :data:`IMAGE_UNAVAILABLE`.
    - speech only (acbench's delivery): the script with the condition's context (spoken instruction
      as ``input_audio``, picture as ``image_url``, or their text stand-ins) in one call; the
      answer's audio is ``speech``.

    A failed request makes its modality missing with ``request failed: ...``. Failures that may pass
    (timeouts, connection errors, HTTP 429/5xx) are retried ``retries`` times at once and, when they
    persist, the example is stored as missing but generated again on the next run; every other
    outcome is reused like any generated example.
    """

    kind: ClassVar[str] = "openai-omni"
    config_model: ClassVar[type[OpenAIOmniConfig]] = OpenAIOmniConfig
    depends_on: ClassVar[tuple[str, ...]] = ("backends/llm",)
    retries: ClassVar[int] = 2
    retry_wait_s: ClassVar[float] = 2.0

    def __init__(self, config: SystemSpec, *, system_id: str = "", cache_dir: Path | None = None) -> None:
        if not isinstance(config, OpenAIOmniConfig):
            raise TypeError(
                f"openai-omni system {system_id!r} needs an OpenAIOmniConfig, got {type(config).__name__}"
            )
        super().__init__(config, system_id=system_id, cache_dir=cache_dir)
        self.spec: OpenAIOmniConfig = config
        self._client: Any = None
        self._base_url = ""
        self.usage = Usage()
        """Requests, tokens (the server's ``usage``) and seconds of this process's calls."""
        # The key's variable may have any name: log redaction must know it.
        register_secret_env(config.api_key_env)

    # -- facts --------------------------------------------------------------------------------------
    def lineage(self) -> dict[str, Any]:
        server = redact_url(self.spec.base_url) if self.spec.base_url else f"${self.spec.base_url_env}"
        return {
            "model": self.spec.model,
            "revision": self.spec.revision,
            "voice": self.spec.voice,
            "server": server,
            "image": IMAGE_UNAVAILABLE,
            "usage": {**self.usage.to_json(), "model": self.spec.model},
        }

    # -- connection ---------------------------------------------------------------------------------
    def open(self) -> None:
        import httpx

        base_url = self.spec.base_url or os.environ.get(self.spec.base_url_env or "", "")
        if not base_url:
            raise ConfigError(f"system {self.system_id!r}: no server address: set ${self.spec.base_url_env}")
        if self.spec.api_key_env and not os.environ.get(self.spec.api_key_env):
            raise ConfigError(
                f"system {self.system_id!r}: the API key variable ${self.spec.api_key_env} is not set"
            )
        self._base_url = base_url.rstrip("/")
        self._client = httpx.Client(
            timeout=httpx.Timeout(self.spec.timeout_s, connect=min(30.0, self.spec.timeout_s))
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.spec.api_key_env:
            headers["Authorization"] = f"Bearer {os.environ.get(self.spec.api_key_env, '')}"
        return headers

    def call(self, messages: Sequence[Message], *, audio: bool) -> CallOutcome:
        """One chat completion, retried on transient failures; never raises for the server's faults."""
        if self._client is None:
            self.open()
        started = time.perf_counter()
        body = request_body(messages, self.spec, audio=audio)
        outcome = CallOutcome(None, "request failed: not sent")
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.retry_wait_s * attempt)
            outcome = self._post(body)
            if not outcome.transient:
                break
        return CallOutcome(outcome.answer, outcome.error, outcome.transient, time.perf_counter() - started)

    def _post(self, body: dict[str, Any]) -> CallOutcome:
        """One request; its time and the server's reported tokens go to :attr:`usage`."""
        started = time.perf_counter()
        outcome, tokens = self._post_once(body)
        self.usage.add_counts(*tokens, time.perf_counter() - started)
        return outcome

    def _post_once(self, body: dict[str, Any]) -> tuple[CallOutcome, tuple[int | None, int | None]]:
        import httpx

        unknown: tuple[int | None, int | None] = (None, None)
        where = redact_url(self._base_url)
        try:
            response = self._client.post(
                f"{self._base_url}/chat/completions", json=body, headers=self._headers()
            )
        except httpx.TimeoutException:
            return CallOutcome(
                None, f"request failed: timeout after {self.spec.timeout_s:g}s", transient=True
            ), unknown
        except httpx.TransportError as exc:
            return CallOutcome(
                None, f"request failed: {type(exc).__name__} talking to {where}", transient=True
            ), unknown
        if response.status_code != 200:
            # A proxy may echo request headers back: the body is masked before it is kept anywhere.
            detail = redact(response.text[:300].replace("\n", " "))
            return CallOutcome(
                None,
                f"request failed: HTTP {response.status_code}: {detail}",
                transient=response.status_code in TRANSIENT_STATUS,
            ), unknown
        try:
            data = response.json()
            answer = parse_answer(data)
        except ValueError as exc:
            return CallOutcome(None, f"request failed: malformed answer: {exc}"), unknown
        return CallOutcome(answer), _reported_tokens(data)

    # -- generation ---------------------------------------------------------------------------------
    def run_example(self, task: Task, workdir: Path) -> ExampleResult:
        # What to write follows from what the benchmark asks for: a narration (with its page's
        # spoken line) when it wants text, else the given script spoken when it wants speech only.
        if Modality.TEXT.value in task.modalities:
            return self._story_page(task, workdir)
        if Modality.SPEECH.value in task.modalities:
            return self._delivery(task, workdir)
        return ExampleResult(
            missing=dict.fromkeys(
                task.modalities, f"unavailable: openai-omni does not serve {task.benchmark}"
            )
        )

    def _story_page(self, task: Task, workdir: Path) -> ExampleResult:
        result = ExampleResult(missing={"image": IMAGE_UNAVAILABLE})
        with timed(result.seconds, "text"):
            told = self.call(narration_messages(task.inputs, self.spec), audio=False)
        narration = told.answer.text if told.answer else ""
        if told.answer is None:
            result.missing["text"] = told.error
        elif not narration:
            result.missing["text"] = "not written: the answer has no text"
        else:
            (workdir / TEXT_FILE).write_text(narration + "\n", encoding="utf-8")
            result.written["text"] = TEXT_FILE
        with timed(result.seconds, "speech"):
            spoken = self.call(speech_messages(task.inputs, narration, self.spec), audio=True)
        self._take_audio(spoken, workdir, result)
        result.raw = {
            "openai_omni": {
                "narration": _record(told),
                "speech": _record(spoken),
                "transient": told.transient or spoken.transient,
            }
        }
        return result

    def _delivery(self, task: Task, workdir: Path) -> ExampleResult:
        result = ExampleResult()
        with timed(result.seconds, "speech"):
            spoken = self.call(delivery_messages(task.inputs, self.spec), audio=True)
        self._take_audio(spoken, workdir, result)
        result.raw = {"openai_omni": {"speech": _record(spoken), "transient": spoken.transient}}
        return result

    def _take_audio(self, outcome: CallOutcome, workdir: Path, result: ExampleResult) -> None:
        if outcome.answer is None:
            result.missing["speech"] = outcome.error
        elif outcome.answer.audio is None:
            result.missing["speech"] = "not written: the answer has no audio"
        else:
            (workdir / SPEECH_FILE).write_bytes(outcome.answer.audio)
            result.written["speech"] = SPEECH_FILE

    # -- storage ------------------------------------------------------------------------------------
    def _load(self, key: str) -> tuple[ExampleResult, Path] | None:
        stored = super()._load(key)
        # A server that was down or busy says nothing about the model: try such examples again.
        if stored is not None and stored[0].raw.get("openai_omni", {}).get("transient"):
            return None
        return stored


def _reported_tokens(data: Any) -> tuple[int | None, int | None]:
    """Prompt and completion tokens from a response's ``usage`` (None where it has none)."""
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return None, None

    def count(key: str) -> int | None:
        value = usage.get(key)
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

    return count("prompt_tokens"), count("completion_tokens")


def _record(outcome: CallOutcome) -> dict[str, Any]:
    answer = outcome.answer
    return {
        "text": answer.text if answer else None,
        "finish_reason": answer.finish_reason if answer else None,
        "audio_bytes": len(answer.audio) if answer and answer.audio is not None else 0,
        "error": outcome.error or None,
        "seconds": round(outcome.seconds, 3),
    }


__all__ = ["IMAGE_UNAVAILABLE", "CallOutcome", "OpenAIOmniSystem"]
