"""``omnieval human-tasks prism``: the paper's stratified human-study sample as Label Studio tasks."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from omnieval.errors import ConfigError, DataError


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Draw PRISM-Bench's human-study sample (appendix D: N items per subset and valid tag "
            "combination, each stratum from its own seeded generator) and write one blind "
            "ground-truth-versus-system Label Studio task per (item, system), for a project set up with "
            "label_studio/two_stage.xml. A combination with too few items is reported, never padded."
        ),
    )
    parser.add_argument("dataset", type=Path, help="PRISM-Bench dataset folder (manifest.jsonl)")
    parser.add_argument(
        "--system",
        action="append",
        required=True,
        metavar="ID",
        help="system compared with the ground truth (repeatable)",
    )
    parser.add_argument(
        "--candidates",
        action="append",
        default=[],
        metavar="ID=DIR",
        help="a system's candidate folder (<DIR>/video/<index>/generated.mp4): fills video1/video2",
    )
    parser.add_argument("--per-combination", type=int, default=4, help="items per stratum (the paper: 4)")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="draw and blind-order seed (the judge's order seed keeps raters' order equal)",
    )
    parser.add_argument("--out", type=Path, help="write the tasks (a JSON list) here; default stdout")
    return parser


def human_tasks_main(argv: Sequence[str], prog: str) -> int:
    """Parse ``argv``, draw the sample and write the tasks; returns the exit status.

    Raises:
        ConfigError: a malformed ``--candidates`` (exit code 2).
        DataError: an unreadable dataset, a missing candidate folder or clip, a system named
            ``ground_truth`` or a bad quota.
    """
    from omnieval.benchmarks.prism._human_sample import stratified_pairs
    from omnieval.benchmarks.prism._loader import load_prism
    from omnieval.jsonio import write_json_atomic

    args = _parser(prog).parse_args(list(argv))
    candidates: dict[str, Path] = {}
    for item in args.candidates:
        system, sep, folder = item.partition("=")
        if not sep or not system or not folder:
            raise ConfigError(f"--candidates {item!r}: expected ID=DIR")
        candidates[system.strip()] = Path(folder.strip())
    absent = [f"--candidates {s}={f}: no such folder" for s, f in candidates.items() if not f.is_dir()]
    if absent:
        raise DataError("candidate folders not found", absent)
    dataset = load_prism(args.dataset)
    sample = stratified_pairs(
        dataset.instances,
        args.system,
        per_combination=args.per_combination,
        seed=args.seed,
        candidates=candidates or None,
    )
    tasks = list(sample.tasks)
    if args.out is not None:
        write_json_atomic(args.out, tasks)
    else:
        print(json.dumps(tasks, indent=2))
    n_items = sum(len(ids) for ids in sample.items.values())
    print(
        f"{len(tasks)} tasks: {n_items} items x {len(args.system)} systems over {len(sample.items)} strata"
        + (f" -> {args.out}" if args.out is not None else ""),
        file=sys.stderr,
    )
    for stratum, missing in sample.shortfall.items():
        print(f"  short: {stratum} has {missing} item(s) fewer than {args.per_combination}", file=sys.stderr)
    return 0
