"""``omnieval validate DIR``: strict checks of an Omni-StoryBench folder, optional gate and manifest."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "validate",
        help="check an Omni-StoryBench folder (release layout) and print its fingerprint digest",
        description=(
            "Strictly validate an Omni-StoryBench folder in the public release layout: required "
            "columns, ids, unique ids, non-empty strings, speech label vocabularies, characters JSON, "
            "paths inside the folder, decodable images, UTF-8 texts equal to their columns, metadata "
            "and sample JSON files that agree with their row. Every problem is listed with its row, "
            "field and file. Exit status: 0 valid, 2 invalid."
        ),
    )
    parser.add_argument(
        "dir", type=Path, metavar="DIR", help="dataset folder (holds data/omni_storybench.parquet)"
    )
    parser.add_argument(
        "--gate",
        action="store_true",
        help="also run the Great Expectations gate (expectations/storybench_dataset.json)",
    )
    parser.add_argument(
        "--gate-out",
        type=Path,
        metavar="OUT.json",
        help="with --gate: save the gate result here (written whether it passes or fails)",
    )
    parser.add_argument("--json", action="store_true", help="print the outcome as one JSON object on stdout")
    parser.add_argument(
        "--manifest",
        type=Path,
        metavar="OUT.json",
        help="write the fingerprint manifest (SHA-256 of every file and normalized text) here when valid",
    )
    parser.set_defaults(func=_validate)


def _validate(args: argparse.Namespace) -> int:
    from omnieval.data import fingerprint_storybench, validate_storybench, write_manifest

    root: Path = args.dir
    report = validate_storybench(root)
    outcome: dict[str, Any] = {"dataset": str(root), "ok": report.ok, "n_rows": report.n_rows}
    if not report.ok:
        outcome["problems"] = list(report.problems)
        if args.json:
            print(json.dumps(outcome, indent=2))
        n = len(report.problems)
        print(
            f"error: dataset {root} failed validation ({n} problem{'s' if n != 1 else ''}):", file=sys.stderr
        )
        for problem in report.problems:
            print(f"  - {problem}", file=sys.stderr)
        return 2

    assert report.dataset is not None
    dataset = report.dataset
    manifest = fingerprint_storybench(dataset)
    outcome.update({"n_books": len(dataset.books), "digest": manifest.digest})

    if args.gate:
        from omnieval.gates import gate_storybench_dataset

        gate = gate_storybench_dataset(root, args.gate_out)
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
    print(f"ok: {root}: {report.n_rows} transitions from {len(dataset.books)} books")
    print(f"digest: {manifest.digest}")
    if args.gate:
        print(f"gate {outcome['gate']['suite']}: passed ({outcome['gate']['evaluated']} expectations)")
    if args.manifest:
        print(f"manifest: {args.manifest}")
    return 0
