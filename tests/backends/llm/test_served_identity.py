"""An OpenAI-compatible judge is identified by what its server serves (``GET /v1/models``), not by the
local hub cache: a server that swaps its model changes the judge's identity and so its cache keys."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from omnieval.backends.llm import BackendUnavailable, OpenAIBackendConfig, backend_identity
from omnieval.judges import cache_key

MODEL = "Qwen/Qwen3-Omni-30B-A3B-Instruct"


class ModelListServer:
    """Answers ``GET /v1/models`` with :attr:`listing` (changeable while it runs); records headers."""

    def __init__(self) -> None:
        self.listing: dict[str, Any] = {"object": "list", "data": []}
        self.status = 200
        self.auth: list[str | None] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def do_GET(self) -> None:
                outer.auth.append(self.headers.get("Authorization"))
                data = json.dumps(outer.listing if self.path == "/v1/models" else {}).encode()
                self.send_response(outer.status if self.path == "/v1/models" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def serve(self, *entries: dict[str, Any]) -> None:
        self.listing = {"object": "list", "data": list(entries)}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[ModelListServer]:
    stub = ModelListServer()
    yield stub
    stub.close()


def _key(config: OpenAIBackendConfig) -> str:
    identity = backend_identity(config, model=MODEL)
    # The judge runner keys each request on exactly these three identity fields (judges/_run.py).
    return cache_key(model=identity.model, revision=identity.revision, weights=identity.weights_digest)


def test_a_changed_served_model_changes_identity_and_cache_key(server: ModelListServer) -> None:
    config = OpenAIBackendConfig(base_url=server.url)
    server.serve({"id": MODEL, "object": "model", "owned_by": "vllm", "root": MODEL})
    first = backend_identity(config, model=MODEL)
    assert first.model == MODEL and first.revision == ""
    key = _key(config)
    assert _key(config) == key  # same server, same model: same key (cache hits on a rerun)
    # Same served name, other weights behind it (vLLM reports what it loaded as the root).
    server.serve({"id": MODEL, "object": "model", "owned_by": "vllm", "root": "/models/qwen3-omni-finetune"})
    assert backend_identity(config, model=MODEL).model == "/models/qwen3-omni-finetune"
    assert _key(config) != key
    # A revision the server reports is the identity's revision.
    server.serve({"id": MODEL, "root": MODEL, "revision": "abc123"})
    assert backend_identity(config, model=MODEL).revision == "abc123"
    assert _key(config) != key


def test_served_model_name_and_single_model_servers(server: ModelListServer) -> None:
    server.serve({"id": "judge", "root": "org/judge-7b"}, {"id": "other", "root": "org/other"})
    named = OpenAIBackendConfig(base_url=server.url, served_model="judge")
    assert backend_identity(named, model=MODEL).model == "org/judge-7b"
    # Several models and none is ours: the judge cannot be reached under its name.
    with pytest.raises(BackendUnavailable, match="does not serve"):
        backend_identity(OpenAIBackendConfig(base_url=server.url), model=MODEL)
    # One model under another name (llama.cpp's server answers any name): that model.
    server.serve({"id": "qwen2.5-coder.gguf"})
    assert (
        backend_identity(OpenAIBackendConfig(base_url=server.url), model=MODEL).model == "qwen2.5-coder.gguf"
    )


def test_key_is_sent_and_servers_without_a_list_keep_the_configured_identity(
    server: ModelListServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_KEY_FOR_TEST", "sk-test-123")
    server.serve({"id": MODEL})
    backend_identity(OpenAIBackendConfig(base_url=server.url, api_key_env="JUDGE_KEY_FOR_TEST"), model=MODEL)
    assert server.auth[-1] == "Bearer sk-test-123"
    server.status = 404
    identity = backend_identity(OpenAIBackendConfig(base_url=server.url), model=MODEL, revision="r1")
    assert identity.model == MODEL and identity.revision == "r1"


def test_unreachable_server_and_disagreeing_endpoints(server: ModelListServer) -> None:
    with pytest.raises(BackendUnavailable, match="cannot ask"):
        backend_identity(OpenAIBackendConfig(base_url="http://127.0.0.1:9/v1"), model=MODEL)
    other = ModelListServer()
    try:
        server.serve({"id": MODEL, "root": "weights-a"})
        other.serve({"id": MODEL, "root": "weights-b"})
        config = OpenAIBackendConfig(endpoints=({"base_url": server.url}, {"base_url": other.url}))  # type: ignore[arg-type]
        with pytest.raises(BackendUnavailable, match="different models"):
            backend_identity(config, model=MODEL)
        other.serve({"id": MODEL, "root": "weights-a"})
        assert backend_identity(config, model=MODEL).model == "weights-a"
    finally:
        other.close()


def test_lineage_records_the_served_model_where_it_differs(server: ModelListServer) -> None:
    from omnieval.judges._calls import judge_lineage_entry
    from omnieval.judges._panels import JudgeConfig

    judge = JudgeConfig(id=MODEL, model=MODEL, backend=OpenAIBackendConfig(base_url=server.url))
    server.serve({"id": MODEL, "root": MODEL})
    assert "identified_model" not in judge_lineage_entry(judge, backend_identity(judge.backend, model=MODEL))
    server.serve({"id": MODEL, "root": "/models/other"})
    entry = judge_lineage_entry(judge, backend_identity(judge.backend, model=MODEL))
    assert entry["identified_model"] == "/models/other" and entry["model"] == MODEL
