"""A persistent local Prefect server for ``omnieval serve`` (started, reused and stopped here).

Prefect cannot schedule flows on the temporary server it starts for a single run, so ``omnieval
serve`` without ``PREFECT_API_URL`` starts ``prefect server start`` from this environment as a
child process: bound to 127.0.0.1, its own SQLite database under ``<PREFECT_HOME>/server/``
(``.prefect/server/prefect.db`` in the project), the scheduler service on. ``server.json`` beside
the database records the server's pid, port and address and the ``omnieval serve`` processes
using it, so a second ``serve`` (another suite) or a restarted one reuses the running server
instead of starting another; the last user to leave stops it. A ``serve`` killed with SIGKILL
leaves the server running (it is in its own session): the next ``serve`` adopts it when it comes
within ``OMNIEVAL_SERVE_ORPHAN_S`` seconds (default 30), otherwise a small detached watchdog
(:func:`watch`, started with the server) stops it.

The watchdogs here and in ``omnieval.flows._early`` keep their folder open by descriptor and
remember the last record they read: a folder that is moved is still followed, and one that is
deleted or becomes unreadable (a temporary checkout removed after its run) no longer ends the
watch; the server is stopped at the deadline the watchdog last knew.

All reads and writes of ``server.json`` happen under an exclusive ``flock`` on ``server.lock``.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from omnieval.errors import OmnievalError
from omnieval.processes import pid_alive

HOST = "127.0.0.1"
"""The only address the server listens on."""

RECORD_NAME = "server.json"
LOCK_NAME = "server.lock"
LOG_NAME = "server.log"
DATABASE_NAME = "prefect.db"


def server_folder(prefect_home: Path | None = None) -> Path:
    """``<PREFECT_HOME>/server``: the persistent server's database, record, lock and log.

    ``PREFECT_HOME`` defaults to ``.prefect`` in the current folder (``prepare_prefect_env``).
    """
    home = prefect_home or Path(os.environ.get("PREFECT_HOME") or Path.cwd() / ".prefect")
    return home.expanduser().resolve() / "server"


@dataclass(frozen=True)
class ServerRecord:
    """What ``server.json`` holds about the running server."""

    pid: int
    """The ``prefect server start`` process."""
    port: int
    """Its TCP port on 127.0.0.1."""
    api_url: str
    """``http://127.0.0.1:<port>/api``."""
    database: str
    """The SQLAlchemy URL of its database."""
    clients: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """pid of each ``omnieval serve`` using the server -> the suites it serves."""
    idle_until: float = 0.0
    """For a lingering run server (``omnieval.flows._early``): when it stops if no run came back
    (epoch seconds; 0 while a run uses it)."""

    def to_json(self) -> str:
        body: dict[str, object] = {
            "pid": self.pid,
            "port": self.port,
            "api_url": self.api_url,
            "database": self.database,
            "clients": {str(pid): list(suites) for pid, suites in sorted(self.clients.items())},
        }
        if self.idle_until:
            body["idle_until"] = self.idle_until
        return json.dumps(body, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, source: Path) -> ServerRecord:
        try:
            body = json.loads(text)
            return cls(
                pid=int(body["pid"]),
                port=int(body["port"]),
                api_url=str(body["api_url"]),
                database=str(body["database"]),
                clients={int(pid): tuple(suites) for pid, suites in body.get("clients", {}).items()},
                idle_until=float(body.get("idle_until", 0.0)),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise OmnievalError(f"{source}: unreadable server record ({exc}); delete it and retry") from exc


def _is_prefect_server(pid: int) -> bool:
    """Whether ``pid`` runs ``prefect server start`` (guards against a recycled pid)."""
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not cmdline.parent.exists():
        return pid_alive(pid)  # no /proc: trust the pid and the health check
    try:
        args = cmdline.read_bytes().split(b"\0")
    except OSError:
        return False
    return b"prefect" in b" ".join(args) and b"server" in args and b"start" in args


def healthy(api_url: str, timeout_s: float = 2.0) -> bool:
    """``GET <api_url>/health`` answers 200."""
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=timeout_s) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return True
    return False


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / LOCK_NAME).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_record(folder: Path) -> ServerRecord | None:
    """The record in ``folder`` (None when there is none)."""
    path = folder / RECORD_NAME
    if not path.is_file():
        return None
    return ServerRecord.from_json(path.read_text(), path)


def _write_record(folder: Path, record: ServerRecord | None) -> None:
    path = folder / RECORD_NAME
    if record is None:
        path.unlink(missing_ok=True)
        return
    scratch = path.with_suffix(".json.tmp")
    scratch.write_text(record.to_json())
    os.replace(scratch, path)


def _stop_process(pid: int, process: subprocess.Popen[bytes] | None, grace_s: float = 20.0) -> None:
    """SIGTERM, then SIGKILL after ``grace_s``; reaps it when it is our child."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return
        if process is None and not pid_alive(pid):
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if process is not None:
        process.wait(timeout=10)


@dataclass
class LocalServer:
    """This process's hold on the persistent server; :meth:`release` gives it up."""

    folder: Path
    pid: int
    port: int
    api_url: str
    started: bool
    """True when this process started the server, False when it reused a running one."""
    process: subprocess.Popen[bytes] | None = None
    released: bool = False

    def release(self) -> bool:
        """Leave the server; stop it when no other live ``omnieval serve`` uses it.

        Returns True when the server was stopped. Safe to call twice (atexit calls it again).
        """
        if self.released:
            return False
        self.released = True
        with _locked(self.folder):
            record = read_record(self.folder)
            if record is None or record.pid != self.pid:
                # Someone replaced the record (the server died and another serve started one).
                if self.process is not None and self.process.poll() is None:
                    _stop_process(self.pid, self.process)
                    return True
                return False
            others = {pid: s for pid, s in record.clients.items() if pid != os.getpid() and pid_alive(pid)}
            if others:
                _write_record(self.folder, replace(record, clients=others))
                return False
            _stop_process(self.pid, self.process)
            _write_record(self.folder, None)
            return True


def acquire_server(
    suites: Sequence[str],
    *,
    folder: Path | None = None,
    port: int | None = None,
    startup_timeout_s: float = 180.0,
) -> LocalServer:
    """Reuse the running persistent server in ``folder`` or start one; register this process.

    ``suites`` are the suites this process serves: a suite already served by another live
    ``omnieval serve`` is refused (two runners would race for its scheduled runs). ``port``
    applies when a server is started (default: a free port). The server is released at exit.
    """
    folder = folder or server_folder()
    me = os.getpid()
    with _locked(folder):
        record = read_record(folder)
        if record is not None:
            if pid_alive(record.pid) and _is_prefect_server(record.pid) and healthy(record.api_url):
                clients = {pid: s for pid, s in record.clients.items() if pid != me and pid_alive(pid)}
                for pid, served in clients.items():
                    taken = sorted(set(served) & set(suites))
                    if taken:
                        raise OmnievalError(
                            f"suite(s) {', '.join(taken)} already served by omnieval serve (pid {pid}, "
                            f"{folder / RECORD_NAME}); stop it first"
                        )
                clients[me] = tuple(suites)
                # Adopted: a grace time the watchdog started when the last serve died is over.
                _write_record(folder, replace(record, clients=clients, idle_until=0.0))
                server = LocalServer(folder, record.pid, record.port, record.api_url, started=False)
                atexit.register(server.release)
                return server
            if pid_alive(record.pid) and _is_prefect_server(record.pid):
                # A server that no longer answers: stop it rather than run two on one database.
                _stop_process(record.pid, None)
            _write_record(folder, None)
        server = _start(folder, port=port, startup_timeout_s=startup_timeout_s)
        database = _database_url(folder)
        _write_record(
            folder, ServerRecord(server.pid, server.port, server.api_url, database, {me: tuple(suites)})
        )
        spawn_watchdog("omnieval.flows._server", folder, server.pid, orphan_seconds())
    atexit.register(server.release)
    return server


ORPHAN_ENV = "OMNIEVAL_SERVE_ORPHAN_S"
"""Seconds the serve server outlives its last ``omnieval serve`` killed without leaving (SIGKILL)."""
DEFAULT_ORPHAN_S = 30.0


def orphan_seconds() -> float:
    """``$OMNIEVAL_SERVE_ORPHAN_S`` (default 30): how long a serve killed outright has to come back
    and adopt its server before the watchdog stops it; a value that is not a number counts as 0."""
    raw = os.environ.get(ORPHAN_ENV, "").strip()
    if not raw:
        return DEFAULT_ORPHAN_S
    try:
        return max(0.0, float(raw))
    except ValueError:
        return 0.0


def spawn_watchdog(module: str, folder: Path, server_pid: int, wait_s: float) -> subprocess.Popen[bytes]:
    """Start ``<module>._main(["--watch", FOLDER, "--pid", PID, "--linger", S])``, detached.

    Its own session: Ctrl-C in the terminal and SIGKILL to the process group of whoever started
    the server do not reach it, which is the point. Its output goes to the server's log. Called
    through ``-c`` rather than ``-m``: the package imports the module first, and running it again
    as ``__main__`` would load it twice (runpy warns).
    """
    code = f"import sys; from {module} import _main; sys.exit(_main(sys.argv[1:]))"
    with (folder / LOG_NAME).open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-c", code, "--watch", str(folder), "--pid", str(server_pid),
             "--linger", repr(wait_s)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


# --- the watchdog: follows its folder by descriptor, remembers what it last read -------------------


class WatchedFolder:
    """The server's folder held open by descriptor: reads and writes follow it when it is moved.

    A folder deleted or made unreadable after the watch started makes :meth:`read` answer
    ``UNREACHABLE`` instead of raising: the watchdog then goes on from what it last knew.
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder
        self.fd: int | None = None
        with contextlib.suppress(OSError):
            self.fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)

    @contextlib.contextmanager
    def locked(self) -> Iterator[bool]:
        """Hold ``server.lock`` (True), or go on without it when it cannot be opened (False)."""
        lock: int | None = None
        if self.fd is not None:
            with contextlib.suppress(OSError):
                lock = os.open(LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644, dir_fd=self.fd)
        if lock is None:
            yield False
            return
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield True
        finally:
            os.close(lock)  # closing releases the lock

    def read(self) -> ServerRecord | str:
        """The record; ``ABSENT`` when there is none; ``UNREACHABLE`` when it cannot be read."""
        if self.fd is None:
            return UNREACHABLE
        try:
            handle = os.open(RECORD_NAME, os.O_RDONLY, dir_fd=self.fd)
        except FileNotFoundError:
            return ABSENT if self._folder_still_there() else UNREACHABLE
        except OSError:
            return UNREACHABLE
        try:
            with os.fdopen(handle, "rb") as stream:
                return ServerRecord.from_json(stream.read().decode(errors="replace"), self.path)
        except (OSError, OmnievalError):
            return UNREACHABLE

    def _folder_still_there(self) -> bool:
        """False for a folder deleted after it was opened (no link left to it)."""
        assert self.fd is not None
        try:
            return os.fstat(self.fd).st_nlink > 0
        except OSError:
            return False

    def write(self, record: ServerRecord | None) -> None:
        """Replace the record (None removes it); nothing when the folder cannot be written."""
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            if record is None:
                os.unlink(RECORD_NAME, dir_fd=self.fd)
                return
            scratch = RECORD_NAME + ".tmp"
            handle = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=self.fd)
            with os.fdopen(handle, "w") as stream:
                stream.write(record.to_json())
            os.replace(scratch, RECORD_NAME, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


ABSENT = "absent"
UNREACHABLE = "unreachable"
WATCH_INTERVAL_S = 2.0


def watch(
    folder: Path,
    server_pid: int,
    linger_s: float,
    interval_s: float = WATCH_INTERVAL_S,
    *,
    is_server: Callable[[int], bool] = pid_alive,
    stop_grace_s: float = 20.0,
) -> str:
    """Keep watch over the server ``server_pid``; stop it once no client has used it for ``linger_s``.

    Every ``interval_s``, under the folder's lock when it can be had: a record of this server with a
    live client clears the deadline; one whose clients are all gone (left, or killed without
    leaving) sets it to ``idle_until`` or now + ``linger_s`` and writes it down. When the record
    cannot be read (folder deleted, unreadable, or the record gone or naming another server) the
    watch goes on with the clients and deadline it last read, so the server still stops on time.
    Ends when the server has exited (also when another process stopped it) or once it stopped it.
    Returns why the watch ended.
    """
    place = WatchedFolder(folder)
    clients: dict[int, tuple[str, ...]] = {}
    deadline = 0.0
    try:
        while True:
            if not (pid_alive(server_pid) and is_server(server_pid)):
                with place.locked():
                    if (
                        (found := place.read())
                        and isinstance(found, ServerRecord)
                        and found.pid == server_pid
                    ):
                        place.write(None)
                return "server exited"
            with place.locked():
                found = place.read()
                ours = isinstance(found, ServerRecord) and found.pid == server_pid
                if isinstance(found, ServerRecord) and ours:
                    clients = dict(found.clients)
                    deadline = found.idle_until
                live = {pid: s for pid, s in clients.items() if pid_alive(pid)}
                if live:
                    deadline = 0.0
                elif not deadline:
                    deadline = time.time() + linger_s
                if (
                    isinstance(found, ServerRecord)
                    and ours
                    and (found.idle_until != deadline or found.clients != live)
                ):
                    place.write(replace(found, clients=live, idle_until=deadline))
                clients = live
                if deadline and time.time() >= deadline:
                    # The record goes first: no client may adopt a server that is being stopped.
                    if ours:
                        place.write(None)
                    _stop_process(server_pid, None, grace_s=stop_grace_s)
                    how = "linger time over" if ours else f"linger time over ({_why(found)})"
                    return how
            time.sleep(interval_s)
    finally:
        place.close()


def _why(found: ServerRecord | str) -> str:
    if isinstance(found, ServerRecord):
        return f"record names server {found.pid}"
    return f"record {found}"


def _main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m omnieval.flows._server")
    parser.add_argument("--watch", type=Path, required=True, help="the server's folder")
    parser.add_argument("--pid", type=int, required=True, help="the server process")
    parser.add_argument("--linger", type=float, required=True, help="seconds it stays up without a serve")
    args = parser.parse_args(argv)
    why = watch(args.watch, args.pid, args.linger, is_server=_is_prefect_server)
    print(f"serve server {args.pid}: {why}", flush=True)
    return 0


def _database_url(folder: Path) -> str:
    return (
        os.environ.get("PREFECT_API_DATABASE_CONNECTION_URL")
        or f"sqlite+aiosqlite:///{folder / DATABASE_NAME}"
    )


def _start(folder: Path, *, port: int | None, startup_timeout_s: float) -> LocalServer:
    chosen = port or free_port()
    if port and _port_taken(port):
        raise OmnievalError(
            f"cannot start the Prefect server: port {port} on {HOST} is in use; pick another with --port"
        )
    env = dict(os.environ)
    env.pop("PREFECT_API_URL", None)  # the server must not try to talk to another API
    env.update(
        {
            "PREFECT_API_DATABASE_CONNECTION_URL": _database_url(folder),
            "PREFECT_SERVER_API_HOST": HOST,
            "PREFECT_SERVER_API_PORT": str(chosen),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "true",
            "DO_NOT_TRACK": "true",
        }
    )
    log = (folder / LOG_NAME).open("ab")
    command = [sys.executable, "-m", "prefect", "server", "start", "--host", HOST, "--port", str(chosen)]
    # Its own session: Ctrl-C in the terminal reaches `serve` only, which stops the runner first
    # and the server last; a `serve` killed outright leaves the server for the next one to adopt.
    process = subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    api_url = f"http://{HOST}:{chosen}/api"
    deadline = time.monotonic() + startup_timeout_s
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = (folder / LOG_NAME).read_text(errors="replace").splitlines()[-15:]
                raise OmnievalError(
                    f"the Prefect server exited with code {process.returncode} while starting "
                    f"(log {folder / LOG_NAME}):\n" + "\n".join(tail)
                )
            if healthy(api_url):
                return LocalServer(folder, process.pid, chosen, api_url, started=True, process=process)
            time.sleep(0.5)
    except BaseException:
        # Ctrl-C or SIGTERM while it starts: nothing records it yet, so nobody else would stop it.
        _stop_process(process.pid, process, grace_s=5.0)
        raise
    _stop_process(process.pid, process)
    raise OmnievalError(
        f"the Prefect server did not answer on {api_url} within {startup_timeout_s:.0f} s (log {folder / LOG_NAME})"
    )


if __name__ == "__main__":
    raise SystemExit(_main())
