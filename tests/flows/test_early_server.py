"""``omnieval run``'s temporary Prefect server: started before the heavy imports, used by the flow,
bound to 127.0.0.1, and gone after the run."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from omnieval.flows._early import EarlyPrefectServer, run_server_folder, watch
from omnieval.flows._server import ServerRecord, read_record


def test_starts_answers_on_loopback_and_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with EarlyPrefectServer() as server:
        url = server.wait()
        assert url is not None and url.startswith("http://127.0.0.1:")
        assert os.environ["PREFECT_API_URL"] == url
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200
        process = server.process
        assert process is not None
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
    # A record that names another server ends the watch without stopping anything.
    (folder / "server.json").write_text(ServerRecord(1, 1, "http://127.0.0.1:1/api", "").to_json())
    assert watch(folder, server.pid, linger_s=0.3, interval_s=0.05) == "replaced"
