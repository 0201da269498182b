"""Argument parsing shared by every ``python -m omnieval.stages.<stage>`` entry point."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from omnieval.config import SuiteConfig, load_suite
from omnieval.errors import OmnievalError


def stage_main(
    stage: str,
    body: Callable[[SuiteConfig, argparse.Namespace], Any],
    argv: list[str] | None = None,
    *,
    needs_system: bool = False,
) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m omnieval.stages.{stage}", description=f"omnieval stage {stage}"
    )
    parser.add_argument("--suite", required=True, help="suite config (pipelines/*.yaml)")
    if needs_system:
        parser.add_argument("--system", required=True, help="system id from the suite config")
    args = parser.parse_args(argv)
    from omnieval.security import install_log_redaction, redact

    install_log_redaction()
    try:
        config = load_suite(args.suite)
        body(config, args)
    except OmnievalError as exc:
        print(f"error: {redact(str(exc))}", file=sys.stderr)
        return exc.exit_code
    return 0
