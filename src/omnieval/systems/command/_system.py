"""The ``command`` kind: any external generator, run once per example in its own environment."""

from __future__ import annotations

import re
import tempfile
import uuid
from pathlib import Path
from typing import Any, ClassVar

from omnieval.candidates import Modality
from omnieval.systems._base import SYSTEMS
from omnieval.systems._command_config import CommandConfig
from omnieval.systems._generating import (
    COMMAND_CODE,
    EXAMPLE_FILES,
    ExampleResult,
    GeneratingSystem,
    Task,
    timed,
)
from omnieval.systems._protocol import CommandProgram, ResolvedEnv, collect_outputs, write_task
from omnieval.systems._spec import SystemSpec

#: At most this many unexpected file names are recorded per example.
_MAX_EXTRA_FILES = 20


@SYSTEMS.register("command")
class CommandSystem(GeneratingSystem):
    """Runs ``argv`` once per example (and per input condition) with the FORMATS.md section 9 protocol.

    Per example: ``{input_dir}/task.json`` and its media are written, the command runs with
    ``timeout_s``, and ``text.txt`` / ``image.png`` / ``speech.wav`` / ``video.mp4`` are taken from
    ``{output_dir}``. A crash, a timeout or a file not written makes that example's modality missing
    with its cause; the run goes on. The command's exit status and the tail of its stderr and stdout
    are kept in ``raw/<index>/generated_raw.json`` (values of ``${VAR}`` variables masked).
    """

    kind: ClassVar[str] = "command"
    config_model: ClassVar[type[CommandConfig]] = CommandConfig
    # Runs no model of ours (the script and interpreter are in identity()); the protocol's shared
    # modules are its code.
    depends_on: ClassVar[tuple[str, ...]] = COMMAND_CODE

    def __init__(self, config: SystemSpec, *, system_id: str = "", cache_dir: Path | None = None) -> None:
        if not isinstance(config, CommandConfig):
            raise TypeError(
                f"command system {system_id!r} needs a CommandConfig, got {type(config).__name__}"
            )
        super().__init__(config, system_id=system_id, cache_dir=cache_dir)
        self.spec: CommandConfig = config
        self.program = CommandProgram(config, system_id)

    # -- facts ----------------------------------------------------------------------------------
    @property
    def cwd(self) -> Path:
        return self.program.cwd

    def identity(self) -> dict[str, Any]:
        """argv, the names of the extra variables (never their values) and the digests of the files
        argv names (interpreter, script): editing the script regenerates every example."""
        return self.program.identity()

    def lineage(self) -> dict[str, Any]:
        return self.program.lineage()

    # -- running ----------------------------------------------------------------------------------
    def open(self) -> None:
        # A ${VAR} that is not set fails every example alike: say so once, before the first one.
        self._resolved_env()

    def _resolved_env(self) -> ResolvedEnv:
        return self.program.resolved_env()

    def wanted(self, task: Task) -> tuple[str, ...]:
        """The modalities the task's benchmark asks for (every modality when the task names none:
        a caller that runs one example by hand)."""
        return task.modalities or tuple(m.value for m in Modality)

    def run_example(self, task: Task, workdir: Path) -> ExampleResult:
        self._resolved_env()
        wanted = self.wanted(task)
        result = ExampleResult()
        # A container may leave root-owned files behind: a folder we cannot clear must not fail the run.
        with tempfile.TemporaryDirectory(prefix="omnieval-command-", ignore_cleanup_errors=True) as tmp:
            input_dir, output_dir = Path(tmp) / "input", Path(tmp) / "output"
            input_dir.mkdir()
            output_dir.mkdir()
            write_task(task, input_dir, wanted)
            name = _container_name(self.system_id, task.index)
            with timed(result.seconds, "command"):
                run = self.program.run(input_dir, output_dir, Path(tmp), container_name=name)
            result.raw = {
                "command": {
                    "exit_status": run.outcome.returncode,
                    "timed_out": run.outcome.timed_out,
                    "stderr_tail": run.stderr_tail,
                    "stdout_tail": run.stdout_tail,
                }
            }
            cause = run.failure(self.spec.timeout_s)
            if cause is not None:
                result.missing = dict.fromkeys(wanted, cause)
                return result
            self._collect(output_dir, workdir, wanted, result)
        return result

    def _collect(
        self, output_dir: Path, workdir: Path, wanted: tuple[str, ...], result: ExampleResult
    ) -> None:
        expected = {EXAMPLE_FILES[Modality(m)] for m in wanted}
        collect_outputs(output_dir, workdir, wanted, result.written, result.missing)
        extra = sorted(p.name for p in output_dir.iterdir() if p.name not in expected)
        if extra:
            result.raw["command"]["ignored_outputs"] = extra[:_MAX_EXTRA_FILES]


def _container_name(system_id: str, index: int) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "-", system_id) or "command"
    return f"omnieval-{safe}-{index}-{uuid.uuid4().hex[:8]}"


__all__ = ["CommandSystem"]
