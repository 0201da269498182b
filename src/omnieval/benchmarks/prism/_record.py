"""The record model of one PRISM-Bench manifest line (FORMATS.md section 6), and the dataset it makes.

The folder holds ``manifest.jsonl``: one JSON object per line. Required fields:

- ``id`` (non-empty string, unique),
- ``subset`` (``on_screen``, ``off_screen`` or ``mixed``, exactly so spelled),
- ``active_tags`` (a list of tags such as ``["SPEECH_A", "MUSIC_B"]`` forming a valid combination for
  the subset, :func:`~omnieval.benchmarks.prism._tags.valid_tag_sets`),
- ``caption`` (the text prompt; non-empty),
- ``reference_video`` (the ground-truth clip, relative to the folder).

Optional fields (the generated sample fills them; a real release may leave them out):

- ``visual_events``: seconds at which a drawn on-screen action starts a sound (an impact, a key
  lighting up), in ``[0, duration]``; what an onset check compares audio onsets with.
- ``speaker``: a short description of the voice(s) heard (string).
- ``notes``: free text about how the clip was made (string).
- ``meta``: any JSON object, carried through untouched (put your own bookkeeping here).

Any other key is an error (so a misspelt optional field is not silently dropped).

``reference_video`` must be an mp4 (or any container ffprobe reads) with a video and an audio
stream, a duration of :data:`DURATION_RANGE_S` seconds and a frame rate of :data:`FPS_RANGE`
frames per second; the start of each stream is decoded to catch garbage packets.

Line order is the candidate index: the candidate of the ``i``-th instance is
``<candidates>/video/<i>/generated.mp4`` (:func:`candidate_video`).

:class:`PrismRecord` states what a valid line is; the record framework
(:mod:`omnieval.benchmarks._records`) reads the manifest against it in one pass that collects every
problem, each naming the line, the id when known and the field, e.g.
``manifest.jsonl line 4 (id on-03): active_tags: tag MUSIC_B is not valid for subset on_screen``,
checks and hashes the clips, and derives the dataset gate from it, so the loader and the gate never
disagree about a line. The benchmark's ``validate`` returns the problems; :func:`load_prism`
raises :class:`~omnieval.errors.DataError` with all of them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from omnieval.benchmarks._base import DatasetSummary
from omnieval.benchmarks._declared import RecordDataset, load_records, validate_records
from omnieval.benchmarks._records import MANIFEST, JsonLines, Media, Record, RowContext, Text, problem
from omnieval.benchmarks.prism._media import MediaError, MediaInfo, probe
from omnieval.benchmarks.prism._tags import SUBSETS, TAGS, Cell, active_cells, parse_tag, tag_set_problem
from omnieval.candidates import Modality, output_path
from omnieval.data import MANIFEST_NAME as MANIFEST_NAME
from omnieval.data import relative_posix, show_value

if TYPE_CHECKING:
    import pandas as pd

    from omnieval.benchmarks._base import DatasetReport

#: Fields every manifest line must have (FORMATS.md section 6).
REQUIRED_FIELDS: tuple[str, ...] = ("id", "subset", "active_tags", "caption", "reference_video")

#: Fields a line may have besides the required ones.
OPTIONAL_FIELDS: tuple[str, ...] = ("visual_events", "speaker", "notes", "meta")

#: Accepted reference clip duration in seconds (inclusive).
DURATION_RANGE_S: tuple[float, float] = (0.5, 120.0)

#: Accepted reference frame rate in frames per second (inclusive).
FPS_RANGE: tuple[float, float] = (5.0, 120.0)

#: Seconds of each stream decoded by the validator (ffprobe alone reads only headers).
DECODE_CHECK_S = 1.0


@dataclass(frozen=True)
class PrismInstance:
    """One manifest line. ``reference_video`` is absolute (resolved inside the dataset folder).

    Attributes:
        id: Dataset id, unique in the manifest.
        index: Position among the manifest's non-blank lines (0-based); the candidate index.
        subset: ``on_screen``, ``off_screen`` or ``mixed``.
        active_tags: The tags, in :data:`~omnieval.benchmarks.prism._tags.TAGS` order.
        caption: The text prompt.
        reference_video: The ground-truth clip.
        line: 1-based line number in ``manifest.jsonl``.
        visual_events: Seconds of drawn on-screen sound events, ascending (optional).
        speaker: Description of the voice(s), ``""`` when not given.
        notes: Free text, ``""`` when not given.
        meta: The line's ``meta`` object (empty when not given).
    """

    id: str
    index: int
    subset: str
    active_tags: tuple[str, ...]
    caption: str
    reference_video: Path
    line: int
    visual_events: tuple[float, ...] = ()
    speaker: str = ""
    notes: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def audio_types(self) -> tuple[str, ...]:
        """Audio types that occur (``speech``, ``music``, ``sound``), sorted."""
        return tuple(sorted({parse_tag(t).audio_type for t in self.active_tags}))

    @property
    def cells(self) -> list[Cell]:
        """The (dimension, audio type) cells this instance's tags activate."""
        return active_cells(self.active_tags)


@dataclass(frozen=True)
class PrismTaskInputs:
    """What a text-to-audio-video system under test receives: the caption (its prompt)."""

    caption: str


@dataclass(frozen=True)
class PrismDataset(RecordDataset[PrismInstance]):
    """A validated PRISM-Bench folder. ``instances[i].index == i`` (manifest line order)."""

    def subset(self, name: str) -> tuple[PrismInstance, ...]:
        """The instances of one subset, in manifest order."""
        return tuple(i for i in self.instances if i.subset == name)

    def summary(self) -> DatasetSummary:
        """``<n> instances (<k> on_screen, ...)`` and the per-subset counts."""
        from collections import Counter

        counts = Counter(i.subset for i in self.instances)
        parts = ", ".join(f"{counts[s]} {s}" for s in ("on_screen", "off_screen", "mixed"))
        n = len(self.instances)
        return DatasetSummary(f"{n} instances ({parts})", {"n_rows": n, "subsets": dict(counts)})

    def frame(self) -> pd.DataFrame:
        """One row per instance with plain columns (strings and the integer index): ``active_tags``
        comma-joined in canonical order, ``visual_events`` comma-joined seconds (``""`` when none),
        ``reference_video`` relative to the folder (POSIX). Used as the MLflow dataset input."""
        import pandas as pd

        rows = [
            {
                "index": inst.index,
                "id": inst.id,
                "subset": inst.subset,
                "active_tags": ",".join(inst.active_tags),
                "caption": inst.caption,
                "reference_video": relative_posix(self.root, inst.reference_video),
                "visual_events": ",".join(f"{t:g}" for t in inst.visual_events),
                "speaker": inst.speaker,
                "notes": inst.notes,
            }
            for inst in self.instances
        ]
        return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))


def candidate_video(candidates_root: Path, index: int) -> Path:
    """Where a system writes its clip for dataset row ``index``: ``<root>/video/<index>/generated.mp4``.

    >>> candidate_video(Path("out"), 3).as_posix()
    'out/video/3/generated.mp4'
    """
    return output_path(Path(candidates_root), Modality.VIDEO, index)


# -- the reference clip ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _probed(path: Path, size: int, mtime_ns: int) -> MediaInfo | MediaError:
    """The probe of one clip's content (keyed by its size and time of change, so a rewritten file
    is probed again); the clip check and the events' bound both read it, one ffprobe a clip."""
    try:
        return probe(path, decode_s=DECODE_CHECK_S)
    except MediaError as exc:
        return exc


def clip_info(path: Path) -> MediaInfo | MediaError:
    """What ffprobe says about the clip at ``path`` (headers and its first second decoded)."""
    stat = path.stat()
    return _probed(path, stat.st_size, stat.st_mtime_ns)


def clip_problems(path: Path, label: str) -> tuple[str, ...]:
    """Every problem of a reference clip that resolved inside the folder (the media check hook):
    it probes with a video stream and its start decodes; then audio, duration and frame rate."""
    info = clip_info(path)
    if isinstance(info, MediaError):
        return (f"{label}: cannot decode video ({info.detail})",)
    found = []
    if not info.has_audio:
        found.append(f"{label}: no audio stream")
    low, high = DURATION_RANGE_S
    if not (math.isfinite(info.duration_s) and low <= info.duration_s <= high):
        found.append(f"{label}: duration {info.duration_s:g} s is outside {low:g}-{high:g} s")
    low, high = FPS_RANGE
    if not (math.isfinite(info.fps) and low <= info.fps <= high):
        found.append(f"{label}: frame rate {info.fps:g} fps is outside {low:g}-{high:g} fps")
    return tuple(found)


#: The ``reference_video`` field's media check (one object, so the loader checks each clip once).
REFERENCE_VIDEO = Media("file", check=clip_problems)


# -- tags ------------------------------------------------------------------------------------------


def canonical_tags(tags: list[str]) -> tuple[str, ...]:
    """Known tags in :data:`TAGS` order.

    >>> canonical_tags(["MUSIC_B", "SPEECH_A"])
    ('SPEECH_A', 'MUSIC_B')
    """
    return tuple(sorted(tags, key=TAGS.index))


def tags_problem(subset: str, tags: list[str]) -> str:
    """Why ``tags`` do not suit ``subset`` ('' when they do); names the offending tag when one is to blame.

    >>> tags_problem("off_screen", ["MUSIC_A"])
    'tag MUSIC_A is not valid for subset off_screen (it takes only off-screen _B tags)'
    >>> tags_problem("mixed", ["SPEECH_A", "MUSIC_A"])
    'tags SPEECH_A,MUSIC_A are not a valid combination for subset mixed (it needs an on-screen and an off-screen tag)'
    """
    found = tag_set_problem(subset, tags)
    if found is None:
        return ""
    if subset in ("on_screen", "off_screen") and all(t in TAGS for t in tags) and tags:
        side, other = ("_A", "on-screen") if subset == "on_screen" else ("_B", "off-screen")
        wrong = [t for t in tags if not t.endswith(side)]
        if wrong:
            return f"tag {wrong[0]} is not valid for subset {subset} (it takes only {other} {side} tags)"
    if subset == "mixed" and all(t in TAGS for t in tags) and len(set(tags)) == len(tags) and tags:
        parsed = [parse_tag(t) for t in tags]
        sides = {p.on_screen for p in parsed}
        if len(sides) < 2:
            return f"{found} (it needs an on-screen and an off-screen tag)"
        if len(tags) > 3:
            return f"{found} (at most three tags)"
        if len(tags) == 3:
            return f"{found} (three tags must be three different audio types)"
    return found


# -- the record ------------------------------------------------------------------------------------

Subset = Literal["on_screen", "off_screen", "mixed"]
"""The subsets (those of :data:`~omnieval.benchmarks.prism._tags.SUBSETS`)."""


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise problem(f"expected a string, got {show_value(value)}")
    return value


class PrismRecord(Record):
    """One manifest line as its checks read it (fields in the order the problems of a line are named).

    Tags are stored in canonical order; ``reference_video`` is the absolute path of a clip that
    passed :func:`clip_problems`; ``visual_events`` are bounded by that clip's duration.
    """

    gate_fields: ClassVar[tuple[str, ...]] = ("active_tags", "caption", "visual_events")
    hashed_texts: ClassVar[tuple[str, ...]] = ("caption",)

    id: Text
    subset: Subset
    active_tags: tuple[str, ...]
    caption: Text
    speaker: str = ""
    notes: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)
    reference_video: Annotated[Path, REFERENCE_VIDEO]
    visual_events: tuple[float, ...] = ()

    @field_validator("subset", mode="plain")
    @classmethod
    def _subset(cls, raw: object) -> str:
        value = _string(raw)
        if value not in SUBSETS:
            raise problem(f"unknown subset {value!r} (expected one of {', '.join(SUBSETS)})")
        return value

    @field_validator("active_tags", mode="plain")
    @classmethod
    def _tags(cls, raw: object, info: ValidationInfo) -> tuple[str, ...]:
        if not isinstance(raw, list) or not raw or not all(isinstance(t, str) for t in raw):
            raise problem(f"expected a non-empty list of tag strings, got {show_value(raw)}")
        unknown = [t for t in raw if t not in TAGS]
        if unknown:
            raise problem(f"unknown tag {unknown[0]!r} (expected one of {', '.join(TAGS)})")
        if len(set(raw)) != len(raw):
            raise problem("a tag is repeated")
        subset = info.data.get("subset")  # absent when the subset has its own problem
        why = tags_problem(subset, raw) if subset is not None else ""
        if why:
            raise problem(why)
        return canonical_tags(raw)

    @field_validator("speaker", "notes", mode="plain")
    @classmethod
    def _text(cls, raw: object) -> str:
        return _string(raw)

    @field_validator("meta", mode="plain")
    @classmethod
    def _meta(cls, raw: object) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise problem(f"expected a JSON object, got {show_value(raw)}")
        return dict(raw)

    @field_validator("visual_events", mode="plain")
    @classmethod
    def _events(cls, raw: object, info: ValidationInfo) -> tuple[float, ...]:
        times, why = _parse_events(raw, _clip_duration(info.context))
        if why:
            raise problem(why)
        return times

    def instance(self, index: int, line: int) -> PrismInstance:
        """The typed instance at position ``index`` from manifest line ``line`` (what stages read)."""
        own = {
            f.name: getattr(self, f.name) for f in fields(PrismInstance) if f.name not in ("index", "line")
        }
        return PrismInstance(index=index, line=line, **own)


def _clip_duration(context: object) -> float | None:
    """The duration of the row's clip when it probes, whatever else is wrong with it (an event
    past the end of a clip without sound is still reported); None outside a dataset read."""
    if not isinstance(context, RowContext) or "reference_video" not in context.row:
        return None
    found = context.media(REFERENCE_VIDEO, context.row["reference_video"])
    if found.path is None:
        return None
    info = clip_info(found.path)
    return info.duration_s if isinstance(info, MediaInfo) else None


def _parse_events(value: object, duration: float | None) -> tuple[tuple[float, ...], str]:
    """Event times as floats, or () and why not. ``duration`` bounds them when known."""
    if not isinstance(value, list):
        return (), f"expected a list of seconds, got {show_value(value)}"
    times: list[float] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int | float) or not math.isfinite(item):
            return (), f"expected numbers of seconds, got {show_value(item)}"
        if item < 0 or (duration is not None and item > duration):
            span = f"0-{duration:g} s" if duration is not None else "0 s or more"
            return (), f"event at {item:g} s is outside the clip ({span})"
        times.append(float(item))
    if times != sorted(times):
        return (), "event times must be in ascending order"
    return tuple(times), ""


#: Where the records come from: ``manifest.jsonl``, worded as the manifest benchmarks' are, with
#: PRISM-Bench's word for an unknown key and its order (unknown keys, missing fields, a repeated id).
SOURCE = JsonLines(
    MANIFEST_NAME,
    replace(
        MANIFEST,
        unknown_field=(
            f"unknown field (known: {', '.join((*REQUIRED_FIELDS, *OPTIONAL_FIELDS))}; "
            "put other bookkeeping under 'meta')"
        ),
        first=("unknown", "missing", "duplicate"),
    ),
)


# -- the dataset -----------------------------------------------------------------------------------


def validate_prism(root: Path) -> DatasetReport:
    """The problems of a PRISM-Bench folder, never raising on bad data (:func:`load_prism`)."""
    return validate_records(root, PrismRecord, SOURCE, PrismDataset)


def load_prism(root: Path) -> PrismDataset:
    """Load a PRISM-Bench folder into typed instances, or raise with every problem.

    Checks (:class:`PrismRecord`): ``manifest.jsonl`` exists and every non-blank line is a UTF-8
    JSON object; the required fields are present with the right types and no unknown field is; the
    subset is known; the tags are known, not repeated and a valid combination for the subset; the
    caption is not blank; ids are unique; ``reference_video`` is relative, stays inside ``root``
    (symlinks resolved), exists, probes with a video and an audio stream, decodes, and has a
    duration and frame rate within bounds; ``visual_events`` (when given) are ascending seconds
    within the clip.

    Raises:
        DataError: listing each problem (line, id, field); exit code 2 in the CLI.
    """
    return load_records("prism", root, PrismRecord, SOURCE, PrismDataset)


#: Columns of :meth:`PrismDataset.frame`, in order.
FRAME_COLUMNS: tuple[str, ...] = (
    "index",
    "id",
    "subset",
    "active_tags",
    "caption",
    "reference_video",
    "visual_events",
    "speaker",
    "notes",
)
