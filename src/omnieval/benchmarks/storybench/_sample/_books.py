"""The four picture books of the sample dataset: typed models of ``books.yaml`` and its reader.

The stories are data (``books.yaml`` beside this module): metadata, pages (narration plus what the
illustration shows) and one annotation per page transition (next-page conditions and the target
speech line). This module only says what a book is (:class:`Book` and its parts, frozen pydantic
models that refuse unknown keys) and reads the file (:func:`load_books`), failing with the file and
the field when it is wrong. Coordinates are on the 512 x 512 drawing canvas (x right, y down; an
actor's ``y`` is where its feet touch the ground).

Example:
    >>> [(b.key, len(b.pages), len(b.steps)) for b in BOOKS][:2]
    [('pip-and-the-brass-lantern', 6, 5), ('marta-of-gull-rock', 6, 5)]
    >>> BOOKS[0].steps[0].characters[0].name
    'Pip'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from omnieval.benchmarks.storybench._schema import SPEECH_LABELS
from omnieval.errors import ConfigError, validation_problems

BOOKS_FILE: Final[Path] = Path(__file__).with_name("books.yaml")
"""The shipped sample books (package data)."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Actor(_Strict):
    """A recurring character placed on a page; ``mood`` picks the face, ``pose`` the body."""

    name: str
    """One of the book's characters (drawn by the painter's routine for that name)."""
    x: int
    """Horizontal position on the 512-pixel canvas, in pixels from the left."""
    y: int
    """Where the feet touch the ground, in pixels from the top of the 512-pixel canvas."""
    scale: float = 1.0
    """Size relative to the character's drawing routine (1.0 = as drawn)."""
    mood: str = "calm"
    """Facial expression (``calm``, ``happy``, ``sad``, ``surprised``, ...)."""
    pose: str = "stand"
    """Body pose (``stand``, ``fly``, ...)."""
    flip: bool = False
    """Mirror the character horizontally (facing left instead of right)."""


class Prop(_Strict):
    """A scene object (``kind`` names a drawing routine of the book's painter)."""

    kind: str
    """The painter's routine (``oak``, ``lantern``, ``stream``, ...)."""
    x: int = 0
    """Anchor position on the 512-pixel canvas, in pixels from the left (unused by scene-wide props)."""
    y: int = 0
    """Anchor position in pixels from the top (unused by scene-wide props)."""
    scale: float = 1.0
    """Size relative to the routine's drawing (1.0 = as drawn)."""


class Page(_Strict):
    """One page: narration and the illustration's content."""

    key: str
    """The page's id within its book (``p01``): file names and transition ids."""
    text: str
    """The page's narration, written to ``texts/<source>/<book>/<key>.txt``."""
    time: str
    """Time of day: which of the painter's skies (``morning``, ``night``, ``storm``, ...)."""
    actors: tuple[Actor, ...] = ()
    """Characters drawn on the page, back to front."""
    props: tuple[Prop, ...] = ()
    """Scene objects, in drawing order."""


class Character(_Strict):
    """A character of the book metadata (FORMATS.md section 1: ``book_characters``)."""

    name: str
    description: str


class PageCharacter(_Strict):
    """A character as the next-page conditions ask for it (``condition_characters``)."""

    name: str
    emotion: str
    visibility: str
    action: str
    speech_intent: str
    """What the character says on the page, in words (``stays silent`` when nothing)."""


class Step(_Strict):
    """Annotation of the transition into a page: next-page conditions and the target speech line."""

    characters: tuple[PageCharacter, ...]
    scene: str
    text_instruction: str
    ambient_sound: str
    speaker: str
    """Who speaks the target line (one of :attr:`characters`)."""
    line: str
    emotion: str
    speed: str
    pitch: str
    gender: str

    @field_validator("emotion", "speed", "pitch", "gender")
    @classmethod
    def _known_label(cls, value: str, info: ValidationInfo) -> str:
        allowed = SPEECH_LABELS[f"speech_{info.field_name}"]
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
        return value


class Book(_Strict):
    """A book; ``steps[i]`` annotates the transition ``pages[i] -> pages[i + 1]``."""

    source: str
    """The collection (first path component of every file of the book)."""
    key: str
    """The book's id within its collection."""
    painter: str
    """Which painter of ``_draw.py`` draws the book (palette, setting, characters)."""
    genre: str
    topic: str
    style: str
    narrative_tense: str
    narrative_perspective: str
    characters: tuple[Character, ...]
    pages: tuple[Page, ...]
    steps: tuple[Step, ...]

    @model_validator(mode="after")
    def _one_step_per_turn(self) -> Book:
        if len(self.steps) != len(self.pages) - 1:
            raise ValueError(
                f"{len(self.pages)} pages need {len(self.pages) - 1} steps, not {len(self.steps)}"
            )
        return self

    def metadata(self) -> dict[str, Any]:
        """The book metadata object of FORMATS.md section 1."""
        return {
            "genre": self.genre,
            "topic": self.topic,
            "style": self.style,
            "narrative_tense": self.narrative_tense,
            "narrative_perspective": self.narrative_perspective,
            "characters": [c.model_dump() for c in self.characters],
        }


class _BooksFile(_Strict):
    books: tuple[Book, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> _BooksFile:
        ids = [f"{b.source}/{b.key}" for b in self.books]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"book(s) listed twice: {', '.join(twice)}")
        return self


def load_books(path: Path = BOOKS_FILE) -> tuple[Book, ...]:
    """The books of a books file (``books.yaml``'s layout), validated.

    Raises:
        ConfigError: the file cannot be read, is not YAML, or a field is missing, unknown or wrong;
            the message names the file and each field by its path (``books.0.steps.2.emotion``).
    """
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the sample books: {exc}") from None
    try:
        return _BooksFile.model_validate(raw).books
    except ValidationError as exc:
        raise ConfigError(validation_problems(f"{path}: invalid sample books", exc)) from None


BOOKS: Final[tuple[Book, ...]] = load_books()
"""The shipped books, in dataset order."""
