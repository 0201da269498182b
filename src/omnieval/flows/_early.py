"""Prefect's temporary API server, started at the first moment of ``omnieval run``.

Without ``PREFECT_API_URL`` Prefect starts a temporary server on first use: it imports the whole
server application in our process (~6 s on 2 cores) and then waits for a uvicorn subprocess to
import it again and migrate its database (~10 s), all before the first stage. A warm run with
nothing to do spent most of its time there. :class:`EarlyPrefectServer` launches the same uvicorn
command (loopback only, UI off, Prefect's own ephemeral flags) before anything heavy is imported, so
the server starts while the flow module and the suite load, and exports its address once healthy.
Logs queued for the server are drained before it stops, so nothing retries against a stopped server
at exit.

A run's server lingers: after the run it stays up for ``OMNIEVAL_PREFECT_LINGER_S`` seconds (default
600; 0 stops it with the run as before), recorded in ``<PREFECT_HOME>/run-server/server.json``, so a
rerun within that time skips the server's start (~10-15 s on 2 cores). Several runs may share it; a
small detached watchdog stops it once no run has used it for the whole linger time (also when the
last run was killed without leaving, and also when the checkout holding ``<PREFECT_HOME>`` is
deleted, moved or made unreadable meanwhile: the watchdog holds the folder open and remembers the
deadline; ``omnieval.flows._server.watch``).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import TracebackType

from omnieval.errors import OmnievalError
from omnieval.flows._server import (
    ServerRecord,
    _locked,
    _stop_process,
    _write_record,
    healthy,
    read_record,
    spawn_watchdog,
    watch,
)
from omnieval.processes import pid_alive

__all__ = ["EarlyPrefectServer", "linger_seconds", "run_server_folder", "watch"]

LINGER_ENV = "OMNIEVAL_PREFECT_LINGER_S"
"""Seconds a run's Prefect server stays up after the last run using it (0: stop with the run)."""
DEFAULT_LINGER_S = 600.0
_APP = "prefect.server.api.server:create_app"


def linger_seconds() -> float:
    """``$OMNIEVAL_PREFECT_LINGER_S`` (default 600); a value that is not a number counts as 0."""
    raw = os.environ.get(LINGER_ENV, "").strip()
    if not raw:
        return DEFAULT_LINGER_S
    try:
        return max(0.0, float(raw))
    except ValueError:
        return 0.0


def run_server_folder() -> Path:
    """``<PREFECT_HOME>/run-server``: the lingering run server's record, lock and log."""
    home = Path(os.environ.get("PREFECT_HOME") or Path.cwd() / ".prefect")
    return home.expanduser().resolve() / "run-server"


def _is_run_server(pid: int) -> bool:
    """Whether ``pid`` runs this module's uvicorn command (guards against a recycled pid)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return pid_alive(pid)
    return _APP.encode() in args


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _prefect_dir() -> Path:
    spec = importlib.util.find_spec("prefect")
    if spec is None or not spec.submodule_search_locations:
        raise OmnievalError("Prefect is not installed (make setup)")
    return Path(next(iter(spec.submodule_search_locations))).parent


class EarlyPrefectServer:
    """A Prefect API server for one run: ``with EarlyPrefectServer() as server: server.wait()``.

    Does nothing when ``PREFECT_API_URL`` is already set (a real or shared server). With a linger
    time (``linger_s``, default ``$OMNIEVAL_PREFECT_LINGER_S``) it adopts a healthy server that an
    earlier run left in :func:`run_server_folder`, or starts one that outlives this run by that long.
    """

    def __init__(self, startup_timeout_s: float = 180.0, *, linger_s: float | None = None) -> None:
        self.startup_timeout_s = startup_timeout_s
        self.linger_s = linger_seconds() if linger_s is None else linger_s
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = os.environ.get("PREFECT_API_URL") or None
        self.adopted = False
        """True when an earlier run's lingering server was reused (no start-up paid)."""
        self._owned = False
        self._registered = False
        self._port = 0

    @property
    def _folder(self) -> Path:
        return run_server_folder()

    def start(self) -> None:
        """Adopt a lingering server, or launch the server process (returns at once)."""
        if self.url is not None or self.process is not None:
            return
        if self.linger_s > 0 and self._adopt():
            return
        port = _free_port()
        env = {
            **os.environ,
            "PREFECT_UI_ENABLED": "0",
            "PREFECT__SERVER_EPHEMERAL": "1",
            "PREFECT__SERVER_FINAL": "1",
        }
        env.pop("PREFECT_API_URL", None)
        command = [sys.executable, "-m", "uvicorn", "--app-dir", str(_prefect_dir()), "--factory",
                   _APP, "--host", "127.0.0.1", "--port", str(port),
                   "--log-level", "error", "--lifespan", "on"]  # fmt: skip
        self._port = port
        self._owned = True
        if self.linger_s <= 0:
            self.process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)
            return
        # A server meant to outlive this run: its own session (Ctrl-C reaches the run only), its
        # output in a log file (an open pipe would hold whoever reads this process's output).
        folder = self._folder
        with _locked(folder):
            with (folder / "server.log").open("ab") as log:
                self.process = subprocess.Popen(
                    command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True,
                )  # fmt: skip
            url = f"http://127.0.0.1:{port}/api"
            record = ServerRecord(self.process.pid, port, url, "", {os.getpid(): ()})
            _write_record(folder, record)
            # The watchdog stops the server once no run has used it for the linger time, also when
            # the last run was killed without leaving, and also when this folder is deleted, moved
            # or unreadable by then (a temporary checkout): it remembers the deadline.
            spawn_watchdog("omnieval.flows._early", folder, self.process.pid, self.linger_s)
        self._registered = True

    def _adopt(self) -> bool:
        folder = self._folder
        with _locked(folder):
            record = read_record_or_none(folder)
            if record is None:
                return False
            if not (pid_alive(record.pid) and _is_run_server(record.pid) and healthy(record.api_url, 2.0)):
                if pid_alive(record.pid) and _is_run_server(record.pid):
                    _stop_process(record.pid, None)
                _write_record(folder, None)
                return False
            clients = {pid: s for pid, s in record.clients.items() if pid_alive(pid)}
            clients[os.getpid()] = ()
            _write_record(folder, replace(record, clients=clients, idle_until=0.0))
        self.url = record.api_url
        os.environ["PREFECT_API_URL"] = record.api_url
        self.adopted = self._registered = True
        return True

    def wait(self) -> str | None:
        """Block until the server answers ``/health``; export and return its API URL."""
        if self.process is None:
            return self.url
        import httpx

        url = f"http://127.0.0.1:{self._port}/api"
        deadline = time.monotonic() + self.startup_timeout_s
        with httpx.Client(timeout=2.0) as client:
            while True:
                if self.process.poll() is not None:
                    raise OmnievalError(
                        f"the temporary Prefect server exited with code {self.process.returncode}"
                    )
                try:
                    if client.get(f"{url}/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    self._stop_process()
                    raise OmnievalError(
                        f"the temporary Prefect server did not start within {self.startup_timeout_s:.0f} s"
                    )
                time.sleep(0.1)
        self.url = url
        os.environ["PREFECT_API_URL"] = url
        return url

    def stop(self) -> None:
        """Drain queued logs; stop the server, or leave it lingering for the next run."""
        if not (self._owned or self._registered):
            return
        if "prefect.logging.handlers" in sys.modules:
            from prefect.logging.handlers import APILogWorker

            APILogWorker.drain_all(timeout=30)
        if self.url is not None and os.environ.get("PREFECT_API_URL") == self.url:
            os.environ.pop("PREFECT_API_URL", None)
        if self._registered and self.linger_s > 0 and (self.process is None or self.process.poll() is None):
            self._leave()
            return
        self._stop_process()

    def _leave(self) -> None:
        """Leave the lingering server; the last run out starts its linger time."""
        self._registered = False
        self.process = None  # the watchdog stops it now, not this run
        folder = self._folder
        with _locked(folder):
            record = read_record_or_none(folder)
            if record is None:
                return
            clients = {p: s for p, s in record.clients.items() if p != os.getpid() and pid_alive(p)}
            idle_until = 0.0 if clients else time.time() + self.linger_s
            _write_record(folder, replace(record, clients=clients, idle_until=idle_until))

    def _stop_process(self) -> None:
        process, self.process = self.process, None
        if process is None or not self._owned:
            return
        if self._registered:
            self._registered = False
            with _locked(self._folder):
                record = read_record_or_none(self._folder)
                if record is not None and record.pid == process.pid:
                    _write_record(self._folder, None)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> EarlyPrefectServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def read_record_or_none(folder: Path) -> ServerRecord | None:
    """The record in ``folder``; None when there is none or it cannot be read (then it is replaced)."""
    try:
        return read_record(folder)
    except OmnievalError:
        return None


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omnieval.flows._early")
    parser.add_argument("--watch", type=Path, required=True, help="the run server's folder")
    parser.add_argument("--pid", type=int, required=True, help="the server process")
    parser.add_argument("--linger", type=float, required=True, help="seconds it stays up unused")
    args = parser.parse_args(argv)
    why = watch(args.watch, args.pid, args.linger, is_server=_is_run_server)
    print(f"run server {args.pid}: {why}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
