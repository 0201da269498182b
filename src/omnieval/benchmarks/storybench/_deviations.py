"""Omni-StoryBench's departures from its paper's protocol, declared once (FORMATS.md section 12).

The cpu panel's own departures are :data:`CPU_PANEL_DEVIATIONS` (they apply when the run judges
with it); every other is a function of the run's settings that returns its :class:`Deviation` when
the run has it and None otherwise; :func:`storybench_deviations` lists them in this order. The run's
``lineage.json``, ``report.html``, ``omnieval lineage`` and the MLflow tag ``omnieval.deviations``
all show the list this module returns (through ``Benchmark.deviation_ledger``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omnieval.benchmarks._base import RunSettings
from omnieval.lineage import Deviation
from omnieval.metrics import MetricsConfig

CPU_PANEL = "cpu"
"""The offline panel: one packaged 1.5B model on the text track and, through cascades of measured
facts, the speech, image and integrated tracks."""

CPU_PANELS = frozenset({CPU_PANEL, "cpu-served"})
"""The offline panel and its served twin (the same judge behind llama.cpp's server): same deviations."""

PAPER_PANELS = frozenset({"paper", "paper-a", "paper-b", "paper-c"})
"""The panels whose judges are the paper's (PROTOCOLS.md: columns A, B and C)."""

CLIP = "clip-vit-b-32"
"""The paper's image backbone (CLIP ViT-B/32 image features)."""

NOT_COMPARABLE = "compare it only with runs that used the same {what}, not with the paper's figure"


def _metrics(run: RunSettings) -> MetricsConfig:
    # A suite's metrics block is validated into this model when it loads; a bare RunSettings (a test,
    # a report outside a run) gets the defaults, as the metrics stage would.
    return run.metrics if isinstance(run.metrics, MetricsConfig) else MetricsConfig()


CPU_PANEL_DEVIATIONS: tuple[Deviation, ...] = (
    # The cpu panel stands in for the paper's three judges per track.
    Deviation(
        "judge-substitute-cpu",
        "The cpu panel's packaged Qwen2.5-Coder-1.5B (llama.cpp, Q4_K_M) judges every track instead of "
        "the paper's three judges per track: the text track from the narrations, and through cascades "
        "the speech track (an ASR transcript and measured delivery attributes instead of the audio), "
        "the image track (the candidate image's embedding similarity to the reference and current "
        "images, with the image_similarity metric's backbone, and whether it is blank or noise, "
        "instead of the image: no vision or omni model runs offline) and the integrated track (the "
        "narration with the image's and the clip's measurements).",
        "judge.text, judge.speech, judge.image and judge.integrated are one small text-only stand-in "
        "judge's scores, not the paper's three-judge means: compare them only with other cpu-panel "
        "runs; judge.image and judge.integrated rest on embedding similarity to the reference image, "
        "not on seeing the picture.",
    ),
    # The cpu panel's prompts are its own, not a paraphrase of the paper's rubric.
    Deviation(
        "prompt-cpu-own",
        "The cpu panel's prompts (variants cpu and cpu-cascade) are the project's own reference-guided "
        "prompts with a block of facts measured by counting words and delivery and by image "
        "similarity, not the paper's "
        "rubric: with a paraphrase of the rubric the 1.5B judge gave another book's page 10 on every "
        "criterion.",
        "The cpu panel's judge scores follow the measured facts; they are not what the paper's rubric "
        "would give, even from the paper's judges.",
    ),
)
"""The cpu panel's departures, in ledger order: they apply when the run judges with it or its twin."""


def cpu_panel_deviations(run: RunSettings) -> list[Deviation]:
    """The :data:`CPU_PANEL_DEVIATIONS` when ``run`` judges with a panel of :data:`CPU_PANELS`."""
    return list(CPU_PANEL_DEVIATIONS) if CPU_PANELS & set(run.panels) else []


def prompt_paraphrase(run: RunSettings) -> Deviation | None:
    """Every other panel's prompts paraphrase the paper's rubrics."""
    if not [p for p in run.panels if p not in CPU_PANELS]:
        return None
    return Deviation(
        "prompt-paraphrase",
        "Judge prompts paraphrase the paper's rubrics in the project's own words (same criterion keys, "
        "1-10 scale, inputs and their order); the paper's sentences are not used.",
        "Judge scores may differ from those the paper's exact wording would give; the size of that "
        "difference is not measured.",
    )


def judge_panel_custom(run: RunSettings) -> Deviation | None:
    """A panel that is neither the paper's nor the packaged ``cpu`` one (a panel file)."""
    custom = [p for p in run.panels if p not in CPU_PANELS and p not in PAPER_PANELS]
    if not custom:
        return None
    return Deviation(
        "judge-panel-custom",
        f"Judged by {', '.join(custom)}, not one of the paper's panels (A, B, C).",
        "Those judges' scores are not the paper's judges' scores: compare them only with runs of the "
        "same panel.",
    )


def metric_backbone_bertscore(run: RunSettings) -> Deviation | None:
    """BERTScore with another encoder than bert-score's English default."""
    config = _metrics(run)
    if config.text_encoder == "roberta-large":
        return None
    encoder = (
        "the packaged all-MiniLM-L6-v2 (layer 6)"
        if config.text_encoder == "minilm"
        else f"{config.text_encoder} (layer {config.text_encoder_layers})"
    )
    return Deviation(
        "metric-backbone-bertscore",
        f"BERTScore F1 uses {encoder} instead of roberta-large layer 17, bert-score's English default "
        "that the paper's harness uses.",
        f"bertscore_f1 is on another encoder's scale: {NOT_COMPARABLE.format(what='encoder')}.",
    )


def _image_backbones(run: RunSettings, config: MetricsConfig) -> set[str]:
    """The backbones the metrics stage recorded; before it ran, the one ``image_backbone`` picks here."""
    recorded = {
        str(backbone)
        for lineage in run.recorded.values()
        if (backbone := _get(lineage, "metrics", "image_similarity", "backbone")) is not None
    }
    if recorded:
        return recorded
    if config.image_backbone != "auto":
        return {config.image_backbone}
    from omnieval.backends.embeddings import clip_available

    return {CLIP if clip_available(config.clip_source) else "efficientnet-lite0"}


def _get(document: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def metric_backbone_image(run: RunSettings) -> Deviation | None:
    """Image similarity on other features than CLIP ViT-B/32."""
    others = sorted(_image_backbones(run, _metrics(run)) - {CLIP})
    if not others:
        return None
    return Deviation(
        "metric-backbone-image",
        f"Image similarity is the cosine of {', '.join(others)} image features instead of CLIP ViT-B/32 "
        "(whose weights are not on disk here, or which the suite did not pick).",
        f"image_similarity is on another backbone's scale: {NOT_COMPARABLE.format(what='backbone')}.",
    )


def metric_backbone_asr(run: RunSettings) -> Deviation | None:
    """Speed labels from another ASR than Whisper large-v3."""
    asr = _metrics(run).asr_model
    if asr is None or "large-v3" in asr:
        return None
    return Deviation(
        "metric-backbone-asr",
        f"Speech speed is counted from {asr} word timestamps instead of Whisper large-v3's.",
        "The speed field of speech_meta may differ where the smaller model misses or splits words.",
    )


def speech_metadata_fields(run: RunSettings) -> Deviation | None:
    """Speech-metadata fields not predicted, or predicted by other models than the paper's."""
    config = _metrics(run)
    missing = [
        field
        for field, absent in (
            ("emotion", not config.emotion_classifiers),
            ("speed", config.asr_model is None),
            ("gender", config.gender_classifier is None),
        )
        if absent
    ]
    substitutes: list[str] = []
    if config.gender_classifier is not None:
        substitutes.append(
            f"Gender comes from {config.gender_classifier} instead of audeering/wav2vec2-large-robust-24-ft-age-gender"
        )
    if config.emotion_classifiers:
        substitutes.append(
            f"Emotion comes from {len(config.emotion_classifiers)} recognizer(s) ({', '.join(config.emotion_classifiers)}) "
            "instead of the paper's three (SpeechBrain wav2vec2-IEMOCAP, superb/hubert-large-superb-er, "
            "emotion2vec+ large)"
        )
    if not missing and not substitutes:
        return None
    covered = [f for f in ("emotion", "speed", "pitch", "gender") if f not in missing]
    what: list[str] = []
    effect: list[str] = []
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        what.append(
            f"Speech metadata predicts {len(covered)} of the paper's 4 fields ({_and(covered)}); "
            f"{_and(missing)} {verb} not predicted (no model configured)."
        )
        effect.append(
            f"speech_meta is the mean over {_and(covered)} only ({_and(missing)} rows are "
            "not_applicable), not the paper's 4-field accuracy; its exact match covers the same fields."
        )
    if "gender" in missing:
        what.append("Pitch uses the gender-unknown thresholds 145/220 Hz for every clip.")
        effect.append("Pitch labels of clearly male or female voices can differ from the paper's.")
    if substitutes:
        what += [f"{sentence}." for sentence in substitutes]
        effect.append("The gender and emotion fields depend on the substitute models' own accuracy.")
    return Deviation("speech-metadata-fields", " ".join(what), " ".join(effect))


def _and(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def silent_clips_missing(run: RunSettings) -> Deviation | None:
    """Silent or speechless clips are missing outputs here; the paper's harness labels them."""
    peak = _metrics(run).silence_peak_dbfs
    return Deviation(
        "silent-clips-missing",
        f"A speech clip that is silent (peak below {peak:g} dBFS) or holds no speech is scored "
        "missing_output on all four fields, where the paper's harness would analyse it and fall back to "
        "the default labels (pitch and speed normal).",
        "Such clips are left out of valid-only speech_meta and count 0 in zero-filled, where the paper "
        "could credit a default label that matches the target; the report's notes count them per system.",
    )


DECLARED: tuple[Callable[[RunSettings], Deviation | None], ...] = (
    prompt_paraphrase,
    judge_panel_custom,
    metric_backbone_bertscore,
    metric_backbone_image,
    metric_backbone_asr,
    speech_metadata_fields,
    silent_clips_missing,
)
"""Every other departure the benchmark knows, in the order the ledger lists them (after
:data:`CPU_PANEL_DEVIATIONS`)."""


def storybench_deviations(run: RunSettings) -> list[Deviation]:
    """The declared deviations that apply to ``run``.

    Example:
        >>> from omnieval.metrics import MetricsConfig
        >>> run = RunSettings(panels=("cpu",), metrics=MetricsConfig(image_backbone="efficientnet-lite0"))
        >>> [d.id for d in storybench_deviations(run)]  # doctest: +NORMALIZE_WHITESPACE
        ['judge-substitute-cpu', 'prompt-cpu-own', 'metric-backbone-bertscore', 'metric-backbone-image',
         'metric-backbone-asr', 'speech-metadata-fields', 'silent-clips-missing']
    """
    return [*cpu_panel_deviations(run), *(d for declared in DECLARED if (d := declared(run)) is not None)]
