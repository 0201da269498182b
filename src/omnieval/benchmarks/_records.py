"""Records of a benchmark: the model of one row, where rows come from, media files, the dataset.

A benchmark's dataset is a table of rows (JSON lines or a parquet file) whose pydantic model
(:class:`Record`) is the one statement of what a valid row is. From it this module derives:

- the strict loader (:func:`read_rows`): every problem of every row in one pass, each named
  ``<file>:<line> (<id>): <field>: <why>`` (the wording is the source's, :class:`Wording`), and
  the typed instances only when there is none, so a caller never works on half a dataset;
- media checks: a field annotated ``Annotated[Path, Media("audio")]`` names a file relative to the
  dataset folder; the loader checks it stays inside the folder, exists, has a declared suffix and
  decodes as its kind (the same checks as :mod:`omnieval.data` and :mod:`omnieval.audio` run
  elsewhere), once per file however many rows share it;
- the dataset gate (:func:`dataset_suite`, :func:`gate_records`): a Great Expectations suite built
  from the model over a table with one row per source row and check columns per field;
- the fingerprint (:func:`fingerprint_records`): the table file, every media file a record names
  and the declared text fields, hashed as :func:`omnieval.data.manifest_digest` does;
- the validated dataset (:func:`validate_records`, :class:`RecordDataset`).

Validators on the model carry the benchmark's own rules (a target that must be a value of the
row's feature); they raise :func:`problem` or, for several sub-fields at once, :func:`problems`.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, ValidationInfo
from pydantic_core import PydanticCustomError, core_schema

from omnieval.data import Identified, InstanceDataset, show_value
from omnieval.errors import ConfigError, DataError

if TYPE_CHECKING:
    import pandas as pd
    from pydantic import GetCoreSchemaHandler

    from omnieval.audit import AuditInputs
    from omnieval.data import Manifest
    from omnieval.gates import GateResult


class Record(BaseModel):
    """One row of a declared benchmark's dataset; subclasses add the benchmark's fields.

    Frozen and closed to unknown keys, so a misspelt field is a loader problem, not a silent gap.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    """The instance id: unique in the file, the scores table's ``instance_id``."""

    gate_fields: ClassVar[tuple[str, ...]] = ()
    """Fields whose problems the dataset gate shows in a column of their own (``<field>__valid``),
    besides every media field and every ``Literal`` field; the rest show under ``record__parses``."""
    hashed_texts: ClassVar[tuple[str, ...]] = ()
    """Text fields hashed one by one into the fingerprint (a list of texts joined with ``"; "``), so a
    lineage names which instance's which text changed, not only that the table did."""

    def instance(self, index: int, line: int) -> object:
        """What the stages work on for this row, at position ``index`` (the candidate index) from
        line/row ``line`` of the source: by default an :class:`Instance` holding the record; a
        benchmark with a typed instance of its own returns that instead."""
        return Instance(index, self.id, self)


@dataclass(frozen=True)
class Instance:
    """One validated row: its position (the candidate layout's ``<index>``), id and record."""

    index: int
    id: str
    record: Record


# -- problems raised by validators -----------------------------------------------------------------

_PROBLEMS = "record_problems"


def problem(why: str) -> PydanticCustomError:
    """The error a validator raises so that the loader reports ``<field>: <why>`` word for word
    (pydantic's own ``ValueError`` wrapping would prefix ``Value error, ``)."""
    return PydanticCustomError("record_problem", "{why}", {"why": why})


def problems(found: Sequence[tuple[str, str]]) -> PydanticCustomError:
    """Several problems of one field's sub-fields at once: ``(sub, why)`` pairs, reported as
    ``<field>.<sub>: <why>`` (``<field>: <why>`` where ``sub`` is empty)."""
    why = "; ".join(f"{s}: {w}" if s else w for s, w in found)
    return PydanticCustomError(_PROBLEMS, "{why}", {"why": why, "problems": [list(p) for p in found]})


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise problem(f"expected a string, got {show_value(value)}")
    if not value.strip():
        raise problem("empty")
    return value


Text = Annotated[str, PlainValidator(_text)]
"""A string with more than white space, kept as written (``expected a string, got ...`` / ``empty``)."""


# -- media -----------------------------------------------------------------------------------------


class MediaCheck(NamedTuple):
    """One media reference checked: where it resolved (None unless inside the folder and present)
    and what is wrong with it ('' when nothing)."""

    path: Path | None
    problem: str
    each: tuple[str, ...] = ()
    """The problems one by one when a ``check`` hook found several (each its own report line)."""


@dataclass(frozen=True)
class Media:
    """Marks a record field as a file relative to the dataset folder: ``Annotated[Path, Media(...)]``.

    The loader resolves it (relative, inside the folder with symlinks resolved, present), checks
    its suffix when ``suffixes`` is given, decodes it as ``kind`` (``image``: PIL verify and load;
    ``audio``: a full decode, refused above ``max_duration_s``; ``file``: no decode) and runs
    ``check`` (``(path, label) -> problem``, or several problems as a tuple, each reported on a line
    of its own) for anything else (a video's streams and frame rate). The validated
    value is the absolute path. Its content is hashed into the fingerprint. Without a dataset
    folder (a record built in code) the value is taken as the path it is.
    """

    kind: Literal["file", "image", "audio"] = "file"
    suffixes: tuple[str, ...] = ()
    max_duration_s: float | None = None
    check: Callable[[Path, str], str | tuple[str, ...]] | None = None
    """Part of the marker's equality: ``typing`` caches ``Annotated[Path, m]`` by equal metadata, so
    two markers equal but for their checks would make two fields share one marker."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.with_info_plain_validator_function(
            self._validate, serialization=core_schema.plain_serializer_function_ser_schema(str)
        )

    def _validate(self, value: object, info: ValidationInfo) -> Path:
        context = info.context
        if not isinstance(context, RowContext):
            if isinstance(value, str | Path):
                return Path(value)
            raise problem(f"expected a relative path, got {show_value(value)}")
        found = context.media(self, value)
        if len(found.each) > 1:
            raise problems([("", why) for why in found.each])
        if found.problem:
            raise problem(found.problem)
        assert found.path is not None
        return found.path

    def inspect(self, root: Path, rel: object) -> MediaCheck:
        """Resolve and check ``rel`` under ``root`` (what the loader runs once per file)."""
        from omnieval.data import image_problem, resolve_in_root

        resolved, why = resolve_in_root(root, rel)
        if resolved is None:
            return MediaCheck(None, why)
        label = str(rel)
        if self.suffixes and resolved.suffix.lower() not in self.suffixes:
            return MediaCheck(resolved, f"{label}: expected a {' or '.join(self.suffixes)} file")
        if self.kind == "image":
            why = image_problem(resolved, label)
        elif self.kind == "audio":
            why = _audio_problem(resolved, label, self.max_duration_s)
        if not why and self.check is not None:
            found = self.check(resolved, label)
            if not isinstance(found, str):
                return MediaCheck(resolved, "; ".join(found), tuple(found))
            why = found
        return MediaCheck(resolved, why)


def _audio_problem(path: Path, label: str, max_duration_s: float | None) -> str:
    from omnieval.audio import AudioError, load_audio

    try:
        load_audio(path, max_duration_s=max_duration_s)
    except AudioError as exc:
        return f"{label}: {exc.detail}"
    return ""


def media_fields(model: type[BaseModel]) -> dict[str, Media]:
    """Field -> its :class:`Media` annotation, for every media field of ``model`` in field order."""
    return {
        name: marker
        for name, info in model.model_fields.items()
        for marker in info.metadata
        if isinstance(marker, Media)
    }


def _literal_values(annotation: object) -> tuple[object, ...]:
    """The values of a ``Literal`` annotation (also inside ``Annotated``), else ()."""
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return typing.get_args(annotation) if typing.get_origin(annotation) is Literal else ()


class RowContext:
    """The validation context of one dataset read: the folder and its media checks (each file
    checked once, however many rows name it)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.checked: dict[tuple[Media, object, str], MediaCheck] = {}
        self.row: Mapping[str, Any] = {}
        """The row being validated as the source holds it, for a validator that needs a sibling
        field's input even where that field failed (a clip's length bounding event times)."""

    def media(self, marker: Media, rel: object) -> MediaCheck:
        """The check of ``rel`` as ``marker`` declares it, run the first time it is asked for."""
        key = (marker, marker.check, rel if isinstance(rel, str) else repr(rel))
        if key not in self.checked:
            self.checked[key] = marker.inspect(self.root, rel)
        return self.checked[key]


# -- row sources -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Wording:
    """How a source's problems read. Two wordings exist, both relied on by users' scripts and
    tests: :data:`DECLARED` (``rows.jsonl:7 (a): text: Field required``) and :data:`MANIFEST`, the
    manifest benchmarks' (``manifest.jsonl line 7 (id a): text: missing field``)."""

    where: str = "{file}:{line}"
    with_id: str = "{where} ({id})"
    missing_file: str = "{file}: not found"
    missing_folder: str = ""
    no_rows: str = ""
    missing_field: str = ""
    """The text of a missing required field; empty: pydantic's (``Field required``)."""
    unknown_field: str = ""
    """The text of a key the model does not declare (``extra="forbid"``); empty: pydantic's."""
    first: tuple[Literal["unknown", "missing", "duplicate"], ...] = ()
    """Kinds of problem a row reports before the others, in this order (the rest follow in field
    order): PRISM-Bench's manifest names unknown keys, then missing fields, then a repeated id."""
    duplicate: str = "repeats line {line}"
    any_row_repeats: bool = False
    """Whether a row whose fields fail also counts for repeated ids (else only valid rows do)."""
    not_utf8: str = "not a JSON line (UnicodeDecodeError)"
    not_json: str = "not a JSON line (JSONDecodeError)"
    not_object: str = "not a JSON object"
    unreadable_check: str = "dataset_is_readable"
    """The gate's first failed expectation when the file cannot be read at all."""
    problem: str = "{where}: {field}: {why}"
    """One problem of a row's field (``{field!r}`` quotes the name)."""
    id_when_blank: bool = False
    """Whether ``where`` names a blank (white space) id too (``(id '  ')``), not only a real one."""
    duplicates: str = ""
    """When set, repeated ids are reported once each after every row, naming all their rows
    (``{file}``, ``{rows}`` joined with ``", "``, ``{id}``), instead of on each repeat; any row whose
    id is a string counts, valid or not."""
    row: str = "line {line}"
    """How the dataset gate's ``*__problem`` columns name a row."""


DECLARED = Wording()
MANIFEST = Wording(
    where="{file} line {line}",
    with_id="{where} (id {id})",
    missing_file="{file}: file not found (expected at {path})",
    missing_folder="{root}: dataset folder not found",
    no_rows="{file}: no instances (the file has no non-blank line)",
    missing_field="missing field",
    duplicate="duplicate of line {line}",
    any_row_repeats=True,
    not_utf8="not UTF-8 text (byte {byte})",
    not_json="not valid JSON ({msg})",
    not_object="expected a JSON object",
    unreadable_check="manifest_is_readable",
)


class RawRow(NamedTuple):
    """One row as the source holds it: its 1-based line (or row) number, the object (None when
    the row is not one) and why not."""

    number: int
    obj: dict[str, Any] | None
    problem: str = ""


@dataclass(frozen=True)
class RowSource:
    """Where a dataset's rows come from: ``file`` inside the dataset folder, read as :meth:`raw_rows`."""

    file: str
    wording: Wording = DECLARED
    label: str = ""
    """How problems name the file (default ``file``)."""

    @property
    def name(self) -> str:
        return self.label or self.file

    def path(self, root: Path) -> Path:
        return Path(root) / self.file

    def read(self, root: Path) -> tuple[list[RawRow], list[str]]:
        """The rows and the problems of the dataset as a whole (no folder, no file, no row)."""
        w, path = self.wording, self.path(root)
        if w.missing_folder and not Path(root).is_dir():
            return [], [w.missing_folder.format(root=root)]
        if not path.is_file():
            return [], [w.missing_file.format(file=self.name, path=path)]
        rows = list(self.raw_rows(path))
        whole = [w.no_rows.format(file=self.name)] if not rows and w.no_rows else []
        return rows, whole

    def raw_rows(self, path: Path) -> Iterator[RawRow]:
        """The file's rows, numbered as problems name them. Each kind of source (:class:`JsonLines`,
        :class:`ParquetRows`) reads its format here; a source that overrides :meth:`read` whole
        (storybench's table) need not."""
        raise TypeError(f"{type(self).__name__} reads no rows: give it raw_rows() or read()")


@dataclass(frozen=True)
class JsonLines(RowSource):
    """A JSON-lines file: one object a non-blank line; the line number is the file's."""

    def raw_rows(self, path: Path) -> Iterator[RawRow]:
        w = self.wording
        for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                yield RawRow(number, None, w.not_utf8.format(byte=exc.start))
                continue
            except json.JSONDecodeError as exc:
                yield RawRow(number, None, w.not_json.format(msg=exc.msg))
                continue
            if not isinstance(data, dict):
                yield RawRow(number, None, w.not_object)
                continue
            yield RawRow(number, data)


@dataclass(frozen=True)
class ParquetRows(RowSource):
    """A parquet table: one record a row (numbered from 1); a null cell counts as an absent field,
    so a field's default applies and a required one is reported missing."""

    def raw_rows(self, path: Path) -> Iterator[RawRow]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as exc:
            yield RawRow(1, None, f"not a readable parquet table ({type(exc).__name__})")
            return
        for number, row in enumerate(table.to_pylist(), start=1):
            yield RawRow(number, {k: v for k, v in row.items() if v is not None})


# -- the strict loader -----------------------------------------------------------------------------


class RecordRows(NamedTuple):
    """What :func:`read_rows` found: the instances (empty unless no problem at all), every problem
    in row order, one gate row per source row (keyed by its number) and the problems of the
    dataset as a whole (also in ``problems``)."""

    instances: tuple[Instance, ...]
    problems: list[str]
    rows: dict[int, dict[str, Any]]
    whole: list[str]


def read_rows(root: Path, source: RowSource, model: type[Record]) -> RecordRows:
    """Read and check every row of ``source`` in dataset folder ``root`` against ``model``.

    Example:
        >>> import tempfile
        >>> class Row(Record):
        ...     text: str
        >>> root = Path(tempfile.mkdtemp())
        >>> _ = (root / "rows.jsonl").write_text('{"id": "a", "text": "x"}\\n{"id": "a", "txt": "y"}\\n')
        >>> read_rows(root, JsonLines("rows.jsonl"), Row).problems
        ['rows.jsonl:2 (a): text: Field required', 'rows.jsonl:2 (a): txt: Extra inputs are not permitted']
    """
    raw, whole = source.read(root)
    w, context = source.wording, RowContext(Path(root).resolve())
    media, shown = media_fields(model), _gate_columns(model)
    found: list[Instance] = []
    all_problems = list(whole)
    rows: dict[int, dict[str, Any]] = {}
    seen: dict[str, int] = {}
    repeats: dict[str, list[int]] = {}
    for row in raw:
        where = w.where.format(file=source.name, line=row.number)
        obj = row.obj or {}
        rid = obj.get("id")
        if isinstance(rid, str) and (rid.strip() or w.id_when_blank):
            where = w.with_id.format(where=where, id=rid)
        bad: list[tuple[str, str]] = [] if row.obj is not None else [("", row.problem)]
        record = None
        if row.obj is not None:
            context.row = obj
            failed: ValidationError | None = None
            try:
                record = model.model_validate(obj, context=context)
            except ValidationError as exc:
                bad.extend(_reasons(exc, w))
                failed = exc
            counted = record is not None or w.any_row_repeats
            if w.duplicates:
                if isinstance(rid, str):
                    repeats.setdefault(rid, []).append(row.number)
            elif counted and isinstance(rid, str) and rid in seen:
                bad.insert(_duplicate_at(failed, len(bad), w), ("id", w.duplicate.format(line=seen[rid])))
                record = None
            elif counted and isinstance(rid, str) and rid.strip():
                seen[rid] = row.number
        if record is not None:
            found.append(Instance(len(found), record.id, record))
        all_problems.extend(
            w.problem.format(where=where, field=f, why=why) if f else f"{where}: {why}" for f, why in bad
        )
        rows[row.number] = _gate_row(
            row, obj, bad, context, media, shown, model, w.row.format(line=row.number)
        )
    all_problems.extend(_repeated_ids(source, repeats))
    ok = not all_problems
    return RecordRows(tuple(found) if ok else (), all_problems, rows, whole)


_KINDS = {"extra_forbidden": "unknown", "missing": "missing"}


def _repeated_ids(source: RowSource, repeats: Mapping[str, list[int]]) -> Iterator[str]:
    """One problem per id that several rows carry (:attr:`Wording.duplicates`), in order of first use."""
    for rid, numbers in repeats.items():
        if len(numbers) > 1:
            rows = ", ".join(str(n) for n in numbers)
            yield source.wording.duplicates.format(file=source.name, rows=rows, id=rid)


def _reasons(exc: ValidationError, wording: Wording) -> Iterator[tuple[str, str]]:
    errors = exc.errors()
    if wording.first:  # stable: within a kind, field order
        errors = sorted(errors, key=lambda e: _rank(wording, _KINDS.get(e["type"], "")))
    for err in errors:
        field_name = ".".join(str(p) for p in err["loc"])
        if err["type"] == _PROBLEMS:
            # Raised by a model validator (no field of its own), each sub names a field.
            for sub, why in err.get("ctx", {}).get("problems", []):
                yield (f"{field_name}.{sub}" if field_name and sub else sub or field_name or "(record)", why)
        elif err["type"] == "missing" and wording.missing_field:
            yield field_name, wording.missing_field
        elif err["type"] == "extra_forbidden" and wording.unknown_field:
            yield field_name, wording.unknown_field
        else:
            yield field_name or "(record)", err["msg"]


def _rank(wording: Wording, kind: str) -> int:
    return wording.first.index(kind) if kind in wording.first else len(wording.first)


def _duplicate_at(exc: ValidationError | None, n_bad: int, wording: Wording) -> int:
    """Where a repeated id goes among a row's ``n_bad`` problems: last, unless :attr:`Wording.first`
    names it (then after the problems of the kinds named before it, which lead the row's list)."""
    if "duplicate" not in wording.first:
        return n_bad
    if exc is None:
        return 0
    rank = wording.first.index("duplicate")
    return sum(_rank(wording, _KINDS.get(e["type"], "")) < rank for e in exc.errors())


def _gate_columns(model: type[Record]) -> list[str]:
    """Fields with a ``<field>__valid`` column: declared ones and ``Literal`` ones, in field order."""
    return [
        f
        for f, info in model.model_fields.items()
        if f in model.gate_fields or _literal_values(info.annotation)
    ]


def _shown(value: object) -> object:
    """A value as the gate table shows it: strings as written, a list of strings joined with
    ``"; "``, anything else as its JSON text (so a wrong type shows and fails its check)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return "; ".join(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _gate_row(
    row: RawRow,
    obj: dict[str, Any],
    bad: list[tuple[str, str]],
    context: RowContext,
    media: dict[str, Media],
    shown: list[str],
    model: type[Record],
    label: str,
) -> dict[str, Any]:
    parsed = row.obj is not None
    reasons = [f"{f}: {why}" if f else why for f, why in bad]
    whole = f"{label}: " + "; ".join(reasons) if reasons else ""
    out: dict[str, Any] = {"record__parses": not bad, "record__problem": whole, "problem": whole}
    out.update({f: _shown(obj.get(f)) for f in model.model_fields})

    def reason(name: str) -> str:
        mine = [r for (f, _), r in zip(bad, reasons, strict=True) if f == name or f.startswith(name + ".")]
        return f"{label}: " + "; ".join(mine) if mine else ""

    for name in shown:
        why = reason(name)
        out[f"{name}__valid"] = parsed and not why
        out[f"{name}__problem"] = why if parsed else whole
    for name, marker in media.items():
        check = context.media(marker, obj[name]) if name in obj else None
        out[f"{name}__present"] = check is not None and check.path is not None
        out[f"{name}__decodable"] = check is not None and check.path is not None and not check.problem
        out[f"{name}__problem"] = reason(name) if parsed else whole
    return out


def gate_columns(model: type[Record]) -> list[str]:
    """The gate table's columns in order: the model's fields, then the check columns."""
    cols = [*model.model_fields, "record__parses", "record__problem", "problem"]
    for name in _gate_columns(model):
        cols += [f"{name}__valid", f"{name}__problem"]
    for name in media_fields(model):
        cols += [f"{name}__present", f"{name}__decodable", f"{name}__problem"]
    return cols


# -- the dataset gate ------------------------------------------------------------------------------


def dataset_suite(model: type[Record], name: str) -> dict[str, Any]:
    """The dataset gate's Great Expectations suite (suite-file form) derived from ``model``: at
    least one row, every row a valid record, no required field null, ids unique, then a column of
    its own for each declared gate field, ``Literal`` field and media field (present, decodable).

    Example:
        >>> class Row(Record):
        ...     text: str
        ...     note: str = ""
        >>> [e["kwargs"].get("column") for e in dataset_suite(Row, "toy")["expectations"]]
        [None, 'record__parses', 'id', 'text', 'id']
    """

    def expect(kind: str, meaning: str, **kwargs: Any) -> dict[str, Any]:
        return {"type": kind, "kwargs": kwargs, "meta": {"notes": meaning}}

    def holds(column: str, meaning: str) -> dict[str, Any]:
        return expect("expect_column_values_to_be_in_set", meaning, column=column, value_set=[True])

    fields = model.model_fields
    required = [f for f, info in fields.items() if info.is_required()]
    checked = []
    for f in _gate_columns(model):
        values = _literal_values(fields[f].annotation)
        means = f"{f} is one of {', '.join(map(str, values))}" if values else f"{f} passes its checks"
        checked.append(holds(f"{f}__valid", means))
    for f, marker in media_fields(model).items():
        checked.append(holds(f"{f}__present", f"{f} is relative, stays inside the dataset folder and exists"))
        checked.append(holds(f"{f}__decodable", f"{f} decodes as {marker.kind}"))
    return {
        "name": f"{name}_dataset",
        "meta": {"notes": f"Dataset gate of {name}, derived from its record model {model.__name__}."},
        "expectations": [
            expect("expect_table_row_count_to_be_between", "at least one record", min_value=1),
            holds("record__parses", f"every line is a valid {model.__name__}"),
            *(
                expect("expect_column_values_to_not_be_null", f"every record has {f}", column=f)
                for f in required
            ),
            expect("expect_column_values_to_be_unique", "ids are unique", column="id"),
            *checked,
        ],
    }


def gate_records(
    root: Path,
    source: RowSource,
    model: type[Record],
    name: str,
    out_json: Path | None,
) -> GateResult:
    """Run the suite :func:`dataset_suite` derives from ``model`` over the rows of ``source``.

    A dataset that cannot be read at all (no folder, no file, no row) fails first with the
    source's ``unreadable_check``. The result is written to ``out_json`` (pass or fail) unless None.
    """
    import tempfile
    from dataclasses import replace

    import pandas as pd

    from omnieval.gates import FailedExpectation, validate_frame, write_result

    found = read_rows(root, source, model)
    columns = gate_columns(model)
    frame = pd.DataFrame(list(found.rows.values()), index=list(found.rows), columns=columns)
    frame = frame.reset_index(drop=True)  # row labels are positions; the reasons name the lines
    suite = dataset_suite(model, name)
    with tempfile.TemporaryDirectory(prefix="omnieval-gate-") as tmp:
        path = Path(tmp) / f"{suite['name']}.json"
        path.write_text(json.dumps(suite), encoding="utf-8")
        result = validate_frame(frame, path, artifact=str(root), id_column="id", notes=found.whole)
    if found.whole:
        head = FailedExpectation(source.wording.unreadable_check, detail="; ".join(found.whole))
        result = replace(result, success=False, failed=[head, *result.failed])
    if out_json is not None:
        write_result(result, out_json)
    return result


def dataset_table(model: type[Record], instances: Iterable[Instance], root: Path) -> pd.DataFrame:
    """One row per instance (``index`` then the record's JSON form), media fields as paths relative
    to ``root`` (the MLflow dataset input)."""
    import pandas as pd

    media = media_fields(model)
    rows = []
    for inst in instances:
        row: dict[str, Any] = {"index": inst.index, **inst.record.model_dump(mode="json")}
        for name in media:
            if isinstance(row.get(name), str):
                row[name] = Path(row[name]).resolve().relative_to(root.resolve()).as_posix()
        rows.append(row)
    return pd.DataFrame(rows)


# -- the fingerprint -------------------------------------------------------------------------------


def fingerprint_records(
    root: Path, table: Path, model: type[Record], items: Sequence[Identified]
) -> Manifest:
    """Hash the table file, every media file the items name (each once) and their declared texts.

    ``items`` are the validated records or objects with the same attributes (a benchmark's typed
    instances); ``model`` says which attributes are media (:func:`media_fields`) and which texts are
    hashed (:attr:`Record.hashed_texts`). Files are sorted by path relative to ``root`` and texts by
    (id, field), so neither row order nor the folder's location enters the digest.
    """
    from omnieval.data import Manifest, TextEntry, file_entry, manifest_digest, sha256_text

    root = Path(root)
    names = list(media_fields(model))
    media = {path for item in items for name in names if isinstance(path := getattr(item, name), Path)}
    files = tuple(sorted((file_entry(root, p) for p in media), key=lambda e: e.path))
    found = []
    for item in items:
        for name in model.hashed_texts:
            value = getattr(item, name)
            text = "; ".join(value) if isinstance(value, list | tuple) else str(value)
            found.append(TextEntry(item.id, name, sha256_text(text)))
    texts = tuple(sorted(found, key=lambda e: (e.id, e.field)))
    n, entry = len(items), file_entry(root, table)
    return Manifest(n, entry, files, texts, manifest_digest(n, entry, files, texts))


# -- the dataset -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetReport:
    """Outcome of strict dataset validation; ``dataset`` is set only when ``ok``."""

    ok: bool
    problems: list[str]
    n_rows: int
    dataset: Any = None


@dataclass(frozen=True)
class DatasetSummary:
    """A one-line description of a valid dataset and the facts behind it (``omnieval validate``)."""

    text: str
    facts: dict[str, Any] = field(default_factory=dict)


InstT = TypeVar("InstT", bound=Identified)
DataT = TypeVar("DataT", bound="RecordDataset[Any]")


@dataclass(frozen=True)
class RecordDataset(InstanceDataset[InstT]):
    """A validated dataset of a declared benchmark: its instances (what each record's
    :meth:`Record.instance` made) in source order, the rows' file and the records themselves.

    A benchmark subclasses it (``dataset_type``) for what only its data knows: a summary line, an
    MLflow dataset table of its own, the inputs of ``omnieval audit``.
    """

    table: Path
    """The rows' file (resolved): what the fingerprint hashes as the table."""
    records: tuple[Record, ...] = field(repr=False, compare=False)
    """The validated records the instances were built from (what the fingerprint hashes)."""

    def summary(self) -> DatasetSummary:
        """How ``omnieval validate`` describes the dataset (default: ``"<n> instances"``)."""
        return DatasetSummary(f"{len(self)} instances", {"n_rows": len(self)})

    def frame(self) -> pd.DataFrame:
        """The MLflow dataset input: ``index`` then each record's JSON form, media paths relative."""
        if not self.records:
            import pandas as pd

            return pd.DataFrame()
        rows = [Instance(index, r.id, r) for index, r in enumerate(self.records)]
        return dataset_table(type(self.records[0]), rows, self.root)

    def audit_inputs(self, digest: str, benchmark: str) -> AuditInputs:
        """What ``omnieval audit`` reads (pages, targets, conditions); ``digest`` is the dataset's
        fingerprint. Default: refused (the benchmark has no dataset audit)."""
        raise ConfigError(f"benchmark {benchmark} has no dataset audit")


def validate_records(
    root: Path, record: type[Record], source: RowSource, dataset_type: type[RecordDataset[Any]]
) -> DatasetReport:
    """Read every row of ``source`` under ``root`` through ``record``; the dataset (of
    ``dataset_type``, one instance per row from :meth:`Record.instance`) only when no row has a
    problem. Never raises on bad data: problems name file, row, id and field."""
    root = Path(root)
    found = read_rows(root, source, record)
    dataset = None
    if not found.problems:
        lines = list(found.rows)  # every row is an instance when nothing is wrong
        records = tuple(i.record for i in found.instances)
        instances = tuple(r.instance(i, lines[i]) for i, r in enumerate(records))
        dataset = dataset_type(root.resolve(), instances, table=source.path(root).resolve(), records=records)
    return DatasetReport(not found.problems, found.problems, len(found.rows), dataset)


def load_records(
    name: str, root: Path, record: type[Record], source: RowSource, dataset_type: type[DataT]
) -> DataT:
    """:func:`validate_records`'s dataset, or raise with every problem.

    Raises:
        DataError: ``<name> dataset <root> failed validation (<n> problems)`` listing each problem
            (exit code 2 in the CLI).
    """
    report = validate_records(root, record, source, dataset_type)
    if not isinstance(report.dataset, dataset_type):
        n = len(report.problems)
        raise DataError(
            f"{name} dataset {root} failed validation ({n} problem{'s' if n != 1 else ''})", report.problems
        )
    return report.dataset


__all__ = [
    "DECLARED",
    "MANIFEST",
    "DatasetReport",
    "DatasetSummary",
    "Instance",
    "JsonLines",
    "Media",
    "MediaCheck",
    "ParquetRows",
    "RawRow",
    "Record",
    "RecordDataset",
    "RecordRows",
    "RowContext",
    "RowSource",
    "Text",
    "Wording",
    "dataset_suite",
    "dataset_table",
    "fingerprint_records",
    "gate_columns",
    "gate_records",
    "load_records",
    "media_fields",
    "problem",
    "problems",
    "read_rows",
    "validate_records",
]
