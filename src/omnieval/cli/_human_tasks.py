"""``omnieval human-tasks BENCHMARK ...``: the tasks a benchmark's human study rates."""

from __future__ import annotations

import argparse
from typing import Any

_ABOUT = (
    "Write the tasks of a benchmark's human study as blind Label Studio tasks (PRISM-Bench: its "
    "stratified sample of ground-truth-versus-system pairs; OmniACBench: the class-balanced Table 4 "
    "subset of its evaluators' validation). A task file never says which system a task shows (nor, "
    "for PRISM-Bench, which clip is the ground truth): that is in the study's key file, and clips "
    "are copied under blind names. Systems whose tasks would measure nothing (references, "
    "diagnostic probes, a system named twice) are refused with exit 2. Options after BENCHMARK "
    "belong to that benchmark's command: `omnieval human-tasks BENCHMARK --help` lists them."
)


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser(
        "human-tasks", help="a benchmark's human-study tasks (Label Studio)", description=_ABOUT
    )
    parser.add_argument("benchmark", help="registered benchmark name (omnieval benchmarks lists them)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the benchmark command's own arguments")
    parser.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    from omnieval.cli._registries import registered_benchmark

    bench = registered_benchmark(args.benchmark)
    return bench.run_command("human-tasks", list(args.args), prog=f"omnieval human-tasks {args.benchmark}")
