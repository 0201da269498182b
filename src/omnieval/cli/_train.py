"""``omnieval train CONFIG.yaml`` (evaluator training) and ``omnieval train probe HIDDEN.npz`` (linear probing)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

_DESCRIPTION = """\
Two forms:

  omnieval train CONFIG.yaml [--feature NAME ...] [--engine prefect|local] [--no-track] [--corpus-only]
      Train speech-attribute evaluators as the config says (OmniACBench appendix C recipe): prepare
      and gate each corpus (Great Expectations; a failed gate stops before training, exit code 2),
      train the head x backbone learning-rate grid (one MLflow run per point), keep the best dev
      accuracy, report held-out test accuracy with chance level, write models/evaluators/<name>/,
      register it in the MLflow Model Registry, then load it back by registry reference and score
      the test clips. `make train-demo` runs the CPU demo pipelines/train_evaluators.yaml.

  omnieval train probe HIDDEN.npz --out DIR [--labels LABELS.csv|.jsonl] [--repeats N] ...
      Linear probing (appendix D): one linear classifier per layer and feature on saved hidden
      states, repeated stratified splits, standardization fitted on the training part only,
      balanced accuracy averaged over repeats; writes probe.csv, probe.json and probe.png.
      Run `omnieval train probe --help` for its options.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "train",
        help="train speech-attribute evaluators (grid, MLflow registry) or run linear probes",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("target", metavar="CONFIG.yaml|probe", help="a training config, or 'probe'")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.set_defaults(func=_handle)


def _train_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="omnieval train", description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("config", type=Path, help="training config, e.g. pipelines/train_evaluators.yaml")
    parser.add_argument(
        "--feature",
        action="append",
        default=[],
        metavar="NAME",
        help="train only this feature (repeatable); default: every feature in the config",
    )
    parser.add_argument(
        "--engine",
        choices=("prefect", "local"),
        default="prefect",
        help="prefect: run flows/train_evaluators.py (default); local: same stages, no Prefect",
    )
    parser.add_argument(
        "--no-track",
        action="store_true",
        help="do not log to MLflow or register (the checkpoint folder is still written)",
    )
    parser.add_argument(
        "--corpus-only", action="store_true", help="only prepare and gate the corpora (the DVC corpus stage)"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    return parser


def _probe_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="omnieval train probe",
        description=(
            "Linear probes per layer and feature on saved hidden states (OmniACBench appendix D). HIDDEN.npz "
            "holds one [n, dim] array per layer in layer order ([n, frames, dim] arrays are mean-pooled); "
            "labels come from arrays named labels__<feature> in the same file and/or a --labels table with one "
            "row per instance and one column per feature (empty = no label for that feature)."
        ),
    )
    parser.add_argument("hidden", type=Path, help="hidden states (.npz)")
    parser.add_argument("--labels", type=Path, default=None, help="label table (.csv or .jsonl)")
    parser.add_argument(
        "--feature", action="append", default=[], metavar="NAME", help="probe only this feature (repeatable)"
    )
    parser.add_argument("--out", type=Path, required=True, help="output folder (created; not a file)")
    parser.add_argument("--repeats", type=int, default=5, help="stratified splits per probe (default 5)")
    parser.add_argument("--test-size", type=float, default=0.2, help="held-out share per split (default 0.2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--steps", type=int, default=300, help="full-batch AdamW steps per probe (default 300)"
    )
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--weight-decay", type=float, default=1e-2)
    return parser


def _handle(args: argparse.Namespace) -> int:
    if args.target == "probe":
        return _probe(_probe_parser().parse_args(args.rest))
    return _train(_train_parser().parse_args([args.target, *args.rest]))


def _train(args: argparse.Namespace) -> int:
    from omnieval.cli import _checks
    from omnieval.training import load_training_config

    _checks.yaml_mapping("CONFIG.yaml", args.config, what="a training config (a YAML mapping)")
    config = load_training_config(args.config).select(args.feature)
    started = time.monotonic()
    if args.corpus_only:
        from omnieval.training import stage_gate, stage_prepare

        for feature in config.features:
            prepared = stage_prepare(feature)
            stage_gate(feature, prepared, config.runs_dir / feature.feature / "gate.json")
        return 0
    summaries: list[dict[str, Any]]
    if args.engine == "prefect":
        from omnieval.flows import prepare_prefect_env
        from omnieval.runner import load_flow_module

        prepare_prefect_env()
        module = load_flow_module("train_evaluators")
        summaries = module.train_evaluators(
            str(args.config), features=args.feature or None, track=not args.no_track
        )
    else:
        from omnieval.training import run_training

        results = run_training(config, track=not args.no_track)
        summaries = [{**r.summary(), "check": r.check} for r in results]
    if args.json:
        print(json.dumps(summaries, indent=2, default=str))
        return 0
    print(f"trained {len(summaries)} evaluator(s) in {time.monotonic() - started:.0f} s")
    for s in summaries:
        where = f"models:/{s['registered_name']}/{s['version']}" if s["version"] else s["checkpoint"]
        print(
            f"  {s['feature']:10s} {where}: held-out accuracy {s['test_accuracy']:.3f} on {s['test_n']} clips "
            f"(chance {s['chance_uniform']:.3f}, majority class {s['chance_majority']:.3f})"
        )
        check = s.get("check") or {}
        if check:
            print(f"  {'':10s} loaded back as {check['evaluator']}: accuracy {check['accuracy']:.3f}")
    print(
        "  MLflow: make ui, then open http://127.0.0.1:5000 (experiment "
        f"{load_training_config(args.config).experiment!r}, Models tab)",
        file=sys.stdout,
    )
    return 0


def _check_probe_args(args: argparse.Namespace) -> None:
    """Every ``train probe`` argument, before the hidden states are read or a probe trained."""
    from omnieval.cli import _checks
    from omnieval.errors import ConfigError

    _checks.input_file("HIDDEN.npz", args.hidden)
    if args.labels is not None:
        _checks.input_file("--labels", args.labels)
        if args.labels.suffix not in {".csv", ".jsonl", ".json"}:
            raise ConfigError(f"--labels: {args.labels} is not a .csv or .jsonl table")
    _checks.output_dir("--out", args.out)
    _checks.at_least("--repeats", args.repeats, 1)
    _checks.at_least("--steps", args.steps, 1)
    if not 0.0 < args.test_size < 1.0:
        raise ConfigError(
            f"--test-size: expected a share between 0 and 1 (exclusive), got {args.test_size:g}"
        )


def _probe(args: argparse.Namespace) -> int:
    from omnieval.errors import DataError
    from omnieval.training import (
        ProbeSettings,
        read_hidden_states,
        read_label_table,
        run_probes,
        write_probe_report,
    )

    _check_probe_args(args)
    layers, labels = read_hidden_states(args.hidden)
    if args.labels is not None:
        labels.update(read_label_table(args.labels))
    if args.feature:
        missing = sorted(set(args.feature) - set(labels))
        if missing:
            raise DataError(
                f"no labels for feature(s) {', '.join(missing)}; found {', '.join(sorted(labels))}"
            )
        labels = {k: v for k, v in labels.items() if k in args.feature}
    if not labels:
        raise DataError("no labels: add labels__<feature> arrays to the .npz or pass --labels")
    settings = ProbeSettings(
        repeats=args.repeats,
        test_size=args.test_size,
        seed=args.seed,
        steps=args.steps,
        lr=args.lr,
        weight_decay=args.weight_decay,
    )
    results = run_probes(layers, labels, settings)
    paths = write_probe_report(results, args.out, settings)
    for feature in dict.fromkeys(r.feature for r in results):
        rows = [r for r in results if r.feature == feature]
        best = max(rows, key=lambda r: r.balanced_accuracy)
        print(
            f"{feature}: {len(rows)} layers, best {best.layer} balanced accuracy {best.balanced_accuracy:.3f} "
            f"(chance {best.chance:.3f}, n={best.n})"
        )
    print(f"wrote {paths['csv']}, {paths['json']}, {paths['png']}")
    return 0
