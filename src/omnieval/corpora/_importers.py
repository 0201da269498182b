"""Importers for the public speech corpora OmniACBench's evaluators were trained on (appendix C).

Each importer reads a corpus the user downloaded themselves (nothing is fetched here) from a local
folder in the layout its publisher distributes, and returns manifest rows with labels mapped onto
the benchmark's label space. Rows whose original label has no counterpart there (for example
``neutral`` or ``calm`` for emotion) are left out, which reproduces the paper's clip counts:
CREMA-D 6,355, TESS 2,400, RAVDESS 1,888 (speech and song), SAVEE 360.

Layouts read:

- ``crema_d``: ``AudioWAV/<actor>_<sentence>_<EMO>_<level>.wav`` (``ANG DIS FEA HAP NEU SAD``).
- ``tess``: ``<OAF|YAF>_<emotion>/<OAF|YAF>_<word>_<emotion>.wav`` (``ps`` = pleasant surprise).
- ``ravdess``: ``Actor_NN/MM-VV-EE-II-SS-RR-NN.wav`` (modality, vocal channel, emotion code ...).
- ``savee``: ``<DC|JE|JK|KL>/<code><NN>.wav`` or flat ``<SPK>_<code><NN>.wav`` (``a d f h n sa su``).
- ``globe`` / ``edacc``: a metadata table (``metadata.csv``, ``.jsonl`` or ``.parquet``) in the
  folder with a relative audio ``path`` column and the speaker columns the publishers ship
  (GLOBE: ``speaker_id, accent, age, gender``; EDACC: ``speaker, accent, gender`` and optional
  ``age``), as written out from their Hugging Face releases. Accents map onto Australia, India, UK;
  timbre combines gender with an age band (20s-30s adult, 60 and above elderly; other ages are left out).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

from omnieval.corpora._audio import audio_info
from omnieval.corpora._manifest import ManifestRow
from omnieval.errors import DataError
from omnieval.hashing import sha256_file
from omnieval.registry import Registry

Feature = Literal["emotion", "accent", "timbre"]
Importer = Callable[[Path, str], list[ManifestRow]]

IMPORTERS: Registry[Importer] = Registry("corpus importer")

EMOTION_LABELS = ("angry", "disgust", "fear", "joy", "sadness", "surprised")
ACCENT_LABELS = ("Australia", "India", "UK")
TIMBRE_LABELS = ("adult female", "adult male", "elderly female", "elderly male")
FEATURE_LABELS: dict[str, tuple[str, ...]] = {
    "emotion": EMOTION_LABELS,
    "accent": ACCENT_LABELS,
    "timbre": TIMBRE_LABELS,
}

CREMA_D_EMOTIONS = {"ANG": "angry", "DIS": "disgust", "FEA": "fear", "HAP": "joy", "SAD": "sadness"}
TESS_EMOTIONS = {
    "angry": "angry",
    "disgust": "disgust",
    "fear": "fear",
    "happy": "joy",
    "sad": "sadness",
    "ps": "surprised",
    "pleasant_surprise": "surprised",
    "pleasant_surprised": "surprised",
}
RAVDESS_EMOTIONS = {
    "03": "joy",
    "04": "sadness",
    "05": "angry",
    "06": "fear",
    "07": "disgust",
    "08": "surprised",
}
SAVEE_EMOTIONS = {"a": "angry", "d": "disgust", "f": "fear", "h": "joy", "sa": "sadness", "su": "surprised"}

ACCENT_MAP: dict[str, str] = {
    "australian english": "Australia",
    "australia": "Australia",
    "australian": "Australia",
    "india and south asia (india, pakistan, sri lanka)": "India",
    "indian english": "India",
    "india": "India",
    "indian": "India",
    "england english": "UK",
    "english": "UK",
    "england": "UK",
    "scottish english": "UK",
    "scotland english": "UK",
    "welsh english": "UK",
    "wales english": "UK",
    "northern irish": "UK",
    "british": "UK",
    "british english": "UK",
    "southern british english": "UK",
    "northern british english": "UK",
    "uk": "UK",
}
"""Lower-cased accent names of GLOBE (Common Voice accents) and EDACC mapped onto the three classes."""

ADULT_AGES = {"twenties", "thirties", "20s", "30s"}
ELDERLY_AGES = {"sixties", "seventies", "eighties", "nineties", "60s", "70s", "80s", "90s"}


def _audio_files(root: Path, pattern: str = "*.wav") -> list[Path]:
    if not root.is_dir():
        raise DataError(f"corpus folder not found: {root}")
    files = sorted(p for p in root.rglob(pattern) if p.is_file())
    if not files:
        raise DataError(f"no {pattern} files under {root}")
    return files


def describe(path: Path, root: Path, *, label: str, speaker: str, source: str, text: str = "") -> ManifestRow:
    """A manifest row for an existing file, with its hash, duration and sample rate filled in."""
    info = audio_info(path)
    return ManifestRow(
        path=path.relative_to(root).as_posix(),
        label=label,
        speaker=speaker,
        source=source,
        sha256=sha256_file(path),
        duration_s=round(info.duration_s, 4),
        sample_rate=info.sample_rate,
        text=text,
    )


def _need_feature(feature: str, allowed: Iterable[str], importer: str) -> None:
    allowed = tuple(allowed)
    if feature not in allowed:
        raise DataError(f"importer {importer!r} provides labels for {', '.join(allowed)}, not {feature!r}")


#: What an emotion corpus's file name says: (label, or None for an emotion outside the label space;
#: speaker id within the corpus; spoken text, "" when the name does not give it). None skips the file.
NamedClip = tuple[str | None, str, str]


def _crema_d_name(path: Path) -> NamedClip | None:
    """CREMA-D: 91 actors; the actor id is the speaker."""
    parts = path.stem.split("_")
    if len(parts) != 4:
        raise DataError(f"{path}: CREMA-D names look like 1001_DFA_ANG_XX.wav")
    return CREMA_D_EMOTIONS.get(parts[2].upper()), parts[0], ""


def _tess_name(path: Path) -> NamedClip | None:
    """TESS: two speakers (OAF older, YAF younger); the emotion is the last name part."""
    speaker, _, rest = path.stem.partition("_")
    word, _, emotion = rest.partition("_")
    if speaker.upper() not in {"OAF", "YAF"} or not word or not emotion:
        raise DataError(f"{path}: TESS names look like OAF_back_angry.wav")
    return TESS_EMOTIONS.get(emotion.lower()), speaker.upper(), word


_RAVDESS_NAME = re.compile(r"^(\d\d)-(\d\d)-(\d\d)-(\d\d)-(\d\d)-(\d\d)-(\d\d)$")


def _ravdess_name(path: Path) -> NamedClip | None:
    """RAVDESS audio-only speech and song (modality 03); the last code is the actor."""
    match = _RAVDESS_NAME.match(path.stem)
    if match is None:
        raise DataError(f"{path}: RAVDESS names look like 03-01-05-01-01-01-12.wav")
    modality, _channel, emotion, *_rest, actor = match.groups()
    if modality != "03":
        return None
    return RAVDESS_EMOTIONS.get(emotion), actor, ""


_SAVEE_NAME = re.compile(r"^(?:(DC|JE|JK|KL)_)?(sa|su|a|d|f|h|n)(\d\d)$")


def _savee_name(path: Path) -> NamedClip | None:
    """SAVEE: four male speakers; per-speaker folders or ``<SPK>_`` prefixed flat files."""
    match = _SAVEE_NAME.match(path.stem)
    speaker = match.group(1) if match else None
    if match is not None and speaker is None and path.parent.name in {"DC", "JE", "JK", "KL"}:
        speaker = path.parent.name
    if match is None or speaker is None:
        raise DataError(f"{path}: SAVEE names look like DC/a01.wav or DC_a01.wav")
    return SAVEE_EMOTIONS.get(match.group(2)), speaker, ""


def _emotion_importer(source: str, read_name: Callable[[Path], NamedClip | None]) -> Importer:
    """The importer of an emotion corpus whose file names carry the emotion and the speaker.

    The four emotion corpora differ only in how a name reads; walking the audio files, leaving out
    emotions outside the label space and describing each kept clip is the same for all of them.
    Speakers are prefixed with the corpus (``ravdess:12``) so that two corpora never share one.
    """

    def import_emotion_corpus(root: Path, feature: str) -> list[ManifestRow]:
        _need_feature(feature, ("emotion",), source)
        rows = []
        for path in _audio_files(root):
            named = read_name(path)
            if named is None:
                continue
            label, speaker, text = named
            if label is not None:
                rows.append(
                    describe(path, root, label=label, speaker=f"{source}:{speaker}", source=source, text=text)
                )
        return rows

    return import_emotion_corpus


for _source, _read_name in {
    "crema_d": _crema_d_name,
    "tess": _tess_name,
    "ravdess": _ravdess_name,
    "savee": _savee_name,
}.items():
    IMPORTERS.register(_source)(_emotion_importer(_source, _read_name))


def _read_table(root: Path) -> list[dict[str, object]]:
    import pandas as pd

    for name in ("metadata.parquet", "metadata.csv", "metadata.jsonl"):
        path = root / name
        if path.is_file():
            if name.endswith(".parquet"):
                frame = pd.read_parquet(path)
            elif name.endswith(".csv"):
                frame = pd.read_csv(path, dtype=str, keep_default_na=False)
            else:
                frame = pd.read_json(path, lines=True, dtype=False)
            return [{str(k): v for k, v in rec.items()} for rec in frame.to_dict(orient="records")]
    raise DataError(f"{root}: no metadata.parquet, metadata.csv or metadata.jsonl found")


def _timbre(gender: str, age: str) -> str | None:
    gender = gender.strip().lower()
    age = age.strip().lower()
    if gender not in {"female", "male"}:
        return None
    if age in ADULT_AGES or (age.isdigit() and 20 <= int(age) < 40):
        return f"adult {gender}"
    if age in ELDERLY_AGES or (age.isdigit() and int(age) >= 60):
        return f"elderly {gender}"
    return None


def _table_rows(root: Path, feature: str, *, source: str, speaker_column: str) -> list[ManifestRow]:
    _need_feature(feature, ("accent", "timbre"), source)
    records = _read_table(root)
    rows = []
    problems = []
    for number, record in enumerate(records, start=1):
        where = f"{root}: metadata row {number}"
        missing = [c for c in ("path", speaker_column, "accent", "gender") if c not in record]
        if missing:
            raise DataError(f"{where}: missing column(s) {', '.join(missing)}")
        if feature == "accent":
            label = ACCENT_MAP.get(str(record["accent"]).strip().lower())
        else:
            label = _timbre(str(record["gender"]), str(record.get("age", "") or ""))
        if label is None:
            continue
        path = root / str(record["path"])
        if not path.is_file():
            problems.append(f"{where}: audio file {record['path']!r} not found")
            continue
        text = str(record.get("transcript", record.get("text", "")) or "")
        speaker = f"{source}:{record[speaker_column]}"
        rows.append(describe(path, root, label=label, speaker=speaker, source=source, text=text))
    if problems:
        raise DataError(f"{root}: {len(problems)} metadata row(s) point at missing audio", problems)
    return rows


@IMPORTERS.register("globe")
def import_globe(root: Path, feature: str) -> list[ManifestRow]:
    """GLOBE (Common Voice English with speaker accent, age and gender)."""
    return _table_rows(root, feature, source="globe", speaker_column="speaker_id")


@IMPORTERS.register("edacc")
def import_edacc(root: Path, feature: str) -> list[ManifestRow]:
    """EDACC (Edinburgh International Accents of English Corpus)."""
    return _table_rows(root, feature, source="edacc", speaker_column="speaker")


def import_corpus(fmt: str, root: Path, feature: str) -> list[ManifestRow]:
    """Run the importer registered as ``fmt``; paths in the rows are relative to ``root``."""
    rows = IMPORTERS.get(fmt)(root, feature)
    if not rows:
        raise DataError(f"{fmt} importer found no usable clips for {feature!r} under {root}")
    return rows
