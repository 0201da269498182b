"""The typed containers of a dataset folder and the ``manifest.jsonl`` layout marker.

OmniACBench and PRISM-Bench both keep one JSON object per line in ``<root>/manifest.jsonl``, with
media paths relative to the folder and line order as the candidate index; both read it through the
record framework (``omnieval.benchmarks._records``, whose ``MANIFEST`` wording names a problem
``manifest.jsonl line 7 (id a): field: why``). What stays here is what the loaded datasets share
whatever reads them: the typed dataset container (:class:`InstanceDataset`, :class:`ManifestDataset`),
the validation report (:class:`ManifestReport`), raising with every problem (:func:`load_manifest`),
and the sample generators' manifest writer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from omnieval.errors import DataError

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
DataT = TypeVar("DataT")


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


def relative_posix(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` (both resolved), with POSIX separators."""
    return path.resolve().relative_to(root.resolve()).as_posix()
