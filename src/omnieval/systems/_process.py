"""Run one external command with a wall-clock limit; on timeout its whole process group dies."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Seconds between SIGTERM and SIGKILL when a command's time is up.
KILL_GRACE_S = 3.0


@dataclass(frozen=True)
class ProcessOutcome:
    """How one command ended.

    Attributes:
        returncode: The exit status (negative: killed by that signal); None after a timeout.
        timed_out: The limit was reached and the process group was killed.
        seconds: Wall seconds from start to end (including the kill).
        start_error: Why the program could not be started ('' when it started).
    """

    returncode: int | None
    timed_out: bool
    seconds: float
    start_error: str = ""


def run_command(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None,
    timeout_s: float,
    stdout: Path,
    stderr: Path,
    on_timeout: Callable[[], None] | None = None,
) -> ProcessOutcome:
    """Run ``argv`` in a new session (its own process group), output to files, stdin closed.

    A program that cannot be started (not found, not executable) ends with 127 or 126, the
    status a shell gives, and the reason in ``start_error``. After a timeout the group gets SIGTERM,
    then SIGKILL after :data:`KILL_GRACE_S`; ``on_timeout`` runs first (a container must be stopped
    through its engine, since killing the client leaves it running). Processes the command left
    behind in its group are killed when it exits, so nothing writes into a finished example.
    """
    started = time.perf_counter()
    with stdout.open("wb") as out, stderr.open("wb") as err:
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            return ProcessOutcome(
                127, False, time.perf_counter() - started, f"cannot start {argv[0]}: {exc.strerror}"
            )
        except PermissionError as exc:
            return ProcessOutcome(
                126, False, time.perf_counter() - started, f"cannot start {argv[0]}: {exc.strerror}"
            )
        except OSError as exc:
            return ProcessOutcome(126, False, time.perf_counter() - started, f"cannot start {argv[0]}: {exc}")
        try:
            try:
                returncode = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                if on_timeout is not None:
                    on_timeout()
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=KILL_GRACE_S)
                except subprocess.TimeoutExpired:
                    _signal_group(proc.pid, signal.SIGKILL)
                    proc.wait()
                return ProcessOutcome(None, True, time.perf_counter() - started)
        except BaseException:
            # Ctrl-C or SIGTERM of omnieval itself: the command must not outlive the run.
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        _signal_group(proc.pid, signal.SIGKILL)
        return ProcessOutcome(returncode, False, time.perf_counter() - started)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    # The group may already be gone (everyone exited): nothing to stop.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


__all__ = ["KILL_GRACE_S", "ProcessOutcome", "run_command"]
