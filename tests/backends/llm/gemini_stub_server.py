"""A local server speaking the Gemini REST format (``POST /v1beta/models/{model}:generateContent``).

Built on :class:`llm_stub_server.StubServer`: every request is recorded with its headers; a request
without the expected ``x-goog-api-key`` gets 401; answers come from ``answer(body)`` (default: a
JSON object filling the request's ``responseJsonSchema``) with a fixed ``modelVersion`` and token
counts, so tests can check what the SDK sent and what the backend made of the reply.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_stub_server import Recorded, Reply, StubServer

GENERATE = re.compile(r"^/(?P<version>v1\w*)/models/(?P<model>[^/:]+):generateContent$")
MODEL_VERSION = "gemini-stub-001"


def schema_answer(schema: dict[str, Any]) -> Any:
    """A value of ``schema``'s shape: objects filled key by key, integers 7, strings a short text."""
    if "anyOf" in schema:
        return schema_answer(schema["anyOf"][0])
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return {key: schema_answer(sub) for key, sub in schema.get("properties", {}).items()}
    if kind == "integer":
        allowed = schema.get("enum")
        return 7 if not allowed or 7 in allowed else allowed[0]
    if kind == "number":
        return 7.0
    if kind == "boolean":
        return True
    if kind == "array":
        return [schema_answer(schema.get("items", {}))]
    return "heard and seen"


def inline_media(body: dict[str, Any]) -> list[tuple[str, bytes]]:
    """(MIME type, bytes) of every inline part of a request, in order."""
    out = []
    for content in body.get("contents", []):
        for part in content.get("parts", []):
            data = part.get("inlineData") or part.get("inline_data")
            if data:
                # The SDK writes bytes as URL-safe base64; the API accepts either alphabet.
                text = str(data["data"]).replace("-", "+").replace("_", "/")
                raw = base64.b64decode(text + "=" * (-len(text) % 4))
                out.append((data.get("mimeType") or data.get("mime_type"), raw))
    return out


@dataclass
class GeminiStub:
    """What the server saw and how it answers."""

    key: str
    url: str = ""
    model_version: str = MODEL_VERSION
    answer: Callable[[dict[str, Any]], str] | None = None
    """Answer text for a request body; default: :func:`schema_answer` of its schema as JSON."""
    requests: list[Recorded] = field(default_factory=list)
    unauthorized: int = 0
    fail_next: list[int] = field(default_factory=list)
    """HTTP statuses to answer the next requests with (one each), before answering normally."""

    def generate_requests(self) -> list[Recorded]:
        return [r for r in self.requests if GENERATE.match(r.path)]

    def judge_requests(self) -> list[Recorded]:
        """generateContent requests that carried media (the identity probe carries none)."""
        return [r for r in self.generate_requests() if inline_media(r.body)]

    def respond(self, request: Recorded) -> Reply:
        self.requests.append(request)
        headers = {k.lower(): v for k, v in request.headers.items()}
        if headers.get("x-goog-api-key") != self.key:
            self.unauthorized += 1
            return 401, {"error": {"code": 401, "message": "API key not valid", "status": "UNAUTHENTICATED"}}
        if not GENERATE.match(request.path):
            return 404, {"error": {"code": 404, "message": f"no route {request.path}", "status": "NOT_FOUND"}}
        if self.fail_next:
            code = self.fail_next.pop(0)
            return code, {"error": {"code": code, "message": "try again later", "status": "UNAVAILABLE"}}
        config = request.body.get("generationConfig", {})
        if self.answer is not None:
            text = self.answer(request.body)
        elif "responseJsonSchema" in config:
            text = json.dumps(schema_answer(config["responseJsonSchema"]))
        else:
            text = "ready"
        return 200, {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 1200,
                "candidatesTokenCount": 40,
                "thoughtsTokenCount": 60,
                "totalTokenCount": 1300,
            },
            "modelVersion": self.model_version,
        }


@contextmanager
def gemini_server(key: str) -> Iterator[GeminiStub]:
    """A running Gemini-format server that requires ``key``; ``stub.url`` is its root."""
    stub = GeminiStub(key=key)
    with StubServer(stub.respond) as server:
        stub.url = server.root + "/"
        yield stub


def has_audio_stream(data: bytes, tmp: Path) -> bool:
    """Whether an MP4 given as bytes holds an audio stream (ffprobe)."""
    import subprocess

    path = tmp / "sent.mp4"
    path.write_bytes(data)
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "stream=codec_type", "-of", "json", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return any(s.get("codec_type") == "audio" for s in json.loads(out).get("streams", []))
