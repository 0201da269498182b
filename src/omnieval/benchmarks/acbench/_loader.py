"""Load and strictly validate an OmniACBench dataset folder (FORMATS.md section 6).

The folder holds ``manifest.jsonl``: one JSON object per line with ``id, feature, target_value,
script, instruction_audio, instruction_text, image, image_keywords`` and, for pronunciation
instances only, a ``heteronym`` object with the reference pronunciations of both readings::

    {"word": "lead", "reading": "metal",
     "readings": {"metal": ["L", "EH", "D"], "leash": ["L", "IY", "D"]}}

Media paths are relative to the folder. Line order is the candidate index (the candidate of the
``i``-th instance is ``<candidates>/speech/<i>/generated.wav``).

One pass collects every problem (never only the first). Each names the file, the line and the id
when known, and the field, e.g.
``manifest.jsonl line 7 (id ac-0007): target_value: 'loud' is not a value of speech_rate (fast, slow)``.
:func:`validate_acbench` returns them; :func:`load_acbench` raises
:class:`~omnieval.errors.DataError` with all of them. The dataset gate (``_gate.py``) runs the same
per-line checks, so the two never disagree about a line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from omnieval.audio import AudioError, load_audio
from omnieval.data import MANIFEST_NAME as MANIFEST_NAME
from omnieval.data import (
    CheckCache,
    LineProblems,
    Manifest,
    ManifestDataset,
    ManifestLineCheck,
    ManifestReport,
    TextEntry,
    check_file,
    check_manifest_lines,
    fingerprint_manifest,
    load_manifest,
    relative_posix,
    resolve_in_root,
    sha256_text,
    show_value,
    validate_manifest,
)

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

#: Fields that name a media file, with the kind of file they must decode as.
MEDIA_FIELDS: dict[str, str] = {"instruction_audio": "audio", "image": "image"}

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

    @property
    def other_readings(self) -> dict[str, tuple[str, ...]]:
        """The readings that are not the target (key -> phones)."""
        return {k: v for k, v in self.readings.items() if k != self.reading}

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
class AcbenchDataset(ManifestDataset[AcbenchInstance]):
    """A validated OmniACBench folder. ``instances[i].index == i`` (manifest line order)."""


@dataclass(frozen=True)
class AcbenchReport(ManifestReport[AcbenchDataset]):
    """Outcome of :func:`validate_acbench` (a :class:`~omnieval.data._jsonl_manifest.ManifestReport`)."""


@dataclass(frozen=True)
class MediaCheck:
    """One media field of one line: where it resolved and what is wrong with it ('' when fine)."""

    path: Path | None
    problem: str

    @property
    def present(self) -> bool:
        """The path is relative, stays inside the folder and names an existing file."""
        return self.path is not None

    @property
    def decodable(self) -> bool:
        """Present and decodes as its kind."""
        return self.path is not None and not self.problem


@dataclass(frozen=True)
class LineCheck(ManifestLineCheck):
    """Everything the validator found on one non-blank OmniACBench manifest line.

    Attributes (besides :class:`~omnieval.data._jsonl_manifest.ManifestLineCheck`'s):
        feature: Canonical feature, None when missing or unknown.
        target_value: Canonical target value, None when missing or not a value of the feature.
        media: Media field -> its check (absent when the field is missing).
        instance: The typed record when the line has no problem.
    """

    # A heteronym problem names its sub-field (heteronym.reading); the gate's heteronym column wants all.
    NESTED_FIELDS: ClassVar[bool] = True

    feature: str | None = None
    target_value: str | None = None
    media: Mapping[str, MediaCheck] = field(default_factory=dict)
    instance: AcbenchInstance | None = None


class _MediaCache(CheckCache[MediaCheck]):
    """File checks by (kind, relative path): many lines may share one picture or clip."""

    def check(self, rel: object, kind: str) -> MediaCheck:
        return self.once((kind, str(rel)), lambda: _check_media(self.root, rel, kind))


def _check_media(root: Path, rel: object, kind: str) -> MediaCheck:
    if kind == "image":
        checked = check_file(root, rel, "image")
        return MediaCheck(checked.path, checked.problem)
    # check_file knows no audio; the same containment rules, then a full decode.
    resolved, problem = resolve_in_root(root, rel)
    if resolved is None:
        return MediaCheck(None, problem)
    try:
        load_audio(resolved)
    except AudioError as exc:
        return MediaCheck(resolved, f"{rel}: {exc.detail}")
    return MediaCheck(resolved, "")


def check_lines(root: Path) -> tuple[list[LineCheck], list[str]]:
    """Run the OmniACBench line checks (fields, feature and target, media, heteronym).

    Args:
        root: The dataset folder.

    Returns:
        The checked lines in file order, and problems of the folder as a whole (see
        :func:`~omnieval.data._jsonl_manifest.check_manifest_lines`).
    """
    return check_manifest_lines(root, LineCheck, _MediaCache, _check_record)


def _check_record(
    obj: dict[str, Any], number: int, index: int, media: _MediaCache, first_line_of: dict[str, int]
) -> LineCheck:
    """Check one OmniACBench line; ``first_line_of`` maps ids seen so far to their line (updated here)."""
    problems = LineProblems()
    bad = problems.add

    rid = obj.get("id")
    if isinstance(rid, str) and rid.strip():
        if rid in first_line_of:
            bad("id", f"duplicate of line {first_line_of[rid]}")
        else:
            first_line_of[rid] = number
    for name in REQUIRED_FIELDS:
        if name not in obj:
            bad(name, "missing field")
    for name in ("id", "script", "instruction_text"):
        problems.nonblank_text(obj, name)

    feature = target = None
    if "feature" in obj:
        raw = obj["feature"]
        if not isinstance(raw, str):
            bad("feature", f"expected a string, got {show_value(raw)}")
        else:
            feature = canonical_feature(raw)
            if feature is None:
                bad("feature", f"{raw!r} is not a feature ({', '.join(FEATURES)})")
    if "target_value" in obj:
        raw = obj["target_value"]
        if not isinstance(raw, str):
            bad("target_value", f"expected a string, got {show_value(raw)}")
        elif feature is not None:
            target = canonical_target(feature, raw)
            if target is None:
                bad("target_value", f"{raw!r} is not a value of {feature} ({', '.join(FEATURES[feature])})")

    keywords: tuple[str, ...] = ()
    if "image_keywords" in obj:
        raw = obj["image_keywords"]
        if not isinstance(raw, list) or not raw:
            bad("image_keywords", f"expected a non-empty list of strings, got {show_value(raw)}")
        elif not all(isinstance(k, str) and k.strip() for k in raw):
            bad("image_keywords", "every keyword must be a non-empty string")
        else:
            keywords = tuple(k.strip() for k in raw)

    found: dict[str, MediaCheck] = {}
    for name, kind in MEDIA_FIELDS.items():
        if name in obj:
            found[name] = media.check(obj[name], kind)
            if found[name].problem:
                bad(name, found[name].problem)

    heteronym = None
    raw_heteronym = obj.get("heteronym")
    if feature == PRONUNCIATION:
        if raw_heteronym is None:
            bad("heteronym", "missing field (required for pronunciation instances)")
        else:
            heteronym = _check_heteronym(raw_heteronym, obj.get("script"), bad)
    elif raw_heteronym is not None and feature is not None:
        bad("heteronym", f"only pronunciation instances carry one (this line's feature is {feature})")

    instance = None
    if not problems and feature is not None and target is not None:
        instance = AcbenchInstance(
            index=index,
            id=obj["id"],
            feature=feature,
            target_value=target,
            script=obj["script"],
            instruction_audio=found["instruction_audio"].path,  # type: ignore[arg-type]
            instruction_text=obj["instruction_text"],
            image=found["image"].path,  # type: ignore[arg-type]
            image_keywords=keywords,
            heteronym=heteronym,
        )
    return LineCheck(number, index, obj, tuple(problems), feature, target, found, instance)


def _check_heteronym(value: object, script: object, bad: Callable[[str, str], None]) -> HeteronymRef | None:
    """The typed heteronym object, or None after reporting what is wrong with it through ``bad``."""
    if not isinstance(value, dict):
        bad("heteronym", f"expected an object with word, reading and readings, got {show_value(value)}")
        return None
    ok = True
    for name in ("word", "reading", "readings"):
        if name not in value:
            bad(f"heteronym.{name}", "missing field")
            ok = False
    word, reading, readings = value.get("word"), value.get("reading"), value.get("readings")
    if "word" in value and (not isinstance(word, str) or not word.strip()):
        bad("heteronym.word", f"expected a non-empty string, got {show_value(word)}")
        ok = False
    elif (
        isinstance(word, str)
        and isinstance(script, str)
        and not re.search(rf"\b{re.escape(word.strip())}\b", script, re.IGNORECASE)
    ):
        bad("heteronym.word", f"{word!r} does not occur in the script")
        ok = False
    parsed: dict[str, tuple[str, ...]] = {}
    if "readings" in value:
        if not isinstance(readings, dict) or len(readings) < 2:
            bad(
                "heteronym.readings",
                f"expected an object with at least two readings, got {show_value(readings)}",
            )
            ok = False
        else:
            for key, phones in readings.items():
                problem = _phones_problem(phones)
                if problem:
                    bad(f"heteronym.readings.{key}", problem)
                    ok = False
                else:
                    parsed[key] = tuple(phones)
            if ok and len(set(parsed.values())) < len(parsed):
                bad("heteronym.readings", "two readings have the same phones")
                ok = False
    if "reading" in value:
        if not isinstance(reading, str) or not reading:
            bad("heteronym.reading", f"expected a reading key, got {show_value(reading)}")
            ok = False
        elif isinstance(readings, dict) and reading not in readings:
            known = ", ".join(str(k) for k in readings)
            bad("heteronym.reading", f"{reading!r} is not a key of heteronym.readings ({known})")
            ok = False
    if not ok:
        return None
    return HeteronymRef(str(word).strip(), str(reading), parsed)


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


def validate_acbench(root: Path) -> AcbenchReport:
    """Check an OmniACBench folder without raising for data problems.

    Checks: ``manifest.jsonl`` exists and every non-blank line is a UTF-8 JSON object; every
    required field is present with the right type; the feature is known and the target value is
    one of its values (case-insensitive, stored canonically); script and instruction text are not
    empty; ids are unique; media paths are relative, stay inside ``root`` (symlinks resolved), exist
    and decode (WAV via soundfile, images via PIL verify and load); pronunciation instances carry a
    valid ``heteronym`` object and no other instance does.

    ``root`` is the folder holding ``manifest.jsonl``. When the report is ``ok`` its ``dataset``
    holds the typed instances in line order.
    """
    return validate_manifest(root, check_lines, AcbenchDataset, AcbenchReport)


def load_acbench(root: Path) -> AcbenchDataset:
    """Load an OmniACBench folder into typed instances, or raise with every problem.

    Raises:
        DataError: listing each problem (file, line, id, field); exit code 2 in the CLI.
    """
    return load_manifest("acbench", root, validate_acbench(root))


#: Text fields hashed per instance by :func:`fingerprint_acbench`.
TEXT_FIELDS: tuple[str, ...] = ("script", "instruction_text", "image_keywords")


def fingerprint_acbench(dataset: AcbenchDataset) -> Manifest:
    """Hash the manifest, every media file and each instance's normalized texts.

    The manifest's bytes carry features, targets and heteronym phones, so any change to them changes
    the digest; media shared by several lines are listed once. Absolute paths never enter the
    digest, so the same data in another folder has the same digest.

    Args:
        dataset: A loaded dataset.

    Returns:
        The fingerprint; ``table`` entry is ``manifest.jsonl``.
    """
    media = (p for inst in dataset.instances for p in (inst.instruction_audio, inst.image))
    texts = (
        TextEntry(inst.id, name, sha256_text(text))
        for inst in dataset.instances
        for name, text in _texts(inst)
    )
    return fingerprint_manifest(dataset, media, texts)


def _texts(inst: AcbenchInstance) -> tuple[tuple[str, str], ...]:
    """``(field, text)`` of each of :data:`TEXT_FIELDS` (keywords joined with ``"; "``)."""
    return (
        ("script", inst.script),
        ("instruction_text", inst.instruction_text),
        ("image_keywords", "; ".join(inst.image_keywords)),
    )


#: Columns of :func:`acbench_frame`, in order.
FRAME_COLUMNS: tuple[str, ...] = ("index", *REQUIRED_FIELDS, "heteronym_word", "heteronym_reading")


def acbench_frame(dataset: AcbenchDataset) -> pd.DataFrame:
    """One row per instance with plain columns (strings and the integer index).

    Media paths are relative to the dataset folder (POSIX), keywords are joined with ``"; "``, and
    the heteronym columns are ``""`` outside pronunciation. Used as the MLflow dataset input.
    """
    import pandas as pd

    root = dataset.root
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
        for inst in dataset.instances
    ]
    return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
