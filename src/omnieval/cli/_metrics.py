"""``omnieval metrics``: run the automatic metrics on individual files, or a benchmark's metrics on one
candidate folder (``omnieval metrics <benchmark>``, for benchmarks that ship the command)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "metrics",
        help="automatic metrics on single files (speech attributes, BERTScore, image similarity) or a benchmark's candidate folder",
        description=(
            "Run omnieval's automatic metrics outside a suite. Models are the packaged offline ones unless "
            "an option names another. An unusable input (missing, a directory, empty, undecodable) gets a "
            "message naming it and exit code 2; a model failing on an input gives exit code 1."
        ),
    )
    msub = parser.add_subparsers(dest="metrics_command", metavar="KIND")

    speech = msub.add_parser(
        "speech",
        help="pitch, speed, gender, emotion of audio files (the speech-metadata attributes)",
        description=(
            "Predict the speech-metadata fields of each file: median F0 and pitch label, words per second and "
            "speed label, voiced-frame ratio, transcript, and gender/emotion when classifiers are configured "
            "(null otherwise). Pitch thresholds come from --gender when given, else the predicted gender, else "
            "the gender-unknown pair (145/220 Hz). A clip in which Whisper hears no speech (noise, music, "
            "near-silence) is reported with status no_speech: empty transcript, the ASR's no-speech evidence "
            "and the measured F0 / voiced-frame ratio / spectral flatness, but no label; like a silent clip it "
            "is an unusable input (exit code 2)."
        ),
    )
    speech.add_argument(
        "files", nargs="+", type=Path, metavar="FILE", help="audio files (WAV, FLAC, OGG, MP3)"
    )
    speech.add_argument(
        "--gender", choices=("female", "male"), help="speaker gender for the pitch thresholds"
    )
    speech.add_argument("--json", action="store_true", help="print one JSON object per file (JSON Lines)")
    speech.add_argument(
        "--asr-model",
        default="whisper-tiny.en",
        help="whisper-tiny.en, whisper-base, or a CTranslate2 folder",
    )
    speech.add_argument("--gender-classifier", help="hf-audio:<folder> or evaluator:<ref>")
    speech.add_argument(
        "--emotion-classifier",
        action="append",
        default=[],
        help="hf-audio:<folder> or evaluator:<ref> (repeatable)",
    )
    speech.set_defaults(func=_speech)

    text = msub.add_parser(
        "text",
        help="BERTScore of a hypothesis against a reference",
        description="BERTScore precision/recall/F1 (no idf, no baseline rescaling) with the configured encoder.",
    )
    text.add_argument("--ref", required=True, help="reference text")
    text.add_argument("--hyp", required=True, help="hypothesis (generated) text")
    text.add_argument("--encoder", default="minilm", help="minilm, roberta-large, or a local model folder")
    text.add_argument("--layers", type=int, help="layer whose output is used (needed for a custom encoder)")
    text.add_argument("--json", action="store_true", help="print a JSON object")
    text.set_defaults(func=_text)

    image = msub.add_parser(
        "image",
        help="embedding cosine similarity of two images",
        description="Cosine similarity of image embeddings (CLIP ViT-B/32 when on disk, else EfficientNet-Lite0).",
    )
    image.add_argument("a", type=Path, metavar="A", help="first image")
    image.add_argument("b", type=Path, metavar="B", help="second image")
    image.add_argument(
        "--backbone",
        default="auto",
        choices=("auto", "clip-vit-b-32", "efficientnet-lite0"),
        help="image features",
    )
    image.add_argument("--json", action="store_true", help="print a JSON object")
    image.set_defaults(func=_image)

    for name, about in _benchmark_commands():
        # prefix_chars no option can start with: every argument after the name, --help included,
        # goes to the benchmark's own parser (which is only imported when the command runs).
        command = msub.add_parser(name, help=about, add_help=False, prefix_chars="\x00")
        command.add_argument("args", nargs="*", help=argparse.SUPPRESS)
        command.set_defaults(func=_benchmark_metrics, metrics_benchmark=name)

    parser.set_defaults(func=lambda args: (parser.print_help(), 0)[1])


def _config(**overrides: Any) -> Any:
    from omnieval.metrics import MetricsConfig

    return _validated(MetricsConfig, **overrides)


def _validated(cls: Any, **overrides: Any) -> Any:
    """``cls(**overrides)``, with pydantic's errors turned into one ConfigError line."""
    from pydantic import ValidationError

    from omnieval.errors import ConfigError

    try:
        return cls(**overrides)
    except ValidationError as exc:
        raise ConfigError(
            "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        ) from None


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _speech(args: argparse.Namespace) -> int:
    from omnieval.audio import AudioStatus
    from omnieval.metrics import NO_SPEECH, SpeechAnalyzer

    config = _config(
        asr_model=args.asr_model,
        gender_classifier=args.gender_classifier,
        emotion_classifiers=tuple(args.emotion_classifier),
        workers=1,
    )
    analyzer = SpeechAnalyzer(config)
    # Every AudioStatus but ok, and no_speech, is a fault of the file (exit 2); inference_error is a
    # model's (exit 1).
    input_problems = ({s.value for s in AudioStatus} - {AudioStatus.OK.value}) | {NO_SPEECH}
    bad_input = failed = 0
    for path in args.files:
        attrs = analyzer.describe(path, gender_hint=args.gender)
        if attrs.status == AudioStatus.MISSING.value and path.is_dir():
            attrs = dataclasses.replace(attrs, message=f"{path}: is a directory, not an audio file")
        bad_input += attrs.status in input_problems
        failed += not attrs.ok
        if args.json:
            print(json.dumps(attrs.to_dict(), ensure_ascii=False), flush=True)
        elif attrs.ok:
            print(
                f"{path}: pitch={attrs.pitch} (F0 {_fmt(attrs.f0_median_hz)} Hz, {attrs.pitch_rule}) "
                f"speed={_fmt(attrs.speed)} ({_fmt(attrs.words_per_second)} words/s) gender={_fmt(attrs.gender)} "
                f"emotion={_fmt(attrs.emotion)} VFR={_fmt(attrs.voiced_frame_ratio)} transcript={attrs.transcript!r}",
                flush=True,
            )
        elif attrs.no_speech:
            print(
                f"{path}: no_speech (no label derived) F0 {_fmt(attrs.f0_median_hz)} Hz "
                f"VFR={_fmt(attrs.voiced_frame_ratio)} flatness={_fmt(attrs.spectral_flatness)} "
                f"no_speech_prob={_fmt(attrs.no_speech_prob)} avg_logprob={_fmt(attrs.asr_avg_logprob)} "
                "transcript=''",
                flush=True,
            )
            print(f"error: {attrs.message} ({attrs.status})", file=sys.stderr, flush=True)
        else:
            print(f"error: {attrs.message} ({attrs.status})", file=sys.stderr, flush=True)
    return 2 if bad_input else 1 if failed else 0


def _text(args: argparse.Namespace) -> int:
    from omnieval.errors import DataError
    from omnieval.metrics import EmptyTextError, bertscore

    flags = {"reference": "--ref", "candidate": "--hyp"}
    problems = [
        f"{flag} is {'empty' if not value else 'whitespace only'}"
        for flag, value in (("--ref", args.ref), ("--hyp", args.hyp))
        if not value.strip()
    ]
    if problems:
        raise DataError(f"cannot compute BERTScore: {'; '.join(problems)}")
    config = _config(text_encoder=args.encoder, text_encoder_layers=args.layers)
    try:
        [prf] = bertscore([args.hyp], [args.ref], config=config)
    except EmptyTextError as exc:
        # Text the tokenizer drops entirely (e.g. only zero-width characters).
        raise DataError(
            f"cannot compute BERTScore: {flags[exc.side]} has no token the encoder keeps"
        ) from None
    result = {
        "status": "ok",
        "precision": prf.precision,
        "recall": prf.recall,
        "f1": prf.f1,
        "encoder": args.encoder,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"BERTScore ({args.encoder}): P={prf.precision:.4f} R={prf.recall:.4f} F1={prf.f1:.4f}")
    return 0


def _image(args: argparse.Namespace) -> int:
    from omnieval.errors import DataError
    from omnieval.metrics import ImageSimilarity, MetricCache, image_file_problem

    # Checked before the embedding model loads, so a typo in a path fails fast.
    problems = [p for p in (image_file_problem(args.a), image_file_problem(args.b)) if p]
    if problems:
        raise DataError("cannot compare the images", problems)
    metric = ImageSimilarity(_config(image_backbone=args.backbone))
    embedded, _, _ = metric.embed_files([args.a, args.b], MetricCache(None))
    similarity = metric.similarity(embedded[args.a], embedded[args.b])
    if args.json:
        print(json.dumps({"status": "ok", "similarity": similarity, "backbone": metric.backbone}))
    else:
        print(f"image similarity ({metric.backbone}): {similarity:.4f}")
    return 0


def _benchmark_commands() -> list[tuple[str, str]]:
    """(benchmark, help line) for each benchmark package shipping a ``_metrics_cli.py``.

    Found on disk rather than through the registry: importing the benchmarks costs seconds, and
    ``omnieval --help`` should not pay them. The help line is the module docstring's first line.
    """
    import ast

    root = Path(__file__).resolve().parent.parent / "benchmarks"
    found: list[tuple[str, str]] = []
    for module in sorted(root.glob("*/_metrics_cli.py")):
        doc = ast.get_docstring(ast.parse(module.read_text(encoding="utf-8"))) or ""
        about = doc.strip().splitlines()[0] if doc.strip() else f"{module.parent.name} metrics"
        found.append((module.parent.name, about))
    return found


def _benchmark_metrics(args: argparse.Namespace) -> int:
    from omnieval.cli._registries import registered_benchmark

    name = args.metrics_benchmark
    return registered_benchmark(name).run_command("metrics", list(args.args), prog=f"omnieval metrics {name}")
