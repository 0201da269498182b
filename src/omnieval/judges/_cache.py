"""Content-addressed, crash-safe cache of model answers (and of audio descriptions).

The key is the SHA-256 of everything that decides an answer: model id, revision and weight hash,
backend settings that change outputs, prompt template hash, the rendered messages with each
attachment replaced by its file's SHA-256, decoding parameters, JSON schema and chat-template
switches. A re-run with nothing new therefore makes no model call, and adding a system costs only
that system's calls.

Each entry is one small JSON file ``<root>/<namespace>/<key[:2]>/<key>.json``, written to a
temporary file in the same folder, flushed to disk and renamed over the target: a run killed at any
moment leaves either the complete entry or none, and a resumed run simply finds what was done.
Only successful answers are stored (an inference error is retried next time).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omnieval.backends.llm._types import ChatRequest, Completion, ImagePart, TextPart

log = logging.getLogger(__name__)

CACHE_FORMAT = 1


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal content gives equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class MediaHasher:
    """SHA-256 of media files, memoized per (path, size, mtime) for the life of a run."""

    def __init__(self) -> None:
        self._memo: dict[tuple[str, int, int], str] = {}

    def __call__(self, path: Path) -> str:
        stat = path.stat()
        memo_key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        digest = self._memo.get(memo_key)
        if digest is None:
            h = hashlib.sha256()
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            digest = h.hexdigest()
            self._memo[memo_key] = digest
        return digest


def request_material(request: ChatRequest, media_hash: MediaHasher) -> dict[str, Any]:
    """The request as cache-key material: text verbatim, attachments by content hash."""
    messages = []
    for message in request.messages:
        parts: list[dict[str, str]] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                parts.append({"text": part.text})
            else:
                kind = "image" if isinstance(part, ImagePart) else "audio"
                parts.append({kind: media_hash(part.path)})
        messages.append({"role": message.role, "parts": parts})
    return {
        "messages": messages,
        "decoding": request.decoding.model_dump(mode="json"),
        "json_schema": request.json_schema,
        "chat_template_kwargs": dict(request.chat_template_kwargs),
    }


def cache_key(**material: Any) -> str:
    """Key for arbitrary key material (keyword arguments, serialized canonically)."""
    return sha256_text(canonical_json({"cache_format": CACHE_FORMAT, **material}))


class DiskCache:
    """A namespace of JSON entries on disk, written atomically."""

    def __init__(self, root: Path, namespace: str) -> None:
        self.folder = Path(root) / namespace

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get_json(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            # A damaged entry (disk trouble, manual edit) is a miss, never a crash; it is rewritten.
            log.warning("ignoring unreadable cache entry %s: %s", path, exc)
            return None
        return data if isinstance(data, dict) and data.get("key") == key else None

    def put_json(self, key: str, value: Mapping[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps({"key": key, **value}, ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:8]}-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __contains__(self, key: str) -> bool:
        return self._path(key).is_file()


class ResponseCache(DiskCache):
    """Model answers keyed by :func:`cache_key`."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, "responses")

    def get(self, key: str) -> Completion | None:
        data = self.get_json(key)
        if data is None or "completion" not in data:
            return None
        try:
            return Completion.from_json(json.dumps(data["completion"]))
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, key: str, completion: Completion, meta: Mapping[str, Any]) -> None:
        self.put_json(key, {"meta": dict(meta), "completion": json.loads(completion.to_json())})
