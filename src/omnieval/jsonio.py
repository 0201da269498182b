"""JSON files in and out: atomic writes, and JSON-lines reads that report bad lines instead of raising.

Every module that writes JSON (stage stamps, dataset manifests, gate results, analysis outputs, corpus
cards, the generated sample) goes through :func:`write_json_atomic`; they differ only in the formatting
options they pass, which keep each file's bytes as they always were. The OmniACBench and corpus
manifests are read through :func:`read_jsonl_objects`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def write_json_atomic(
    path: Path | str,
    obj: object,
    *,
    sort_keys: bool = False,
    ensure_ascii: bool = False,
    allow_nan: bool = True,
    default: Callable[[Any], Any] | None = str,
) -> Path:
    """Write ``obj`` as 2-space indented JSON plus a newline via a temporary file and a rename.

    The temporary file sits in the target's folder (so the rename is atomic) and is removed when
    serialization or writing fails; the target is then left as it was.

    Example:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> write_json_atomic(folder / "a.json", {"b": 1, "a": "é"}, sort_keys=True).read_text()
        '{\\n  "a": "é",\\n  "b": 1\\n}\\n'
    """
    text = json.dumps(
        obj, indent=2, sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=allow_nan, default=default
    )
    return write_text_atomic(path, text + "\n")


def write_text_atomic(path: Path | str, text: str) -> Path:
    """Write ``text`` (UTF-8) via a temporary file in the target's folder and a rename; see
    :func:`write_json_atomic`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_json(path: Path | str) -> Any:
    """The JSON document in ``path`` (UTF-8), for files this package wrote itself.

    Stage outputs (stamps, summaries, lineages, the leaderboard) are written by
    :func:`write_json_atomic`, so a file is either whole or absent: an unreadable one is a bug
    or outside tampering and raises (``OSError`` or ``ValueError``) instead of being reported.
    """
    return json.loads(Path(path).read_text(encoding="utf-8"))


def read_json_object(path: Path | str) -> dict[str, Any]:
    """The JSON object in ``path`` (UTF-8), for files a person or another machine may have damaged
    (a kept record, a night record), unlike :func:`read_json`'s own outputs.

    Raises:
        DataError: ``path`` cannot be read, is not JSON or holds no object; the message names it.
    """
    from omnieval.errors import DataError

    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: unreadable ({exc})") from None
    if not isinstance(document, dict):
        raise DataError(f"{path}: expected a JSON object")
    return document


@dataclass(frozen=True)
class JsonlLine:
    """One non-blank line of a JSON-lines file: its object, or why it has none.

    Attributes:
        where: ``<path>:<line number>`` (1-based), for error messages.
        obj: The parsed JSON object; None when the line is not one.
        problem: A message naming the file and line when ``obj`` is None.
    """

    where: str
    obj: dict[str, Any] | None
    problem: str | None = None


def read_jsonl_objects(path: Path | str) -> Iterator[JsonlLine]:
    """Each non-blank line of a JSON-lines file parsed as a JSON object, in file order.

    Lines that are not UTF-8, not JSON, or JSON but not an object come back with a ``problem`` instead
    of raising, so a reader can report every bad line at once.
    """
    path = Path(path)
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield JsonlLine(where, None, f"{where}: not UTF-8 text (byte {exc.start})")
                continue
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                yield JsonlLine(where, None, f"{where}: not valid JSON ({exc.msg})")
                continue
            if not isinstance(data, dict):
                yield JsonlLine(where, None, f"{where}: expected a JSON object")
                continue
            yield JsonlLine(where, data)
