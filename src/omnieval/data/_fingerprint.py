"""Fingerprint manifest of a loaded Omni-StoryBench folder.

The manifest lists the SHA-256 of the parquet and of every file a row references, and per instance
the SHA-256 of each normalized text field (so a copy with re-encoded files but the same words still
matches on text, and an overlap audit can compare hashes without the texts). Its ``digest`` (SHA-256
over the sorted entries) is the dataset version used as the MLflow dataset digest.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnieval.hashing import sha256_file
from omnieval.jsonio import write_json_atomic

MANIFEST_VERSION = 1

#: Text fields hashed per instance (the texts of FORMATS.md section 1 a system or judge reads).
TEXT_FIELDS: tuple[str, ...] = (
    "current_text",
    "next_text",
    "scene",
    "text_instruction",
    "ambient_sound",
    "speech_utterance",
)


@dataclass(frozen=True)
class FileEntry:
    """One file: path relative to the dataset root (POSIX), byte size and SHA-256 (hex)."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class TextEntry:
    """SHA-256 of one normalized text field of one instance (see :func:`normalize_text`)."""

    id: str
    field: str
    sha256: str


@dataclass(frozen=True)
class Manifest:
    """Fingerprints of a dataset. ``digest`` changes when any byte or normalized text changes."""

    n_rows: int
    parquet: FileEntry
    files: tuple[FileEntry, ...]
    texts: tuple[TextEntry, ...]
    digest: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (stable key order)."""
        return {
            "manifest_version": MANIFEST_VERSION,
            "algorithm": "sha256",
            "text_normalization": "NFKC, casefold, whitespace collapsed to single spaces, stripped",
            "digest": self.digest,
            "n_rows": self.n_rows,
            "parquet": _file_dict(self.parquet),
            "files": [_file_dict(f) for f in self.files],
            "texts": [{"id": t.id, "field": t.field, "sha256": t.sha256} for t in self.texts],
        }


def normalize_text(text: str) -> str:
    """The form hashed for texts: NFKC, case-folded, whitespace runs collapsed, stripped.

    >>> normalize_text("  The  Fox\\nran. ")
    'the fox ran.'
    """
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def sha256_text(text: str) -> str:
    """SHA-256 (hex) of the UTF-8 bytes of :func:`normalize_text` of ``text``."""
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


def write_manifest(manifest: Manifest, path: Path) -> Path:
    """Write the manifest as indented JSON, atomically (temporary file, then rename)."""
    return write_json_atomic(path, manifest.to_dict())


def file_entry(root: Path, path: Path) -> FileEntry:
    """The manifest entry of ``path``: its path relative to ``root``, size (bytes) and SHA-256."""
    rel = path.resolve().relative_to(root.resolve()).as_posix()
    return FileEntry(rel, path.stat().st_size, sha256_file(path))


def _file_dict(entry: FileEntry) -> dict[str, Any]:
    return {"path": entry.path, "size": entry.size, "sha256": entry.sha256}


def manifest_digest(
    n_rows: int, parquet: FileEntry, files: Iterable[FileEntry], texts: Iterable[TextEntry]
) -> str:
    """One SHA-256 over the row count, the table file, every file entry and every text entry (order-free)."""
    lines = [f"manifest\t{MANIFEST_VERSION}", f"rows\t{n_rows}", f"parquet\t{parquet.path}\t{parquet.sha256}"]
    lines.extend(f"file\t{e.path}\t{e.sha256}" for e in files)
    lines.extend(f"text\t{e.id}\t{e.field}\t{e.sha256}" for e in texts)
    return hashlib.sha256(("\n".join(sorted(lines)) + "\n").encode("utf-8")).hexdigest()
