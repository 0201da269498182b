"""Shared plumbing of the stages: paths of the state folder, content keys and skip stamps.

A stage's key hashes everything its output depends on (input digests, its config section, the code
version). A stage whose stamp holds the same key and whose outputs exist does nothing, so a second
run with nothing changed skips the expensive work (DVC does the same from ``dvc.yaml``).
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import omnieval
from omnieval.config import SuiteConfig
from omnieval.jsonio import read_json as read_json  # the stages read their JSON through here
from omnieval.jsonio import write_json_atomic
from omnieval.paths import StatePaths as StatePaths  # re-exported for the stages


def state_paths(config: SuiteConfig) -> StatePaths:
    """The state layout of a suite (:class:`omnieval.paths.StatePaths` at ``config.state``)."""
    return StatePaths(config.state)


_SOURCE_SUFFIXES = frozenset({".py", ".yaml", ".json", ".txt", ".j2"})


def _hash_sources(digest: Any, root: Path, label: str = "") -> None:
    """Feed each source file's path (after ``label``) and bytes below ``root`` to ``digest``."""
    for path in sorted(root.rglob("*")):
        if path.suffix in _SOURCE_SUFFIXES and "__pycache__" not in path.parts and path.is_file():
            digest.update(f"{label}{path.relative_to(root).as_posix()}".encode())
            digest.update(path.read_bytes())


def external_benchmark_roots() -> dict[str, Path]:
    """Benchmark name -> the folder of its hooks, for registered benchmarks whose code lives outside
    this package (a suite's benchmark folder, an installed plugin)."""
    import sys

    from omnieval.benchmarks import BENCHMARKS

    root = Path(omnieval.__file__).resolve().parent
    found: dict[str, Path] = {}
    for name in BENCHMARKS.names():
        module = sys.modules.get(type(BENCHMARKS.get(name)).__module__)
        where = getattr(module, "__file__", None)
        if where is not None and not Path(where).resolve().is_relative_to(root):
            found[name] = Path(where).resolve().parent
    return found


@lru_cache(maxsize=1)
def _package_digest() -> Any:
    """The package's part of :func:`code_digest` (read once per process: it does not change under a run)."""
    digest = hashlib.sha256(omnieval.__version__.encode())
    _hash_sources(digest, Path(omnieval.__file__).parent)
    return digest


def code_digest() -> str:
    """SHA-256 over the package's source files and the hooks of benchmarks loaded from outside it
    (a suite's benchmark folder, a plugin): any code change invalidates stage stamps. Without such
    a benchmark it is the package's digest alone, as before plugins existed."""
    digest = _package_digest().copy()
    for name, folder in sorted(external_benchmark_roots().items()):
        _hash_sources(digest, folder, f"benchmark:{name}/")
    return str(digest.hexdigest())


def content_key(**parts: Any) -> str:
    blob = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def tree_digest(folder: Path) -> str:
    """SHA-256 over the relative paths and bytes of every file below ``folder``."""
    digest = hashlib.sha256()
    if not folder.exists():
        return "absent"
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"


def stamp_path(paths: StatePaths, stage: str) -> Path:
    return paths.stamps / f"{stage}.json"


def is_fresh(paths: StatePaths, stage: str, key: str, outputs: list[Path]) -> bool:
    stamp = stamp_path(paths, stage)
    if not stamp.is_file() or not all(p.exists() for p in outputs):
        return False
    try:
        return bool(json.loads(stamp.read_text())["key"] == key)
    except (ValueError, KeyError):
        return False


def write_stamp(paths: StatePaths, stage: str, key: str, **extra: Any) -> None:
    stamp = stamp_path(paths, stage)
    write_json(stamp, {"stage": stage, "key": key, **extra})


def write_json(path: Path, payload: Any) -> None:
    """Write JSON atomically (keys sorted, ASCII): a crash never leaves a half-written file."""
    write_json_atomic(path, payload, sort_keys=True, ensure_ascii=True)
