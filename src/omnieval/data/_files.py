"""File checks shared by the loader and the dataset gate.

Each check returns a value and a short problem string ('' when fine); callers add the row and field.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, NamedTuple


class Resolved(NamedTuple):
    """A dataset-relative path resolved under the root; ``path`` is None when ``problem`` is set."""

    path: Path | None
    problem: str


class Loaded(NamedTuple):
    """A decoded file content (text or JSON value); ``value`` is None when ``problem`` is set."""

    value: Any
    problem: str


def resolve_in_root(root: Path, rel: object) -> Resolved:
    """Resolve ``rel`` (relative, POSIX separators) under ``root`` and check that it stays there.

    Symlinks are followed, so a link pointing out of the dataset folder is rejected too. Existence
    is checked; the file type is the caller's business.

    >>> resolve_in_root(Path("/data"), "../etc/passwd").problem
    "path '../etc/passwd' leaves the dataset folder"
    """
    if not isinstance(rel, str) or not rel.strip():
        return Resolved(None, f"expected a relative path, got {show_value(rel)}")
    if PurePosixPath(rel).is_absolute() or PureWindowsPath(rel).is_absolute() or PureWindowsPath(rel).drive:
        return Resolved(None, f"path {rel!r} is absolute; paths must be relative to the dataset folder")
    base = root.resolve()
    target = (base / rel).resolve()
    if not target.is_relative_to(base):
        return Resolved(None, f"path {rel!r} leaves the dataset folder")
    if not target.exists():
        return Resolved(None, f"{rel}: file not found")
    if not target.is_file():
        return Resolved(None, f"{rel}: not a regular file")
    return Resolved(target, "")


class FileCheck(NamedTuple):
    """A referenced file after :func:`check_file`: ``path`` is None unless it is inside the root and
    exists; ``content`` is the text (``text``) or JSON object (``json``) when ``problem`` is empty."""

    path: Path | None
    problem: str
    content: Any = None


def check_file(root: Path, rel: object, kind: str) -> FileCheck:
    """Resolve ``rel`` under ``root`` and check it is a file of ``kind`` (``image``, ``text``, ``json``)."""
    resolved, problem = resolve_in_root(root, rel)
    if resolved is None:
        return FileCheck(None, problem)
    label = str(rel)
    if kind == "image":
        return FileCheck(resolved, image_problem(resolved, label))
    if kind == "text":
        text, problem = read_text_file(resolved, label)
        return FileCheck(resolved, problem, text)
    if kind != "json":
        raise ValueError(f"unknown file kind {kind!r}")
    value, problem = read_json_file(resolved, label)
    if not problem and not isinstance(value, dict):
        problem = f"{label}: expected a JSON object at the top level"
    return FileCheck(resolved, problem, value if not problem else None)


def image_problem(path: Path, label: str) -> str:
    """'' when ``path`` is an image PIL can verify and fully decode, else a reason naming ``label``."""
    from PIL import Image

    try:
        with Image.open(path) as img:
            img.verify()
        # verify() leaves the file unusable and misses truncated pixel data; decode it for real.
        with Image.open(path) as img:
            img.load()
            if img.width < 1 or img.height < 1:
                return f"{label}: image has no pixels"
    except Exception as exc:
        # PIL puts the absolute path in its messages; the label already names the file.
        detail = str(exc).replace(f" '{path}'", "").replace(str(path), "<file>")
        return f"{label}: cannot decode image ({type(exc).__name__}: {clip(detail)})"
    return ""


def read_text_file(path: Path, label: str) -> Loaded:
    """Read a UTF-8 text file (a leading byte-order mark is allowed)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Loaded(None, f"{label}: cannot read ({exc.strerror or type(exc).__name__})")
    try:
        return Loaded(data.decode("utf-8-sig"), "")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        return Loaded(None, f"{label}: not valid UTF-8 (byte 0x{bad} at offset {exc.start})")


def read_json_file(path: Path, label: str) -> Loaded:
    """Read a UTF-8 JSON file."""
    text, problem = read_text_file(path, label)
    if problem:
        return Loaded(None, problem)
    try:
        return Loaded(json.loads(text), "")
    except json.JSONDecodeError as exc:
        return Loaded(None, f"{label}: invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")


def parse_characters(value: object) -> Loaded:
    """A characters field as a list of objects, each with a non-empty string ``name``.

    Accepts a JSON string or an already decoded list (parquet ``list<struct>`` columns).

    >>> parse_characters('[{"name": "Pip"}]').value
    [{'name': 'Pip'}]
    >>> print(parse_characters('{"name": "Pip"}').problem)
    expected a JSON list of objects, got an object
    """
    obj: Any = value
    if isinstance(value, str):
        try:
            obj = json.loads(value)
        except json.JSONDecodeError as exc:
            return Loaded(None, f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
    elif isinstance(value, tuple):
        obj = list(value)
    elif value is not None and type(value).__name__ == "ndarray":
        obj = list(value)  # type: ignore[call-overload]
    if not isinstance(obj, list):
        return Loaded(None, f"expected a JSON list of objects, got {_json_kind(obj)}")
    for i, item in enumerate(obj):
        if not isinstance(item, dict):
            return Loaded(None, f"item {i} is {_json_kind(item)}, not an object")
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            return Loaded(None, f"item {i} has no non-empty string 'name'")
    return Loaded(obj, "")


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def clip(text: str, limit: int = 120) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis.

    >>> clip("a  long   text", 8)
    'a lon...'
    """
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def show_value(value: object, limit: int = 50) -> str:
    """A value for an error message: strings quoted and clipped, other values with their type.

    >>> show_value(None), show_value(" x "), show_value(3)
    ('null', "'x'", 'int 3')
    """
    if value is None:
        return "null"
    if isinstance(value, str):
        return repr(clip(value, limit)) if value.strip() else repr(value)
    return f"{type(value).__name__} {clip(repr(value), limit)}"
