"""The labeled-speech manifest: one JSON object per line, audio paths relative to the manifest.

A corpus folder holds ``manifest.jsonl`` (the rows below) and ``corpus.json`` (its card: name,
feature, label vocabulary, where it came from). Required fields are ``path, label, speaker, source,
split``; ``sha256``, ``duration_s``, ``sample_rate`` and ``text`` are filled in when known (the
synthesizer and the importers always fill them), and the gate recomputes them from the files.

Example:
    >>> row = ManifestRow(path="audio/a.flac", label="female", speaker="f1", source="espeak", split="train")
    >>> ManifestRow.from_dict(row.as_dict()) == row
    True
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from omnieval.errors import DataError
from omnieval.jsonio import read_jsonl_objects, write_json_atomic

MANIFEST_NAME = "manifest.jsonl"
CARD_NAME = "corpus.json"
SPLITS = ("train", "dev", "test")
REQUIRED_FIELDS = ("path", "label", "speaker", "source", "split")
UNASSIGNED = ""
"""Split value of rows whose split has not been assigned yet (importers leave it empty)."""


@dataclass(frozen=True)
class ManifestRow:
    """One labeled clip. ``path`` is relative to the manifest's folder (POSIX separators)."""

    path: str
    label: str
    speaker: str
    source: str
    split: str = UNASSIGNED
    sha256: str = ""
    """SHA-256 of the audio file's bytes (hex); empty when not computed."""
    duration_s: float | None = None
    """Duration in seconds."""
    sample_rate: int | None = None
    """Native sample rate of the file in Hz."""
    text: str = ""
    """Spoken text when known (synthesized corpora, corpora with transcripts)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "row") -> ManifestRow:
        """Build a row from a decoded JSON object, naming ``where`` in every error."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise DataError(
                f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        missing = [name for name in REQUIRED_FIELDS if name not in data]
        if missing:
            raise DataError(f"{where}: missing field(s) {', '.join(missing)}")
        for name in ("path", "label", "speaker", "source", "split", "sha256", "text"):
            if name in data and not isinstance(data[name], str):
                raise DataError(f"{where}: field {name!r} must be a string, got {type(data[name]).__name__}")
        for name in ("path", "label", "speaker", "source"):
            if not str(data[name]).strip():
                raise DataError(f"{where}: field {name!r} is empty")
        if data["split"] not in (*SPLITS, UNASSIGNED):
            raise DataError(f"{where}: split {data['split']!r} is not one of {', '.join(SPLITS)}")
        path = str(data["path"])
        if path.startswith("/") or ".." in Path(path).parts:
            raise DataError(f"{where}: path {path!r} must be relative to the manifest's folder, without '..'")
        duration = data.get("duration_s")
        rate = data.get("sample_rate")
        if duration is not None and not isinstance(duration, int | float):
            raise DataError(f"{where}: duration_s must be a number, got {duration!r}")
        if rate is not None and (not isinstance(rate, int) or isinstance(rate, bool)):
            raise DataError(f"{where}: sample_rate must be an integer, got {rate!r}")
        return cls(
            path=path,
            label=str(data["label"]),
            speaker=str(data["speaker"]),
            source=str(data["source"]),
            split=str(data["split"]),
            sha256=str(data.get("sha256", "")),
            duration_s=None if duration is None else float(duration),
            sample_rate=rate,
            text=str(data.get("text", "")),
        )


def read_manifest(path: Path) -> list[ManifestRow]:
    """Read ``manifest.jsonl`` (or a folder holding one); errors name the file and line."""
    path = path / MANIFEST_NAME if path.is_dir() else path
    if not path.is_file():
        raise DataError(f"manifest not found: {path}")
    rows: list[ManifestRow] = []
    problems: list[str] = []
    for line in read_jsonl_objects(path):
        if line.obj is None:
            problems.append(str(line.problem))
            continue
        try:
            rows.append(ManifestRow.from_dict(line.obj, where=line.where))
        except DataError as exc:
            problems.append(str(exc))
    if problems:
        raise DataError(f"manifest {path} has {len(problems)} bad row(s)", problems)
    if not rows:
        raise DataError(f"manifest {path} has no rows")
    return rows


def write_manifest(rows: Iterable[ManifestRow], path: Path) -> Path:
    """Write rows as JSONL atomically (temporary file, then rename); return the path."""
    path = path / MANIFEST_NAME if path.is_dir() else path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row.as_dict(), ensure_ascii=False, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return path


def manifest_digest(rows: Sequence[ManifestRow]) -> str:
    """Content version of a corpus: SHA-256 over the canonical rows (audio hashes included).

    Row order does not matter; any change to a label, speaker, split or audio byte changes it.
    """
    lines = sorted(json.dumps(row.as_dict(), sort_keys=True, ensure_ascii=False) for row in rows)
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def with_splits(rows: Sequence[ManifestRow], splits: Mapping[str, str]) -> list[ManifestRow]:
    """Return rows with ``split`` set from ``splits`` (keyed by row path)."""
    return [replace(row, split=splits[row.path]) for row in rows]


@dataclass(frozen=True)
class CorpusCard:
    """``corpus.json``: what a corpus is, for people and for lineage."""

    name: str
    feature: str
    labels: tuple[str, ...]
    description: str
    sources: tuple[str, ...]
    recipe: dict[str, Any]
    """How the corpus was made (synthesizer settings and tool versions, or importer and source folders)."""
    synthetic: bool

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["labels"] = list(self.labels)
        data["sources"] = list(self.sources)
        return data

    @classmethod
    def read(cls, folder: Path) -> CorpusCard:
        path = folder / CARD_NAME
        if not path.is_file():
            raise DataError(f"corpus card not found: {path}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                name=str(data["name"]),
                feature=str(data["feature"]),
                labels=tuple(str(x) for x in data["labels"]),
                description=str(data.get("description", "")),
                sources=tuple(str(x) for x in data.get("sources", ())),
                recipe=dict(data.get("recipe", {})),
                synthetic=bool(data.get("synthetic", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"corpus card {path} is malformed: {exc}") from None

    def write(self, folder: Path) -> Path:
        return write_json_atomic(
            folder / CARD_NAME, self.as_dict(), sort_keys=True, ensure_ascii=True, default=None
        )
