"""``omnieval validate DIR``: strict checks of a dataset folder, optional gate and fingerprint manifest."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "validate",
        help="check a dataset folder of any registered benchmark and print its fingerprint digest",
        description=(
            "Strictly validate a dataset folder. The benchmark is detected from the folder's layout "
            "(the story-continuation release parquet, or a manifest.jsonl) or given with --benchmark. "
            "Every problem is listed with its row or line (and id), its field and its file. "
            "Exit status: 0 valid, 2 invalid (or a bad argument: DIR not a folder, an output path "
            "that is a folder or in a missing folder, --gate-out without --gate)."
        ),
    )
    parser.add_argument("dir", type=Path, metavar="DIR", help="dataset folder")
    parser.add_argument(
        "--benchmark",
        metavar="NAME",
        default=None,
        help="benchmark whose format DIR is in (default: detected; `omnieval benchmarks` lists them)",
    )
    parser.add_argument(
        "--gate",
        action="store_true",
        help="also run the benchmark's Great Expectations gate (expectations/<benchmark>_dataset.json)",
    )
    parser.add_argument(
        "--gate-out",
        type=Path,
        metavar="OUT.json",
        help=(
            "with --gate (an error without it): save the gate result here, written whether it passes "
            "or fails; its folder must exist"
        ),
    )
    parser.add_argument("--json", action="store_true", help="print the outcome as one JSON object on stdout")
    parser.add_argument(
        "--manifest",
        type=Path,
        metavar="OUT.json",
        help=(
            "write the fingerprint manifest (SHA-256 of every file and normalized text) here when "
            "valid; its folder must exist"
        ),
    )
    parser.set_defaults(func=_validate)


def _fail(outcome: dict[str, Any], as_json: bool, header: str, problems: list[str]) -> int:
    outcome["ok"] = False
    outcome["problems"] = problems
    if as_json:
        print(json.dumps(outcome, indent=2))
    print(f"error: {header}", file=sys.stderr)
    for problem in problems:
        print(f"  - {problem}", file=sys.stderr)
    return 2


def _check_outputs(args: argparse.Namespace) -> None:
    """The files validate writes, checked before the dataset is read (ConfigError, exit 2)."""
    from omnieval.cli import _checks

    _checks.needs("--gate-out", args.gate_out is not None, "--gate", args.gate)
    for flag, path in (("--gate-out", args.gate_out), ("--manifest", args.manifest)):
        if path is not None:
            _checks.output_file(flag, path)
    if args.gate_out is not None and args.manifest is not None:
        _checks.distinct_paths(("--gate-out", args.gate_out), ("--manifest", args.manifest))


def _validate(args: argparse.Namespace) -> int:
    root: Path = args.dir
    outcome: dict[str, Any] = {"dataset": str(root), "ok": False}
    # Before the benchmarks are imported (seconds): a bad argument fails at once.
    _check_outputs(args)
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is a file; give a dataset folder"
        return _fail(outcome, args.json, f"DIR: {root} {what}", [f"{root}: dataset folder not found"])

    from omnieval.benchmarks import detect_benchmark
    from omnieval.cli._registries import load_benchmarks, registered_benchmark
    from omnieval.data import write_manifest

    benchmarks = load_benchmarks()
    if args.benchmark is not None:
        bench = registered_benchmark(args.benchmark)
    else:
        found = detect_benchmark(root)
        if found is None:
            markers = ", ".join(f"{benchmarks.get(n).dataset_marker} ({n})" for n in benchmarks.names())
            return _fail(
                outcome,
                args.json,
                f"cannot tell which benchmark {root} belongs to",
                [f"{root}: none of {markers} found; pass --benchmark NAME"],
            )
        bench = found
    outcome["benchmark"] = bench.name
    report = bench.validate(root)
    outcome["n_rows"] = report.n_rows
    if not report.ok:
        n = len(report.problems)
        return _fail(
            outcome,
            args.json,
            f"dataset {root} failed validation ({n} problem{'s' if n != 1 else ''}; {bench.name}):",
            list(report.problems),
        )
    manifest = bench.fingerprint(report.dataset)
    summary = bench.dataset_summary(report.dataset)
    outcome.update({"ok": True, **summary.facts, "digest": manifest.digest})

    if args.gate:
        gate = bench.gate(root, args.gate_out)
        outcome["gate"] = {"suite": gate.suite, "success": gate.success, "evaluated": gate.evaluated}
        if not gate.success:
            outcome["ok"] = False
            outcome["gate"]["report"] = gate.report()
            if args.json:
                print(json.dumps(outcome, indent=2))
            print(f"error: {gate.report()}", file=sys.stderr)
            return 2

    if args.manifest:
        write_manifest(manifest, args.manifest)
        outcome["manifest"] = str(args.manifest)

    if args.json:
        print(json.dumps(outcome, indent=2))
        return 0
    print(f"ok: {root}: {summary.text} ({bench.name})")
    print(f"digest: {manifest.digest}")
    if args.gate:
        print(f"gate {outcome['gate']['suite']}: passed ({outcome['gate']['evaluated']} expectations)")
    if args.manifest:
        print(f"manifest: {args.manifest}")
    return 0
