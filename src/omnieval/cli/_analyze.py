"""``omnieval analyze``: the registered analyses of a scores table's benchmark (its paper's statistics)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser(
        "analyze",
        help="run the statistical analyses (bootstrap, sensitivity, agreement, ...) on a scores table",
        description=(
            "Run the analyses registered for the scores table's benchmark (story continuation: the "
            "paper's appendices E.6 and F.1-F.8; acoustic control: Tables 3 and 4; audio-video judging: "
            "judge stability, judge ablation, human preference) and write one <name>.json (plus "
            "<name>.png where a plot helps) per analysis into --out. Analyses the table cannot support "
            '(too few systems, a track not computed, no human ratings) write {"status": "skipped", '
            '"reason": ...}; a table no analysis applies to is an error (exit 2). Use --list to see the '
            "analyses and the benchmarks each one reads."
        ),
    )
    parser.add_argument("scores", type=Path, nargs="?", metavar="SCORES.parquet", help="the scores table")
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help="output folder (created, with missing parents; not a file)"
    )
    parser.add_argument("--only", metavar="NAME,...", help="comma-separated analyses to run (default: all)")
    parser.add_argument("--seed", type=int, default=None, help="bootstrap seed (default 0)")
    parser.add_argument("--draws", type=int, default=None, help="bootstrap resamples (default 10000)")
    parser.add_argument(
        "--humans",
        type=Path,
        default=None,
        metavar="EXPORT.json",
        help="human ratings: a Label Studio JSON export, or per-clip labels as CSV/JSONL (as the benchmark's docs say)",
    )
    parser.add_argument(
        "--capabilities",
        type=Path,
        default=None,
        metavar="RESULTS.csv",
        help="per-item results of the capability diagnostics, CSV or JSONL (as the benchmark's docs say)",
    )
    parser.add_argument(
        "--duplicates", type=Path, default=None, metavar="CLUSTERS.json", help="internal-duplicate clusters"
    )
    parser.add_argument(
        "--n-instances",
        type=int,
        default=None,
        metavar="N",
        help="zero-filled denominator (default: distinct ids)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="YAML/JSON with AnalysisConfig fields (system_groups, panels, sweep seeds, ...); flags override it",
    )
    parser.add_argument(
        "--track-mlflow",
        action="store_true",
        help="log each analysis as an MLflow run tagged omnieval.kind=analysis",
    )
    parser.add_argument(
        "--experiment", default="omnieval/analyses", help="MLflow experiment for --track-mlflow"
    )
    parser.add_argument("--parent-run-id", default=None, help="nest the analysis runs under this MLflow run")
    parser.add_argument(
        "--list", action="store_true", help="list the analyses (with their benchmarks) and exit"
    )
    parser.set_defaults(func=handler)


_FILE_OPTIONS = ("humans", "duplicates", "capabilities")
"""AnalysisConfig fields that name an input file (``--humans`` ...), declared by the analyses that
read them (``AnalysisSpec.inputs``)."""


def _load_config(args: argparse.Namespace) -> Any:
    from omnieval.cli import _checks
    from omnieval.errors import ConfigError

    base: dict[str, Any] = {}
    if args.config is not None:
        what = "a mapping of AnalysisConfig fields"
        if args.config.suffix == ".json":
            base.update(_checks.json_object("--config", args.config))
        else:
            base.update(_checks.yaml_mapping("--config", args.config, what=what))
    overrides = {
        "seed": args.seed,
        "bootstrap_draws": args.draws,
        "humans": args.humans,
        "duplicates": args.duplicates,
        "capabilities": args.capabilities,
        "n_instances": args.n_instances,
    }
    base.update({k: v for k, v in overrides.items() if v is not None})
    for key in _FILE_OPTIONS:
        path = base.get(key)
        if path is not None:
            flag = f"--{key}" if overrides[key] is not None else f"--config {args.config}: {key}"
            _checks.input_file(flag, Path(path))
    from pydantic import ValidationError

    from omnieval.analysis import AnalysisConfig

    try:
        return AnalysisConfig(**base)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid analysis options: {problems}") from None


def _check_file_options(args: argparse.Namespace, benchmark: str, only: list[str] | None) -> None:
    """Refuse ``--humans`` (and the other input files) when no analysis that runs reads it: it would
    be ignored silently, and a user would take the skipped human analysis's absence for a result."""
    from omnieval.analysis import ANALYSES, analysis_names
    from omnieval.errors import ConfigError

    selected = analysis_names(benchmark) if only is None else [n for n in only if n in ANALYSES]
    applicable = [ANALYSES.get(n) for n in selected if benchmark in ANALYSES.get(n).benchmarks]
    for key in _FILE_OPTIONS:
        if getattr(args, key) is None or any(key in spec.inputs for spec in applicable):
            continue
        readers = [n for n in analysis_names(benchmark) if key in ANALYSES.get(n).inputs]
        hint = (
            f"add {' or '.join(readers)} to --only or drop --{key}"
            if readers
            else f"no {benchmark} analysis reads it; drop --{key}"
        )
        raise ConfigError(f"--{key}: no analysis that runs here reads it ({hint})")


def _list() -> int:
    from omnieval.analysis import ANALYSES, analysis_names

    for name in analysis_names():
        spec = ANALYSES.get(name)
        print(f"{name:26s} [{', '.join(sorted(spec.benchmarks))}] {spec.summary}")
    return 0


def handler(args: argparse.Namespace) -> int:
    from omnieval.cli import _checks
    from omnieval.cli._aggregate import _benchmark_of, _load
    from omnieval.cli._registries import load_benchmarks
    from omnieval.errors import ConfigError, DataError

    if args.list:
        given = [name for name, value in (("SCORES.parquet", args.scores), ("--out", args.out)) if value]
        if given:
            raise ConfigError(f"--list: prints the analyses and exits; drop {' and '.join(given)}")
        load_benchmarks()  # the benchmark packages register their analyses
        return _list()
    if args.scores is None or args.out is None:
        raise ConfigError("analyze needs SCORES.parquet and --out DIR (or --list)")
    _checks.input_file("SCORES.parquet", args.scores)
    _checks.output_dir("--out", args.out)
    config = _load_config(args)
    from omnieval.analysis import analysis_names, run_analyses

    load_benchmarks()
    only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    scores = _load(args.scores)
    benchmark = _benchmark_of(scores, args.scores).name
    _check_file_options(args, benchmark, only)
    if only is None and not analysis_names(benchmark):
        raise DataError(
            f"{args.scores}: no registered analysis applies to {benchmark} scores tables "
            "(omnieval analyze --list shows each analysis and its benchmarks); nothing written"
        )
    start = time.perf_counter()
    outputs = run_analyses(scores, args.out, only=only, config=config)
    elapsed = time.perf_counter() - start
    for name, out in outputs.items():
        extra = f"  ({out.reason})" if out.reason else ""
        plots = f"  + {len(out.plots)} plot(s)" if out.plots else ""
        print(f"{name:26s} {out.status:8s} {out.seconds:7.2f} s{plots}{extra}")
    ran = sum(out.status == "ok" for out in outputs.values())
    print(
        f"wrote {len(outputs)} analyses ({ran} ran, {len(outputs) - ran} skipped) to {args.out} in {elapsed:.1f} s"
    )
    if args.track_mlflow:
        from omnieval.tracking.analysis_runs import log_analysis_runs

        runs = log_analysis_runs(outputs, parent_run_id=args.parent_run_id, experiment=args.experiment)
        for name, run_id in runs.items():
            print(f"mlflow run {run_id}  {name}")
    sys.stdout.flush()
    return 0
