"""``omnieval make-sample BENCHMARK OUT``: write a benchmark's bundled sample dataset."""

from __future__ import annotations

import argparse
from typing import Any

_ABOUT = (
    "Write the sample dataset a benchmark ships with (data/<benchmark>-sample in this repository). "
    "The generators are deterministic: the same code writes the same bytes, so regenerating the "
    "committed sample changes nothing unless the generator changed. Options after BENCHMARK belong to "
    "that benchmark's generator: `omnieval make-sample BENCHMARK --help` lists them."
)


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser(
        "make-sample", help="write a benchmark's bundled sample dataset", description=_ABOUT
    )
    parser.add_argument("benchmark", help="registered benchmark name (omnieval benchmarks lists them)")
    parser.add_argument(
        "args",
        nargs=argparse.REMAINDER,
        help="the generator's own arguments: the output folder, then options",
    )
    parser.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    from omnieval.cli._registries import registered_benchmark

    bench = registered_benchmark(args.benchmark)
    return bench.run_command("make-sample", list(args.args), prog=f"omnieval make-sample {args.benchmark}")
