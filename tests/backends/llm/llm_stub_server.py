"""A small OpenAI-compatible server for tests: records request bodies and headers, answers from a script.

Run in a thread (``StubServer``) by the client tests, or as a process by the fake ``vllm`` launcher
(``python llm_stub_server.py serve MODEL --port N ...``), which also records its argv. Tests that
need their own behaviour (authorization checks, throttling, a server dying mid-request) pass a
``respond`` function instead of scripting replies.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, dict[str, Any]]


def completion(text: str, finish: str = "stop") -> Reply:
    return 200, {
        "id": "cmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]


Responder = Callable[[Recorded], "Reply | None"]
"""A test's own answer to one POST; None closes the connection without an answer."""


@dataclass
class StubState:
    replies: list[Reply | Callable[[dict[str, Any]], Reply]] = field(default_factory=list)
    default: Reply = field(default_factory=lambda: completion('{"ok": true}'))
    delay_s: float = 0.0
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            item = self.replies.pop(0) if self.replies else self.default
        return item(body) if callable(item) else item


def make_handler(state: StubState, respond: Responder | None = None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return None

        def _send(self, code: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {})
            elif self.path.endswith("/models"):
                self._send(200, {"data": [{"id": "stub"}]})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            recorded = Recorded(self.path, body, dict(self.headers.items()))
            with state.lock:
                state.requests.append(recorded)
            if respond is not None:
                reply = respond(recorded)
                if reply is None:
                    self.close_connection = True
                else:
                    self._send(*reply)
                return
            if state.delay_s:
                time.sleep(state.delay_s)
            if not self.path.endswith("/chat/completions"):
                self._send(404, {"error": "not found"})
                return
            code, payload = state.next_reply(body)
            self._send(code, payload)

    return Handler


class StubServer:
    """``with StubServer() as server: server.url`` -> ``http://127.0.0.1:<port>/v1``.

    Args:
        respond: Answers every POST instead of the scripted ``state.replies`` (see :data:`Responder`).
    """

    def __init__(self, respond: Responder | None = None) -> None:
        self.state = StubState()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(self.state, respond))
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._stopped = False

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.root}/v1"

    def start(self) -> StubServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        """Shut down (idempotent; safe from a handler thread only via another thread)."""
        if not self._stopped:
            self._stopped = True
            if self.thread.is_alive():
                self.httpd.shutdown()
            self.httpd.server_close()

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _fake_vllm(argv: list[str]) -> int:
    """Behave like ``vllm serve``: record argv and environment facts, wait, then serve until SIGTERM."""
    record = os.environ.get("FAKE_VLLM_RECORD")
    if record:
        with open(record, "w", encoding="utf-8") as fh:
            json.dump({"argv": argv, "has_api_key": bool(os.environ.get("VLLM_API_KEY"))}, fh)
    if os.environ.get("FAKE_VLLM_FAIL"):
        print("RuntimeError: CUDA out of memory (fake)", flush=True)
        return 1
    time.sleep(float(os.environ.get("FAKE_VLLM_STARTUP_S", "0.5")))
    port = int(argv[argv.index("--port") + 1])
    state = StubState()
    state.default = completion(os.environ.get("FAKE_VLLM_ANSWER", '{"ok": true}'))
    httpd = ThreadingHTTPServer(("127.0.0.1", port), make_handler(state))

    def stop(*_: object) -> None:
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    print(f"fake vllm serving on {port}", flush=True)
    httpd.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(_fake_vllm(sys.argv[1:]))
