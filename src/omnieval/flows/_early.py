"""Prefect's temporary API server, started at the first moment of ``omnieval run``.

Without ``PREFECT_API_URL`` Prefect starts a temporary server on first use: it imports the whole
server application in our process (~6 s on 2 cores) and then waits for a uvicorn subprocess to
import it again and migrate its database (~10 s), all before the first stage. A warm run with
nothing to do spent most of its time there. :class:`EarlyPrefectServer` launches the same uvicorn
command (loopback only, UI off, Prefect's own ephemeral flags) before anything heavy is imported, so
the server starts while the flow module and the suite load, and exports its address once healthy.
Logs queued for the server are drained before it stops, so nothing retries against a stopped server
at exit.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from omnieval.errors import OmnievalError


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
    """A temporary Prefect API server for one run: ``with EarlyPrefectServer() as url: ...``.

    Does nothing when ``PREFECT_API_URL`` is already set (a real or shared server).
    """

    def __init__(self, startup_timeout_s: float = 180.0) -> None:
        self.startup_timeout_s = startup_timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = os.environ.get("PREFECT_API_URL") or None
        self._owned = False

    def start(self) -> None:
        """Launch the server process (returns at once)."""
        if self.url is not None or self.process is not None:
            return
        port = _free_port()
        env = {
            **os.environ,
            "PREFECT_UI_ENABLED": "0",
            "PREFECT__SERVER_EPHEMERAL": "1",
            "PREFECT__SERVER_FINAL": "1",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--app-dir", str(_prefect_dir()), "--factory",
             "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(port),
             "--log-level", "error", "--lifespan", "on"],
            env=env,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        self._port = port
        self._owned = True

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
                    self.stop()
                    raise OmnievalError(
                        f"the temporary Prefect server did not start within {self.startup_timeout_s:.0f} s"
                    )
                time.sleep(0.1)
        self.url = url
        os.environ["PREFECT_API_URL"] = url
        return url

    def stop(self) -> None:
        """Drain queued logs, then stop the server (only one this object started)."""
        if not self._owned or self.process is None:
            return
        if "prefect.logging.handlers" in sys.modules:
            from prefect.logging.handlers import APILogWorker

            APILogWorker.drain_all(timeout=30)
        if os.environ.get("PREFECT_API_URL") == self.url:
            os.environ.pop("PREFECT_API_URL", None)
        process, self.process = self.process, None
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
