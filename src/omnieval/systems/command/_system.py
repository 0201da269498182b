"""The ``command`` kind: any external generator, run once per example in its own environment."""

from __future__ import annotations

import os
import re
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from omnieval.candidates import Modality
from omnieval.security import redact, secret_values
from omnieval.systems._base import SYSTEMS
from omnieval.systems._generating import EXAMPLE_FILES, ExampleResult, GeneratingSystem, Task, timed
from omnieval.systems._spec import SystemSpec
from omnieval.systems.command._config import CommandConfig
from omnieval.systems.command._process import ProcessOutcome, run_command
from omnieval.systems.command._protocol import (
    ResolvedEnv,
    child_environment,
    collect_outputs,
    crash_cause,
    launch_argv,
    program_files,
    resolve_env,
    substitute,
    tail_lines,
    timeout_cause,
    write_task,
)

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
    depends_on: ClassVar[
        tuple[str, ...]
    ] = ()  # runs no model of ours: the script and interpreter are in identity()

    def __init__(self, config: SystemSpec, *, system_id: str = "", cache_dir: Path | None = None) -> None:
        if not isinstance(config, CommandConfig):
            raise TypeError(
                f"command system {system_id!r} needs a CommandConfig, got {type(config).__name__}"
            )
        super().__init__(config, system_id=system_id, cache_dir=cache_dir)
        self.spec: CommandConfig = config
        self._identity: dict[str, Any] | None = None
        self._env: ResolvedEnv | None = None

    # -- facts ----------------------------------------------------------------------------------
    @property
    def cwd(self) -> Path:
        return Path(self.spec.cwd) if self.spec.cwd is not None else Path.cwd()

    def identity(self) -> dict[str, Any]:
        """argv, the names of the extra variables (never their values) and the digests of the files
        argv names (interpreter, script): editing the script regenerates every example."""
        if self._identity is None:
            self._identity = {
                "argv": list(self.spec.argv),
                "env_keys": sorted(self.spec.env),
                "files": program_files(self.spec.argv, self.cwd),
            }
        return self._identity

    def lineage(self) -> dict[str, Any]:
        launcher = "direct"
        if self.spec.conda_env is not None:
            launcher = f"conda run -n {self.spec.conda_env}"
        elif self.spec.container is not None:
            launcher = f"{self.spec.container.engine} image {self.spec.container.image}"
        return {
            "argv": list(self.spec.argv),
            "timeout_s": self.spec.timeout_s,
            "env_keys": sorted(self.spec.env),
            "env_from_caller": sorted(self.spec.env_references()),
            "launcher": launcher,
            "program_files": self.identity()["files"],
        }

    # -- running ----------------------------------------------------------------------------------
    def open(self) -> None:
        # A ${VAR} that is not set fails every example alike: say so once, before the first one.
        self._resolved_env()

    def _resolved_env(self) -> ResolvedEnv:
        if self._env is None:
            self._env = resolve_env(self.spec, os.environ, system_id=self.system_id)
        return self._env

    def wanted(self, task: Task) -> tuple[str, ...]:
        """The modalities the task's benchmark asks for (every modality when the task names none:
        a caller that runs one example by hand)."""
        return task.modalities or tuple(m.value for m in Modality)

    def run_example(self, task: Task, workdir: Path) -> ExampleResult:
        env = self._resolved_env()
        wanted = self.wanted(task)
        result = ExampleResult()
        # A container may leave root-owned files behind: a folder we cannot clear must not fail the run.
        with tempfile.TemporaryDirectory(prefix="omnieval-command-", ignore_cleanup_errors=True) as tmp:
            input_dir, output_dir = Path(tmp) / "input", Path(tmp) / "output"
            input_dir.mkdir()
            output_dir.mkdir()
            write_task(task, input_dir, wanted)
            name = _container_name(self.system_id, task.index)
            argv = launch_argv(
                self.spec,
                substitute(self.spec.argv, input_dir, output_dir),
                input_dir,
                output_dir,
                container_name=name,
            )
            stdout, stderr = Path(tmp) / "stdout.log", Path(tmp) / "stderr.log"
            with timed(result.seconds, "command"):
                outcome = run_command(
                    argv,
                    env=child_environment(self.spec, env, os.environ),
                    cwd=self.cwd if self.spec.container is None else None,
                    timeout_s=self.spec.timeout_s,
                    stdout=stdout,
                    stderr=stderr,
                    on_timeout=self._stop_container(name),
                )
            hidden = (*env.hidden, *secret_values())
            err = [redact(line, hidden) for line in tail_lines(stderr, self.spec.stderr_tail_lines)]
            if outcome.start_error:
                err.append(redact(outcome.start_error, hidden))
            out = [redact(line, hidden) for line in tail_lines(stdout, self.spec.stderr_tail_lines)]
            result.raw = {
                "command": {
                    "exit_status": outcome.returncode,
                    "timed_out": outcome.timed_out,
                    "stderr_tail": err,
                    "stdout_tail": out,
                }
            }
            cause = _failure_cause(outcome, err, self.spec.timeout_s)
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

    def _stop_container(self, name: str) -> Callable[[], None] | None:
        box = self.spec.container
        if box is None:
            return None
        engine = box.engine

        def stop() -> None:
            import subprocess

            subprocess.run([engine, "kill", name], capture_output=True, timeout=30, check=False)

        return stop


def _failure_cause(outcome: ProcessOutcome, stderr_tail: list[str], timeout_s: float) -> str | None:
    if outcome.timed_out:
        return timeout_cause(timeout_s)
    if outcome.returncode not in (0, None):
        return crash_cause(int(outcome.returncode or 0), stderr_tail)
    return None


def _container_name(system_id: str, index: int) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "-", system_id) or "command"
    return f"omnieval-{safe}-{index}-{uuid.uuid4().hex[:8]}"


__all__ = ["CommandSystem"]
