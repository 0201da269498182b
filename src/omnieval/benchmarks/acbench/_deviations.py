"""OmniACBench's departures from its paper's section 4.1, declared once (FORMATS.md section 12).

Each declaration is a function of the run's settings that returns its :class:`Deviation` when the
run has it and None otherwise; :func:`acbench_deviations` applies them in this order. The run's
``lineage.json``, ``report.html``, ``omnieval lineage`` and the MLflow tag ``omnieval.deviations``
all show the list this module returns (through ``Benchmark.deviation_ledger``).
"""

from __future__ import annotations

from collections.abc import Callable

from omnieval.backends.asr import whisper_large_v3_dir
from omnieval.benchmarks._base import RunSettings
from omnieval.benchmarks.acbench._metrics import EVALUATED_FEATURES, AcbenchMetricsConfig
from omnieval.lineage import Deviation

PAPER_EVALUATOR = "WavLM-Large fine-tuned as in its appendix C"


def _metrics(run: RunSettings) -> AcbenchMetricsConfig:
    # A suite's metrics block is validated into this model when it loads; a bare RunSettings (a test,
    # a report outside a run) gets the defaults, as the metrics stage would.
    return run.metrics if isinstance(run.metrics, AcbenchMetricsConfig) else AcbenchMetricsConfig()


def metric_backbone_asr(run: RunSettings) -> Deviation | None:
    """WER and WPM from another ASR than Whisper large-v3."""
    asr = str(_metrics(run).asr_model)
    if "large-v3" in asr:
        return None
    cpu = (
        f"; the CPU default, used because no converted large-v3 is at {whisper_large_v3_dir()}"
        if asr == "whisper-tiny.en"
        else ""
    )
    return Deviation(
        "metric-backbone-asr",
        f"ASR {asr} (faster-whisper, greedy) instead of Whisper large-v3 transcribes the speech for WER "
        f"and WPM{cpu}.",
        "WER counts the smaller model's recognition errors as the system's, so it reads higher than "
        "with large-v3; WPM, and so delta-WPM, counts the words it heard. Compare them only with runs "
        "of the same ASR.",
    )


def _every_run(id: str, what: str, effect: str) -> Callable[[RunSettings], Deviation | None]:
    """A departure every run has; ``what`` names the run's metric settings as ``{m.<setting>}``."""
    return lambda run: Deviation(id, what.format(m=_metrics(run)), effect)


def attribute_evaluator_missing(run: RunSettings) -> Deviation | None:
    """Features whose accuracy needs an evaluator the suite does not configure."""
    missing = [f for f in EVALUATED_FEATURES if f not in _metrics(run).evaluators]
    if not missing:
        return None
    return Deviation(
        "attribute-evaluator-missing",
        f"No evaluator is configured for {', '.join(missing)} (the paper: {PAPER_EVALUATOR}); their "
        "attribute_accuracy rows are not_applicable.",
        f"The {', '.join(missing)} accuracies are not computed (null, listed in not_computed).",
    )


def attribute_evaluator_substitute(run: RunSettings) -> Deviation | None:
    """Features scored by an evaluator the suite names (not necessarily the paper's checkpoint)."""
    evaluators = _metrics(run).evaluators
    used = [f"{f}: {evaluators[f]}" for f in EVALUATED_FEATURES if f in evaluators]
    if not used:
        return None
    return Deviation(
        "attribute-evaluator-substitute",
        f"Attribute accuracies come from the configured evaluators ({'; '.join(used)}), not the paper's "
        f"checkpoints ({PAPER_EVALUATOR}).",
        "Each accuracy depends on that evaluator's own held-out accuracy (the paper's: 89.43 / 97.29 / "
        "96.67 % for emotion, accent, timbre).",
    )


DECLARED: tuple[Callable[[RunSettings], Deviation | None], ...] = (
    metric_backbone_asr,
    _every_run(
        "wer-normalization",
        "WER compares script and transcript after Whisper's English text normalizer (the paper does not "
        "state its normalization); the aggregate is the mean of per-instance WER.",
        "WER can differ from the paper's by these two choices (a pooled WER weights long scripts more).",
    ),
    _every_run(  # PER(word): a decision on the heteronym's reading, not free phone recognition
        "per-word-level",
        "PER(word), omnieval's word-level decision: pocketsphinx forced alignment decides which of the "
        "heteronym's reference readings (ARPAbet) was spoken, and only that word's phones are scored "
        "against the target reading, instead of POWSM free phone recognition over the whole utterance "
        "against the script's reference.",
        "per is not comparable with the paper's PER (MLflow tag omnieval.metric_note.per says so too).",
    ),
    _every_run(
        "wpm-definition",
        "WPM is ASR transcript words per minute of the speech trimmed at {m.trim_top_db:g} dB "
        "(the paper does not define the word count or the duration).",
        "delta-WPM depends on this definition; its size can differ from the paper's.",
    ),
    _every_run(
        "vfr-f0-detector",
        "VFR is the share of pYIN ({m.pitch_decoder} decoder, C2-C7) voiced frames over all "
        "frames of the trimmed 16 kHz audio (the paper does not name its F0 detector).",
        "VFR@0.3 depends on the detector's voicing decisions; it can differ from the paper's.",
    ),
    attribute_evaluator_missing,
    attribute_evaluator_substitute,
    _every_run(  # how unusable outputs count, which the paper does not say
        "silent-clips-invalid",
        "Silent (peak below {m.silence_peak_dbfs:g} dBFS), undecodable, truncated or too long outputs are "
        "inference_error and absent or empty ones missing_output (the paper does not say how it counts "
        "them).",
        "Such clips drop out of every metric's numerator and denominator (valid rows only), so a system "
        "that often outputs silence is not marked down in the means; n counts every instance.",
    ),
)
"""Every departure the benchmark knows, in the order the ledger lists them."""


def acbench_deviations(run: RunSettings) -> list[Deviation]:
    """The declared deviations that apply to ``run``.

    Example:
        >>> config = AcbenchMetricsConfig(asr_model="whisper-base", evaluators={"timbre": "hf-audio:/m"})
        >>> [d.id for d in acbench_deviations(RunSettings(metrics=config))]  # doctest: +NORMALIZE_WHITESPACE
        ['metric-backbone-asr', 'wer-normalization', 'per-word-level', 'wpm-definition', 'vfr-f0-detector',
         'attribute-evaluator-missing', 'attribute-evaluator-substitute', 'silent-clips-invalid']
    """
    return [d for declared in DECLARED if (d := declared(run)) is not None]
