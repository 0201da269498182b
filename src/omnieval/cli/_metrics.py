"""``omnieval metrics``: run the automatic metrics on individual files or an OmniACBench manifest."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "metrics",
        help="automatic metrics on single files (speech attributes, BERTScore, image similarity) or an acbench run",
        description=(
            "Run omnieval's automatic metrics outside a suite. Models are the packaged offline ones unless "
            "an option names another. Unusable inputs get a status and a message naming the file; the "
            "command exits 1 when any input could not be scored."
        ),
    )
    msub = parser.add_subparsers(dest="metrics_command", metavar="KIND")

    speech = msub.add_parser(
        "speech",
        help="pitch, speed, gender, emotion of audio files (Omni-StoryBench speech metadata)",
        description=(
            "Predict the speech-metadata fields of each file: median F0 and pitch label, words per second and "
            "speed label, voiced-frame ratio, transcript, and gender/emotion when classifiers are configured "
            "(null otherwise). Pitch thresholds come from --gender when given, else the predicted gender, else "
            "the gender-unknown pair (145/220 Hz)."
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

    acb = msub.add_parser(
        "acbench",
        help="OmniACBench acoustic metrics of a candidate folder against a manifest",
        description=(
            "WER, WPM/delta-WPM, PER, VFR/VFR@0.3 and evaluator accuracy for <candidates>/speech/<index>/"
            "generated.wav against a JSONL manifest (id, feature, target_value, script, ...). Writes the "
            "scores table and prints the summary."
        ),
    )
    acb.add_argument("manifest", type=Path, help="JSONL manifest")
    acb.add_argument("candidates", type=Path, help="candidate folder")
    acb.add_argument("--system", default="candidate", help="system id written into the rows")
    acb.add_argument("--out", type=Path, help="write the scores table (parquet) here")
    acb.add_argument("--cache-dir", type=Path, default=Path(".cache/omnieval/metrics"), help="result cache")
    acb.add_argument("--asr-model", default="whisper-tiny.en", help="ASR for WER")
    acb.add_argument("--phones", default="pocketsphinx", help="pocketsphinx or ctc:<folder>")
    acb.add_argument(
        "--classifier",
        action="append",
        default=[],
        metavar="FEATURE=REF",
        help="evaluator for emotion/global_accent/timbre, e.g. emotion=evaluator:<ref> (repeatable)",
    )
    acb.add_argument("--json", action="store_true", help="print the summary as JSON")
    acb.set_defaults(func=_acbench)

    parser.set_defaults(func=lambda args: (parser.print_help(), 0)[1])


def _config(**overrides: Any) -> Any:
    from pydantic import ValidationError

    from omnieval.errors import ConfigError
    from omnieval.metrics import MetricsConfig

    try:
        return MetricsConfig(**overrides)
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
    from omnieval.metrics import SpeechAnalyzer

    config = _config(
        asr_model=args.asr_model,
        gender_classifier=args.gender_classifier,
        emotion_classifiers=tuple(args.emotion_classifier),
        workers=1,
    )
    analyzer = SpeechAnalyzer(config)
    failed = 0
    for path in args.files:
        attrs = analyzer.describe(path, gender_hint=args.gender)
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
        else:
            print(f"{attrs.status}: {attrs.message}", flush=True)
    return 1 if failed else 0


def _text(args: argparse.Namespace) -> int:
    from omnieval.metrics import bertscore

    config = _config(text_encoder=args.encoder, text_encoder_layers=args.layers)
    problems = [
        f"--{name}: empty text" for name, value in (("ref", args.ref), ("hyp", args.hyp)) if not value.strip()
    ]
    if problems:
        result: dict[str, Any] = {"status": "missing_output", "message": "; ".join(problems), "f1": None}
    else:
        [prf] = bertscore([args.hyp], [args.ref], config=config)
        result = {
            "status": "ok",
            "precision": prf.precision,
            "recall": prf.recall,
            "f1": prf.f1,
            "encoder": args.encoder,
        }
    if args.json:
        print(json.dumps(result))
    elif result["status"] == "ok":
        print(
            f"BERTScore ({args.encoder}): P={result['precision']:.4f} R={result['recall']:.4f} F1={result['f1']:.4f}"
        )
    else:
        print(f"{result['status']}: {result['message']}")
    return 0 if result["status"] == "ok" else 1


def _image_problem(path: Path) -> str:
    from PIL import Image

    if not path.is_file():
        return f"{path}: no such file"
    if path.stat().st_size == 0:
        return f"{path}: empty file"
    try:
        with Image.open(path) as im:
            im.load()
    except Exception as exc:
        return f"{path}: cannot decode image: {type(exc).__name__}: {exc}"
    return ""


def _image(args: argparse.Namespace) -> int:
    from omnieval.metrics import ImageSimilarity
    from omnieval.metrics._cache import MetricCache

    problems = [p for p in (_image_problem(args.a), _image_problem(args.b)) if p]
    if problems:
        result: dict[str, Any] = {
            "status": "missing_output",
            "message": "; ".join(problems),
            "similarity": None,
        }
    else:
        metric = ImageSimilarity(_config(image_backbone=args.backbone))
        embedded, _, _ = metric.embed_files([args.a, args.b], MetricCache(None))
        result = {
            "status": "ok",
            "similarity": metric.similarity(embedded[args.a], embedded[args.b]),
            "backbone": metric.backbone,
        }
    if args.json:
        print(json.dumps(result))
    elif result["status"] == "ok":
        print(f"image similarity ({result['backbone']}): {result['similarity']:.4f}")
    else:
        print(f"{result['status']}: {result['message']}")
    return 0 if result["status"] == "ok" else 1


def _acbench(args: argparse.Namespace) -> int:
    from omnieval.errors import ConfigError
    from omnieval.metrics import compute_acbench_metrics

    classifiers: dict[str, str] = {}
    for item in args.classifier:
        feature, sep, ref = item.partition("=")
        if not sep or not feature or not ref:
            raise ConfigError(f"--classifier {item!r}: expected FEATURE=REF")
        classifiers[feature.strip()] = ref.strip()
    config = _config(asr_model=args.asr_model, phone_recognizer=args.phones, acbench_classifiers=classifiers)

    def report(done: int, total: int) -> None:
        print(f"\r  {done}/{total}", end="", file=sys.stderr, flush=True)

    result = compute_acbench_metrics(
        args.manifest, args.candidates, args.system, cache_dir=args.cache_dir, config=config, progress=report
    )
    print(file=sys.stderr)
    if args.out:
        from omnieval.scores import write_scores

        write_scores(result.scores, args.out)
    summary = result.summary.as_dict()
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for key, value in summary.items():
            print(f"{key:>24s}  {_fmt(value)}")
    return 0
