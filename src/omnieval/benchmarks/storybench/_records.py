"""Typed records of the Omni-StoryBench release layout (FORMATS.md section 1).

A :class:`Transition` holds one parquet row with its files resolved to absolute paths and its text
files read. :meth:`Transition.task_inputs` is all a system under test may see; the next page's image
and narration are evaluation targets only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Character:
    """A character as listed in the conditions or the book metadata.

    Condition characters carry per-page keys (``emotion``, ``visibility``, ``action``,
    ``speech_intent``) in ``extra``; book characters usually only ``name`` and ``description``.
    ``keys`` remembers the original key order so :meth:`as_dict` gives back the object exactly as the
    dataset stored it (prompt hashes depend on it).
    """

    name: str
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> Character:
        """Build from a JSON object; the caller has checked that ``name`` is a non-empty string."""
        extra = {k: v for k, v in obj.items() if k not in ("name", "description")}
        description = obj.get("description", "")
        return cls(
            name=str(obj["name"]),
            description=description if isinstance(description, str) else str(description),
            extra=extra,
            keys=tuple(obj.keys()),
        )

    def as_dict(self) -> dict[str, Any]:
        """The character as a JSON object, in the dataset's key order when known."""
        full: dict[str, Any] = {"name": self.name, "description": self.description, **self.extra}
        if not self.keys:
            return full
        return {k: full[k] for k in self.keys if k in full}


@dataclass(frozen=True)
class TargetSpeech:
    """The spoken line a system must produce, with its requested delivery. There is no reference audio."""

    name: str
    line: str
    emotion: str
    speed: str
    pitch: str
    gender: str

    def as_dict(self) -> dict[str, str]:
        """``{name, line, emotion, speed, pitch, gender}`` as in FORMATS.md section 1 (the field order)."""
        return asdict(self)


@dataclass(frozen=True)
class BookMetadata:
    """Book-level metadata, identical for every transition of one book."""

    genre: str
    topic: str
    style: str
    narrative_tense: str
    narrative_perspective: str
    characters: tuple[Character, ...]

    def as_dict(self) -> dict[str, Any]:
        """``{genre, topic, style, narrative_tense, narrative_perspective, characters}`` (the field order)."""
        return {**vars(self), "characters": [c.as_dict() for c in self.characters]}


@dataclass(frozen=True)
class NextPageCondition:
    """What the next page must show and say, as given to systems and judges."""

    characters: tuple[Character, ...]
    scene: str
    text_content: str
    ambient_sound: str

    def as_dict(self) -> dict[str, Any]:
        """The condition object exactly as systems and judges see it (note the key ``text content``)."""
        return {
            "characters": [c.as_dict() for c in self.characters],
            "scene": self.scene,
            "text content": self.text_content,
            "ambient_sound": self.ambient_sound,
        }


@dataclass(frozen=True)
class TaskInputs:
    """What a system under test receives: never the next page."""

    instance_id: str
    index: int
    current_image: Path
    current_text: str
    metadata: BookMetadata
    condition: NextPageCondition


@dataclass(frozen=True)
class Transition:
    """One Omni-StoryBench transition (one parquet row), paths absolute, texts loaded.

    ``current_text`` and ``next_text`` are the parquet columns with surrounding whitespace removed
    (validation checks that they equal the text files).
    """

    index: int
    id: str
    source: str
    book: str
    from_key: str
    to_key: str
    current_image: Path
    current_text: str
    next_image: Path
    next_text: str
    metadata: BookMetadata
    condition: NextPageCondition
    target_speech: TargetSpeech
    sample_path: Path
    metadata_path: Path
    current_text_path: Path | None = None
    next_text_path: Path | None = None

    def task_inputs(self) -> TaskInputs:
        """The inputs a system may see for this transition (no next-page image or narration)."""
        return TaskInputs(
            instance_id=self.id,
            index=self.index,
            current_image=self.current_image,
            current_text=self.current_text,
            metadata=self.metadata,
            condition=self.condition,
        )
