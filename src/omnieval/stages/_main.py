"""Argument parsing shared by every ``python -m omnieval.stages.<stage>`` entry point."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from omnieval.config import SuiteConfig, load_suite
from omnieval.errors import OmnievalError
from omnieval.stages._common import state_paths
from omnieval.stages._handoff import dataset_digest


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


def handoff_stage_main(
    stage: str,
    run: Callable[..., Any],
    argv: list[str] | None = None,
    *,
    per_system: bool = False,
    load_instances: Callable[[SuiteConfig], Any] | None = None,
) -> int:
    """The entry point of a stage that works on what ``validate`` handed over.

    ``run`` is called with the suite, the system id (``per_system`` stages), the validated
    instances (when ``load_instances`` is given) and the dataset digest, in that order. The digest
    is where each stage's cache key and freshness check start, so every stage reads it the same way.
    """

    def body(cfg: SuiteConfig, args: argparse.Namespace) -> None:
        head: list[Any] = [cfg, args.system] if per_system else [cfg]
        if load_instances is not None:
            head.append(load_instances(cfg))
        run(*head, dataset_digest(state_paths(cfg)))

    return stage_main(stage, body, argv, needs_system=per_system)
