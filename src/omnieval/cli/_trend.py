"""``omnieval trend --suite NAME``: slow drift of the headline metrics over the suite's nightly runs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "trend",
        help="slow drift: a CUSUM per system and headline metric over the suite's last nightly runs",
        description=(
            "Read the suite's finished nightly runs from MLflow (experiment omnieval/<suite>, or the "
            "suite YAML's tracking.experiment) and run a two-sided CUSUM per system and headline "
            "metric: a drift that stays inside the nightly tolerance every night still adds up. "
            "Several runs on one day (in the suite YAML's schedule.timezone, else UTC) are one night: "
            "the latest. Prints per metric the statistic, the threshold, whether a shift is detected, "
            "on which night and in which direction, and a note when it cannot tell yet. Exit code 0 "
            "whether or not a shift is detected, 2 when the suite has no history in MLflow or an "
            "argument is bad. See docs/nightly.md, 'Slow drift'."
        ),
    )
    parser.add_argument(
        "--suite",
        required=True,
        help="suite name (experiment omnieval/<name>) or SUITE.yaml (its experiment and benchmark)",
    )
    parser.add_argument(
        "--nights",
        type=int,
        default=30,
        help=(
            "how many of the latest nights to read (default: 30); a night is a day with a finished "
            "run, and of several runs on one day the latest counts"
        ),
    )
    parser.add_argument("--json", action="store_true", help="print the trend document as JSON")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder for trend.png (the plot) and trend.json (created; not a file)",
    )
    parser.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    from omnieval.cli import _checks
    from omnieval.errors import DataError

    spec: str = args.suite
    _checks.at_least("--nights", args.nights, 1)
    if args.out is not None:
        _checks.output_dir("--out", args.out)
    timezone = "UTC"
    if spec.endswith((".yaml", ".yml")) or Path(spec).exists():
        _checks.input_file("--suite", Path(spec))
        config = _checks.suite_file("--suite", Path(spec), check=False)
        suite, experiment, benchmark = config.suite, config.experiment, config.benchmark
        timezone = config.schedule.timezone
    else:
        suite, experiment, benchmark = spec, f"omnieval/{spec}", ""
    from omnieval.compare import (
        component_direction,
        detect_trends,
        read_history,
        trend_document,
        trend_lines,
        write_trend,
    )

    nights = read_history(experiment, nights=args.nights, timezone=timezone)
    benchmark = benchmark or nights[-1].benchmark
    if not benchmark:
        raise DataError(f"the runs of {experiment!r} carry no omnieval.benchmark tag: cannot tell directions")
    from omnieval.cli._registries import load_benchmarks

    benchmarks = load_benchmarks()
    if benchmark not in benchmarks:
        raise DataError(
            f"suite {suite!r}: unknown benchmark {benchmark!r}; known: {', '.join(benchmarks.names())}"
        )
    bench = benchmarks.get(benchmark)
    report = detect_trends(
        nights,
        suite=suite,
        experiment=experiment,
        lower_is_better=component_direction(bench.lower_is_better, bench.name),
        patterns=bench.headline_metric_patterns,
    )
    if args.out is not None:
        write_trend(report, args.out)
    if args.json:
        print(json.dumps(trend_document(report), indent=2))
    else:
        print("\n".join(trend_lines(report)))
        if args.out is not None:
            print(f"\nplot: {args.out / 'trend.png'}")
    return 0
