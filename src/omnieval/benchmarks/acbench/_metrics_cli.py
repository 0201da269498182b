"""OmniACBench acoustic metrics of a candidate folder against a dataset

``omnieval metrics acbench``. The ``omnieval metrics`` command offers ``omnieval metrics <benchmark>`` for every benchmark package
holding a ``_metrics_cli.py``; it reads this docstring's first line for its help and hands the
remaining arguments to :func:`metrics_main` through :meth:`Benchmark.run_command`, so the
command line names no benchmark and its own parsing stays free of the heavy imports.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from omnieval.benchmarks._human_tasks import repeatable
from omnieval.errors import ConfigError


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "WER, WPM/delta-WPM, PER(word), VFR/VFR@0.3 and evaluator accuracy for <candidates>/speech/<index>/"
            "generated.wav against an OmniACBench dataset folder (its manifest.jsonl), under one input "
            "condition. Writes the scores table and prints the aggregate (WER and PER in percent). "
            "PER here is omnieval's word-level decision on the heteronym, not the paper's utterance-level "
            "POWSM PER (the note is printed with the figures)."
        ),
    )
    parser.add_argument("dataset", type=Path, help="dataset folder (or its manifest.jsonl)")
    parser.add_argument("candidates", type=Path, help="candidate folder of that system and condition")
    parser.add_argument("--system", default="candidate", help="system id written into the rows")
    parser.add_argument(
        "--condition",
        default="original",
        help="input condition the candidates were generated under: original, s_to_t, i_to_t, all_to_t, oracle",
    )
    parser.add_argument("--out", type=Path, help="write the scores table (parquet) here")
    parser.add_argument(
        "--cache-dir", type=Path, default=Path(".cache/omnieval/metrics"), help="result cache"
    )
    parser.add_argument(
        "--asr-model",
        default="auto",
        help="ASR for WER and WPM: auto (Whisper large-v3 when in the model cache, else tiny.en), "
        "whisper-tiny.en, whisper-base, whisper-large-v3 or a CTranslate2 folder",
    )
    repeatable(
        parser,
        "--evaluator",
        "FEATURE=REF",
        "evaluator for emotion/accent/timbre, e.g. emotion=evaluator:<ref> (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print the aggregate as JSON")
    return parser


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _check_candidates(folder: Path) -> None:
    """Refuse a candidates folder that is not there: scoring it would report every clip missing.

    Raises:
        DataError: ``folder`` does not exist, is not a folder, or holds no ``speech/`` folder.
    """
    from omnieval.errors import DataError

    expected = f"expected {folder}/speech/<index>/generated.wav"
    if not folder.exists():
        raise DataError(f"candidates folder {folder} does not exist ({expected})")
    if not folder.is_dir():
        raise DataError(f"candidates folder {folder} is not a folder ({expected})")
    if not (folder / "speech").is_dir():
        raise DataError(f"candidates folder {folder} holds no speech/ folder ({expected})")


def metrics_main(argv: Sequence[str], prog: str) -> int:
    """Parse ``argv``, score the candidate folder and print its aggregate; returns the exit status.

    Raises:
        ConfigError: a malformed ``--evaluator`` or an invalid metric option (exit code 2).
        DataError: the dataset cannot be read, or the candidates folder is missing (exit code 2).
    """
    from omnieval.benchmarks.acbench._aggregate import aggregate_acbench
    from omnieval.benchmarks.acbench._metrics import AcbenchMetricsConfig, compute_acbench_metrics
    from omnieval.benchmarks.acbench._record import MANIFEST_NAME, load_acbench
    from omnieval.errors import DataError

    args = _parser(prog).parse_args(list(argv))
    evaluators: dict[str, str] = {}
    for item in args.evaluator:
        feature, sep, ref = item.partition("=")
        if not sep or not feature or not ref:
            raise ConfigError(f"--evaluator {item!r}: expected FEATURE=REF")
        evaluators[feature.strip()] = ref.strip()
    try:
        config = AcbenchMetricsConfig(asr_model=args.asr_model, evaluators=evaluators)
    except ValidationError as exc:
        raise ConfigError(
            "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        ) from None
    if args.dataset.is_file() and args.dataset.name != MANIFEST_NAME:
        raise DataError(f"{args.dataset}: not an OmniACBench dataset folder nor its {MANIFEST_NAME}")
    root = args.dataset.parent if args.dataset.is_file() else args.dataset
    dataset = load_acbench(root)
    _check_candidates(args.candidates)

    def report(done: int, total: int) -> None:
        print(f"\r  {done}/{total}", end="", file=sys.stderr, flush=True)

    result = compute_acbench_metrics(
        dataset.instances,
        args.system,
        args.candidates,
        condition=args.condition,
        cache_dir=args.cache_dir,
        config=config,
        progress=report,
    )
    print(file=sys.stderr)
    if args.out:
        from omnieval.scores import write_scores

        write_scores(result.scores, args.out)
    document = aggregate_acbench(result.scores)
    summary = document["systems"][args.system]["conditions"][args.condition]
    notes = [f"note ({key}): {text}" for key, text in document.get("metric_notes", {}).items()]
    if args.json:
        print(json.dumps(summary, indent=2))
        for line in notes:  # stdout stays one JSON document
            print(line, file=sys.stderr)
    else:
        for key, value in summary.items():
            print(f"{key:>24s}  {_fmt(value)}")
        for line in notes:
            print(line)
    return 0
