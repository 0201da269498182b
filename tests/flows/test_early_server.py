"""``omnieval run``'s temporary Prefect server: started before the heavy imports, used by the flow,
bound to 127.0.0.1, and gone after the run."""

from __future__ import annotations

import os

import httpx
import pytest

from omnieval.flows._early import EarlyPrefectServer


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
