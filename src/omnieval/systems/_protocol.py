"""The ``command`` protocol (FORMATS.md section 9), shared by the ``command`` kind and every kind
that runs an external program with it (a ``semi-orchestration`` command backbone).

What one call of an external generator looks like, as pure functions: the ``task.json`` it reads,
the argv and environment it runs with, and the causes written to ``missing.txt`` when it fails;
and :class:`CommandProgram`, one configured program run once per example (the process itself is
run by :mod:`omnieval.systems._process`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from omnieval.candidates import Modality
from omnieval.errors import ConfigError
from omnieval.security import redact, secret_values
from omnieval.systems._command_config import ENV_REFERENCE, PLACEHOLDERS, CommandConfig
from omnieval.systems._generating import EXAMPLE_FILES, Task
from omnieval.systems._process import ProcessOutcome, run_command

#: The file a command reads its task from, in ``{input_dir}``.
TASK_FILE = "task.json"

#: Variables of omnieval's own interpreter that would point another interpreter at omnieval's packages.
_INTERPRETER_VARIABLES = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")

#: What a command started without the caller's environment still gets.
_BASE_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ")


@dataclass(frozen=True)
class ResolvedEnv:
    """The extra variables of one command with ``${NAME}`` references expanded.

    Attributes:
        values: Name -> value as the command sees it.
        from_caller: Names whose value came (in part) from the caller's environment; their values
            are never recorded.
        hidden: The expanded values of those names, masked wherever a command's output is kept.
    """

    values: dict[str, str]
    from_caller: tuple[str, ...]
    hidden: tuple[str, ...]


def resolve_env(config: CommandConfig, environ: Mapping[str, str], *, system_id: str = "") -> ResolvedEnv:
    """Expand ``${NAME}`` in the ``env`` values from ``environ``.

    Raises:
        ConfigError: a referenced variable is not set (names the system, the key and the variable).

    >>> cfg = CommandConfig(argv=("x",), env={"TOKEN": "${SECRET_T}", "MODE": "fast"})
    >>> r = resolve_env(cfg, {"SECRET_T": "abc123456"})
    >>> r.values, r.from_caller
    ({'TOKEN': 'abc123456', 'MODE': 'fast'}, ('TOKEN',))
    """
    values: dict[str, str] = {}
    from_caller: list[str] = []
    hidden: list[str] = []
    for name, raw in config.env.items():
        unset = [ref for ref in ENV_REFERENCE.findall(raw) if ref not in environ]
        if unset:
            who = f"system {system_id!r}: " if system_id else ""
            raise ConfigError(
                f"{who}env.{name} refers to ${{{unset[0]}}}, which is not set in the environment "
                "omnieval runs in; export it or give the value in the suite"
            )
        value = ENV_REFERENCE.sub(lambda m: environ[m.group(1)], raw)
        values[name] = value
        if value != raw:
            from_caller.append(name)
            if value:
                hidden.append(value)
    return ResolvedEnv(values, tuple(from_caller), tuple(sorted(set(hidden), key=len, reverse=True)))


def child_environment(config: CommandConfig, env: ResolvedEnv, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment the command starts with (see :attr:`CommandConfig.inherit_env`).

    >>> cfg = CommandConfig(argv=("x",), env={"A": "1"}, inherit_env=False)
    >>> child_environment(cfg, resolve_env(cfg, {}), {"PATH": "/bin", "SECRET": "s", "VIRTUAL_ENV": "/v"})
    {'PATH': '/bin', 'A': '1'}
    """
    if config.inherit_env:
        base = {k: v for k, v in environ.items() if k not in _INTERPRETER_VARIABLES}
    else:
        base = {k: environ[k] for k in _BASE_VARIABLES if k in environ}
    return {**base, **env.values}


def substitute(argv: Sequence[str], input_dir: Path, output_dir: Path) -> list[str]:
    """``argv`` with ``{input_dir}`` and ``{output_dir}`` replaced by absolute paths.

    >>> substitute(["gen", "--in={input_dir}", "{output_dir}"], Path("/i"), Path("/o"))
    ['gen', '--in=/i', '/o']
    """
    inp, out = str(input_dir.resolve()), str(output_dir.resolve())
    return [a.replace("{input_dir}", inp).replace("{output_dir}", out) for a in argv]


def launch_argv(
    config: CommandConfig, argv: Sequence[str], input_dir: Path, output_dir: Path, *, container_name: str
) -> list[str]:
    """The full command line: ``argv`` behind the configured launcher (conda or a container).

    >>> cfg = CommandConfig(argv=("python", "g.py"), conda_env="t2av")
    >>> launch_argv(cfg, ["python", "g.py"], Path("/i"), Path("/o"), container_name="c")
    ['conda', 'run', '--no-capture-output', '-n', 't2av', 'python', 'g.py']
    """
    if config.conda_env is not None:
        return ["conda", "run", "--no-capture-output", "-n", config.conda_env, *argv]
    box = config.container
    if box is None:
        return list(argv)
    inp, out = input_dir.resolve(), output_dir.resolve()
    prefix = [box.engine, "run", "--rm", "--init", "--name", container_name]
    prefix += ["-v", f"{inp}:{inp}:ro", "-v", f"{out}:{out}"]
    for mount in box.mounts:
        prefix += ["-v", mount]
    if config.cwd is not None:
        prefix += ["-w", config.cwd]
    if box.gpus is not None:
        prefix += ["--gpus", box.gpus]
    for name in config.env:
        # By name only: the client passes its own value, which never appears on a command line.
        prefix += ["-e", name]
    return [*prefix, *box.extra_args, box.image, *argv]


def write_task(task: Task, input_dir: Path, outputs: Sequence[str]) -> dict[str, Any]:
    """Write ``{input_dir}/task.json``; media files are copied beside it and named in it.

    The document is :meth:`Task.fields` (the benchmark's visible inputs plus ``benchmark``, ``index``,
    ``id`` and ``condition``; never a target) with each media path replaced by the copied file's
    name (``current_image.png``, ``instruction_audio.wav``), plus ``outputs``: modality -> the file
    name the command should write into ``{output_dir}``.

    Returns:
        The document written.
    """
    sources = {str(path): path for path in task.media()}
    used: set[str] = {TASK_FILE}

    def visit(value: Any, key: str) -> Any:
        if isinstance(value, str) and value in sources:
            source = sources[value]
            name = _media_name(key, source, used)
            shutil.copyfile(source, input_dir / name)
            return name
        if isinstance(value, dict):
            return {k: visit(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [visit(v, key) for v in value]
        return value

    document = visit(task.fields(), "media")
    if "outputs" in document:
        raise ValueError(
            f"{task.benchmark}: task inputs have a field named 'outputs', which task.json reserves"
        )
    document["outputs"] = {m: EXAMPLE_FILES[Modality(m)] for m in outputs}
    (input_dir / TASK_FILE).write_text(
        json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return dict(document)


def _media_name(key: str, source: Path, used: set[str]) -> str:
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in key) or "media"
    name = f"{stem}{source.suffix.lower()}"
    n = 2
    while name in used:
        name = f"{stem}_{n}{source.suffix.lower()}"
        n += 1
    used.add(name)
    return name


def collect_outputs(
    output_dir: Path,
    workdir: Path,
    modalities: Sequence[str],
    written: dict[str, str],
    missing: dict[str, str],
) -> None:
    """Move each wanted output the program wrote in ``output_dir`` into the example's ``workdir``.

    ``written`` gets modality -> file name, ``missing`` modality -> why (not written, or a symbolic
    link: a link could hand a file from outside the output folder to the judges).
    """
    for modality in modalities:
        name = EXAMPLE_FILES[Modality(modality)]
        produced = output_dir / name
        if produced.is_symlink():
            missing[modality] = f"undecodable: {name} is a symbolic link; write the file itself"
        elif produced.is_file():
            shutil.move(produced, workdir / name)
            written[modality] = name
        else:
            missing[modality] = "not written"


def tail_lines(path: Path, n: int, *, max_bytes: int = 65536) -> list[str]:
    """The last ``n`` non-empty lines of a text file (its last ``max_bytes`` only), decoded leniently."""
    if not path.is_file():
        return []
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - max_bytes))
        data = fh.read()
    lines = [line.rstrip() for line in data.decode("utf-8", errors="replace").splitlines()]
    return [line for line in lines if line.strip()][-n:]


def crash_cause(returncode: int, stderr_tail: Sequence[str]) -> str:
    """``crash: exit N: <last stderr line>`` (FORMATS.md section 9).

    >>> crash_cause(3, ["loading", "RuntimeError: CUDA out of memory"])
    'crash: exit 3: RuntimeError: CUDA out of memory'
    >>> crash_cause(-9, [])
    'crash: exit -9: (no stderr output; killed by signal 9)'
    """
    if stderr_tail:
        last = stderr_tail[-1].strip()
        last = last if len(last) <= 300 else last[:297] + "..."
    elif returncode < 0:
        last = f"(no stderr output; killed by signal {-returncode})"
    else:
        last = "(no stderr output)"
    return f"crash: exit {returncode}: {last}"


def timeout_cause(timeout_s: float) -> str:
    """``timeout after Ns`` (FORMATS.md section 9).

    >>> timeout_cause(2.0), timeout_cause(0.5)
    ('timeout after 2s', 'timeout after 0.5s')
    """
    return f"timeout after {timeout_s:g}s"


def program_files(argv: Sequence[str], cwd: Path) -> dict[str, str]:
    """SHA-256 of every file ``argv`` names that exists: the program (looked up on ``PATH`` when it
    is a bare name, symlinks followed to the real interpreter) and any script or config argument.

    Placeholders and options are skipped; an argument that is not a file is ignored, so editing the
    script (or upgrading the interpreter) changes the result and regenerates the examples.
    """
    found: dict[str, str] = {}
    for i, arg in enumerate(argv):
        if not arg or any(p in arg for p in PLACEHOLDERS) or arg.startswith("-"):
            continue
        path = Path(arg) if os.path.isabs(arg) else cwd / arg
        if i == 0 and os.sep not in arg:
            located = shutil.which(arg)
            path = Path(located) if located else path
        try:
            if path.is_file():
                real = path.resolve()
                stat = real.stat()
                found[arg] = _digest(str(real), stat.st_size, stat.st_mtime_ns)
        except OSError:
            continue
    return found


@lru_cache(maxsize=256)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    # size and mtime are part of the cache key only: an edited file is hashed again.
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class ProgramRun:
    """One run of a :class:`CommandProgram`.

    Attributes:
        outcome: How the process ended (exit status, timeout, start error).
        stderr_tail: The last lines of its stderr (plus the start error), secrets masked.
        stdout_tail: The last lines of its stdout, secrets masked.
    """

    outcome: ProcessOutcome
    stderr_tail: list[str]
    stdout_tail: list[str]

    def failure(self, timeout_s: float) -> str | None:
        """The ``missing.txt`` cause of a failed run (timeout or crash); None when it exited 0."""
        if self.outcome.timed_out:
            return timeout_cause(timeout_s)
        if self.outcome.returncode not in (0, None):
            return crash_cause(int(self.outcome.returncode or 0), self.stderr_tail)
        return None


class CommandProgram:
    """One configured external program, run once per example with the ``command`` protocol.

    It knows what identifies the program (argv, variable names, the digests of the files argv
    names), how to describe it in the lineage, and how to run it on one prepared input folder: the
    launcher (conda, a container), the environment, the time limit and the masked output tails.
    """

    def __init__(self, config: CommandConfig, system_id: str = "") -> None:
        self.config = config
        self.system_id = system_id
        self._identity: dict[str, Any] | None = None
        self._env: ResolvedEnv | None = None

    @property
    def cwd(self) -> Path:
        """Working directory of the program (and base of relative paths in argv)."""
        return Path(self.config.cwd) if self.config.cwd is not None else Path.cwd()

    def identity(self) -> dict[str, Any]:
        """argv, the names of the extra variables (never their values) and the digests of the files
        argv names (interpreter, script): editing the script regenerates every example."""
        if self._identity is None:
            self._identity = {
                "argv": list(self.config.argv),
                "env_keys": sorted(self.config.env),
                "files": program_files(self.config.argv, self.cwd),
            }
        return self._identity

    def lineage(self) -> dict[str, Any]:
        """argv, limit, variable names, launcher and program digests, for the lineage."""
        launcher = "direct"
        if self.config.conda_env is not None:
            launcher = f"conda run -n {self.config.conda_env}"
        elif self.config.container is not None:
            launcher = f"{self.config.container.engine} image {self.config.container.image}"
        return {
            "argv": list(self.config.argv),
            "timeout_s": self.config.timeout_s,
            "env_keys": sorted(self.config.env),
            "env_from_caller": sorted(self.config.env_references()),
            "launcher": launcher,
            "program_files": self.identity()["files"],
        }

    def resolved_env(self) -> ResolvedEnv:
        """The extra variables with ``${NAME}`` expanded (resolved once).

        Raises:
            ConfigError: a referenced variable is not set.
        """
        if self._env is None:
            self._env = resolve_env(self.config, os.environ, system_id=self.system_id)
        return self._env

    def stop_container(self, name: str) -> Callable[[], None] | None:
        """What stops the container ``name`` on a timeout (None without a container: killing the
        process group is enough)."""
        box = self.config.container
        if box is None:
            return None
        engine = box.engine

        def stop() -> None:
            subprocess.run([engine, "kill", name], capture_output=True, timeout=30, check=False)

        return stop

    def run(self, input_dir: Path, output_dir: Path, logs: Path, *, container_name: str) -> ProgramRun:
        """Run the program once on a prepared ``input_dir``; its stdout and stderr go to ``logs``."""
        env = self.resolved_env()
        argv = launch_argv(
            self.config,
            substitute(self.config.argv, input_dir, output_dir),
            input_dir,
            output_dir,
            container_name=container_name,
        )
        stdout, stderr = logs / "stdout.log", logs / "stderr.log"
        outcome = run_command(
            argv,
            env=child_environment(self.config, env, os.environ),
            cwd=self.cwd if self.config.container is None else None,
            timeout_s=self.config.timeout_s,
            stdout=stdout,
            stderr=stderr,
            on_timeout=self.stop_container(container_name),
        )
        hidden = (*env.hidden, *secret_values())
        lines = self.config.stderr_tail_lines
        err = [redact(line, hidden) for line in tail_lines(stderr, lines)]
        if outcome.start_error:
            err.append(redact(outcome.start_error, hidden))
        out = [redact(line, hidden) for line in tail_lines(stdout, lines)]
        return ProgramRun(outcome, err, out)


__all__ = [
    "TASK_FILE",
    "CommandProgram",
    "ProgramRun",
    "ResolvedEnv",
    "child_environment",
    "collect_outputs",
    "crash_cause",
    "launch_argv",
    "program_files",
    "resolve_env",
    "substitute",
    "tail_lines",
    "timeout_cause",
    "write_task",
]
