"""``omnieval aggregate``: both aggregation policies of a scores table, as JSON or a table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser(
        "aggregate",
        help="aggregate a scores table the way its benchmark defines (leaderboard as JSON or a table)",
        description=(
            "Aggregate a scores table (FORMATS.md section 3); the table's benchmark column decides how "
            "(FORMATS.md section 7). Story continuation: both policies, valid-only (mean over valid "
            "examples) and zero-filled (missing or invalid records count 0 over a fixed number of "
            "instances), every component, per-judge and per-criterion breakdowns, the Total Average "
            "with the components it covers. Acoustic control: per system and input condition, WER, "
            "delta-WPM, PER, VFR@0.3 and evaluator accuracies in percent, with what was not computed. "
            "Audio-video judging against ground truth: calibrated cells, dimension totals and final per "
            "subset; the reference probes muted, swapped-audio and offset are diagnostic by default "
            "(see --diagnostic)."
        ),
    )
    parser.add_argument("scores", type=Path, metavar="SCORES.parquet", help="the scores table")
    parser.add_argument("--json", action="store_true", help="print the full aggregate as JSON")
    parser.add_argument(
        "--n-instances",
        type=int,
        default=None,
        metavar="N",
        help="zero-filled denominator (default: distinct instance ids in the table)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the JSON here (its folder must exist: a missing one is an error, not created)",
    )
    parser.add_argument(
        "--diagnostic",
        action="append",
        default=[],
        metavar="ID",
        help=(
            "treat system ID as diagnostic (repeatable): scored, but kept out of figures derived from "
            "the systems under test (the global ground-truth mean of a calibrated benchmark); the ids "
            "of a benchmark's diagnostic kinds (muted, swapped-audio, offset) are diagnostic too "
            "unless --no-default-diagnostics"
        ),
    )
    parser.add_argument(
        "--no-default-diagnostics",
        action="store_true",
        help="treat no system as diagnostic by its id alone (only those named with --diagnostic)",
    )
    parser.set_defaults(func=handler)


def _load(path: Path) -> Any:
    from omnieval.cli import _checks
    from omnieval.errors import DataError
    from omnieval.scores import read_scores

    _checks.input_file("SCORES.parquet", path)
    try:
        return read_scores(path)
    except (ValueError, OSError) as exc:
        raise DataError(f"{path}: cannot read scores table: {exc}") from None


def _benchmark_of(scores: Any, path: Path) -> Any:
    """The registered benchmark named by the table's ``benchmark`` column (exactly one)."""
    from omnieval.cli._registries import load_benchmarks
    from omnieval.errors import DataError

    benchmarks = load_benchmarks()
    if "benchmark" not in scores.columns:
        raise DataError(f"{path}: no 'benchmark' column (FORMATS.md section 3)")
    names = sorted(set(scores["benchmark"]))
    if len(names) != 1:
        raise DataError(
            f"{path}: a scores table holds one benchmark; found {', '.join(map(repr, names)) or 'no rows'}"
        )
    if names[0] not in benchmarks:
        raise DataError(
            f"{path}: benchmark column: unknown benchmark {names[0]!r}; known: {', '.join(benchmarks.names())}"
        )
    return benchmarks.get(names[0])


def _diagnostic(args: argparse.Namespace, bench: Any, scores: Any) -> frozenset[str] | None:
    """The diagnostic system ids for the table, or None (the benchmark's defaults) when no option
    was given. A table names systems by id, so the benchmark's diagnostic kinds serve as default ids.

    Raises:
        DataError: an option given for a benchmark that has no diagnostic systems.
    """
    from omnieval.errors import DataError

    if not args.diagnostic and not args.no_default_diagnostics:
        return None
    if not bench.diagnostic_kinds:
        raise DataError(
            f"--diagnostic/--no-default-diagnostics: benchmark {bench.name} has no diagnostic systems"
        )
    named = frozenset(args.diagnostic)
    absent = sorted(named - set(scores["system"]))
    if absent:
        sys.stderr.write(f"note: --diagnostic names systems the table lacks: {', '.join(absent)}\n")
    return named if args.no_default_diagnostics else named | bench.diagnostic_kinds


def handler(args: argparse.Namespace) -> int:
    from omnieval.cli import _checks
    from omnieval.jsonio import write_json_atomic

    _checks.at_least("--n-instances", args.n_instances, 1)
    _checks.input_file("SCORES.parquet", args.scores)
    if args.out is not None:
        _checks.output_file("--out", args.out)
        _checks.distinct_paths(("SCORES.parquet", args.scores), ("--out", args.out))
    scores = _load(args.scores)
    bench = _benchmark_of(scores, args.scores)
    from omnieval.benchmarks import RunFacts

    doc = bench.leaderboard(
        scores, RunFacts(n_instances=args.n_instances, diagnostic=_diagnostic(args, bench, scores))
    ).document
    text = json.dumps(doc, indent=2)
    if args.out is not None:
        write_json_atomic(args.out, doc, ensure_ascii=True, default=None)
    if args.json:
        sys.stdout.write(text + "\n")
        return 0
    sys.stdout.write(bench.aggregate_text(doc) + "\n")
    return 0
