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

*Group commit* (``group_commit = N`` on a cache, used by streaming runs): entries are written to
their temporary files without a flush each, then made durable together: one ``syncfs`` of the
cache's filesystem, the renames, and a second ``syncfs`` for the renames, every N entries and on
:meth:`DiskCache.commit`. A kill before the commit leaves only temporary files (never read, their
answers simply requested again); an entry is visible under its key only once it is complete and
on disk, so a committed answer is never requested again.
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

from omnieval.backends.llm import ChatRequest, Completion, ImagePart, TextPart, VideoPart

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


def canonical_object(fragments: Mapping[str, str]) -> str:
    """:func:`canonical_json` of an object whose values are given already serialized canonically.

    ``canonical_object({k: canonical_json(v) for k, v in obj.items()}) == canonical_json(obj)``
    for an object with string keys: lets a caller serialize the parts shared by many keys once.
    """
    return "{" + ",".join(f"{canonical_json(k)}:{fragments[k]}" for k in sorted(fragments)) + "}"


def request_material(request: ChatRequest, media_hash: MediaHasher) -> dict[str, Any]:
    """The request as cache-key material: text verbatim, attachments by content hash."""
    return {
        "messages": messages_material(request, media_hash),
        "decoding": request.decoding.model_dump(mode="json"),
        "json_schema": request.json_schema,
        "chat_template_kwargs": dict(request.chat_template_kwargs),
    }


def messages_material(request: ChatRequest, media_hash: MediaHasher) -> list[dict[str, Any]]:
    """The messages part of :func:`request_material`: each attachment named by its kind (``image``,
    ``video``, else ``audio``) and keyed by its content hash."""
    messages = []
    for message in request.messages:
        parts: list[dict[str, str]] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                parts.append({"text": part.text})
            else:
                kind = (
                    "image"
                    if isinstance(part, ImagePart)
                    else ("video" if isinstance(part, VideoPart) else "audio")
                )
                parts.append({kind: media_hash(part.path)})
        messages.append({"role": message.role, "parts": parts})
    return messages


def cache_key(**material: Any) -> str:
    """Key for arbitrary key material (keyword arguments, serialized canonically)."""
    return sha256_text(canonical_json({"cache_format": CACHE_FORMAT, **material}))


def fsync_dir(path: Path) -> None:
    """Make the names in folder ``path`` durable (no-op where folders cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_SYNCFS: Any = None


def _syncfs(folder: Path) -> bool:
    """Flush every dirty page and pending metadata of ``folder``'s filesystem (Linux ``syncfs``).

    Returns False where ``syncfs`` is not available (the caller then fsyncs file by file).
    """
    global _SYNCFS
    if _SYNCFS is None:
        import ctypes
        import ctypes.util

        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            _SYNCFS = libc.syncfs
        except (OSError, AttributeError):
            _SYNCFS = False
    if _SYNCFS is False:
        return False
    fd = os.open(folder, os.O_RDONLY)
    try:
        return int(_SYNCFS(fd)) == 0
    finally:
        os.close(fd)


class DiskCache:
    """A namespace of JSON entries on disk, written atomically.

    ``group_commit`` = 0 (default): each entry is flushed and renamed as it is put. N > 0: entries
    are staged and committed together every N puts and on :meth:`commit` (see the module notes).
    """

    def __init__(self, root: Path, namespace: str) -> None:
        self.folder = Path(root) / namespace
        self._base = str(self.folder)
        self._made: set[str] = set()
        self.group_commit = 0
        self._staged: dict[str, tuple[str, str]] = {}

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def _where(self, key: str) -> tuple[str, str]:
        """(folder, file) of ``key``'s entry as plain strings (cheaper than Path on the hot path)."""
        folder = f"{self._base}/{key[:2]}"
        return folder, f"{folder}/{key}.json"

    def get_json(self, key: str) -> dict[str, Any] | None:
        staged = self._staged.get(key)
        path = staged[0] if staged else self._where(key)[1]
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.loads(fh.read())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            # A damaged entry (disk trouble, manual edit) is a miss, never a crash; it is rewritten.
            log.warning("ignoring unreadable cache entry %s: %s", path, exc)
            return None
        return data if isinstance(data, dict) and data.get("key") == key else None

    def put_json(self, key: str, value: Mapping[str, Any]) -> None:
        self._put_payload(key, json.dumps({"key": key, **value}, ensure_ascii=False).encode("utf-8"))

    def _put_payload(self, key: str, payload: bytes) -> None:
        """Store ``payload`` (the entry's JSON, with its ``key``) under ``key``."""
        folder, path = self._where(key)
        if folder not in self._made or not os.path.isdir(folder):
            os.makedirs(folder, exist_ok=True)
            self._made.add(folder)
        if self.group_commit:
            self._stage(key, folder, path, payload)
            return
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:8]}-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _stage(self, key: str, folder: str, path: str, payload: bytes) -> None:
        tmp = f"{folder}/.{key}.{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._staged[key] = (tmp, path)
        if len(self._staged) >= self.group_commit:
            self.commit()

    def commit(self) -> None:
        """Make every staged entry durable and visible (one group commit); no-op when none."""
        if not self._staged:
            return
        staged = list(self._staged.values())
        grouped = _syncfs(self.folder)
        if not grouped:
            for tmp, _ in staged:
                with open(tmp, "rb") as fh:
                    os.fsync(fh.fileno())
        for tmp, path in staged:
            os.replace(tmp, path)
        if not (grouped and _syncfs(self.folder)):
            for folder in {os.path.dirname(path) for _, path in staged}:
                fsync_dir(Path(folder))
        self._staged.clear()

    def __contains__(self, key: str) -> bool:
        return key in self._staged or self._path(key).is_file()


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
        # The completion's own JSON is spliced in as is (the entry reads back the same as
        # ``put_json(key, {"meta": ..., "completion": json.loads(completion.to_json())})``).
        payload = (
            f'{{"key": {json.dumps(key)}, "meta": {json.dumps(dict(meta), ensure_ascii=False)}, '
            f'"completion": {completion.to_json()}}}'
        )
        self._put_payload(key, payload.encode("utf-8"))
