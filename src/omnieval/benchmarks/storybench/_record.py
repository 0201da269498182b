"""The record model of one Omni-StoryBench parquet row (FORMATS.md section 1), and the dataset it makes.

The folder holds ``data/omni_storybench.parquet``, one row per page transition, whose path columns
name the pages' images and narration files, the transition's sample JSON and the book's metadata
JSON, all relative to the folder. Row order is the candidate index.

:class:`StoryBenchRecord` states what a valid row is; the record framework
(:mod:`omnieval.benchmarks._records`) reads the table against it in one pass that collects every
problem, each naming the file, the row, the id and the field, e.g.
``data/omni_storybench.parquet row 12 (id 'tales/fox/p03__p04') field 'speech_pitch': 'very high'
is not one of low, normal, high``, checks and hashes the files it names, and derives the dataset
gate from it, so the loader and the gate never disagree about a row. The benchmark's ``validate``
returns the problems; :func:`load_storybench` raises :class:`~omnieval.errors.DataError` with all of
them or returns the typed :class:`~._records.Transition` instances.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final, Self

from pydantic import (
    ConfigDict,
    ModelWrapValidatorHandler,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from omnieval.benchmarks._base import DatasetReport, DatasetSummary
from omnieval.benchmarks._declared import RecordDataset, load_records, validate_records
from omnieval.benchmarks._records import (
    Media,
    ParquetRows,
    RawRow,
    Record,
    RowContext,
    Wording,
    fingerprint_records,
    problem,
    problems,
)
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
    TEXT_FILE_OF,
    SampleField,
    expected_id,
)
from omnieval.data import (
    TEXT_FIELDS,
    Manifest,
    clip,
    parse_characters,
    read_json_file,
    read_text_file,
    show_value,
)

if TYPE_CHECKING:
    import pandas as pd

    from omnieval.audit import AuditInputs


@dataclass(frozen=True)
class StoryBenchDataset(RecordDataset[Transition]):
    """A validated Omni-StoryBench folder: its transitions in parquet row order."""

    @property
    def transitions(self) -> tuple[Transition, ...]:
        """The instances under their storybench name (one per page transition)."""
        return self.instances

    @property
    def books(self) -> tuple[tuple[str, str], ...]:
        """Distinct ``(source, book)`` pairs in order of first appearance."""
        return tuple(dict.fromkeys((t.source, t.book) for t in self.transitions))

    def summary(self) -> DatasetSummary:
        n, books = len(self.transitions), len(self.books)
        return DatasetSummary(f"{n} transitions from {books} books", {"n_rows": n, "n_books": books})

    def frame(self) -> pd.DataFrame:
        """The release table itself (the MLflow dataset input)."""
        import pandas as pd

        return pd.read_parquet(self.table)

    def audit_inputs(self, digest: str, benchmark: str) -> AuditInputs:
        from omnieval.benchmarks.storybench._audit import storybench_audit_inputs

        return storybench_audit_inputs(self.transitions, self.root, digest, benchmark)


# -- field checks ----------------------------------------------------------------------------------


def _non_empty(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise problem(f"expected a non-empty string, got {show_value(value)}")
    return value


NonEmpty = Annotated[str, PlainValidator(_non_empty)]
"""A string with more than white space, kept as written."""

_LABEL = "storybench_label"
"""The error type of a speech label outside its vocabulary: the loader names it after the id check."""


def _characters(value: object) -> tuple[Character, ...]:
    parsed, why = parse_characters(value)
    if why:
        raise problem(why)
    return tuple(Character.from_obj(c) for c in parsed)


Characters = Annotated[tuple[Character, ...], PlainValidator(_characters)]
"""A characters column: a JSON list (or a parquet list of structs) of objects with a ``name``."""


def _text_problem(path: Path, label: str) -> str:
    return read_text_file(path, label).problem


def _json_problem(path: Path, label: str) -> str:
    value, why = read_json_file(path, label)
    if not why and not isinstance(value, dict):
        return f"{label}: expected a JSON object at the top level"
    return why


IMAGE = Media("image")
TEXT_FILE = Media("file", check=_text_problem)
"""A UTF-8 text file (a leading byte-order mark allowed)."""
JSON_FILE = Media("file", check=_json_problem)
"""A UTF-8 JSON file holding an object."""
MEDIA: dict[str, Media] = {"image": IMAGE, "text": TEXT_FILE, "json": JSON_FILE}


class StoryBenchRecord(Record):
    """One parquet row as its checks read it: the columns of FORMATS.md section 1 in their order.

    Every column is required; strings must hold more than white space; the speech labels must be in
    their vocabularies; the characters columns parse; path columns are files inside the dataset
    folder (images decode, texts are UTF-8, JSON files hold an object), stored as absolute paths.
    The row as a whole (:meth:`_whole_row`): the id is ``<source>/<book>/<from_key>__<to_key>``,
    each text file equals its column, and the book's metadata JSON and the transition's sample
    JSON agree with the row.
    """

    # Columns beyond these are ignored, as they always were; a missing column is named once, for the table.
    model_config = ConfigDict(frozen=True, extra="ignore")
    gate_fields: ClassVar[tuple[str, ...]] = tuple(c for c in REQUIRED_COLUMNS if c not in PATH_COLUMNS)
    hashed_texts: ClassVar[tuple[str, ...]] = TEXT_FIELDS

    id: NonEmpty
    source: NonEmpty
    book: NonEmpty
    from_key: NonEmpty
    to_key: NonEmpty
    current_image: Annotated[Path, IMAGE]
    current_text: NonEmpty
    current_text_path: Annotated[Path, TEXT_FILE]
    next_image: Annotated[Path, IMAGE]
    next_text: NonEmpty
    next_text_path: Annotated[Path, TEXT_FILE]
    genre: NonEmpty
    topic: NonEmpty
    style: NonEmpty
    narrative_tense: NonEmpty
    narrative_perspective: NonEmpty
    scene: NonEmpty
    text_instruction: NonEmpty
    ambient_sound: NonEmpty
    speech_utterance: NonEmpty
    speech_speaker: NonEmpty
    speech_emotion: str
    speech_speed: str
    speech_pitch: str
    speech_gender: str
    condition_characters: Characters
    book_characters: Characters
    sample_path: Annotated[Path, JSON_FILE]
    metadata_path: Annotated[Path, JSON_FILE]

    @field_validator(*SPEECH_LABELS, mode="plain")
    @classmethod
    def _label(cls, raw: object, info: ValidationInfo) -> str:
        value = _non_empty(raw)
        vocabulary = SPEECH_LABELS[str(info.field_name)]
        if value not in vocabulary:
            raise PydanticCustomError(
                _LABEL, "{why}", {"why": f"{value!r} is not one of {', '.join(vocabulary)}"}
            )
        return value

    @model_validator(mode="wrap")
    @classmethod
    def _whole_row(cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo) -> Self:
        """The fields' checks, then the row's own (id, text files, metadata and sample JSON), every
        problem named by its column and ordered as the loader has always listed them: strings, id,
        speech labels, characters, files, metadata JSON, sample JSON."""
        if not isinstance(data, Mapping):
            return handler(data)
        found: list[tuple[tuple[int, ...], str, str]] = []
        record = None
        try:
            record = handler(data)
        except ValidationError as exc:
            found.extend(_field_problems(exc))
        context = info.context if isinstance(info.context, RowContext) else None
        found.extend(_row_problems(data, context))
        if found or record is None:
            # Only the table names a missing column, so a row that lacks one has no problem of its own.
            raise problems([(name, why) for _, name, why in sorted(found, key=lambda p: p[0])])
        return record

    def instance(self, index: int, line: int) -> Transition:
        """The typed instance at position ``index`` (what the stages, systems and judges read)."""
        return Transition(
            index=index,
            id=self.id,
            source=self.source,
            book=self.book,
            from_key=self.from_key,
            to_key=self.to_key,
            current_image=self.current_image,
            current_text=self.current_text.strip(),
            next_image=self.next_image,
            next_text=self.next_text.strip(),
            metadata=BookMetadata(
                genre=self.genre,
                topic=self.topic,
                style=self.style,
                narrative_tense=self.narrative_tense,
                narrative_perspective=self.narrative_perspective,
                characters=self.book_characters,
            ),
            condition=NextPageCondition(
                characters=self.condition_characters,
                scene=self.scene,
                text_content=self.text_instruction,
                ambient_sound=self.ambient_sound,
            ),
            target_speech=TargetSpeech(
                name=self.speech_speaker,
                line=self.speech_utterance,
                emotion=self.speech_emotion,
                speed=self.speech_speed,
                pitch=self.speech_pitch,
                gender=self.speech_gender,
            ),
            sample_path=self.sample_path,
            metadata_path=self.metadata_path,
            current_text_path=self.current_text_path,
            next_text_path=self.next_text_path,
        )


# -- the row as a whole ----------------------------------------------------------------------------

# The order problems of one row are listed in (a sort key's first part); ties keep the check order.
_STRINGS, _ID, _LABELS, _CHARACTERS, _FILES, _METADATA, _SAMPLE = range(7)
_FILE_ORDER = {c: i for i, c in enumerate(FILE_KINDS)}


def _field_problems(exc: ValidationError) -> Iterator[tuple[tuple[int, ...], str, str]]:
    for err in exc.errors():
        if err["type"] == "missing" or not err["loc"]:
            continue
        name = str(err["loc"][0])
        if name in CHARACTER_COLUMNS:
            key: tuple[int, ...] = (_CHARACTERS,)
        elif name in FILE_KINDS:
            key = (_FILES, _FILE_ORDER[name], 0)
        elif err["type"] == _LABEL:
            key = (_LABELS,)
        else:
            key = (_STRINGS,)
        yield key, name, err["msg"]


def _row_problems(
    row: Mapping[str, Any], context: RowContext | None
) -> list[tuple[tuple[int, ...], str, str]]:
    """The checks that read several columns or a file's content (None ``context``: only the id)."""
    found: list[tuple[tuple[int, ...], str, str]] = []
    rid = row.get("id")
    parts = [row.get(c) for c in ("source", "book", "from_key", "to_key")]
    if isinstance(rid, str) and all(isinstance(p, str) and p for p in parts):
        want = expected_id(*parts)  # type: ignore[arg-type]
        if rid != want:
            found.append(((_ID,), "id", f"id must be {want!r} (<source>/<book>/<from_key>__<to_key>)"))
    if context is None:
        return found
    characters: dict[str, list[dict[str, Any]]] = {}
    for column in CHARACTER_COLUMNS:
        if column in row:
            parsed, why = parse_characters(row[column])
            if not why:
                characters[column] = parsed
    jsons: dict[str, dict[str, Any]] = {}
    for column, kind in FILE_KINDS.items():
        if column not in row:
            continue
        checked = context.media(MEDIA[kind], row[column])
        if checked.problem or checked.path is None or kind == "image":
            continue
        if kind == "json":
            jsons[column] = read_json_file(checked.path, str(row[column])).value
            continue
        text = str(read_text_file(checked.path, str(row[column])).value).strip()
        inline = row.get(TEXT_FILE_OF[column])
        if isinstance(inline, str) and inline.strip() != text:
            why = (
                f"{row[column]} differs from column {TEXT_FILE_OF[column]!r} "
                f"(file {clip(text, 50)!r}, column {clip(inline, 50)!r})"
            )
            found.append(((_FILES, _FILE_ORDER[column], 1), column, why))

    def bad(stage: int) -> Callable[[str, str], None]:
        return lambda column, why: found.append(((stage,), column, why))

    # The metadata JSON names its own column for a missing key or unreadable characters; the sample
    # JSON names the column the key repeats.
    for column, layout, stage in (
        ("metadata_path", _METADATA_LAYOUT, _METADATA),
        ("sample_path", SAMPLE_LAYOUT, _SAMPLE),
    ):
        if column in jsons:
            own = column if column == "metadata_path" else ""
            _check_copy(row, str(row[column]), jsons[column], layout, characters, bad(stage), file_column=own)
    return found


_METADATA_LAYOUT: Final = tuple(
    SampleField((key,), "book_characters" if key == "characters" else key) for key in METADATA_KEYS
)
"""The book's metadata JSON repeats the row's book-level columns (``characters`` as ``book_characters``)."""


def _check_copy(
    row: Mapping[str, Any],
    label: str,
    copy: dict[str, Any],
    layout: tuple[SampleField, ...],
    characters: dict[str, list[dict[str, Any]]],
    bad: Callable[[str, str], None],
    *,
    file_column: str = "",
) -> None:
    """A JSON file that repeats columns of the row at the key paths of ``layout``: the transition's
    sample JSON (:data:`SAMPLE_LAYOUT`; each problem named by its column) or, with ``file_column``,
    the book's metadata JSON (:data:`_METADATA_LAYOUT`; a missing key or unreadable characters named
    by the file's column, as the loader has always named them)."""
    for spec in layout:
        node: Any = copy
        for depth, key in enumerate(spec.json_path):
            if not isinstance(node, dict) or key not in node:
                missing = ".".join(spec.json_path[: depth + 1])
                if file_column:
                    bad(file_column, f"{label} lacks key {key!r}")
                else:
                    bad(spec.column, f"{label} lacks {missing!r} (expected {spec.dotted})")
                break
            node = node[key]
        else:
            if spec.column not in row and not (file_column and spec.column in CHARACTER_COLUMNS):
                continue
            if spec.column in CHARACTER_COLUMNS:
                theirs, why = parse_characters(node)
                if why and file_column:
                    bad(file_column, f"{label} key {spec.dotted!r}: {why}")
                elif why:
                    bad(spec.column, f"{label} {spec.dotted}: {why}")
                elif spec.column in characters and theirs != characters[spec.column]:
                    bad(spec.column, f"{label} has different {spec.dotted} than the row")
            elif not _same(node, row[spec.column], path=spec.column in PATH_COLUMNS):
                bad(
                    spec.column,
                    f"{label} has {spec.dotted} = {show_value(node)} but the row has "
                    f"{show_value(row[spec.column])}",
                )


def _same(a: object, b: object, *, path: bool) -> bool:
    """Whether a copied value equals the row's: strings compared stripped (as paths when ``path``)."""
    if isinstance(a, str) and isinstance(b, str):
        return PurePosixPath(a.strip()) == PurePosixPath(b.strip()) if path else a.strip() == b.strip()
    return a == b


# -- the table -------------------------------------------------------------------------------------

#: How storybench's problems read (``data/omni_storybench.parquet row 3 (id 'a/b/p1__p2') field 'topic': ...``).
WORDING = Wording(
    where="{file} row {line}",
    with_id="{where} (id {id!r})",
    missing_file="{file}: file not found (expected at {path})",
    missing_folder="{root}: dataset folder not found",
    no_rows="{file}: the table has no rows",
    problem="{where} field {field!r}: {why}",
    id_when_blank=True,
    duplicates="{file} rows {rows} (id {id!r}) field 'id': duplicated id",
    row="row {line}",
    unreadable_check="table_is_readable",
)


@dataclass(frozen=True)
class StoryTable(ParquetRows):
    """The parquet table, rows numbered from 0 and null cells kept (a null is a wrong value, not a
    missing column); a column missing from the table is one problem of the table, not of each row."""

    def read(self, root: Path) -> tuple[list[RawRow], list[str]]:
        w, path = self.wording, self.path(root)
        if not Path(root).is_dir():
            return [], [w.missing_folder.format(root=root)]
        if not path.is_file():
            return [], [w.missing_file.format(file=self.name, path=path)]
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as exc:  # any unreadable file is one problem, named by its type
            return [], [f"{self.name}: cannot read parquet ({type(exc).__name__}: {exc})"]
        whole: list[str] = []
        missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
        if missing:
            whole.append(f"{self.name}: missing required column(s): {', '.join(missing)}")
        rows = table.to_pylist()
        if not rows:
            whole.append(w.no_rows.format(file=self.name))
        return [RawRow(number, row) for number, row in enumerate(rows)], whole


#: Where the records come from.
SOURCE = StoryTable(PARQUET_RELPATH, WORDING)


def validate_storybench(root: Path) -> DatasetReport:
    """The problems of an Omni-StoryBench folder, never raising on bad data (:func:`load_storybench`)."""
    return validate_records(root, StoryBenchRecord, SOURCE, StoryBenchDataset)


def load_storybench(root: Path) -> StoryBenchDataset:
    """Load an Omni-StoryBench folder into typed records, or raise with every problem.

    Checks (:class:`StoryBenchRecord`): the parquet is readable and has every required column; ids
    equal ``<source>/<book>/<from_key>__<to_key>`` and are unique; strings are non-empty; speech
    labels are in their vocabularies; characters fields are JSON lists of named objects; path
    columns are relative, stay inside ``root`` and exist; images decode; text files are UTF-8 and
    equal their column; the metadata JSON and the sample JSON agree with the row.

    Raises:
        DataError: listing each problem (file, row, id, field); exit code 2 in the CLI.
    """
    return load_records("storybench", root, StoryBenchRecord, SOURCE, StoryBenchDataset)


def fingerprint_storybench(dataset: StoryBenchDataset) -> Manifest:
    """Hash the parquet, every referenced file and every instance's normalized texts.

    Files used by several rows (a page is the next page of one transition and the current page of
    the following one) are listed once. Absolute paths never enter the digest, so the same data in
    another folder has the same digest.
    """
    return fingerprint_records(dataset.root, dataset.table, StoryBenchRecord, dataset.records)
