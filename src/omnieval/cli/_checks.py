"""Checks of a command's arguments, run before the command does any work.

One rule for bad input across the CLI: a file where a folder belongs (or the reverse), a file that
is not there, JSON or YAML of the wrong shape, an option that needs another one, is a usage error.
Each helper raises :class:`~omnieval.errors.ConfigError` (exit code 2, no traceback) with a message
that starts with the argument as the user typed it, e.g.::

    error: --out: /tmp/x is a folder; give a file path

Commands call these first, so a bad argument fails before a model loads, a server starts or any
file is written. Paths are checked as given (relative to the current folder), never created here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.errors import ConfigError, read_config_text

if TYPE_CHECKING:
    from omnieval.config import SuiteConfig


def _kind(path: Path) -> str:
    """``"a folder"``, ``"a file"`` or ``"not a regular file"`` for an existing ``path``."""
    if path.is_dir():
        return "a folder"
    if path.is_file():
        return "a file"
    return "not a regular file"


def input_file(flag: str, path: Path) -> Path:
    """``path``, when it is an existing file (or a link to one).

    Args:
        flag: the argument as the user names it (``--humans``, ``SCORES.parquet``).
        path: the path given.

    Raises:
        ConfigError: ``path`` does not exist, or is a folder or something else than a file.

    >>> input_file("--config", Path("/"))
    Traceback (most recent call last):
    ...
    omnieval.errors.ConfigError: --config: / is a folder; give a file
    """
    if not path.exists():
        raise ConfigError(f"{flag}: {path} does not exist")
    if not path.is_file():
        raise ConfigError(f"{flag}: {path} is {_kind(path)}; give a file")
    return path


def input_dir(flag: str, path: Path) -> Path:
    """``path``, when it is an existing folder.

    Raises:
        ConfigError: ``path`` does not exist or is not a folder.
    """
    if not path.exists():
        raise ConfigError(f"{flag}: {path} does not exist")
    if not path.is_dir():
        raise ConfigError(f"{flag}: {path} is {_kind(path)}; give a folder")
    return path


def output_file(flag: str, path: Path) -> Path:
    """``path``, when a file can be written there: it is not a folder and its folder exists.

    A missing folder is refused rather than created: a typo in a path would otherwise leave a new
    folder tree behind (``--out reslts/2024/board.json``).

    Raises:
        ConfigError: ``path`` is a folder, or its parent folder is missing or is a file.

    >>> output_file("--out", Path("/"))
    Traceback (most recent call last):
    ...
    omnieval.errors.ConfigError: --out: / is a folder; give a file path
    """
    if path.is_dir():
        raise ConfigError(f"{flag}: {path} is a folder; give a file path")
    if path.exists() and not path.is_file():
        raise ConfigError(f"{flag}: {path} is {_kind(path)}; give a file path")
    parent = path.parent
    if not parent.exists():
        raise ConfigError(f"{flag}: folder {parent} does not exist; create it first")
    if not parent.is_dir():
        raise ConfigError(f"{flag}: {parent} is {_kind(parent)}, not a folder; cannot write {path}")
    return path


def output_dir(flag: str, path: Path) -> Path:
    """``path``, when it is a folder or can be created as one (missing parents included).

    Raises:
        ConfigError: ``path`` is a file, or a part of it that exists is a file.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile() as handle:
    ...     output_dir("--out", Path(handle.name) / "plots")
    Traceback (most recent call last):
    ...
    omnieval.errors.ConfigError: --out: ... is a file, not a folder; cannot create .../plots
    """
    if path.exists():
        if not path.is_dir():
            raise ConfigError(f"{flag}: {path} is {_kind(path)}; give a folder path")
        return path
    for ancestor in path.parents:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise ConfigError(
                    f"{flag}: {ancestor} is {_kind(ancestor)}, not a folder; cannot create {path}"
                )
            break
    return path


def _text(flag: str, path: Path, what: str) -> str:
    input_file(flag, path)
    return read_config_text(path, label=f"{flag}: {path}", what=what)


def json_object(flag: str, path: Path) -> dict[str, Any]:
    """The JSON object in the file ``path``.

    Raises:
        ConfigError: the file is missing, not text, not JSON (with line and column), or holds
            another value than an object.
    """
    text = _text(flag, path, "a JSON object")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{flag}: {path} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{flag}: {path} holds a JSON {type(value).__name__}; expected an object")
    return value


def yaml_mapping(flag: str, path: Path, *, what: str = "a YAML mapping") -> dict[str, Any]:
    """The mapping in the YAML file ``path`` (``.json`` files are YAML too).

    An empty file is an empty mapping, as ``yaml.safe_load`` reads it.

    Raises:
        ConfigError: the file is missing, not text, not YAML (with its position), or holds a list
            or a scalar at the top level.
    """
    import yaml

    text = _text(flag, path, what)
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{flag}: {path} is not valid YAML: {exc}") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(
            f"{flag}: {path} holds a YAML {_yaml_kind(value)} at the top level; expected {what}"
        )
    return value


def _yaml_kind(value: object) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return "scalar"


def needs(flag: str, given: bool, other: str, present: bool) -> None:
    """Refuse ``flag`` given without ``other``, which it only makes sense with.

    >>> needs("--gate-out", True, "--gate", False)
    Traceback (most recent call last):
    ...
    omnieval.errors.ConfigError: --gate-out: only used with --gate; add --gate or drop --gate-out
    """
    if given and not present:
        raise ConfigError(f"{flag}: only used with {other}; add {other} or drop {flag}")


def at_least(flag: str, value: int | None, minimum: int) -> None:
    """Refuse a number below ``minimum`` (None: the option was not given)."""
    if value is not None and value < minimum:
        raise ConfigError(f"{flag}: must be at least {minimum}, got {value}")


def distinct_paths(first: tuple[str, Path], second: tuple[str, Path]) -> None:
    """Refuse two arguments naming the same file (an output that would overwrite an input)."""
    (flag_a, a), (flag_b, b) = first, second
    if a.resolve() == b.resolve():
        raise ConfigError(f"{flag_b}: {b} is also {flag_a}; give another path")


def suite_file(flag: str, path: Path, *, check: bool = True) -> SuiteConfig:
    """The suite config in ``path``: a YAML mapping file (checked here, naming ``flag``) that
    :func:`omnieval.config.load_suite` accepts (its errors name the file and the key).

    Args:
        check: also check the suite's components against the registries (imports the benchmarks).
    """
    from omnieval.config import load_suite

    yaml_mapping(flag, path, what="a suite (a YAML mapping)")
    return load_suite(path, check=check)
