"""``omnieval run``'s temporary Prefect server: started before the heavy imports, used by the flow,
bound to 127.0.0.1, and gone after the run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from omnieval.flows._early import EarlyPrefectServer, run_server_folder, watch
from omnieval.flows._server import ServerRecord, read_record, spawn_watchdog


def test_starts_answers_on_loopback_and_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with EarlyPrefectServer() as server:
        url = server.wait()
        assert url is not None and url.startswith("http://127.0.0.1:")
        assert os.environ["PREFECT_API_URL"] == url
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200
        process = server.process
        assert process is not None
        # What the server really listens on, not only what its URL says: a bind to 0.0.0.0 fails here.
        import psutil

        listening = [
            c.laddr.ip
            for proc in (psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True))
            for c in proc.net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN
        ]
        assert listening and set(listening) <= {"127.0.0.1"}, listening
    assert process.poll() is not None, "the server outlived the run"
    assert "PREFECT_API_URL" not in os.environ


def test_an_existing_server_is_used_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    with EarlyPrefectServer() as server:
        assert server.process is None and server.wait() == "http://127.0.0.1:9/api"
    assert os.environ["PREFECT_API_URL"] == "http://127.0.0.1:9/api"


def test_a_lingering_server_is_adopted_by_the_next_run_then_stopped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    with EarlyPrefectServer(linger_s=4.0) as first:
        url = first.wait()
        assert url is not None and not first.adopted
        process = first.process
        assert process is not None
    assert process.poll() is None, "the server should linger after the run"
    record = read_record(run_server_folder())
    assert record is not None and record.pid == process.pid and record.idle_until > 0
    with EarlyPrefectServer(linger_s=4.0) as second:
        assert second.adopted and second.process is None
        assert second.wait() == url
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200
        assert read_record(run_server_folder()).idle_until == 0  # type: ignore[union-attr]
    # Nobody comes back: the watchdog stops it once the linger time is over.
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert process.poll() is not None, "the lingering server was never stopped"
    assert read_record(run_server_folder()) is None


def test_the_watchdog_stops_a_server_whose_runs_were_killed(tmp_path: Path) -> None:
    server = subprocess.Popen(["sleep", "60"])
    gone = subprocess.Popen(["true"])
    gone.wait()
    folder = tmp_path / "run-server"
    folder.mkdir()
    (folder / "server.json").write_text(
        ServerRecord(server.pid, 1, "http://127.0.0.1:1/api", "", {gone.pid: ()}).to_json()
    )
    assert watch(folder, server.pid, linger_s=0.3, interval_s=0.05) == "linger time over"
    assert server.wait(timeout=10) is not None
    assert not (folder / "server.json").exists()
    # A server that exited by itself ends the watch; a record naming another server is left alone.
    (folder / "server.json").write_text(ServerRecord(1, 1, "http://127.0.0.1:1/api", "").to_json())
    assert watch(folder, server.pid, linger_s=0.3, interval_s=0.05) == "server exited"
    assert (folder / "server.json").exists()


def _fake_server(*marker: str) -> subprocess.Popen[bytes]:
    """A process whose command line passes for the real server's (the watchdog checks it)."""
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", *marker], start_new_session=True
    )


def _watching(watchdog: int, folder: Path) -> bool:
    """The watchdog process holds ``folder`` open (it has started watching it)."""
    try:
        return any(
            os.readlink(f"/proc/{watchdog}/fd/{fd}") == str(folder)
            for fd in os.listdir(f"/proc/{watchdog}/fd")
        )
    except OSError:
        return False


@pytest.mark.parametrize("fate", ["deleted", "moved", "garbled"])
def test_a_lingering_server_stops_at_its_deadline_whatever_happens_to_its_checkout(
    tmp_path: Path, fate: str
) -> None:
    """Issue 47: temporary clones deleted after their runs left their run servers up for hours (the
    watchdog took the vanished record for a replaced server and ended; the server stayed)."""
    checkout = tmp_path / "clone"
    folder = checkout / ".prefect" / "run-server"
    folder.mkdir(parents=True)
    server = _fake_server("prefect.server.api.server:create_app")
    watchdog = None
    try:
        linger = 6.0
        record = ServerRecord(server.pid, 1, "http://127.0.0.1:1/api", "", idle_until=time.time() + linger)
        (folder / "server.json").write_text(record.to_json())
        watchdog = spawn_watchdog("omnieval.flows._early", folder, server.pid, linger)
        deadline = time.monotonic() + 30
        while not _watching(watchdog.pid, folder) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _watching(watchdog.pid, folder), "the watchdog never opened its folder"
        if fate == "deleted":
            shutil.rmtree(checkout)
        elif fate == "moved":
            checkout.rename(tmp_path / "elsewhere")
        else:
            (folder / "server.json").write_text("{not json")
        assert server.poll() is None, "stopped before its deadline"
        assert server.wait(timeout=linger + 20) is not None, "the server outlived its deadline"
        assert watchdog.wait(timeout=20) == 0
        if fate == "moved":  # followed: the record in the moved folder goes with the server
            assert not (tmp_path / "elsewhere" / ".prefect" / "run-server" / "server.json").exists()
    finally:
        for process in (server, watchdog):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


def test_the_serve_server_of_a_serve_killed_outright_is_stopped_by_its_watchdog(tmp_path: Path) -> None:
    """Issue 47: ``kill -9`` of serve left its Prefect server running until some serve adopted it."""
    folder = tmp_path / "server"
    folder.mkdir()
    server = _fake_server("prefect", "server", "start")
    serve = subprocess.Popen(["sleep", "60"])
    watchdog = None
    try:
        (folder / "server.json").write_text(
            ServerRecord(server.pid, 1, "http://127.0.0.1:1/api", "", {serve.pid: ("nightly",)}).to_json()
        )
        watchdog = spawn_watchdog("omnieval.flows._server", folder, server.pid, 1.0)
        time.sleep(3)
        assert server.poll() is None, "stopped while its serve was alive"
        serve.kill()
        serve.wait()
        assert server.wait(timeout=30) is not None, "the orphaned server was not stopped"
        assert watchdog.wait(timeout=20) == 0
        assert not (folder / "server.json").exists()
        assert "serve server" in (folder / "server.log").read_text()
    finally:
        for process in (server, serve, watchdog):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
