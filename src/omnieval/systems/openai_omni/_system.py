"""The ``openai-omni`` kind: an omni model behind an OpenAI-compatible API that speaks its answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from omnieval.candidates import Modality
from omnieval.systems._base import SYSTEMS
from omnieval.systems._generating import (
    EXAMPLE_FILES,
    OMNI_CODE,
    ExampleResult,
    GeneratingSystem,
    Task,
    timed,
)
from omnieval.systems._omni_client import (
    CallOutcome,
    OmniClient,
    OpenAIOmniConfig,
    ask_messages,
    check_prompt_names,
    outcome_record,
)
from omnieval.systems._spec import SystemSpec
from omnieval.systems._task import Ask

#: The file each answer modality is written to in the example's folder.
ANSWER_FILES: dict[str, str] = {
    "text": EXAMPLE_FILES[Modality.TEXT],
    "speech": EXAMPLE_FILES[Modality.SPEECH],
}


def unavailable(modality: str) -> str:
    """Why a modality the benchmark asks for is missing: no request of its brief answers it.

    >>> unavailable("image")
    'unavailable: openai-omni returns no image'
    """
    return f"unavailable: openai-omni returns no {modality}"


@SYSTEMS.register("openai-omni")
class OpenAIOmniSystem(GeneratingSystem):
    """Generates through chat completions with audio output (e.g. Qwen2.5-Omni on vLLM-Omni).

    What it asks is the benchmark's: the requests of the task's brief
    (:attr:`~omnieval.systems.Brief.asks`), sent in order, each with the system message, the input
    media it shows (pictures only with ``sends_images``) and its prompt (the suite's
    ``prompts.<name>`` where given). A request answered as ``text`` writes the text output (and
    its text fills later requests that quote it); one answered as ``speech`` writes the answer's
    audio. A modality the benchmark asks for that no request answers is missing
    (``unavailable: openai-omni returns no <modality>``); a benchmark that words no request for
    it gets no request at all.

    A failed request makes its modality missing with ``request failed: ...``. Failures that may pass
    (timeouts, connection errors, HTTP 429/5xx) are retried ``retries`` times at once and, when they
    persist, the example is stored as missing but generated again on the next run; every other
    outcome is reused like any generated example.
    """

    kind: ClassVar[str] = "openai-omni"
    config_model: ClassVar[type[OpenAIOmniConfig]] = OpenAIOmniConfig
    depends_on: ClassVar[tuple[str, ...]] = ("backends/llm", *OMNI_CODE)

    def __init__(self, config: SystemSpec, *, system_id: str = "", cache_dir: Path | None = None) -> None:
        if not isinstance(config, OpenAIOmniConfig):
            raise TypeError(
                f"openai-omni system {system_id!r} needs an OpenAIOmniConfig, got {type(config).__name__}"
            )
        super().__init__(config, system_id=system_id, cache_dir=cache_dir)
        self.spec: OpenAIOmniConfig = config
        self.client = OmniClient(config, system_id)
        """The server connection, its retries and its usage."""

    # -- facts --------------------------------------------------------------------------------------
    @property
    def usage(self) -> Any:
        """Requests, tokens (the server's ``usage``) and seconds of this process's calls."""
        return self.client.usage

    def lineage(self) -> dict[str, Any]:
        facts = self.client.lineage()
        usage = facts.pop("usage")
        return {**facts, "image": unavailable("image"), "usage": usage}

    # -- connection ---------------------------------------------------------------------------------
    def open(self) -> None:
        self.client.open()

    def close(self) -> None:
        self.client.close()

    # -- generation ---------------------------------------------------------------------------------
    def _asks(self, task: Task) -> tuple[Ask, ...]:
        if task.brief is None:
            return ()
        asks = task.brief.asks(self.spec.sends_images)
        check_prompt_names(asks, self.spec.prompts, task.benchmark)
        return asks

    def run_example(self, task: Task, workdir: Path) -> ExampleResult:
        asks = [a for a in self._asks(task) if not task.modalities or a.answer in task.modalities]
        answered = {a.answer for a in asks}
        result = ExampleResult(missing={m: unavailable(m) for m in task.modalities if m not in answered})
        if not asks:
            return result
        texts: dict[str, str] = {}
        records: dict[str, Any] = {}
        transient = False
        for ask in asks:
            messages = ask_messages(ask, task.files, texts, self.spec.prompts)
            with timed(result.seconds, ask.answer):
                outcome = self.client.call(messages, audio=ask.answer == "speech")
            texts[ask.name] = outcome.answer.text if outcome.answer else ""
            self._take(ask, outcome, workdir, result)
            records[ask.name] = outcome_record(outcome)
            transient = transient or outcome.transient
        result.raw = {"openai_omni": {**records, "transient": transient}}
        return result

    def _take(self, ask: Ask, outcome: CallOutcome, workdir: Path, result: ExampleResult) -> None:
        """Write the answer's text or audio as the request's modality, or say why it is missing."""
        answer, name = outcome.answer, ANSWER_FILES[ask.answer]
        if answer is None:
            result.missing[ask.answer] = outcome.error
        elif ask.answer == "text":
            if not answer.text:
                result.missing["text"] = "not written: the answer has no text"
            else:
                (workdir / name).write_text(answer.text + "\n", encoding="utf-8")
                result.written["text"] = name
        elif answer.audio is None:
            result.missing["speech"] = "not written: the answer has no audio"
        else:
            (workdir / name).write_bytes(answer.audio)
            result.written["speech"] = name

    # -- storage ------------------------------------------------------------------------------------
    def _load(self, key: str) -> tuple[ExampleResult, Path] | None:
        stored = super()._load(key)
        # A server that was down or busy says nothing about the model: try such examples again.
        if stored is not None and stored[0].raw.get("openai_omni", {}).get("transient"):
            return None
        return stored


__all__ = ["ANSWER_FILES", "OpenAIOmniSystem", "unavailable"]
