"""Load and strictly validate an Omni-StoryBench folder (FORMATS.md section 1).

One pass over the parquet collects every problem (never only the first); each names the parquet
row, the dataset id and the field, plus the file involved. :func:`validate_storybench` returns them,
:func:`load_storybench` raises :class:`~omnieval.errors.DataError` with all of them or returns typed
records.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from omnieval.benchmarks.storybench._records import (
    BookMetadata,
    Character,
    NextPageCondition,
    TargetSpeech,
    Transition,
)
from omnieval.benchmarks.storybench._schema import (
    CHARACTER_COLUMNS,
    FILE_KINDS,
    METADATA_KEYS,
    PARQUET_RELPATH,
    PATH_COLUMNS,
    REQUIRED_COLUMNS,
    SAMPLE_LAYOUT,
    SPEECH_LABELS,
    STRING_COLUMNS,
    TEXT_FILE_OF,
    expected_id,
)
from omnieval.data import FileCheck, InstanceDataset, check_file, clip, parse_characters, show_value
from omnieval.errors import DataError


@dataclass(frozen=True)
class StoryBenchDataset(InstanceDataset[Transition]):
    """A validated Omni-StoryBench folder: its transitions in parquet row order."""

    parquet_path: Path

    @property
    def transitions(self) -> tuple[Transition, ...]:
        """The instances under their storybench name (one per page transition)."""
        return self.instances

    @property
    def books(self) -> tuple[tuple[str, str], ...]:
        """Distinct ``(source, book)`` pairs in order of first appearance."""
        return tuple(dict.fromkeys((t.source, t.book) for t in self.transitions))


@dataclass(frozen=True)
class ValidationReport:
    """Outcome of :func:`validate_storybench`: every problem found, in row order."""

    root: Path
    n_rows: int
    problems: list[str]
    dataset: StoryBenchDataset | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True when the folder has no problem at all."""
        return not self.problems


def validate_storybench(root: Path) -> ValidationReport:
    """Check an Omni-StoryBench folder without raising for data problems.

    Checks: the parquet is readable and has every required column; ids equal
    ``<source>/<book>/<from_key>__<to_key>`` and are unique; strings are non-empty; speech labels
    are in their vocabularies; characters fields are JSON lists of named objects; path columns are
    relative, stay inside ``root`` and exist; images decode; text files are UTF-8 and equal their
    column; the metadata JSON and the sample JSON agree with the row.

    Args:
        root: the dataset folder (the one holding ``data/omni_storybench.parquet``).

    Returns:
        A report; when ``ok`` its ``dataset`` holds the loaded records.
    """
    root = Path(root)
    problems: list[str] = []
    if not root.is_dir():
        return ValidationReport(root, 0, [f"{root}: dataset folder not found"])
    parquet_path = root / PARQUET_RELPATH
    rows, problem = _read_rows(parquet_path)
    if problem:
        return ValidationReport(root, 0, [problem])

    present = set(rows[0].keys()) if rows else _parquet_columns(parquet_path)
    missing = [c for c in REQUIRED_COLUMNS if c not in present]
    if missing:
        problems.append(f"{PARQUET_RELPATH}: missing required column(s): {', '.join(missing)}")
    if not rows:
        problems.append(f"{PARQUET_RELPATH}: the table has no rows")

    checker = _RowChecker(root.resolve())
    transitions: list[Transition] = []
    ids: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        row_problems, transition = checker.check(index, row)
        problems.extend(row_problems)
        if transition is not None:
            transitions.append(transition)
        if isinstance(row.get("id"), str):
            ids[row["id"]].append(index)
    for instance_id, where in ids.items():
        if len(where) > 1:
            rows_text = ", ".join(str(i) for i in where)
            problems.append(
                f"{PARQUET_RELPATH} rows {rows_text} (id {instance_id!r}) field 'id': duplicated id"
            )

    dataset = None
    if not problems:
        dataset = StoryBenchDataset(root.resolve(), tuple(transitions), parquet_path=parquet_path.resolve())
    return ValidationReport(root, len(rows), problems, dataset)


def load_storybench(root: Path) -> StoryBenchDataset:
    """Load an Omni-StoryBench folder into typed records, or raise with every problem.

    Raises:
        DataError: listing each problem (file, row, id, field); exit code 2 in the CLI.
    """
    report = validate_storybench(root)
    if report.dataset is None:
        n = len(report.problems)
        raise DataError(
            f"dataset {root} failed validation ({n} problem{'s' if n != 1 else ''})", list(report.problems)
        )
    return report.dataset


def _read_rows(parquet_path: Path) -> tuple[list[dict[str, Any]], str]:
    if not parquet_path.is_file():
        return [], f"{PARQUET_RELPATH}: file not found (expected at {parquet_path})"
    try:
        import pyarrow.parquet as pq

        table = pq.read_table(parquet_path)
    except Exception as exc:
        return [], f"{PARQUET_RELPATH}: cannot read parquet ({type(exc).__name__}: {exc})"
    return table.to_pylist(), ""


def _parquet_columns(parquet_path: Path) -> set[str]:
    import pyarrow.parquet as pq

    return set(pq.read_schema(parquet_path).names)


class _RowChecker:
    """Checks one row at a time, caching file checks (a page is usually used by two rows)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[tuple[str, str], FileCheck] = {}

    def _file(self, rel: object, kind: str) -> FileCheck:
        key = (kind, str(rel))
        if key not in self._cache:
            self._cache[key] = check_file(self.root, rel, kind)
        return self._cache[key]

    def check(self, index: int, row: Mapping[str, Any]) -> tuple[list[str], Transition | None]:
        rid = row.get("id")
        where = (
            f"{PARQUET_RELPATH} row {index} (id {rid!r})"
            if isinstance(rid, str)
            else (f"{PARQUET_RELPATH} row {index}")
        )
        problems: list[str] = []

        def bad(column: str, message: str) -> None:
            problems.append(f"{where} field {column!r}: {message}")

        for column in STRING_COLUMNS:
            if column in row and column not in PATH_COLUMNS:
                value = row[column]
                if not isinstance(value, str) or not value.strip():
                    bad(column, f"expected a non-empty string, got {show_value(value)}")

        parts = [row.get(c) for c in ("source", "book", "from_key", "to_key")]
        if isinstance(rid, str) and all(isinstance(p, str) and p for p in parts):
            want = expected_id(*parts)  # type: ignore[arg-type]
            if rid != want:
                bad("id", f"id must be {want!r} (<source>/<book>/<from_key>__<to_key>)")

        for column, vocabulary in SPEECH_LABELS.items():
            value = row.get(column)
            if isinstance(value, str) and value.strip() and value not in vocabulary:
                bad(column, f"{value!r} is not one of {', '.join(vocabulary)}")

        characters: dict[str, list[dict[str, Any]]] = {}
        for column in CHARACTER_COLUMNS:
            if column not in row:
                continue
            parsed, problem = parse_characters(row[column])
            if problem:
                bad(column, problem)
            else:
                characters[column] = parsed

        files: dict[str, Path] = {}
        jsons: dict[str, Any] = {}
        for column, kind in FILE_KINDS.items():
            if column not in row:
                continue
            checked = self._file(row[column], kind)
            if checked.path is not None:
                files[column] = checked.path
            if checked.problem:
                bad(column, checked.problem)
            elif kind == "json":
                jsons[column] = checked.content
            elif kind == "text":
                inline = row.get(TEXT_FILE_OF[column])
                text = str(checked.content).strip()
                if isinstance(inline, str) and inline.strip() != text:
                    bad(
                        column,
                        f"{row[column]} differs from column {TEXT_FILE_OF[column]!r} "
                        f"(file {clip(text, 50)!r}, column {clip(inline, 50)!r})",
                    )

        if "metadata_path" in jsons:
            self._check_metadata(row, str(row["metadata_path"]), jsons["metadata_path"], characters, bad)
        if "sample_path" in jsons:
            self._check_sample(row, str(row["sample_path"]), jsons["sample_path"], characters, bad)

        if problems or any(c not in row for c in REQUIRED_COLUMNS):
            return problems, None
        return problems, _transition(index, row, files, characters)

    def _check_metadata(
        self,
        row: Mapping[str, Any],
        label: str,
        meta: dict[str, Any],
        characters: dict[str, list[dict[str, Any]]],
        bad: Callable[[str, str], None],
    ) -> None:
        for key in METADATA_KEYS:
            column = "book_characters" if key == "characters" else key
            if key not in meta:
                bad("metadata_path", f"{label} lacks key {key!r}")
                continue
            if key == "characters":
                theirs, problem = parse_characters(meta[key])
                if problem:
                    bad("metadata_path", f"{label} key 'characters': {problem}")
                elif column in characters and theirs != characters[column]:
                    bad(column, f"{label} has different characters than the row")
                continue
            if column in row and not _same_text(meta[key], row[column]):
                bad(
                    column,
                    f"{label} has {key} = {show_value(meta[key])} but the row has {show_value(row[column])}",
                )

    def _check_sample(
        self,
        row: Mapping[str, Any],
        label: str,
        sample: dict[str, Any],
        characters: dict[str, list[dict[str, Any]]],
        bad: Callable[[str, str], None],
    ) -> None:
        for spec in SAMPLE_LAYOUT:
            node: Any = sample
            for depth, key in enumerate(spec.json_path):
                if not isinstance(node, dict) or key not in node:
                    missing = ".".join(spec.json_path[: depth + 1])
                    bad(spec.column, f"{label} lacks {missing!r} (expected {spec.dotted})")
                    break
                node = node[key]
            else:
                if spec.column not in row:
                    continue
                if spec.column in CHARACTER_COLUMNS:
                    theirs, problem = parse_characters(node)
                    if problem:
                        bad(spec.column, f"{label} {spec.dotted}: {problem}")
                    elif spec.column in characters and theirs != characters[spec.column]:
                        bad(spec.column, f"{label} has different {spec.dotted} than the row")
                    continue
                same = (
                    _same_path(node, row[spec.column])
                    if spec.column in PATH_COLUMNS
                    else _same_text(node, row[spec.column])
                )
                if not same:
                    bad(
                        spec.column,
                        f"{label} has {spec.dotted} = {show_value(node)} but the row has "
                        f"{show_value(row[spec.column])}",
                    )


def _transition(
    index: int,
    row: Mapping[str, Any],
    files: Mapping[str, Path],
    characters: Mapping[str, list[dict[str, Any]]],
) -> Transition:
    metadata = BookMetadata(
        genre=row["genre"],
        topic=row["topic"],
        style=row["style"],
        narrative_tense=row["narrative_tense"],
        narrative_perspective=row["narrative_perspective"],
        characters=tuple(Character.from_obj(c) for c in characters["book_characters"]),
    )
    condition = NextPageCondition(
        characters=tuple(Character.from_obj(c) for c in characters["condition_characters"]),
        scene=row["scene"],
        text_content=row["text_instruction"],
        ambient_sound=row["ambient_sound"],
    )
    speech = TargetSpeech(
        name=row["speech_speaker"],
        line=row["speech_utterance"],
        emotion=row["speech_emotion"],
        speed=row["speech_speed"],
        pitch=row["speech_pitch"],
        gender=row["speech_gender"],
    )
    return Transition(
        index=index,
        id=row["id"],
        source=row["source"],
        book=row["book"],
        from_key=row["from_key"],
        to_key=row["to_key"],
        current_image=files["current_image"],
        current_text=row["current_text"].strip(),
        next_image=files["next_image"],
        next_text=row["next_text"].strip(),
        metadata=metadata,
        condition=condition,
        target_speech=speech,
        sample_path=files["sample_path"],
        metadata_path=files["metadata_path"],
        current_text_path=files["current_text_path"],
        next_text_path=files["next_text_path"],
    )


def _same_text(a: object, b: object) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip() == b.strip()
    return a == b


def _same_path(a: object, b: object) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return PurePosixPath(a.strip()) == PurePosixPath(b.strip())
    return a == b
