"""Two-modality backbones of ``semi-orchestration``: a model that writes two of the page's modalities
itself (text+speech: EMOVA, Qwen2.5-Omni; text+image: MMaDA, Emu3) plus the intermediate fields
(:mod:`._fields`) the expert of the third modality renders.

- ``command``: any program, run with the ``command`` protocol (FORMATS.md section 9). Its
  ``task.json`` lists in ``outputs`` only the backbone's two modalities, and in ``intermediate`` the
  file to write the fields to (``intermediate.json``), the modality they feed, their JSON schema and
  a description. Crash and timeout causes are the ``command`` kind's. What it wrote is collected even
  when it crashed or timed out: the runner keeps it for inspection, never as a candidate.
- ``openai-omni`` (text+speech): an omni model behind an OpenAI-compatible API (the client the
  ``openai-omni`` kind uses too, :mod:`omnieval.systems._omni_client`). First pass: the benchmark's
  request answered as speech (:attr:`~omnieval.systems.Brief.asks`), told none of the earlier
  answers it quotes (text and audio; its audio is the speech output). Second pass: one JSON object
  with the narration (the text output) and the intermediate fields, asked in the benchmark's words.
  A failed second pass leaves text and the third modality missing while the first pass's speech
  stays (the paper's Qwen2.5-Omni case): that speech is made apart from the fields
  (:attr:`BackboneRun.independent`).
- ``scripted``: a Python function run in-process with the ``command`` protocol's folders
  (plumbing tests), like the ``scripted`` chat backend.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from omnieval.backends.llm import BackendError, Message
from omnieval.candidates import Modality
from omnieval.errors import ConfigError
from omnieval.systems._command_config import CommandConfig
from omnieval.systems._generating import EXAMPLE_FILES, Task
from omnieval.systems._omni_client import OmniClient, OpenAIOmniConfig, ask_messages
from omnieval.systems._protocol import CommandProgram, collect_outputs, write_task
from omnieval.systems.semi_orchestration._fields import describe_fields, intermediate_schema

#: The file a files-protocol backbone writes its intermediate fields to, in ``{output_dir}``.
INTERMEDIATE_FILE = "intermediate.json"


class ScriptedBackboneConfig(BaseModel):
    """A scripted two-modality backbone for plumbing tests: ``script`` names ``module:function``,
    called as ``function(input_dir, output_dir)`` with the ``command`` protocol's folders (it reads
    ``task.json`` and writes the files it names). An exception is a crash."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["scripted"] = "scripted"
    script: str = Field(min_length=3)


@dataclass
class BackboneRun:
    """What a backbone produced for one example.

    Attributes:
        written: Modality -> file name in the example's folder (the backbone's own outputs).
        missing: Modality -> why the backbone did not produce it.
        fields: The intermediate fields as written (JSON text or a parsed object); None: not written.
        failed: Why the backbone gave nothing usable at all (crash, timeout, request failure); every
            output not in ``independent`` is then missing with this cause instead of a classification.
        independent: The modalities the backbone made apart from the intermediate fields, which a
            failed plan does not take away (``openai-omni``'s first-pass speech). A ``command`` or
            ``scripted`` backbone writes its outputs and the fields in one run: none.
        timed_out: The failure is a timeout (counted as the ``timeout`` planning failure).
        text_in_fields: The backbone's text is the fields' ``narration`` (a single JSON answer).
        transient: A failure that may pass (a busy server): the example is generated again next run.
        seconds: Step -> wall seconds.
        raw: What the backbone said (exit status, stderr tail, request records).
    """

    written: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    fields: str | Mapping[str, Any] | None = None
    failed: str = ""
    independent: tuple[str, ...] = ()
    timed_out: bool = False
    text_in_fields: bool = False
    transient: bool = False
    seconds: dict[str, float] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)


class Backbone(Protocol):
    """A two-modality backbone: writes its ``modalities`` into ``workdir`` and the fields for ``third``."""

    def run(self, task: Task, workdir: Path, modalities: tuple[str, ...], third: str) -> BackboneRun: ...

    def identity(self) -> dict[str, Any]: ...

    def lineage(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def write_backbone_task(
    task: Task, input_dir: Path, modalities: tuple[str, ...], third: str
) -> dict[str, Any]:
    """``task.json`` of the ``command`` protocol plus ``intermediate``: where to write the fields
    for the third modality's expert, their schema and the benchmark's description of them."""
    plan = task.plan_request("semi-orchestration")
    document = write_task(task, input_dir, modalities)
    document["intermediate"] = {
        "file": INTERMEDIATE_FILE,
        "for": third,
        "schema": intermediate_schema(third, plan.labels),
        "description": describe_fields(third, plan),
    }
    (input_dir / "task.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", "utf-8")
    return document


def collect(output_dir: Path, workdir: Path, modalities: tuple[str, ...], run: BackboneRun) -> None:
    """Move the backbone's files from ``output_dir`` into the example's folder; read the fields."""
    collect_outputs(output_dir, workdir, modalities, run.written, run.missing)
    fields = output_dir / INTERMEDIATE_FILE
    if fields.is_file() and not fields.is_symlink():
        run.fields = fields.read_text(encoding="utf-8", errors="replace")


class CommandBackbone:
    """Any program, with the ``command`` protocol (see the module docstring)."""

    def __init__(self, config: CommandConfig, system_id: str) -> None:
        self.config = config
        self.program = CommandProgram(config, system_id)

    def identity(self) -> dict[str, Any]:
        return self.program.identity()

    def lineage(self) -> dict[str, Any]:
        return {"kind": "command", **self.program.lineage()}

    def close(self) -> None:
        """Nothing stays open between examples."""

    def run(self, task: Task, workdir: Path, modalities: tuple[str, ...], third: str) -> BackboneRun:
        self.program.resolved_env()
        run = BackboneRun()
        with tempfile.TemporaryDirectory(prefix="omnieval-backbone-", ignore_cleanup_errors=True) as tmp:
            input_dir, output_dir = Path(tmp) / "input", Path(tmp) / "output"
            input_dir.mkdir()
            output_dir.mkdir()
            write_backbone_task(task, input_dir, modalities, third)
            name = f"omnieval-backbone-{task.index}-{os.getpid()}"
            started = time.perf_counter()
            ran = self.program.run(input_dir, output_dir, Path(tmp), container_name=name)
            run.seconds["backbone"] = time.perf_counter() - started
            outcome = ran.outcome
            run.raw = {
                "exit_status": outcome.returncode,
                "timed_out": outcome.timed_out,
                "stderr_tail": ran.stderr_tail,
            }
            failure = ran.failure(self.config.timeout_s)
            if failure is not None:
                run.failed, run.timed_out = failure, outcome.timed_out
            # Collected after a failure too: what a crashed or killed backbone left is worth a look.
            collect(output_dir, workdir, modalities, run)
        return run


def _load_callable(spec: str) -> Callable[[Path, Path], object]:
    """Import ``module:function``; a clear :class:`BackendError` when it cannot."""
    import importlib

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise BackendError(f"scripted backbone: expected 'module:function', got {spec!r}")
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise BackendError(f"scripted backbone: cannot load {spec!r}: {exc}") from None
    if not callable(fn):
        raise BackendError(f"scripted backbone: {spec!r} is not callable")
    return fn  # type: ignore[no-any-return]


class ScriptedBackbone:
    """A Python function with the ``command`` protocol's folders, in-process (plumbing tests)."""

    def __init__(self, config: ScriptedBackboneConfig) -> None:
        self.config = config
        self.script: Callable[[Path, Path], object] = _load_callable(config.script)

    def identity(self) -> dict[str, Any]:
        return {"script": self.config.script}

    def lineage(self) -> dict[str, Any]:
        return {"kind": "scripted", "script": self.config.script}

    def close(self) -> None:
        """Nothing stays open."""

    def run(self, task: Task, workdir: Path, modalities: tuple[str, ...], third: str) -> BackboneRun:
        run = BackboneRun()
        with tempfile.TemporaryDirectory(prefix="omnieval-backbone-") as tmp:
            input_dir, output_dir = Path(tmp) / "input", Path(tmp) / "output"
            input_dir.mkdir()
            output_dir.mkdir()
            write_backbone_task(task, input_dir, modalities, third)
            started = time.perf_counter()
            try:
                self.script(input_dir, output_dir)
            except Exception as exc:  # the script's failure is this example's crash, like a command's
                run.failed = f"crash: {type(exc).__name__}: {exc}"
            run.seconds["backbone"] = time.perf_counter() - started
            collect(output_dir, workdir, modalities, run)
        return run


class OmniBackbone:
    """Text and speech from an omni model behind an OpenAI-compatible API, in two passes."""

    def __init__(self, config: OpenAIOmniConfig, system_id: str, current_text_max_chars: int) -> None:
        self.config = config
        self.client = OmniClient(config, system_id)
        self.current_text_max_chars = current_text_max_chars

    def identity(self) -> dict[str, Any]:
        return {"model": self.config.model, "revision": self.config.revision}

    def lineage(self) -> dict[str, Any]:
        return {"kind": "openai-omni", **self.client.lineage()}

    def close(self) -> None:
        self.client.close()

    def run(self, task: Task, workdir: Path, modalities: tuple[str, ...], third: str) -> BackboneRun:
        run = BackboneRun(text_in_fields=True, independent=("speech",))
        # First pass: the spoken line, with its audio: the benchmark's request answered as speech,
        # told none of the answers it would quote (the narration comes in the second pass).
        brief = task.briefed("semi-orchestration")
        speaks = [a for a in brief.asks(self.config.sends_images) if a.answer == "speech"]
        if not speaks:
            raise ConfigError(
                f"semi-orchestration: benchmark {task.benchmark} words no spoken request for an "
                "openai-omni backbone"
            )
        spoken = self.client.call(ask_messages(speaks[0], task.files, {}, self.config.prompts), audio=True)
        run.seconds["backbone_speech"] = spoken.seconds
        line = spoken.answer.text if spoken.answer else ""
        name = EXAMPLE_FILES[Modality.SPEECH]
        if spoken.answer is None:
            run.missing["speech"] = spoken.error
        elif spoken.answer.audio is None:
            run.missing["speech"] = "not written: the answer has no audio"
        else:
            (workdir / name).write_bytes(spoken.answer.audio)
            run.written["speech"] = name
        # Second pass: the narration and the intermediate fields, in the benchmark's words.
        plan = task.plan_request("semi-orchestration")
        prompt = brief.context(self.current_text_max_chars)
        prompt += "\n\n" + plan.followup.format(line=line or "(none)", fields=describe_fields(third, plan))
        messages = (
            Message.text_only("system", self.config.prompts.system),
            Message.text_only("user", prompt),
        )
        planned = self.client.call(messages, audio=False)
        run.seconds["backbone_plan"] = planned.seconds
        if planned.answer is None:
            run.failed = f"second pass failed: {planned.error}"
            run.timed_out = "timeout" in planned.error
        else:
            run.fields = planned.answer.text
        run.transient = spoken.transient or planned.transient
        run.raw = {
            "first_pass": {"text": line, "error": spoken.error or None, "seconds": round(spoken.seconds, 3)},
            "second_pass": {
                "text": planned.answer.text if planned.answer else None,
                "error": planned.error or None,
                "seconds": round(planned.seconds, 3),
            },
        }
        return run


__all__ = [
    "INTERMEDIATE_FILE",
    "Backbone",
    "BackboneRun",
    "CommandBackbone",
    "OmniBackbone",
    "ScriptedBackbone",
    "ScriptedBackboneConfig",
    "collect",
    "write_backbone_task",
]
