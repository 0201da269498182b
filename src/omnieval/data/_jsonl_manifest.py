"""Building blocks of a ``manifest.jsonl`` dataset folder (PRISM-Bench's loader; the typed containers).

OmniACBench and PRISM-Bench both keep one JSON object per line in ``<root>/manifest.jsonl``, with
media paths relative to the folder and line order as the candidate index. OmniACBench's manifest
is read by the record framework (``omnieval.benchmarks._records``, whose ``MANIFEST`` wording is
this module's); PRISM-Bench's still by the drivers here until it moves there too. What they share:
the typed dataset container, the validation report, the per-line check record (whose messages name
the line, the id and the field), a cache of file checks, and the drivers that read the lines,
collect every problem and hash the folder. The gate over the manifest's table is
:func:`omnieval.gates.gate_manifest_frame` (data never imports gates).

Each benchmark's ``_manifest.py`` subclasses the containers (so its own names stay importable) and
passes its record check to :func:`check_manifest_lines`. The containment rules for media paths
(relative, no ``..`` out of the folder, symlinks resolved) are
:func:`~omnieval.data._files.resolve_in_root`, which each benchmark's file check calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from omnieval.data._files import show_value
from omnieval.data._fingerprint import Manifest, TextEntry, file_entry, manifest_digest
from omnieval.errors import DataError
from omnieval.jsonio import read_jsonl_objects

#: The manifest's file name inside a dataset folder (also the benchmarks' layout marker).
MANIFEST_NAME = "manifest.jsonl"


def write_manifest_records(root: Path, records: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``records`` as ``root/manifest.jsonl``: one compact JSON object a line, UTF-8 as is.

    The sample generators write their manifests through here so that every generated manifest is
    byte-for-byte what the loaders expect (non-ASCII text kept, a final newline).
    """
    path = root / MANIFEST_NAME
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    return path


class Identified(Protocol):
    """A typed manifest record: anything with a dataset ``id``."""

    @property
    def id(self) -> str: ...


InstT = TypeVar("InstT", bound=Identified)
InstT_co = TypeVar("InstT_co", covariant=True)
DataT = TypeVar("DataT")
CheckT = TypeVar("CheckT")
CacheT = TypeVar("CacheT")
LineT = TypeVar("LineT", bound="ManifestLineCheck")
ReportT = TypeVar("ReportT")


@dataclass(frozen=True)
class InstanceDataset(Generic[InstT]):
    """A validated dataset folder as the sequence of its typed records, whatever the file format.

    Every benchmark's loaded dataset is one of these, so the stages and tools iterate, index and
    look up ids the same way on all of them.

    Attributes:
        root: The dataset folder (absolute, resolved).
        instances: The typed records in dataset order (``instances[i].index == i``).
    """

    root: Path
    instances: tuple[InstT, ...]

    def __len__(self) -> int:
        return len(self.instances)

    def __iter__(self) -> Iterator[InstT]:
        return iter(self.instances)

    def __getitem__(self, index: int) -> InstT:
        return self.instances[index]

    @property
    def ids(self) -> tuple[str, ...]:
        """Dataset ids in dataset order."""
        return tuple(i.id for i in self.instances)

    def by_id(self, instance_id: str) -> InstT:
        """The instance with this id; KeyError when absent."""
        for inst in self.instances:
            if inst.id == instance_id:
                return inst
        raise KeyError(instance_id)


@dataclass(frozen=True)
class ManifestDataset(InstanceDataset[InstT]):
    """A validated JSONL dataset folder: its records in manifest line order."""

    @property
    def manifest_path(self) -> Path:
        """The dataset's ``manifest.jsonl``."""
        return self.root / MANIFEST_NAME


@dataclass(frozen=True)
class ManifestReport(Generic[DataT]):
    """Outcome of validating a JSONL dataset folder: every problem found, in line order.

    Attributes:
        ok: True when the folder has no problem at all.
        problems: One line per problem (file, line, id, field, reason).
        n_rows: Manifest lines read (blank lines excluded).
        dataset: The loaded dataset when ``ok``, else None.
    """

    ok: bool
    problems: list[str]
    n_rows: int
    dataset: DataT | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class ManifestLineCheck:
    """What the validator found on one non-blank manifest line (a benchmark adds its own fields).

    Attributes:
        number: 1-based line number in the file.
        index: 0-based position among non-blank lines.
        record: The parsed object; None when the line is not a JSON object.
        problems: ``(field, message)`` pairs; the field is ``""`` for problems of the whole line.
    """

    #: Whether :meth:`field_problems` of ``name`` also collects the sub-fields ``name.<sub>``.
    NESTED_FIELDS: ClassVar[bool] = False

    number: int
    index: int
    record: dict[str, Any] | None
    problems: tuple[tuple[str, str], ...]

    @property
    def id(self) -> str | None:
        """The line's id when it is a non-empty string."""
        rid = (self.record or {}).get("id")
        return rid if isinstance(rid, str) and rid.strip() else None

    def where(self) -> str:
        """``manifest.jsonl line 7 (id ac-0007)``, without the id when there is none."""
        head = f"{MANIFEST_NAME} line {self.number}"
        return f"{head} (id {self.id})" if self.id is not None else head

    def messages(self) -> list[str]:
        """The problems as report lines."""
        return [f"{self.where()}: {reason}" for reason in self.reasons()]

    def reasons(self) -> list[str]:
        """The problems as ``field: reason`` (or the reason alone for whole-line problems)."""
        return [f"{f}: {m}" if f else m for f, m in self.problems]

    def field_problems(self, name: str) -> list[str]:
        """``field: reason`` of the problems about ``name`` (also ``name.<sub>`` if :attr:`NESTED_FIELDS`)."""
        nested = self.NESTED_FIELDS
        return [f"{f}: {m}" for f, m in self.problems if f == name or (nested and f.startswith(name + "."))]

    # -- the dataset gates' table row (GX sees only columns) ------------------------------------------

    def gate_reason(self, *names: str) -> str:
        """``line N: field: reason; ...`` for the problems about ``names``; empty when there are none."""
        found = [p for name in names for p in self.field_problems(name)]
        return f"line {self.number}: " + "; ".join(found) if found else ""

    def gate_row(self, fields: Sequence[str]) -> dict[str, Any]:
        """The columns every manifest gate row starts with.

        Each of ``fields`` as written (a non-string value as its JSON text, so the table shows it
        and its checks fail), ``problem`` (every reason of the line), ``record__parses`` and
        ``record__problem`` (why the line is not a JSON object).
        """
        import json

        record = self.record or {}

        def text(value: object) -> object:
            if value is None or isinstance(value, str):
                return value
            return json.dumps(value, ensure_ascii=False, default=str)

        whole_line = [m for f, m in self.problems if not f]
        row: dict[str, Any] = {name: text(record.get(name)) for name in fields}
        row["problem"] = f"line {self.number}: " + "; ".join(self.reasons()) if self.problems else ""
        row["record__parses"] = self.record is not None
        row["record__problem"] = f"line {self.number}: {whole_line[0]}" if whole_line else ""
        return row


class LineProblems(list[tuple[str, str]]):
    """The ``(field, message)`` problems of one line in the order found; ``add`` is the reporter
    a record check hands to its helpers (field ``""`` for a problem of the whole line)."""

    def add(self, name: str, message: str) -> None:
        """Record that field ``name`` has ``message`` wrong with it."""
        self.append((name, message))

    def nonblank_text(self, obj: Mapping[str, Any], name: str) -> str | None:
        """``obj[name]`` when it is a string with more than white space, else None (reported here).

        Every manifest's text fields (ids, scripts, captions) are checked alike and worded alike:
        a non-string is ``expected a string, got ...``, a blank string ``empty``. An absent field
        gives None without a report (the required-field check names missing fields).
        """
        if name not in obj:
            return None
        value = obj[name]
        if not isinstance(value, str):
            self.add(name, f"expected a string, got {show_value(value)}")
            return None
        if not value.strip():
            self.add(name, "empty")
            return None
        return value


class CheckCache(Generic[CheckT]):
    """File checks of one dataset folder by key, each run once.

    Many lines may share one picture or clip, and decoding or probing it again is waste. The key is
    the caller's (it decides which references count as the same file).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._seen: dict[Hashable, CheckT] = {}

    def once(self, key: Hashable, check: Callable[[], CheckT]) -> CheckT:
        """The result of ``check()`` the first time ``key`` is asked for; the stored one after."""
        if key not in self._seen:
            self._seen[key] = check()
        return self._seen[key]


def check_manifest_lines(
    root: Path,
    line_type: Callable[[int, int, dict[str, Any] | None, tuple[tuple[str, str], ...]], LineT],
    make_cache: Callable[[Path], CacheT],
    check_record: Callable[[dict[str, Any], int, int, CacheT, dict[str, int]], LineT],
) -> tuple[list[LineT], list[str]]:
    """Run a benchmark's per-line checks over ``root/manifest.jsonl``.

    Args:
        root: The dataset folder.
        line_type: Builds the check of a line that is not a JSON object from ``(number, index,
            None, (("", reason),))``.
        make_cache: Builds the file-check cache from the resolved folder (once, after the folder
            and the manifest are known to exist).
        check_record: Checks one parsed line: ``(record, number, index, cache, first_line_of)``,
            where ``first_line_of`` maps the ids seen so far to their line (the check updates it).

    Returns:
        The checked lines in file order, and problems of the folder as a whole (no folder, no
        manifest, no instances); when the latter is non-empty there may be no lines.
    """
    root = Path(root)
    manifest = root / MANIFEST_NAME
    if not root.is_dir():
        return [], [f"{root}: dataset folder not found"]
    if not manifest.is_file():
        return [], [f"{MANIFEST_NAME}: file not found (expected at {manifest})"]
    cache = make_cache(root.resolve())
    lines: list[LineT] = []
    first_line_of: dict[str, int] = {}
    for index, line in enumerate(read_jsonl_objects(manifest)):
        number = int(line.where.rsplit(":", 1)[1])
        if line.obj is None:
            reason = str(line.problem).removeprefix(f"{line.where}: ")
            lines.append(line_type(number, index, None, (("", reason),)))
            continue
        lines.append(check_record(line.obj, number, index, cache, first_line_of))
    whole = [] if lines else [f"{MANIFEST_NAME}: no instances (the file has no non-blank line)"]
    return lines, whole


class CheckedLine(Protocol[InstT_co]):
    """A benchmark's line check as :func:`validate_manifest` reads it."""

    @property
    def instance(self) -> InstT_co | None: ...

    def messages(self) -> list[str]: ...


def validate_manifest(
    root: Path,
    check_lines: Callable[[Path], tuple[Sequence[CheckedLine[InstT]], list[str]]],
    dataset_type: Callable[[Path, tuple[InstT, ...]], DataT],
    report_type: Callable[..., ReportT],
) -> ReportT:
    """Collect every problem of a JSONL dataset folder into a report, without raising for data.

    Args:
        root: The dataset folder (the one holding ``manifest.jsonl``).
        check_lines: The benchmark's per-line checks (see :func:`check_manifest_lines`).
        dataset_type: Builds the dataset from the resolved folder and the typed instances.
        report_type: Builds the report from ``ok``, ``problems``, ``n_rows`` and ``dataset``
            (keywords).

    Returns:
        The report; its ``dataset`` holds the typed instances in line order when there is no problem.
    """
    root = Path(root)
    lines, whole = check_lines(root)
    problems = list(whole)
    for line in lines:
        problems.extend(line.messages())
    dataset = None
    if not problems:
        dataset = dataset_type(
            root.resolve(), tuple(line.instance for line in lines if line.instance is not None)
        )
    return report_type(ok=not problems, problems=problems, n_rows=len(lines), dataset=dataset)


def load_manifest(benchmark: str, root: Path, report: ManifestReport[DataT]) -> DataT:
    """The dataset of a validation ``report`` of ``root``, or raise with every problem.

    Raises:
        DataError: ``<benchmark> dataset <root> failed validation (<n> problems)`` listing each
            problem; exit code 2 in the CLI.
    """
    if report.dataset is None:
        n = len(report.problems)
        raise DataError(
            f"{benchmark} dataset {root} failed validation ({n} problem{'s' if n != 1 else ''})",
            list(report.problems),
        )
    return report.dataset


def fingerprint_manifest(
    dataset: ManifestDataset[Any], media: Iterable[Path], texts: Iterable[TextEntry]
) -> Manifest:
    """Hash the manifest, the media files and the given text hashes of a JSONL dataset folder.

    Args:
        dataset: A loaded dataset.
        media: Absolute paths of the media files the instances name (duplicates allowed; each file
            is hashed once).
        texts: One entry per (instance id, text field).

    Returns:
        The fingerprint; its table entry is ``manifest.jsonl``. Files are sorted by relative path
        and texts by (id, field), so neither order nor absolute paths enter the digest.
    """
    root = dataset.root
    files = tuple(sorted((file_entry(root, p) for p in set(media)), key=lambda e: e.path))
    text_entries = tuple(sorted(texts, key=lambda e: (e.id, e.field)))
    n_rows, table = len(dataset.instances), file_entry(root, dataset.manifest_path)
    return Manifest(n_rows, table, files, text_entries, manifest_digest(n_rows, table, files, text_entries))


def relative_posix(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` (both resolved), with POSIX separators."""
    return path.resolve().relative_to(root.resolve()).as_posix()
