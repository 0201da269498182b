"""Column names, label vocabularies and the sample-JSON layout of the Omni-StoryBench release.

These are the facts of FORMATS.md section 1 as data, shared by the record model (``_record.py``,
from which the loader and the dataset gate follow; its fields are :data:`REQUIRED_COLUMNS`, checked
by the tests), the sample generator and the systems' briefs.
"""

from __future__ import annotations

from typing import Final, NamedTuple

PARQUET_RELPATH: Final = "data/omni_storybench.parquet"

REQUIRED_COLUMNS: Final[tuple[str, ...]] = (
    "id",
    "source",
    "book",
    "from_key",
    "to_key",
    "current_image",
    "current_text",
    "current_text_path",
    "next_image",
    "next_text",
    "next_text_path",
    "genre",
    "topic",
    "style",
    "narrative_tense",
    "narrative_perspective",
    "scene",
    "text_instruction",
    "ambient_sound",
    "speech_utterance",
    "speech_speaker",
    "speech_emotion",
    "speech_speed",
    "speech_pitch",
    "speech_gender",
    "condition_characters",
    "book_characters",
    "sample_path",
    "metadata_path",
)

#: Columns holding a path relative to the dataset root, with what the file must be.
IMAGE_COLUMNS: Final = ("current_image", "next_image")
TEXT_PATH_COLUMNS: Final = ("current_text_path", "next_text_path")
JSON_PATH_COLUMNS: Final = ("sample_path", "metadata_path")
PATH_COLUMNS: Final = IMAGE_COLUMNS + TEXT_PATH_COLUMNS + JSON_PATH_COLUMNS

#: What each path column must point to: ``image`` (decodable), ``text`` (UTF-8), ``json`` (an object).
FILE_KINDS: Final[dict[str, str]] = {
    **{c: "image" for c in IMAGE_COLUMNS},
    **{c: "text" for c in TEXT_PATH_COLUMNS},
    **{c: "json" for c in JSON_PATH_COLUMNS},
}

#: Text file column -> the column holding the same narration inline.
TEXT_FILE_OF: Final = {"current_text_path": "current_text", "next_text_path": "next_text"}

CHARACTER_COLUMNS: Final = ("condition_characters", "book_characters")

#: Target speech labels (exact, lower case): FORMATS.md section 1 / PROTOCOLS.md.
SPEECH_LABELS: Final[dict[str, tuple[str, ...]]] = {
    "speech_emotion": ("neutral", "happy", "sad", "angry"),
    "speech_speed": ("slow", "normal", "fast"),
    "speech_pitch": ("low", "normal", "high"),
    "speech_gender": ("female", "male"),
}

METADATA_KEYS: Final = ("genre", "topic", "style", "narrative_tense", "narrative_perspective", "characters")


class SampleField(NamedTuple):
    """Where one parquet column is repeated inside the sample JSON (a key path)."""

    json_path: tuple[str, ...]
    column: str

    @property
    def dotted(self) -> str:
        """The key path as written in messages, e.g. ``next_page_condition['text content']``."""
        return "".join(f".{p}" if p.isidentifier() else f"[{p!r}]" for p in self.json_path).lstrip(".")


#: The nested sample JSON (docs/data.md): every column except ``sample_path`` and ``metadata_path``
#: appears exactly once, in this key order.
SAMPLE_LAYOUT: Final[tuple[SampleField, ...]] = (
    SampleField(("id",), "id"),
    SampleField(("source",), "source"),
    SampleField(("book",), "book"),
    SampleField(("from_key",), "from_key"),
    SampleField(("to_key",), "to_key"),
    SampleField(("input", "current_image"), "current_image"),
    SampleField(("input", "current_text"), "current_text"),
    SampleField(("input", "current_text_path"), "current_text_path"),
    SampleField(("input", "metadata", "genre"), "genre"),
    SampleField(("input", "metadata", "topic"), "topic"),
    SampleField(("input", "metadata", "style"), "style"),
    SampleField(("input", "metadata", "narrative_tense"), "narrative_tense"),
    SampleField(("input", "metadata", "narrative_perspective"), "narrative_perspective"),
    SampleField(("input", "metadata", "characters"), "book_characters"),
    SampleField(("next_page_condition", "characters"), "condition_characters"),
    SampleField(("next_page_condition", "scene"), "scene"),
    SampleField(("next_page_condition", "text content"), "text_instruction"),
    SampleField(("next_page_condition", "ambient_sound"), "ambient_sound"),
    SampleField(("ground_truth", "next_image"), "next_image"),
    SampleField(("ground_truth", "next_text"), "next_text"),
    SampleField(("ground_truth", "next_text_path"), "next_text_path"),
    SampleField(("ground_truth", "speech", "name"), "speech_speaker"),
    SampleField(("ground_truth", "speech", "line"), "speech_utterance"),
    SampleField(("ground_truth", "speech", "emotion"), "speech_emotion"),
    SampleField(("ground_truth", "speech", "speed"), "speech_speed"),
    SampleField(("ground_truth", "speech", "pitch"), "speech_pitch"),
    SampleField(("ground_truth", "speech", "gender"), "speech_gender"),
)


def expected_id(source: str, book: str, from_key: str, to_key: str) -> str:
    """The id a row must carry.

    >>> expected_id("tales", "fox", "p01", "p02")
    'tales/fox/p01__p02'
    """
    return f"{source}/{book}/{from_key}__{to_key}"


def sample_object(row: dict[str, object]) -> dict[str, object]:
    """The nested sample JSON for one parquet row (``SAMPLE_LAYOUT`` order).

    Characters columns stored as JSON strings are decoded so the sample holds real lists.

    >>> obj = sample_object({"id": "s/b/p1__p2", "scene": "a wood", "book_characters": "[]"})
    >>> obj["next_page_condition"], obj["input"]
    ({'scene': 'a wood'}, {'metadata': {'characters': []}})
    """
    import json

    out: dict[str, object] = {}
    for spec in SAMPLE_LAYOUT:
        if spec.column not in row:
            continue
        value = row[spec.column]
        if spec.column in CHARACTER_COLUMNS and isinstance(value, str):
            value = json.loads(value)
        node = out
        for key in spec.json_path[:-1]:
            node = node.setdefault(key, {})  # type: ignore[assignment]
        node[spec.json_path[-1]] = value
    return out
