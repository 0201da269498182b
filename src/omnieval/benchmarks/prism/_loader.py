"""Load and strictly validate a PRISM-Bench dataset folder (FORMATS.md section 6).

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

One pass collects every problem. Each names the line and the id when known, and the field, e.g.
``manifest.jsonl line 4 (id on-03): active_tags: tag MUSIC_B is not valid for subset on_screen``.
:func:`validate_prism` returns them; :func:`load_prism` raises :class:`~omnieval.errors.DataError`.
The dataset gate (``_gate.py``) runs the same per-line checks, so the two never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.benchmarks.prism._media import MediaError, MediaInfo, probe
from omnieval.benchmarks.prism._tags import SUBSETS, TAGS, Cell, active_cells, parse_tag, tag_set_problem
from omnieval.candidates import Modality, output_path
from omnieval.data import MANIFEST_NAME as MANIFEST_NAME
from omnieval.data import (
    CheckCache,
    LineProblems,
    Manifest,
    ManifestDataset,
    ManifestLineCheck,
    ManifestReport,
    TextEntry,
    check_manifest_lines,
    fingerprint_manifest,
    load_manifest,
    relative_posix,
    resolve_in_root,
    sha256_text,
    show_value,
    validate_manifest,
)
from omnieval.jsonio import read_jsonl_objects

if TYPE_CHECKING:
    import pandas as pd

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
class PrismDataset(ManifestDataset[PrismInstance]):
    """A validated PRISM-Bench folder. ``instances[i].index == i`` (manifest line order)."""

    def subset(self, name: str) -> tuple[PrismInstance, ...]:
        """The instances of one subset, in manifest order."""
        return tuple(i for i in self.instances if i.subset == name)


@dataclass(frozen=True)
class PrismReport(ManifestReport[PrismDataset]):
    """Outcome of :func:`validate_prism` (a :class:`~omnieval.data._jsonl_manifest.ManifestReport`)."""


@dataclass(frozen=True)
class VideoCheck:
    """The reference clip of one line: where it resolved, what ffprobe said, what is wrong.

    ``problems`` is a tuple of ``(check, message)`` with check one of ``path`` (absolute, escaping,
    missing), ``decode`` (not media, no video stream, garbage packets), ``audio`` (no audio stream),
    ``duration``, ``fps``.
    """

    path: Path | None
    info: MediaInfo | None
    problems: tuple[tuple[str, str], ...] = ()

    @property
    def present(self) -> bool:
        """Relative, inside the folder (symlinks resolved) and an existing file."""
        return self.path is not None

    @property
    def decodable(self) -> bool:
        """Present, probed with a video stream, and its start decodes."""
        return self.info is not None and not any(k == "decode" for k, _ in self.problems)

    def failed(self, check: str) -> bool:
        """True when ``check`` has a problem."""
        return any(k == check for k, _ in self.problems)


def check_video(root: Path, rel: object) -> VideoCheck:
    """Resolve and check one reference clip (see :class:`VideoCheck`)."""
    resolved, problem = resolve_in_root(root, rel)
    if resolved is None:
        return VideoCheck(None, None, (("path", problem),))
    try:
        info = probe(resolved, decode_s=DECODE_CHECK_S)
    except MediaError as exc:
        return VideoCheck(resolved, None, (("decode", f"{rel}: cannot decode video ({exc.detail})"),))
    problems: list[tuple[str, str]] = []
    if not info.has_audio:
        problems.append(("audio", f"{rel}: no audio stream"))
    low, high = DURATION_RANGE_S
    if not (math.isfinite(info.duration_s) and low <= info.duration_s <= high):
        problems.append(("duration", f"{rel}: duration {info.duration_s:g} s is outside {low:g}-{high:g} s"))
    low, high = FPS_RANGE
    if not (math.isfinite(info.fps) and low <= info.fps <= high):
        problems.append(("fps", f"{rel}: frame rate {info.fps:g} fps is outside {low:g}-{high:g} fps"))
    return VideoCheck(resolved, info, tuple(problems))


@dataclass(frozen=True)
class LineCheck(ManifestLineCheck):
    """Everything the validator found on one non-blank PRISM-Bench manifest line.

    Attributes (besides :class:`~omnieval.data._jsonl_manifest.ManifestLineCheck`'s):
        tags: The tags in canonical order when they are a list of known tags (else None).
        video: The reference clip's check (None when the field is missing).
        instance: The typed record when the line has no problem.
    """

    tags: tuple[str, ...] | None = None
    video: VideoCheck | None = None
    instance: PrismInstance | None = None


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
    problem = tag_set_problem(subset, tags)
    if problem is None:
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
            return f"{problem} (it needs an on-screen and an off-screen tag)"
        if len(tags) > 3:
            return f"{problem} (at most three tags)"
        if len(tags) == 3:
            return f"{problem} (three tags must be three different audio types)"
    return problem


class _VideoCache(CheckCache[VideoCheck]):
    """Clip checks by relative path (two lines may share a clip; probing twice is waste)."""

    def check(self, rel: object) -> VideoCheck:
        return self.once(repr(rel), lambda: check_video(self.root, rel))


def check_lines(root: Path) -> tuple[list[LineCheck], list[str]]:
    """Check every line of ``root/manifest.jsonl``: fields, subset and tags, reference clip, events.

    Same result as :func:`~omnieval.data._jsonl_manifest.check_manifest_lines`: the checked lines in
    file order, and problems of the folder as a whole (no folder, no manifest, no instances).
    """
    return check_manifest_lines(root, LineCheck, _VideoCache, _check_record)


def _check_record(
    obj: dict[str, Any], number: int, index: int, videos: _VideoCache, first_line_of: dict[str, int]
) -> LineCheck:
    """Check one PRISM-Bench line; ``first_line_of`` maps ids seen so far to their line (updated here)."""
    problems = LineProblems()
    bad = problems.add

    for key in obj:
        if key not in REQUIRED_FIELDS and key not in OPTIONAL_FIELDS:
            known = ", ".join((*REQUIRED_FIELDS, *OPTIONAL_FIELDS))
            bad(key, f"unknown field (known: {known}; put other bookkeeping under 'meta')")
    for name in REQUIRED_FIELDS:
        if name not in obj:
            bad(name, "missing field")

    rid = problems.nonblank_text(obj, "id")
    if rid is not None:
        if rid in first_line_of:
            bad("id", f"duplicate of line {first_line_of[rid]}")
        else:
            first_line_of[rid] = number

    subset = obj.get("subset")
    subset_ok = False
    if "subset" in obj:
        if not isinstance(subset, str):
            bad("subset", f"expected a string, got {show_value(subset)}")
        elif subset not in SUBSETS:
            bad("subset", f"unknown subset {subset!r} (expected one of {', '.join(SUBSETS)})")
        else:
            subset_ok = True

    tags: tuple[str, ...] | None = None
    if "active_tags" in obj:
        raw = obj["active_tags"]
        if not isinstance(raw, list) or not raw or not all(isinstance(t, str) for t in raw):
            bad("active_tags", f"expected a non-empty list of tag strings, got {show_value(raw)}")
        else:
            unknown = [t for t in raw if t not in TAGS]
            if unknown:
                bad("active_tags", f"unknown tag {unknown[0]!r} (expected one of {', '.join(TAGS)})")
            elif len(set(raw)) != len(raw):
                bad("active_tags", "a tag is repeated")
            else:
                tags = canonical_tags(raw)
                if subset_ok:
                    problem = tags_problem(str(subset), raw)
                    if problem:
                        bad("active_tags", problem)

    caption = obj.get("caption")
    problems.nonblank_text(obj, "caption")

    for name in ("speaker", "notes"):
        if name in obj and not isinstance(obj[name], str):
            bad(name, f"expected a string, got {show_value(obj[name])}")
    if "meta" in obj and not isinstance(obj["meta"], dict):
        bad("meta", f"expected a JSON object, got {show_value(obj['meta'])}")

    video = videos.check(obj["reference_video"]) if "reference_video" in obj else None
    if video is not None:
        for _check, message in video.problems:
            bad("reference_video", message)

    events: tuple[float, ...] = ()
    if "visual_events" in obj:
        duration = video.info.duration_s if video is not None and video.info is not None else None
        parsed, problem = _parse_events(obj["visual_events"], duration)
        if problem:
            bad("visual_events", problem)
        events = parsed

    instance = None
    if not problems and tags is not None and video is not None and video.path is not None:
        instance = PrismInstance(
            id=str(rid),
            index=index,
            subset=str(subset),
            active_tags=tags,
            caption=str(caption),
            reference_video=video.path,
            line=number,
            visual_events=events,
            speaker=str(obj.get("speaker", "")),
            notes=str(obj.get("notes", "")),
            meta=dict(obj.get("meta") or {}),
        )
    return LineCheck(number, index, obj, tuple(problems), tags, video, instance)


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


def is_prism_folder(root: Path) -> bool:
    """True when ``root/manifest.jsonl`` looks like a PRISM-Bench manifest.

    OmniACBench uses the same file name; the first object line tells them apart (a PRISM-Bench
    line has ``reference_video`` or ``active_tags``). Reads one line; never raises.
    """
    try:
        for line in read_jsonl_objects(Path(root) / MANIFEST_NAME):
            return line.obj is not None and bool({"reference_video", "active_tags"} & set(line.obj))
    except OSError:
        return False
    return False


def validate_prism(root: Path) -> PrismReport:
    """Check a PRISM-Bench folder without raising for data problems.

    Checks: ``manifest.jsonl`` exists and every non-blank line is a UTF-8 JSON object; the required
    fields are present with the right types and no unknown field is; the subset is known; the tags
    are known, not repeated and a valid combination for the subset; the caption is not blank; ids
    are unique; ``reference_video`` is relative, stays inside ``root`` (symlinks resolved), exists,
    probes with a video and an audio stream, decodes, and has a duration and frame rate within
    bounds; ``visual_events`` (when given) are ascending seconds within the clip.

    ``root`` is the folder holding ``manifest.jsonl``. When the report is ``ok`` its ``dataset``
    holds the typed instances in line order.
    """
    return validate_manifest(root, check_lines, PrismDataset, PrismReport)


def load_prism(root: Path) -> PrismDataset:
    """Load a PRISM-Bench folder into typed instances, or raise with every problem.

    Raises:
        DataError: listing each problem (line, id, field); exit code 2 in the CLI.
    """
    return load_manifest("prism", root, validate_prism(root))


def fingerprint_prism(dataset: PrismDataset) -> Manifest:
    """Hash the manifest, every reference clip and each instance's normalized caption.

    The manifest's bytes carry ids, subsets and tags, so any change to them changes the digest;
    clips shared by several lines are listed once. Absolute paths never enter the digest, so the
    same data in another folder has the same digest.

    Returns:
        The fingerprint; its ``parquet`` entry (the table file) is ``manifest.jsonl``.
    """
    videos = (inst.reference_video for inst in dataset.instances)
    texts = (TextEntry(inst.id, "caption", sha256_text(inst.caption)) for inst in dataset.instances)
    return fingerprint_manifest(dataset, videos, texts)


#: Columns of :func:`prism_frame`, in order.
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


def prism_frame(dataset: PrismDataset) -> pd.DataFrame:
    """One row per instance with plain columns (strings and the integer index).

    ``active_tags`` is comma-joined in canonical order, ``visual_events`` comma-joined seconds
    (``""`` when none), ``reference_video`` relative to the folder (POSIX). Used as the MLflow
    dataset input.
    """
    import pandas as pd

    root = dataset.root
    rows = [
        {
            "index": inst.index,
            "id": inst.id,
            "subset": inst.subset,
            "active_tags": ",".join(inst.active_tags),
            "caption": inst.caption,
            "reference_video": relative_posix(root, inst.reference_video),
            "visual_events": ",".join(f"{t:g}" for t in inst.visual_events),
            "speaker": inst.speaker,
            "notes": inst.notes,
        }
        for inst in dataset.instances
    ]
    return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))


def candidate_video(candidates_root: Path, index: int) -> Path:
    """Where a system writes its clip for dataset row ``index``: ``<root>/video/<index>/generated.mp4``.

    >>> candidate_video(Path("out"), 3).as_posix()
    'out/video/3/generated.mp4'
    """
    return output_path(Path(candidates_root), Modality.VIDEO, index)
