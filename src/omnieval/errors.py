"""Errors that the CLI turns into a short message and an exit code (never a traceback)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class OmnievalError(Exception):
    """A user-facing failure. ``exit_code`` 2 means bad input data or config; 1 anything else.

    ``final``: a flow's retry of the stage cannot help (besides every exit code 2): the stage
    already retried what could pass on another try, or its work is kept for the user to finish.
    """

    exit_code = 1
    final = False


class DataError(OmnievalError):
    """Input data (dataset, candidates, scores table) failed validation."""

    exit_code = 2

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []

    def __str__(self) -> str:
        head = str(self.args[0])
        if not self.problems:
            return head
        shown = self.problems[:50]
        more = len(self.problems) - len(shown)
        lines = [head, *(f"  - {p}" for p in shown)]
        if more:
            lines.append(f"  ... and {more} more")
        return "\n".join(lines)


class ConfigError(OmnievalError):
    """A suite/pipeline config is invalid (unknown key, unknown component, bad value)."""

    exit_code = 2


class GateFailed(OmnievalError):
    """A Great Expectations gate rejected an artifact; the stage must not continue."""

    exit_code = 2


def validation_problems(header: str, exc: ValidationError) -> str:
    """``header``, then one ``  - <dotted field>: <message>`` line per pydantic error (a ConfigError text).

    Example:
        >>> from pydantic import BaseModel
        >>> class Cfg(BaseModel):
        ...     n: int
        >>> try:
        ...     Cfg.model_validate({"n": "x"})
        ... except Exception as exc:
        ...     print(validation_problems("cfg.yaml: invalid config", exc))
        cfg.yaml: invalid config
          - n: Input should be a valid integer, unable to parse string as an integer
    """
    lines = [header]
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"  - {where}: {err['msg']}")
    return "\n".join(lines)


def read_config_text(path: Path, *, label: str, what: str) -> str:
    """The UTF-8 text of the config file ``path``; a binary or unreadable file is a ConfigError.

    The one reader of config-like files that a user names (suite files in ``omnieval.config``, every command's
    JSON/YAML arguments in ``omnieval.cli``). ``label`` opens each message (the path, or the option and the
    path); ``what`` says what the file should have been.

    Raises:
        ConfigError: the file cannot be read, is not UTF-8 (names the byte offset) or holds NUL bytes.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{label} is not a text file (byte {exc.start} is not UTF-8); expected {what}"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{label} cannot be read ({exc.strerror or exc})") from None
    if "\x00" in text:
        raise ConfigError(f"{label} is not a text file (it holds NUL bytes); expected {what}")
    return text
