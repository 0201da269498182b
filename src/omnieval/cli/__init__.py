"""The ``omnieval`` command line.

Each subcommand lives in its own ``_<name>.py`` module exposing ``add_parser(subparsers)``; those
modules import nothing heavy at module level so ``omnieval --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

from omnieval.errors import OmnievalError

# Order = order in `omnieval --help`. A module missing here is simply not offered.
_SUBCOMMAND_MODULES = (
    "_run",
    "_track",
    "_benchmarks",
    "_make_sample",
    "_validate",
    "_audit",
    "_metrics",
    "_judge",
    "_aggregate",
    "_analyze",
    "_human_tasks",
    "_lineage",
    "_compare",
    "_trend",
    "_view",
    "_serve",
    "_night",
    "_team",
    "_train",
    "_dvc",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="omnieval",
        description=(
            "Evaluate omnimodal generation systems on the registered benchmarks (omnieval "
            "benchmarks lists them): versioned data, gated stages, LLM judges, statistics, MLflow."
        ),
    )
    from omnieval import __version__

    parser.add_argument("--version", action="version", version=f"omnieval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(f"omnieval.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"omnieval.cli.{name}":
                continue
            raise
        module.add_parser(sub)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, a scheduler stopping the job), raised where the process is.

    A KeyboardInterrupt, so it unwinds like Ctrl-C: ``except Exception`` in a stage cannot turn it
    into a record's error status, ``finally`` blocks and atexit hooks run, and the temporary
    Prefect server this run started is stopped instead of outliving it.
    """


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def main(argv: Sequence[str] | None = None) -> int:
    from omnieval.security import install_log_redaction, redact

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    # Keys live in the environment; a library or server may still echo one into a log line.
    install_log_redaction()
    try:
        with _sigterm_unwinds():
            code = args.func(args)
    except OmnievalError as exc:
        print(f"error: {redact(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except Terminated:
        print("terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: not an error of ours, and no traceback.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return int(code or 0)


if __name__ == "__main__":
    raise SystemExit(main())
