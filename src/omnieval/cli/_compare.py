"""``omnieval compare RUN_A RUN_B``: did the newer run regress against the older one, and why."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "compare",
        # argparse %-formats help= strings (write 50%% there) but prints a description as written.
        help="compare two runs: paired deltas, GO / NO-GO / INCONCLUSIVE, what changed, top movers",
        description=(
            "Compare two runs: the older is the baseline (A), the newer the candidate (B), in "
            "whichever order they are named, unless --baseline says otherwise; the output names "
            "both run ids. RUN is a run folder (runs/<suite>/<run_id>), a run id or a unique start "
            "of one (as in omnieval lineage; an ambiguous start is exit 2 listing the runs), an "
            "MLflow run id, 'latest' (the newest successful run of the suite given with --suite, "
            "else of any suite) or 'previous' (the one before it; needs --suite). Per system and "
            "headline component: the means, delta = B - A, a paired bootstrap 95% CI over the "
            "shared instances and a Holm-corrected p-value, each on the component's scale (printed "
            "below the table: it can differ from omnieval aggregate's); then the verdict with its "
            "reasons, what changed in lineage and the instances that moved most. A run compared "
            "with itself is INCONCLUSIVE. "
            "Exit code 0 for any verdict, 2 on bad input. See docs/nightly.md."
        ),
    )
    parser.add_argument("run_a", metavar="RUN_A", help="one run")
    parser.add_argument("run_b", metavar="RUN_B", help="the other run")
    parser.add_argument(
        "--baseline",
        choices=("older", "first", "second"),
        default="older",
        help="which run is the baseline: the older one (default), RUN_A (first) or RUN_B (second)",
    )
    parser.add_argument(
        "--suite",
        help="suite name or SUITE.yaml: what 'latest'/'previous' refer to; a YAML also supplies the "
        "regression tolerances and its runs folder",
    )
    parser.add_argument("--runs-dir", type=Path, default=None, help="run folders root (default: runs)")
    parser.add_argument("--json", action="store_true", help="print the comparison document as JSON")
    parser.add_argument(
        "--rejudge",
        action="store_true",
        help="when a judge, judge setting or judge prompt changed: judge A's candidates with B's "
        "panels (through the judge cache) and give the verdict on the system effect, with the judge "
        "effect beside it (docs/nightly.md, 'Counterfactual re-judging')",
    )
    parser.set_defaults(func=_handle)


def _suite(spec: str | None, runs_dir: Path | None) -> tuple[str | None, Path, Any]:
    """(suite name, runs folder, regression config or None) from ``--suite``."""
    if spec and (spec.endswith((".yaml", ".yml")) or Path(spec).is_file()):
        from omnieval.config import load_suite

        config = load_suite(Path(spec), check=False)
        return config.suite, runs_dir or config.runs_dir, config.regression
    return spec, runs_dir or Path("runs"), None


def _regression_config(explicit: Any, resolved: dict[str, Any] | None) -> Any:
    """The suite YAML's block, else the one saved in run B's resolved config, else the defaults."""
    from pydantic import ValidationError

    from omnieval.config import RegressionConfig

    if explicit is not None:
        return explicit
    block = (resolved or {}).get("regression")
    if isinstance(block, dict):
        # Saved webhook headers are masked; the comparison needs only the numbers.
        block = {k: v for k, v in block.items() if k != "notify"}
        try:
            return RegressionConfig.model_validate(block)
        except ValidationError:
            pass
    return RegressionConfig()


def _judging_suite(spec: str | None, run_b: Any) -> Any:
    """The suite whose panels re-judge run A: run B's own saved config, else ``--suite SUITE.yaml``."""
    from omnieval.compare import suite_of_run
    from omnieval.errors import DataError

    try:
        return suite_of_run(run_b)
    except DataError:
        if spec and (spec.endswith((".yaml", ".yml")) or Path(spec).is_file()):
            from omnieval.config import load_suite

            return load_suite(Path(spec))
        raise


def _handle(args: argparse.Namespace) -> int:
    from omnieval.compare import compare_runs, order_runs, read_run, resolve_run, verdict_lines
    from omnieval.errors import ConfigError

    suite, runs_dir, explicit = _suite(args.suite, args.runs_dir)
    if runs_dir.exists() and not runs_dir.is_dir():
        raise ConfigError(
            f"--runs-dir: {runs_dir} is not a folder (run folders are <runs_dir>/<suite>/<run_id>)"
        )
    folder_a = resolve_run(args.run_a, runs_dir=runs_dir, suite=suite)
    folder_b = resolve_run(args.run_b, runs_dir=runs_dir, suite=suite)
    run_a, run_b, rule = order_runs(read_run(folder_a), read_run(folder_b), args.baseline)
    regression = _regression_config(explicit, run_b.resolved_config)
    document = compare_runs(run_a, run_b, regression)
    document["baseline_rule"] = rule
    if args.rejudge:
        from omnieval.compare import rejudge_comparison

        document = rejudge_comparison(
            document, run_a, run_b, _judging_suite(args.suite, run_b), regression, drift=run_b.drift
        )
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        from omnieval.compare import rejudge_lines

        print("\n".join([*verdict_lines(document), *rejudge_lines(document)]))
    return 0
