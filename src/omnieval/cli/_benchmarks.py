"""``omnieval benchmarks``: the registered benchmarks and what each one offers."""

from __future__ import annotations

import argparse
import json
from typing import Any

_ABOUT = (
    "List every registered benchmark (the values a suite's benchmark: key may take) with its bundled "
    "sample, the file that identifies its datasets, its input conditions, the systems that can "
    "produce its candidates, the candidate modalities and its judge tracks."
)


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser("benchmarks", help="list the registered benchmarks", description=_ABOUT)
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    parser.set_defaults(func=_handle)


def describe() -> list[dict[str, Any]]:
    """One entry per registered benchmark (sorted by name)."""
    from omnieval.cli._registries import load_benchmarks
    from omnieval.systems import system_kinds_for

    benchmarks = load_benchmarks()
    out = []
    for name in benchmarks.names():
        bench = benchmarks.get(name)
        out.append(
            {
                "name": name,
                "title": bench.title,
                "description": bench.description,
                "sample": str(bench.default_dataset),
                "dataset_marker": bench.dataset_marker,
                "conditions": [c for c in bench.conditions if c],
                "systems": sorted(system_kinds_for(name, bench.system_kinds)),
                "modalities": list(bench.modalities),
                "judge_tracks": list(bench.judge_tracks),
            }
        )
    return out


def _text(entry: dict[str, Any]) -> str:
    lines = [
        f"{entry['name']}: {entry['title']} — {entry['description']}",
        f"  sample:     {entry['sample']} (detected by {entry['dataset_marker']})",
        f"  systems:    {', '.join(entry['systems'])}",
    ]
    if entry["conditions"]:
        lines.append(f"  conditions: {', '.join(entry['conditions'])}")
    lines.append(f"  judges:     {', '.join(entry['judge_tracks']) or 'none (automatic metrics only)'}")
    return "\n".join(lines)


def _handle(args: argparse.Namespace) -> int:
    entries = describe()
    print(json.dumps(entries, indent=2) if args.json else "\n".join(_text(e) for e in entries))
    return 0
