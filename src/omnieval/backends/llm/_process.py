"""A model server omnieval runs as a child process: start, health wait, log, stop, no orphan.

Shared by ``vllm serve`` (:mod:`._vllm`) and llama.cpp's server (:mod:`._llamacpp_server`). The
server runs in its own process group with its output appended to a log file; ``stop()`` sends
SIGTERM to the group, then SIGKILL after a grace period.

A server in its own session outlives its parent when the parent is killed with SIGKILL (no
``finally`` runs). So each server gets a small detached watchdog (``python -m
omnieval.backends.llm._process --watch``): it polls the parent once a second and stops the server's
process group as soon as the parent is gone, then exits; it also exits when the server stops on its
own. Nothing else is shared: the watchdog knows two process ids and nothing of the run.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from omnieval.backends.llm._types import BackendError, BackendUnavailable
from omnieval.processes import pid_alive as _alive

log = logging.getLogger(__name__)

WATCH_INTERVAL_S = 1.0
"""How often the watchdog checks whether the parent is alive."""
WATCH_GRACE_S = 10.0
"""Seconds between the watchdog's SIGTERM and SIGKILL of an orphaned server."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ServerProcess:
    """One server process: ``start()``, ``wait_healthy()``, ``stop()`` (or a context manager).

    Args:
        command: the argument list to run.
        label: how messages name the server (e.g. ``vllm serve Qwen/...``).
        base_url: the server's root (``http://host:port``).
        health_path: path that answers 200 once the model is loaded.
        log_path: file the server's stdout and stderr are appended to.
        startup_timeout_s: default limit of :meth:`wait_healthy`.
        env: the server's environment (default: this process's).
        watchdog: start the watchdog that stops the server when this process dies.
    """

    not_started = "the server was not started"
    """Message of :meth:`wait_healthy` before :meth:`start` (subclasses keep their own wording)."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        label: str,
        base_url: str,
        health_path: str,
        log_path: Path,
        startup_timeout_s: float,
        env: dict[str, str] | None = None,
        watchdog: bool = True,
    ) -> None:
        self.command = list(command)
        self.label = label
        self.base_url = base_url
        self.health_path = health_path
        self.log_path = log_path
        self.startup_timeout_s = startup_timeout_s
        self.env = env
        self.watchdog = watchdog
        self.process: subprocess.Popen[bytes] | None = None
        self.watcher: subprocess.Popen[bytes] | None = None

    def _env(self) -> dict[str, str]:
        return dict(os.environ) if self.env is None else self.env

    def start(self) -> None:
        log.info("starting %s (log: %s)", " ".join(self.command), self.log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as out:
            self.process = subprocess.Popen(
                self.command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._env(),
                start_new_session=True,
            )
        if self.watchdog:
            self.watcher = start_watchdog(os.getpid(), self.process.pid)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(
                self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            )
        except OSError:
            return ""

    def _exited_message(self, code: int) -> str:
        return f"{self.label} exited with code {code} before becoming healthy; log tail:\n" + self.log_tail()

    def _timeout_message(self, limit: float) -> str:
        return f"{self.label} not healthy after {limit:.0f} s; log tail:\n" + self.log_tail()

    def wait_healthy(self, timeout_s: float | None = None, poll_s: float = 1.0) -> float:
        """Block until the health path answers 200; return the seconds waited. Raise if the server
        dies or times out (it is stopped then)."""
        import httpx

        if self.process is None:
            raise BackendError(self.not_started)
        limit = self.startup_timeout_s if timeout_s is None else timeout_s
        started = time.monotonic()
        while True:
            code = self.process.poll()
            if code is not None:
                self.stop()
                raise BackendUnavailable(self._exited_message(code))
            try:
                if httpx.get(f"{self.base_url}{self.health_path}", timeout=5.0).status_code == 200:
                    waited = time.monotonic() - started
                    log.info("%s healthy after %.1f s", self.label, waited)
                    return waited
            except httpx.HTTPError:
                pass
            if time.monotonic() - started > limit:
                self.stop()
                raise BackendUnavailable(self._timeout_message(limit))
            time.sleep(poll_s)

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM the server's process group, then SIGKILL it after ``grace_s``."""
        process, self.process = self.process, None
        watcher, self.watcher = self.watcher, None
        try:
            if process is None or process.poll() is not None:
                return
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                return
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                log.warning("%s ignored SIGTERM; killing it", self.label)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        finally:
            if watcher is not None:
                # The server is gone: the watchdog sees its group empty and exits by itself.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    watcher.wait(timeout=2 * WATCH_INTERVAL_S + 1)

    def __enter__(self) -> ServerProcess:
        self.start()
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_watchdog(parent: int, server: int) -> subprocess.Popen[bytes]:
    """A detached process that stops process group ``server`` once process ``parent`` is gone."""
    return subprocess.Popen(
        [sys.executable, "-m", "omnieval.backends.llm._process", "--watch", str(parent), str(server)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # Its own session: a kill of the run's process group leaves it to do its job.
        start_new_session=True,
    )


def watch(parent: int, server: int, interval_s: float = WATCH_INTERVAL_S) -> str:
    """Wait until the server's group is gone (returns ``server-gone``) or the parent is gone (stops
    the group: SIGTERM, SIGKILL after :data:`WATCH_GRACE_S`; returns ``parent-gone``)."""
    while True:
        if not _group_alive(server):
            return "server-gone"
        if not _alive(parent):
            break
        time.sleep(interval_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server, signal.SIGTERM)
    deadline = time.monotonic() + WATCH_GRACE_S
    while time.monotonic() < deadline and _group_alive(server):
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server, signal.SIGKILL)
    return "parent-gone"


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omnieval.backends.llm._process")
    parser.add_argument("--watch", nargs=2, type=int, metavar=("PARENT_PID", "SERVER_PGID"), required=True)
    args = parser.parse_args(argv)
    watch(*args.watch)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
