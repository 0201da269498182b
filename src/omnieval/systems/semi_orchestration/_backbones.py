"""Two-modality backbones of ``semi-orchestration``: a model that writes two of the page's modalities
itself (text+speech: EMOVA, Qwen2.5-Omni; text+image: MMaDA, Emu3) plus the intermediate fields
(:mod:`._fields`) the expert of the third modality renders.

- ``command``: any program, run with the ``command`` protocol (FORMATS.md section 9). Its
  ``task.json`` lists in ``outputs`` only the backbone's two modalities, and in ``intermediate`` the
  file to write the fields to (``intermediate.json``), the modality they feed, their JSON schema and
  a description. Crash and timeout causes are the ``command`` kind's.
- ``openai-omni`` (text+speech): an omni model behind an OpenAI-compatible API (the ``openai-omni``
  kind's client). First pass: the spoken line (text and audio; its audio is the speech output).
  Second pass: one JSON object with the narration (the text output) and the intermediate fields.
  A failed second pass leaves text and the third modality missing while the first pass's speech
  stays (the paper's Qwen2.5-Omni case).
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
from omnieval.security import redact, secret_values
from omnieval.systems._generating import EXAMPLE_FILES, Task
from omnieval.systems.command import CommandConfig, CommandSystem, crash_cause, timeout_cause, write_task
from omnieval.systems.command._process import run_command
from omnieval.systems.command._protocol import (
    child_environment,
    collect_outputs,
    launch_argv,
    substitute,
    tail_lines,
)
from omnieval.systems.openai_omni import OpenAIOmniConfig, OpenAIOmniSystem
from omnieval.systems.openai_omni._requests import speech_messages
from omnieval.systems.orchestration import user_prompt
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
        failed: Why the backbone gave nothing usable at all (crash, timeout, request failure); the
            third modality is then missing with this cause instead of a classification.
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
    for the third modality's expert, and their schema."""
    document = write_task(task, input_dir, modalities)
    document["intermediate"] = {
        "file": INTERMEDIATE_FILE,
        "for": third,
        "schema": intermediate_schema(third),
        "description": describe_fields(third),
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
        self.command = CommandSystem(config, system_id=system_id)

    def identity(self) -> dict[str, Any]:
        return self.command.identity()

    def lineage(self) -> dict[str, Any]:
        return {"kind": "command", **self.command.lineage()}

    def close(self) -> None:
        """Nothing stays open between examples."""

    def run(self, task: Task, workdir: Path, modalities: tuple[str, ...], third: str) -> BackboneRun:
        env = self.command._resolved_env()
        run = BackboneRun()
        with tempfile.TemporaryDirectory(prefix="omnieval-backbone-", ignore_cleanup_errors=True) as tmp:
            input_dir, output_dir = Path(tmp) / "input", Path(tmp) / "output"
            input_dir.mkdir()
            output_dir.mkdir()
            write_backbone_task(task, input_dir, modalities, third)
            name = f"omnieval-backbone-{task.index}-{os.getpid()}"
            argv = launch_argv(
                self.config,
                substitute(self.config.argv, input_dir, output_dir),
                input_dir,
                output_dir,
                container_name=name,
            )
            stdout, stderr = Path(tmp) / "stdout.log", Path(tmp) / "stderr.log"
            started = time.perf_counter()
            outcome = run_command(
                argv,
                env=child_environment(self.config, env, os.environ),
                cwd=self.command.cwd if self.config.container is None else None,
                timeout_s=self.config.timeout_s,
                stdout=stdout,
                stderr=stderr,
                on_timeout=self.command._stop_container(name),
            )
            run.seconds["backbone"] = time.perf_counter() - started
            hidden = (*env.hidden, *secret_values())
            err = [redact(line, hidden) for line in tail_lines(stderr, self.config.stderr_tail_lines)]
            if outcome.start_error:
                err.append(redact(outcome.start_error, hidden))
            run.raw = {"exit_status": outcome.returncode, "timed_out": outcome.timed_out, "stderr_tail": err}
            if outcome.timed_out:
                run.failed, run.timed_out = timeout_cause(self.config.timeout_s), True
            elif outcome.returncode not in (0, None):
                run.failed = crash_cause(int(outcome.returncode or 0), err)
            else:
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
            if not run.failed:
                collect(output_dir, workdir, modalities, run)
        return run


#: The second pass of the ``openai-omni`` backbone: narration and intermediate fields as one JSON object.
PLAN_INSTRUCTIONS = (
    "The line a character says aloud on the next page: {line}\n\n"
    "Answer with one JSON object and nothing else, with these fields:\n"
    "\"narration\": the next page's text, two or three sentences in the book's tense and voice;\n"
    "{fields}."
)


class OmniBackbone:
    """Text and speech from an omni model behind an OpenAI-compatible API, in two passes."""

    def __init__(self, config: OpenAIOmniConfig, system_id: str, current_text_max_chars: int) -> None:
        self.config = config
        self.client = OpenAIOmniSystem(config, system_id=system_id)
        self.current_text_max_chars = current_text_max_chars

    def identity(self) -> dict[str, Any]:
        return {"model": self.config.model, "revision": self.config.revision}

    def lineage(self) -> dict[str, Any]:
        facts = self.client.lineage()
        facts.pop("image", None)
        return {"kind": "openai-omni", **facts}

    def close(self) -> None:
        self.client.close()

    def run(self, task: Task, workdir: Path, modalities: tuple[str, ...], third: str) -> BackboneRun:
        run = BackboneRun(text_in_fields=True)
        # First pass: the spoken line, with its audio.
        spoken = self.client.call(speech_messages(task.inputs, "", self.config), audio=True)
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
        # Second pass: the narration and the intermediate fields.
        prompt = user_prompt(
            task.inputs, current_max_chars=self.current_text_max_chars, plan_instructions=False
        )
        prompt += "\n\n" + PLAN_INSTRUCTIONS.format(line=line or "(none)", fields=describe_fields(third))
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
