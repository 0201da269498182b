"""How a benchmark's ``omnieval make-sample <benchmark> OUT`` reports what its generator did.

Each benchmark parses its own generator options and prints its own summary; writing the sample and
turning a refusal (a folder holding foreign files, a sample failing validation, a missing tool) into
an ``error:`` line with the error's exit code is the same for all of them, and lives here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from omnieval.errors import OmnievalError

SummaryT = TypeVar("SummaryT")


def sample_parser(prog: str, description: str, example: str) -> argparse.ArgumentParser:
    """The generator's argument parser: the output folder (``example`` in its help), options to add."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("out", type=Path, help=f"output folder (e.g. {example})")
    return parser


def run_sample_command(write: Callable[[], SummaryT], report: Callable[[SummaryT], int]) -> int:
    """Run ``write`` and return ``report``'s exit code for its summary.

    Args:
        write: Writes the sample; raises :class:`~omnieval.errors.OmnievalError` when it cannot.
        report: Prints the summary (and may check the written folder); returns the exit code.

    Returns:
        ``report``'s code, or the error's exit code after printing ``error: <message>`` to stderr
        (2 when the output cannot be written).
    """
    try:
        summary = write()
    except OmnievalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        # An output path the generator cannot write (a missing or read-only parent, no space left).
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: cannot write the sample: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    return report(summary)
