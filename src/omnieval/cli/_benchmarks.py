"""``omnieval benchmarks``: the registered benchmarks and what each one offers."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser(
        "benchmarks",
        help="list the registered benchmarks (the values of a suite's benchmark: key)",
        description=(
            "List every registered benchmark with its bundled sample, input conditions, reference "
            "systems, candidate modalities and judge tracks."
        ),
    )
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    parser.set_defaults(func=_handle)


def describe() -> list[dict[str, Any]]:
    """One entry per registered benchmark (sorted by name)."""
    from omnieval.benchmarks import BENCHMARKS

    out = []
    for name in BENCHMARKS.names():
        bench = BENCHMARKS.get(name)
        out.append(
            {
                "name": name,
                "title": bench.title,
                "description": bench.description,
                "sample": str(bench.default_dataset),
                "dataset_marker": bench.dataset_marker,
                "conditions": [c for c in bench.conditions if c],
                "systems": sorted(bench.system_kinds),
                "modalities": list(bench.modalities),
                "judge_tracks": list(bench.judge_tracks),
            }
        )
    return out


def _handle(args: argparse.Namespace) -> int:
    entries = describe()
    if args.json:
        print(json.dumps(entries, indent=2))
        return 0
    for e in entries:
        print(f"{e['name']}: {e['title']} — {e['description']}")
        print(f"  sample:     {e['sample']} (detected by {e['dataset_marker']})")
        print(f"  systems:    {', '.join(e['systems'])}")
        if e["conditions"]:
            print(f"  conditions: {', '.join(e['conditions'])}")
        print(f"  judges:     {', '.join(e['judge_tracks']) or 'none (automatic metrics only)'}")
    return 0
