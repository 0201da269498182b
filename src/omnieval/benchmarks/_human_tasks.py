"""What every benchmark's ``omnieval human-tasks`` does alike: the ``tasks`` step (blind Label Studio
tasks, the key apart, clips under blind names) and the ``labels`` step (exports read back with the
key). A benchmark keeps its draw, its task shape and its analysis.

Example:
    >>> counts = {"annotations": 0, "skipped": 0}
    >>> task = {"annotations": [{"id": 7, "result": [{"from_name": "x"}]}, {"id": 8, "was_cancelled": True}]}
    >>> [(ann["id"], where) for ann, where, _ in submitted_annotations(task, "export.json: task 1", counts)]
    [(7, 'export.json: task 1 annotation 7')]
    >>> counts
    {'annotations': 2, 'skipped': 1}
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omnieval.errors import ConfigError, DataError


def human_tasks_command(
    tasks: Callable[[list[str], str], int], labels: Callable[[list[str], str], int]
) -> Callable[[Sequence[str], str], int]:
    """A benchmark's ``human-tasks`` command ``(argv, prog) -> exit status``: its ``labels`` step
    when ``argv`` starts with it, else its ``tasks`` step."""

    def command(argv: Sequence[str], prog: str) -> int:
        argv = list(argv)
        if argv[:1] == ["labels"]:
            return labels(argv[1:], f"{prog} labels")
        return tasks(argv, prog)

    return command


def repeatable(parser: argparse.ArgumentParser, flag: str, metavar: str, help: str, **more: Any) -> None:
    """Add an option given any number of times (a list, empty by default)."""
    parser.add_argument(flag, action="append", default=[], metavar=metavar, help=help, **more)


def labels_parser(
    prog: str, description: str, *, key_help: str, out_metavar: str, out_help: str
) -> argparse.ArgumentParser:
    """The ``labels`` step's parser: ``EXPORT.json [...] --key KEY.json --out OUT``."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument(
        "exports", type=Path, nargs="+", metavar="EXPORT.json", help="Label Studio JSON export"
    )
    parser.add_argument("--key", type=Path, required=True, metavar="KEY.json", help=key_help)
    parser.add_argument("--out", type=Path, required=True, metavar=out_metavar, help=out_help)
    return parser


def candidate_folders(items: Sequence[str], taken: Iterable[str] = ()) -> dict[str, Path]:
    """``--candidates ID=DIR`` options as system -> folder, every folder checked to exist.

    Raises:
        ConfigError: an item that is not ``ID=DIR``, or a system given twice (or already in ``taken``).
        DataError: the folders that do not exist, each listed.
    """
    folders: dict[str, Path] = {}
    for item in items:
        system, sep, folder = (part.strip() for part in item.partition("="))
        if not sep or not system or not folder:
            raise ConfigError(f"--candidates {item!r}: expected ID=DIR")
        if system in folders or system in taken:
            raise ConfigError(f"--candidates {item!r}: system {system!r} is given twice")
        folders[system] = Path(folder)
    absent = [f"--candidates {s}={f}: no such folder" for s, f in folders.items() if not f.is_dir()]
    if absent:
        raise DataError("candidate folders not found", absent)
    return folders


def named_twice(names: Sequence[str]) -> list[str]:
    """The names given more than once, sorted: ``named_twice("bacab") == ["a", "b"]``."""
    return sorted({n for n in names if list(names).count(n) > 1})


def refuse_systems(
    asked: Sequence[str],
    why: Callable[[str], str | None],
    *,
    refused: str,
    twice: str = "given twice",
    more: Sequence[str] = (),
) -> None:
    """Refuse ``--system`` values whose tasks measure nothing: named twice, or a reason from ``why``.

    Raises:
        ConfigError: ``"<refused>; refused:"`` and one line per problem.
    """
    problems = [f"--system {s}: {twice}" for s in named_twice(asked)]
    problems += [f"--system {s}: {reason}" for s in dict.fromkeys(asked) if (reason := why(s)) is not None]
    problems += more
    if problems:
        raise ConfigError(f"{refused}; refused:\n" + "\n".join(f"  - {p}" for p in problems))


def written_by(key: Path, study: str) -> bool:
    """Whether ``key`` is a key file of ``study`` (what lets a later run replace that output)."""
    try:
        return bool(json.loads(key.read_text(encoding="utf-8")).get("study") == study)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return False


def seeded_rng(*parts: object) -> random.Random:
    """A generator seeded by ``parts`` alone (study, seed, stratum): no other draw changes it."""
    text = "\x00".join(str(p) for p in parts)
    return random.Random(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))


# -- writing --------------------------------------------------------------------------------------


@contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """A scratch folder beside ``target``, removed on exit unless :func:`put_in_place` moved it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield scratch
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)


def put_in_place(scratch: Path, target: Path) -> None:
    """Make the filled ``scratch`` folder ``target``, replacing an earlier ``target`` whole."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
        os.replace(target, old / target.name)
    os.replace(scratch, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# -- reading a Label Studio export ----------------------------------------------------------------


def load_json(path: Path, what: str) -> Any:
    """The JSON document of ``path``; DataError ``<path>: cannot read <what>: <why>``."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: cannot read {what}: {exc}") from None


def export_tasks(export: Any, source: str) -> list[Any]:
    """The tasks of a decoded Label Studio JSON export; DataError if it is not a list."""
    if not isinstance(export, list):
        raise DataError(f"{source}: a Label Studio JSON export is a list of tasks")
    return export


def export_items(
    export: Any, source: str, counts: MutableMapping[str, int] | None = None
) -> Iterator[tuple[Mapping[str, Any], str, Mapping[str, Any]]]:
    """Each task of a decoded Label Studio JSON export: (task, where it is, its ``data`` object).

    ``where`` (``<source>: task <id>``) names the task in messages; ``counts`` gets ``tasks`` added.

    Raises:
        DataError: not a list of tasks, a task that is not an object, or one without a ``data`` object.
    """
    for t_idx, task in enumerate(export_tasks(export, source)):
        if counts is not None:
            counts["tasks"] += 1
        if not isinstance(task, Mapping):
            raise DataError(f"{source}: task #{t_idx}: not an object")
        where = f"{source}: task {task.get('id', f'#{t_idx}')}"
        data = task.get("data")
        if not isinstance(data, Mapping):
            raise DataError(f"{where}: field data: missing or not an object")
        yield task, where, data


def submitted_annotations(
    task: Mapping[str, Any], where: str, counts: MutableMapping[str, int]
) -> Iterator[tuple[Mapping[str, Any], str, list[Any]]]:
    """Each annotation of ``task`` that has results: (annotation, where it is, its ``result`` list).

    ``where`` names the task in messages (an annotation adds ``annotation <id>``). ``counts`` gets
    ``annotations`` (every one seen) and ``skipped`` (cancelled or empty ones) added.

    Raises:
        DataError: An annotation that is not an object, or whose ``result`` is not a list.
    """
    for a_idx, ann in enumerate(task.get("annotations") or []):
        counts["annotations"] += 1
        ident = ann.get("id", f"#{a_idx}") if isinstance(ann, Mapping) else f"#{a_idx}"
        a_where = f"{where} annotation {ident}"
        if not isinstance(ann, Mapping):
            raise DataError(f"{a_where}: not an object")
        results = ann.get("result")
        if ann.get("was_cancelled") or not results:
            counts["skipped"] += 1
            continue
        if not isinstance(results, list):
            raise DataError(f"{a_where}: field result: not a list")
        yield ann, a_where, results


def annotator(annotation: Mapping[str, Any], where: str) -> str:
    """Who made an annotation: ``completed_by``'s id (or e-mail), as text.

    Raises:
        DataError: no ``completed_by`` (annotations without one would pool as one person).

    Example:
        >>> annotator({"completed_by": {"id": 3, "email": "a@b.c"}}, "task 1 annotation 9")
        '3'
    """
    who = annotation.get("completed_by")
    if isinstance(who, Mapping):
        who = who.get("id", who.get("email"))
    text = "" if who is None else str(who).strip()
    if not text:
        raise DataError(f"{where}: field completed_by: no annotator")
    return text


def rating(
    value: Mapping[str, Any], where: str, *, keys: Sequence[str], noun: str, low: int, high: int
) -> float | None:
    """The whole number in a rating's ``value``: its first of ``keys``, else its first choice (None: none).

    Raises:
        DataError: not a whole number in ``low..high``.

    Example:
        >>> rating({"choices": ["7"]}, "task 1", keys=("number",), noun="score", low=0, high=10)
        7.0
    """
    key = next((k for k in keys if k in value), None)
    choices = value.get("choices")
    raw = value[key] if key else choices[0] if isinstance(choices, list) and choices else None
    if raw is None:
        return None
    try:
        score = float(raw)
    except (TypeError, ValueError):
        raise DataError(f"{where}: {noun} {raw!r} is not a number") from None
    if not math.isfinite(score) or not score.is_integer() or not low <= score <= high:
        raise DataError(f"{where}: {noun} {raw!r} is not an integer in {low}..{high}")
    return score


__all__ = [
    "annotator",
    "candidate_folders",
    "export_items",
    "export_tasks",
    "human_tasks_command",
    "labels_parser",
    "load_json",
    "named_twice",
    "put_in_place",
    "rating",
    "refuse_systems",
    "repeatable",
    "seeded_rng",
    "staged_folder",
    "submitted_annotations",
    "written_by",
]
