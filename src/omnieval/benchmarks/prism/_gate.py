"""The PRISM-Bench dataset gate: the manifest as a table plus check columns, through Great Expectations.

``expectations/prism_dataset.json`` checks that every line parses and has no
unknown field, ids are non-null and unique, the subset is known, the (subset, tags) combination is
one of the valid ones, captions are non-empty, ``visual_events`` are well formed, and (through
helper columns computed here, since GX only sees the table) that every reference clip is inside
the folder, present, decodable, has an audio stream, and has a duration and frame rate within
the loader's bounds (``duration_s`` and ``fps`` columns, checked with ``between`` expectations).

The per-line checks are :func:`~omnieval.benchmarks.prism._loader.check_lines`, the same the
loader runs; ``<field>__problem`` and ``problem`` columns hold their messages so that the report
names the failing line, id and field.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.benchmarks.prism._loader import (
    DURATION_RANGE_S,
    FPS_RANGE,
    REQUIRED_FIELDS,
    LineCheck,
    check_lines,
)
from omnieval.benchmarks.prism._tags import SUBSETS, TAGS, valid_tag_sets
from omnieval.gates import GateResult, expectations_dir, gate_manifest_frame

if TYPE_CHECKING:
    import pandas as pd

#: The suite file, kept beside the benchmark (like acbench's, but inside the package).
PRISM_SUITE = expectations_dir() / "prism_dataset.json"

#: Boolean helper columns that hold when a field's checks pass (each with a ``<field>__problem``).
_FIELD_CHECKS: dict[str, str] = {
    "record": "parses",
    "fields": "known",
    "active_tags": "valid",
    "caption": "nonempty",
    "visual_events": "valid",
    "extras": "valid",
}
_VIDEO_CHECKS: tuple[str, ...] = ("present", "decodable", "has_audio", "duration_ok", "fps_ok")


def tag_set_key(subset: str, tags: tuple[str, ...] | list[str]) -> str:
    """``subset:TAG,TAG`` with the tags in canonical order: the gate's ``tag_set`` column.

    >>> tag_set_key("mixed", ["MUSIC_B", "SPEECH_A"])
    'mixed:SPEECH_A,MUSIC_B'
    """
    return f"{subset}:{','.join(sorted(tags, key=TAGS.index))}"


def valid_tag_set_keys() -> list[str]:
    """Every valid ``tag_set`` value (29), subsets in order, then sorted."""
    return [tag_set_key(s, list(tags)) for s in SUBSETS for tags in sorted(valid_tag_sets(s), key=sorted)]


def helper_columns() -> list[str]:
    """The derived columns :func:`prism_gate_frame` adds besides the manifest fields."""
    cols = ["tag_set", "duration_s", "fps", "problem"]
    for name, check in _FIELD_CHECKS.items():
        cols += [f"{name}__{check}", f"{name}__problem"]
    cols += [f"reference_video__{c}" for c in _VIDEO_CHECKS] + ["reference_video__problem"]
    return cols


def prism_gate_frame(root: Path) -> tuple[pd.DataFrame, list[str]]:
    """The manifest as a table (one row per non-blank line, in order) with helper columns.

    Manifest fields hold the line's values (``active_tags`` comma-joined as written; non-string
    values as their JSON text). ``tag_set`` is ``subset:TAGS`` in canonical tag order when the
    tags are a list of strings. ``duration_s`` and ``fps`` are null when the clip did not probe.

    Returns:
        The table (no rows when there is no manifest) and the problems of the folder as a whole.
    """
    import pandas as pd

    lines, whole = check_lines(Path(root))
    columns = [*REQUIRED_FIELDS, *helper_columns()]
    frame = pd.DataFrame([_row(line) for line in lines], columns=columns)
    for name in columns:
        if name.split("__")[-1] in {*_FIELD_CHECKS.values(), *_VIDEO_CHECKS}:
            frame[name] = frame[name].astype(bool)
    for name in ("duration_s", "fps"):
        frame[name] = pd.to_numeric(frame[name], errors="coerce").astype("float64")
    return frame, whole


def _row(line: LineCheck) -> dict[str, Any]:
    record = line.record or {}
    parsed = line.record is not None
    reason = line.gate_reason
    row = line.gate_row(REQUIRED_FIELDS)
    tags = record.get("active_tags")
    if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
        row["active_tags"] = ",".join(tags)
        subset = record.get("subset")
        row["tag_set"] = tag_set_key(subset, tags) if isinstance(subset, str) else None
    else:
        row["tag_set"] = None
    known = {*REQUIRED_FIELDS, "visual_events", "speaker", "notes", "meta"}
    unknown = [k for k in record if k not in known]
    groups = {
        "fields": reason(*unknown) if unknown else "",
        "active_tags": reason("active_tags", "subset"),
        "caption": reason("caption"),
        "visual_events": reason("visual_events"),
        "extras": reason("speaker", "notes", "meta"),
    }
    for name, problem in groups.items():
        row[f"{name}__{_FIELD_CHECKS[name]}"] = parsed and not problem
        row[f"{name}__problem"] = problem if parsed else row["record__problem"]
    video = line.video
    info = video.info if video is not None else None
    row["duration_s"] = info.duration_s if info is not None else None
    row["fps"] = info.fps if info is not None else None
    row["reference_video__present"] = video is not None and video.present
    row["reference_video__decodable"] = video is not None and video.decodable
    row["reference_video__has_audio"] = video is not None and video.decodable and not video.failed("audio")
    row["reference_video__duration_ok"] = (
        video is not None and video.decodable and not video.failed("duration")
    )
    row["reference_video__fps_ok"] = video is not None and video.decodable and not video.failed("fps")
    row["reference_video__problem"] = reason("reference_video") if parsed else row["record__problem"]
    return row


def gate_prism_dataset(root: Path, out_json: Path | None, *, suite_file: Path | None = None) -> GateResult:
    """Run the dataset gate (``expectations/prism_dataset.json``) on a PRISM-Bench folder.

    Args:
        root: The dataset folder (holding ``manifest.jsonl``).
        out_json: Where to save the result (written whether the gate passes or fails); None to skip.
        suite_file: Another suite to use instead of the package's.

    Returns:
        The result; :func:`~omnieval.gates.enforce` raises ``GateFailed`` (exit 2) when it failed.
        Failing rows are labelled with their row number, id and the line/field reason.
    """
    frame, whole = prism_gate_frame(Path(root))
    return gate_manifest_frame(frame, whole, suite_file or PRISM_SUITE, root, out_json)


def suite_document() -> dict[str, Any]:
    """The suite as written to ``expectations/prism_dataset.json`` (bounds and tag sets from code).

    ``python -c "from omnieval.benchmarks.prism._gate import write_suite; write_suite()"`` rewrites
    the file; a test checks the file equals this document.
    """

    def flag(column: str, note: str) -> dict[str, Any]:
        return {
            "type": "expect_column_values_to_be_in_set",
            "kwargs": {"column": column, "value_set": [True]},
            "meta": {"notes": f"helper: {note}"},
        }

    expectations: list[dict[str, Any]] = [
        {
            "type": "expect_table_row_count_to_be_between",
            "kwargs": {"min_value": 1},
            "meta": {"notes": "the manifest has at least one instance"},
        },
        {
            "type": "expect_table_columns_to_match_set",
            "kwargs": {"column_set": list(REQUIRED_FIELDS), "exact_match": False},
            "meta": {
                "notes": "every manifest field of FORMATS.md section 6 is a column (helper columns may be added)"
            },
        },
        flag("record__parses", "every non-blank line is UTF-8 JSON holding an object"),
        flag("fields__known", "no line has a field outside the documented ones (docs/prism.md)"),
    ]
    expectations += [
        {
            "type": "expect_column_values_to_not_be_null",
            "kwargs": {"column": name},
            "meta": {"notes": f"{name} is present on every line"},
        }
        for name in REQUIRED_FIELDS
    ]
    expectations += [
        {
            "type": "expect_column_values_to_be_unique",
            "kwargs": {"column": "id"},
            "meta": {"notes": "ids are unique"},
        },
        {
            "type": "expect_column_values_to_be_in_set",
            "kwargs": {"column": "subset", "value_set": list(SUBSETS)},
            "meta": {"notes": "the subset is on_screen, off_screen or mixed"},
        },
        {
            "type": "expect_column_values_to_be_in_set",
            "kwargs": {"column": "tag_set", "value_set": valid_tag_set_keys()},
            "meta": {
                "notes": "the active tags form one of the 7 + 7 + 15 valid combinations of the line's subset (subset:TAGS, canonical order)"
            },
        },
        flag("active_tags__valid", "active_tags is a list of known, distinct tags valid for the subset"),
        flag("caption__nonempty", "the caption is a non-empty string"),
        flag("visual_events__valid", "visual_events, when given, are ascending seconds within the clip"),
        flag("extras__valid", "speaker and notes, when given, are strings; meta is an object"),
        flag(
            "reference_video__present",
            "reference_video is relative, stays inside the dataset folder (symlinks resolved) and exists",
        ),
        flag(
            "reference_video__decodable",
            "reference_video probes with a video stream (ffprobe) and its first second decodes (ffmpeg)",
        ),
        flag("reference_video__has_audio", "reference_video has an audio stream"),
        {
            "type": "expect_column_values_to_be_between",
            "kwargs": {
                "column": "duration_s",
                "min_value": DURATION_RANGE_S[0],
                "max_value": DURATION_RANGE_S[1],
            },
            "meta": {"notes": "clip duration in seconds within the loader's bounds (null when undecodable)"},
        },
        {
            "type": "expect_column_values_to_be_between",
            "kwargs": {"column": "fps", "min_value": FPS_RANGE[0], "max_value": FPS_RANGE[1]},
            "meta": {"notes": "video frame rate within the loader's bounds (null when undecodable)"},
        },
        flag("reference_video__duration_ok", "the duration check passed (see duration_s)"),
        flag("reference_video__fps_ok", "the frame-rate check passed (see fps)"),
    ]
    return {
        "name": "prism_dataset",
        "meta": {
            "notes": "Gate run before any generation on a PRISM-Bench folder (FORMATS.md section 6). Columns named "
            "<field>__<check>, tag_set, duration_s and fps are computed by "
            "omnieval.benchmarks.prism._gate.prism_gate_frame with the loader's own per-line checks; "
            "<field>__problem and problem hold the reasons shown in the report. Generated by "
            "omnieval.benchmarks.prism._gate.suite_document."
        },
        "expectations": expectations,
    }


def write_suite(path: Path = PRISM_SUITE) -> Path:
    """Write :func:`suite_document` to ``path`` (2-space JSON)."""
    from omnieval.jsonio import write_json_atomic

    return write_json_atomic(path, suite_document())
