"""The record model of one OmniACBench manifest line (FORMATS.md section 6), and the dataset it makes.

The folder holds ``manifest.jsonl``: one JSON object per line with ``id, feature, target_value,
script, instruction_audio, instruction_text, image, image_keywords`` and, for pronunciation
instances only, a ``heteronym`` object with the reference pronunciations of both readings::

    {"word": "lead", "reading": "metal",
     "readings": {"metal": ["L", "EH", "D"], "leash": ["L", "IY", "D"]}}

Media paths are relative to the folder. Line order is the candidate index (the candidate of the
``i``-th instance is ``<candidates>/speech/<i>/generated.wav``).

:class:`AcbenchRecord` states what a valid line is; the record framework
(:mod:`omnieval.benchmarks._records`) reads the manifest against it in one pass that collects every
problem, each naming the file, the line, the id when known and the field, e.g.
``manifest.jsonl line 7 (id ac-0007): target_value: 'loud' is not a value of speech_rate (fast, slow)``,
checks and hashes the media it names, and derives the dataset gate from it, so the loader and the
gate never disagree about a line. The benchmark's ``validate`` returns the problems;
:func:`load_acbench` raises :class:`~omnieval.errors.DataError` with all of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from omnieval.benchmarks._base import DatasetReport
from omnieval.benchmarks._declared import RecordDataset, load_records, validate_records
from omnieval.benchmarks._records import (
    MANIFEST,
    JsonLines,
    Media,
    Record,
    Text,
    fingerprint_records,
    problem,
    problems,
)
from omnieval.data import MANIFEST_NAME as MANIFEST_NAME
from omnieval.data import Manifest, relative_posix, show_value

if TYPE_CHECKING:
    import pandas as pd

#: Fields every manifest line must have (FORMATS.md section 6).
REQUIRED_FIELDS: tuple[str, ...] = (
    "id",
    "feature",
    "target_value",
    "script",
    "instruction_audio",
    "instruction_text",
    "image",
    "image_keywords",
)

#: Acoustic features and their target values, in canonical spelling (FORMATS.md section 3).
FEATURES: dict[str, tuple[str, ...]] = {
    "speech_rate": ("fast", "slow"),
    "phonation": ("whisper",),
    "pronunciation": ("heteronym",),
    "emotion": ("angry", "disgust", "fear", "joy", "sadness", "surprised"),
    "accent": ("Australia", "India", "UK"),
    "timbre": ("adult female", "adult male", "elderly female", "elderly male"),
}

#: Other spellings of a feature key accepted on input (the paper calls the accent "Global Accent").
FEATURE_ALIASES: dict[str, str] = {"global_accent": "accent"}

#: The feature whose instances carry a ``heteronym`` object.
PRONUNCIATION = "pronunciation"


def canonical_feature(value: object) -> str | None:
    """The canonical feature key of ``value`` (any case, spaces or hyphens), or None when unknown.

    >>> canonical_feature("Speech Rate"), canonical_feature("global-accent"), canonical_feature("pitch")
    ('speech_rate', 'accent', None)
    """
    if not isinstance(value, str):
        return None
    key = re.sub(r"[\s\-]+", "_", value.strip().lower())
    key = FEATURE_ALIASES.get(key, key)
    return key if key in FEATURES else None


def canonical_target(feature: str, value: object) -> str | None:
    """The canonical spelling of target ``value`` of ``feature`` (case-insensitive), or None.

    >>> canonical_target("accent", "uk"), canonical_target("timbre", "Elderly_Male")
    ('UK', 'elderly male')
    >>> canonical_target("speech_rate", "loud") is None
    True
    """
    if not isinstance(value, str) or feature not in FEATURES:
        return None
    wanted = _fold(value)
    return next((v for v in FEATURES[feature] if _fold(v) == wanted), None)


def _fold(text: str) -> str:
    return " ".join(re.sub(r"[_\-]", " ", text).split()).casefold()


@dataclass(frozen=True)
class HeteronymRef:
    """The pronunciation target of a pronunciation instance.

    Attributes:
        word: The heteronym as written in the script (e.g. ``"lead"``).
        reading: Key of the target reading in ``readings``.
        readings: Reading key -> reference ARPAbet phones of the word alone (stress digits kept as
            given); every reading of the word, so a metric can tell which one was spoken.
    """

    word: str
    reading: str
    readings: Mapping[str, tuple[str, ...]] = field(hash=False)

    @property
    def target_phones(self) -> tuple[str, ...]:
        """ARPAbet phones of the target reading."""
        return self.readings[self.reading]

    def to_json(self) -> dict[str, Any]:
        """The manifest form of this object."""
        return {
            "word": self.word,
            "reading": self.reading,
            "readings": {k: list(v) for k, v in self.readings.items()},
        }


@dataclass(frozen=True)
class AcbenchInstance:
    """One manifest line. Media paths are absolute (resolved inside the dataset folder).

    Attributes:
        index: Position among the manifest's non-blank lines (0-based); the candidate index.
        id: Dataset id, unique in the manifest.
        feature: Canonical feature key (a key of :data:`FEATURES`).
        target_value: Canonical target value of ``feature``.
        script: The text to read aloud.
        instruction_audio: The spoken instruction (WAV).
        instruction_text: The instruction as text (what the audio says).
        image: The picture that implies the target value.
        image_keywords: Words describing the picture (the text stand-in for the image).
        heteronym: The pronunciation target; set exactly for pronunciation instances.
    """

    index: int
    id: str
    feature: str
    target_value: str
    script: str
    instruction_audio: Path
    instruction_text: str
    image: Path
    image_keywords: tuple[str, ...]
    heteronym: HeteronymRef | None = None


@dataclass(frozen=True)
class AcbenchDataset(RecordDataset[AcbenchInstance]):
    """A validated OmniACBench folder. ``instances[i].index == i`` (manifest line order)."""

    def frame(self) -> pd.DataFrame:
        """One row per instance with plain columns (strings and the integer index): media paths
        relative to the folder (POSIX), keywords joined with ``"; "``, the heteronym columns ``""``
        outside pronunciation. Used as the MLflow dataset input."""
        import pandas as pd

        root = self.root
        rows = [
            {
                "index": inst.index,
                "id": inst.id,
                "feature": inst.feature,
                "target_value": inst.target_value,
                "script": inst.script,
                "instruction_audio": relative_posix(root, inst.instruction_audio),
                "instruction_text": inst.instruction_text,
                "image": relative_posix(root, inst.image),
                "image_keywords": "; ".join(inst.image_keywords),
                "heteronym_word": inst.heteronym.word if inst.heteronym else "",
                "heteronym_reading": inst.heteronym.reading if inst.heteronym else "",
            }
            for inst in self.instances
        ]
        return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))


Feature = Literal["speech_rate", "phonation", "pronunciation", "emotion", "accent", "timbre"]
"""The canonical feature keys (those of :data:`FEATURES`)."""


class AcbenchRecord(Record):
    """One manifest line as its checks read it (fields in the order the problems of a line are named).

    Values are stored canonically (feature key, target spelling, stripped keywords); media are
    absolute paths of files that decode (WAV via soundfile, images via PIL verify and load).
    """

    # Keys beyond these fields are ignored, as they always were: manifests in use may carry notes.
    model_config = ConfigDict(frozen=True, extra="ignore")
    gate_fields: ClassVar[tuple[str, ...]] = (
        "script",
        "instruction_text",
        "target_value",
        "image_keywords",
        "heteronym",
    )
    hashed_texts: ClassVar[tuple[str, ...]] = ("script", "instruction_text", "image_keywords")

    id: Text
    script: Text
    instruction_text: Text
    feature: Feature
    target_value: str
    image_keywords: tuple[str, ...]
    instruction_audio: Annotated[Path, Media("audio")]
    image: Annotated[Path, Media("image")]
    heteronym: HeteronymRef | None = Field(default=None, validate_default=True)
    """Set exactly on pronunciation lines (required there, refused elsewhere)."""

    @field_validator("feature", mode="before")
    @classmethod
    def _feature(cls, raw: object) -> str:
        if not isinstance(raw, str):
            raise problem(f"expected a string, got {show_value(raw)}")
        feature = canonical_feature(raw)
        if feature is None:
            raise problem(f"{raw!r} is not a feature ({', '.join(FEATURES)})")
        return feature

    @field_validator("target_value", mode="plain")
    @classmethod
    def _target(cls, raw: object, info: ValidationInfo) -> str:
        if not isinstance(raw, str):
            raise problem(f"expected a string, got {show_value(raw)}")
        feature = info.data.get("feature")
        if feature is None:  # the feature's own problem is reported; a target of nothing is not checked
            return raw
        target = canonical_target(feature, raw)
        if target is None:
            raise problem(f"{raw!r} is not a value of {feature} ({', '.join(FEATURES[feature])})")
        return target

    @field_validator("image_keywords", mode="plain")
    @classmethod
    def _keywords(cls, raw: object) -> tuple[str, ...]:
        if not isinstance(raw, list) or not raw:
            raise problem(f"expected a non-empty list of strings, got {show_value(raw)}")
        if not all(isinstance(k, str) and k.strip() for k in raw):
            raise problem("every keyword must be a non-empty string")
        return tuple(k.strip() for k in raw)

    @field_validator("heteronym", mode="plain")
    @classmethod
    def _heteronym(cls, raw: object, info: ValidationInfo) -> HeteronymRef | None:
        feature = info.data.get("feature")
        if feature == PRONUNCIATION:
            if raw is None:
                raise problem("missing field (required for pronunciation instances)")
            found = _heteronym_problems(raw, info.data.get("script"))
            if found:
                raise problems(found)
            assert isinstance(raw, dict)
            readings = {key: tuple(phones) for key, phones in raw["readings"].items()}
            return HeteronymRef(str(raw["word"]).strip(), str(raw["reading"]), readings)
        if raw is not None and feature is not None:
            raise problem(f"only pronunciation instances carry one (this line's feature is {feature})")
        return None

    def instance(self, index: int, line: int) -> AcbenchInstance:
        """The typed instance at position ``index`` (what the stages and metrics read): the
        record's validated fields as they are."""
        return AcbenchInstance(index=index, **dict(self))


#: Where the records come from: ``manifest.jsonl``, its problems worded as the manifest benchmarks' are.
SOURCE = JsonLines(MANIFEST_NAME, MANIFEST)


def _heteronym_problems(value: object, script: object) -> list[tuple[str, str]]:
    """What is wrong with a heteronym object: ``(field under heteronym, why)`` pairs ('' = the object)."""
    if not isinstance(value, dict):
        return [("", f"expected an object with word, reading and readings, got {show_value(value)}")]
    found = [(name, "missing field") for name in ("word", "reading", "readings") if name not in value]
    word, reading, readings = value.get("word"), value.get("reading"), value.get("readings")
    if "word" in value and (not isinstance(word, str) or not word.strip()):
        found.append(("word", f"expected a non-empty string, got {show_value(word)}"))
    elif (
        isinstance(word, str)
        and isinstance(script, str)
        and not re.search(rf"\b{re.escape(word.strip())}\b", script, re.IGNORECASE)
    ):
        found.append(("word", f"{word!r} does not occur in the script"))
    if "readings" in value:
        if not isinstance(readings, dict) or len(readings) < 2:
            found.append(
                ("readings", f"expected an object with at least two readings, got {show_value(readings)}")
            )
        else:
            found += [
                (f"readings.{key}", why)
                for key, phones in readings.items()
                if (why := _phones_problem(phones))
            ]
            if not found and len({tuple(phones) for phones in readings.values()}) < len(readings):
                found.append(("readings", "two readings have the same phones"))
    if "reading" in value:
        if not isinstance(reading, str) or not reading:
            found.append(("reading", f"expected a reading key, got {show_value(reading)}"))
        elif isinstance(readings, dict) and reading not in readings:
            known = ", ".join(str(k) for k in readings)
            found.append(("reading", f"{reading!r} is not a key of heteronym.readings ({known})"))
    return found


def _phones_problem(phones: object) -> str:
    """'' when ``phones`` is a non-empty list of ARPAbet phones (vowels may carry stress 0-2), else why not."""
    from omnieval.backends.phones import ARPABET

    if not isinstance(phones, list) or not phones:
        return f"expected a non-empty list of ARPAbet phones, got {show_value(phones)}"
    for phone in phones:
        if not isinstance(phone, str):
            return f"expected ARPAbet phone strings, got {show_value(phone)}"
        base, stress = (phone[:-1], phone[-1]) if phone[-1:].isdigit() else (phone, "")
        vowel = base in ARPABET and base[0] in "AEIOU"
        if base not in ARPABET or (stress and (not vowel or stress not in "012")):
            return f"{phone!r} is not an ARPAbet phone"
    return ""


def validate_acbench(root: Path) -> DatasetReport:
    """The problems of an OmniACBench folder, never raising on bad data (:func:`load_acbench`)."""
    return validate_records(root, AcbenchRecord, SOURCE, AcbenchDataset)


def load_acbench(root: Path) -> AcbenchDataset:
    """Load an OmniACBench folder into typed instances, or raise with every problem.

    Checks (:class:`AcbenchRecord`): ``manifest.jsonl`` exists and every non-blank line is a UTF-8
    JSON object; every required field is present with the right type; the feature is known and the
    target value is one of its values (case-insensitive, stored canonically); script and
    instruction text are not empty; ids are unique; media paths are relative, stay inside ``root``
    (symlinks resolved), exist and decode; pronunciation instances carry a valid ``heteronym``
    object and no other instance does.

    Raises:
        DataError: listing each problem (file, line, id, field); exit code 2 in the CLI.
    """
    return load_records("acbench", root, AcbenchRecord, SOURCE, AcbenchDataset)


def fingerprint_acbench(dataset: AcbenchDataset) -> Manifest:
    """The dataset's SHA-256 manifest: the manifest file, every media file once, the hashed texts."""
    return fingerprint_records(dataset.root, dataset.table, AcbenchRecord, dataset.records)


#: Columns of :meth:`AcbenchDataset.frame`, in order.
FRAME_COLUMNS: tuple[str, ...] = ("index", *REQUIRED_FIELDS, "heteronym_word", "heteronym_reading")
