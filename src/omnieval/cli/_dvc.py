"""``omnieval dvc-yaml [SUITE ...] [--check]``: render dvc.yaml from the suites it covers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from omnieval.errors import ConfigError


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "dvc-yaml",
        help="write dvc.yaml from the suites it covers (--check: fail when the committed one differs)",
        description=(
            "Render dvc.yaml from suite files, so its stages follow the suites: per suite a validate, "
            "a generate and a metrics stage per system (the suite's `systems:` keys), judge (when the "
            "suite has judge panels), report and track, with deps from the suite's benchmark and "
            "dataset and params from the suite file; plus the train_evaluator stage. The first suite's "
            "stages have no prefix, the others' are named <suite>_<stage>. Without SUITE the suites "
            "dvc.yaml covers now are kept. Writes dvc.yaml atomically; with --check writes nothing "
            "and exits 1, naming each stage and suite that differs, when the file is not what the "
            "suites give (0 when it is)."
        ),
    )
    parser.add_argument(
        "suites",
        nargs="*",
        type=Path,
        metavar="SUITE",
        help="suite files dvc.yaml covers, the default suite first (default: those it covers now)",
    )
    parser.add_argument(
        "--check", action="store_true", help="compare instead of writing; exit 1 when dvc.yaml is stale"
    )
    parser.add_argument(
        "--list", action="store_true", help="print the suite files dvc.yaml covers, one a line, and exit"
    )
    parser.add_argument(
        "--file",
        type=Path,
        default=None,
        metavar="DVC_YAML",
        help=(
            "the dvc.yaml to write or check (default: the project's, found from the current folder); "
            "its folder must exist, and an existing file must be a YAML mapping"
        ),
    )
    parser.set_defaults(func=_handle)


def _relative_suite(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ConfigError(
            f"suite {path} lies outside the project {root}: dvc.yaml covers its own suites"
        ) from None


def _handle(args: argparse.Namespace) -> int:
    from omnieval.cli import _checks
    from omnieval.runner import project_root

    if args.list and args.check:
        raise ConfigError("--list: prints the suites and exits; drop --check")
    root = project_root()
    flag = "--file" if args.file is not None else "dvc.yaml"
    target: Path = args.file if args.file is not None else root / "dvc.yaml"
    # Read or rewritten below: a folder, a binary file or YAML that is no dvc.yaml (a list) is
    # refused before any suite is rendered, and is never overwritten.
    _checks.output_file(flag, target)
    if target.exists():
        _checks.yaml_mapping(flag, target, what="a dvc.yaml (a mapping of stages)")
    for suite in args.suites:
        _checks.suite_file("SUITE", suite, check=False)
    from omnieval.flows.dvc_yaml import covered_suites, differences, render, write_atomic

    if args.suites:
        suites = [_relative_suite(p, root) for p in args.suites]
    else:
        if not target.is_file():
            raise ConfigError(
                f"{target} does not exist: name the suites it covers (omnieval dvc-yaml SUITE ...)"
            )
        suites = covered_suites(target)
        if not suites:
            raise ConfigError(f"{target} runs no suite stage: name the suites it covers")
    if args.list:
        print("\n".join(suites))
        return 0
    text, parts = render(suites, root)
    if args.check:
        committed = target.read_text(encoding="utf-8") if target.is_file() else ""
        found = differences(committed, text, parts)
        if found:
            print(f"{target} is not what the suites give ({', '.join(suites)}):", file=sys.stderr)
            for line in found:
                print(f"  - {line}", file=sys.stderr)
            print("run `omnieval dvc-yaml` (make dvc-yaml) to rewrite it", file=sys.stderr)
            return 1
        print(f"{target} is up to date with {', '.join(suites)}")
        return 0
    if target.is_file() and target.read_text(encoding="utf-8") == text:
        print(f"{target} is up to date with {', '.join(suites)}")
        return 0
    write_atomic(target, text)
    for part in parts:
        print(f"{part.suite}: {len(part.stages)} stages, systems {', '.join(part.systems)}")
    print(f"wrote {target}")
    return 0
