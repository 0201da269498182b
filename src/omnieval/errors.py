"""Errors that the CLI turns into a short message and an exit code (never a traceback)."""

from __future__ import annotations


class OmnievalError(Exception):
    """A user-facing failure. ``exit_code`` 2 means bad input data or config; 1 anything else."""

    exit_code = 1


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
