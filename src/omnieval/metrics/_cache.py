"""Content-addressed cache of metric results: key = (input content hashes, metric version, model identity).

Values are small JSON documents under ``<cache_dir>/<metric>/<key[:2]>/<key>.json``, written to a
temporary file and renamed, so concurrent runs and crashes never leave a partial entry.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any


def cache_key(**parts: Any) -> str:
    """Stable digest of keyword parts (JSON with sorted keys)."""
    blob = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class MetricCache:
    """JSON entries keyed by digest; ``root=None`` disables caching."""

    def __init__(self, root: Path | None) -> None:
        self.root = Path(root) if root is not None else None

    def _path(self, metric: str, key: str) -> Path:
        assert self.root is not None
        return self.root / metric / key[:2] / f"{key}.json"

    def get(self, metric: str, key: str) -> Any | None:
        if self.root is None:
            return None
        path = self._path(metric, key)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            # A damaged entry is recomputed rather than trusted.
            return None

    def put(self, metric: str, key: str, value: Any) -> None:
        if self.root is None:
            return
        path = self._path(metric, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(value, sort_keys=True), encoding="utf-8")
        tmp.replace(path)
