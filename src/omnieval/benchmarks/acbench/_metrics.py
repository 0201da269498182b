"""OmniACBench automatic metrics: one system's speech outputs under one condition -> scores rows.

The paper's section 4.1, per instance (rows of FORMATS.md section 3; ``track`` = the feature,
``criterion`` = the instance's target value, judge and panel ``""``):

- ``wer`` (every instance): word error rate of the ASR transcript against the script, both
  normalized with Whisper's English text normalizer (fraction; can exceed 1).
- ``wpm`` (speech_rate): words of the transcript per minute of speech trimmed at ``trim_top_db``.
  delta-WPM (mean over ``fast`` minus mean over ``slow``) is an aggregate, see ``_aggregate``.
- ``per`` (pronunciation): phone error rate of the heteronym's reading that the speech is decided
  to carry (:func:`omnieval.backends.phones.pronunciation_decision`) against the target reading
  (fraction; 0 when the target reading won).
- ``vfr`` (phonation): share of pYIN frames with an F0 (0-1); VFR@0.3 is an aggregate.
- ``attribute_accuracy`` (emotion, accent, timbre): 1.0 when the feature's evaluator predicts the
  target value, else 0.0; ``not_applicable`` when no evaluator is configured for the feature.

An absent or empty output file gives ``missing_output`` on every row of that instance; a file that
cannot be decoded, is silent, too long, or whose analysis failed gives ``inference_error``. Results
are cached by content (audio SHA-256, script, target, models, settings).
"""

from __future__ import annotations

import functools
import json
import math
import os
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from omnieval.audio import TARGET_RATE, AudioError, AudioStatus, prepare_speech
from omnieval.backends.asr import AUTO_ASR, auto_asr_model
from omnieval.benchmarks._base import MetricsOutput
from omnieval.candidates import Modality, output_path, read_candidate
from omnieval.errors import ConfigError
from omnieval.hashing import sha256_bytes, sha256_file
from omnieval.metrics import (
    METRICS,
    PER,
    VFR,
    WER,
    WPM,
    AttributeClassifier,
    MetricCache,
    MetricSpec,
    SpeechAnalysisConfig,
    cache_key,
    check_classifier_ref,
    classifier_identity,
)
from omnieval.metrics.functional.labels import normalize_label
from omnieval.metrics.functional.text import edit_counts, normalize_words
from omnieval.scores import ScoreRow, Status

if TYPE_CHECKING:
    from omnieval.backends.asr import Transcriber
    from omnieval.benchmarks.acbench._record import AcbenchInstance

BENCHMARK = "acbench"
METRICS_VERSION = "3"
"""Part of every cache key: bump it whenever a measurement changes."""

EVALUATED_FEATURES: tuple[str, ...] = ("emotion", "accent", "timbre")
"""Features scored by a trained evaluator (the paper's Emo-Acc, GA-Acc, Tim-Acc)."""

ATTRIBUTE_ACCURACY = METRICS.register("attribute_accuracy")(
    MetricSpec(
        "attribute_accuracy",
        True,
        (0.0, 1.0),
        ("candidate_audio", "target_value"),
        "1",
        "1 when the feature's trained evaluator predicts the target value (emotion, accent, timbre)",
    )
)

ACBENCH_METRICS: tuple[MetricSpec, ...] = (WER, WPM, PER, VFR, ATTRIBUTE_ACCURACY)
"""The scores-table components this module writes."""

SCORE_RANGE: dict[str, tuple[float, float]] = {spec.name: spec.value_range for spec in ACBENCH_METRICS}
"""Native range of each component's per-row value."""

COMPONENTS_BY_FEATURE: dict[str, tuple[str, ...]] = {
    "speech_rate": (WER.name, WPM.name),
    "phonation": (WER.name, VFR.name),
    "pronunciation": (WER.name, PER.name),
    **{feature: (WER.name, ATTRIBUTE_ACCURACY.name) for feature in EVALUATED_FEATURES},
}
"""Rows written per instance, by feature (WER on every instance)."""

# No usable output was produced at all, as opposed to an output we could not analyse.
_ABSENT = frozenset({AudioStatus.MISSING.value, AudioStatus.EMPTY_FILE.value})
_INFERENCE_ERROR = "inference_error"


class AcbenchMetricsConfig(SpeechAnalysisConfig):
    """The ``metrics:`` block of an OmniACBench suite. Defaults run offline on the packaged models,
    except the ASR, which is the paper's Whisper large-v3 wherever a converted copy is on disk."""

    asr_model: str | None = Field(default="auto", validate_default=True)
    """``auto`` (default) = ``whisper-large-v3`` when its CTranslate2 folder is in the model cache
    (:func:`omnieval.backends.asr.whisper_large_v3_dir`), else the packaged ``whisper-tiny.en``
    (named as a deviation); or any name :class:`~omnieval.metrics.SpeechAnalysisConfig` takes.
    Resolved at validation, so lineage and cache keys name the model that ran."""

    evaluators: dict[str, str] = Field(default_factory=dict)
    """Evaluator per feature (``emotion``, ``accent``, ``timbre``) as a classifier reference
    (``evaluator:<ref>`` or ``hf-audio:<folder>``); a feature without one is reported
    ``not_applicable``."""
    pronunciation: Literal["reading_decision"] = "reading_decision"
    """How PER is measured: ``reading_decision`` = force-align the script once per reading of the
    heteronym (pocketsphinx), keep the reading that fits the word's audio best, and score its phones
    against the target reading's. The packaged free phone recognizer cannot separate the readings."""

    @field_validator("asr_model")
    @classmethod
    def _needs_asr(cls, value: str | None) -> str | None:
        if value is None:
            raise ValueError("OmniACBench needs an ASR model for WER and WPM")
        if value == AUTO_ASR:
            return auto_asr_model()
        return value

    @field_validator("evaluators")
    @classmethod
    def _evaluator_refs(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(EVALUATED_FEATURES))
        if unknown:
            raise ValueError(f"no evaluator feature {unknown}; known: {', '.join(EVALUATED_FEATURES)}")
        return {feature: check_classifier_ref(ref) for feature, ref in value.items()}


# -- WER with Whisper's English normalizer ----------------------------------------------------------


@functools.lru_cache(maxsize=1)
def spelling_table() -> str:
    """Whisper's British-to-American spelling table as JSON text (openai/whisper's
    ``normalizers/english.json``, MIT, 1,739 entries), read from the ``whisper-normalizer`` package
    on PyPI, which ships it; its hash keys the metrics cache."""
    from importlib.resources import files

    try:
        import whisper_normalizer
    except ImportError as exc:  # pragma: no cover - in the CPU lock
        raise ConfigError(
            "whisper-normalizer is not installed (Whisper's spelling table; in the CPU lock)"
        ) from exc
    return files(whisper_normalizer).joinpath("normalizers", "english.json").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def whisper_normalizer() -> Callable[[str], str]:
    """Whisper's English text normalizer, built offline: transformers' code with the spelling
    table transformers would fetch from the model hub (:func:`spelling_table`)."""
    try:
        from transformers.models.whisper.english_normalizer import EnglishTextNormalizer
    except ImportError as exc:  # pragma: no cover - in the CPU lock
        raise ConfigError("transformers is not installed (needed for Whisper's text normalizer)") from exc
    make: Any = EnglishTextNormalizer  # transformers leaves it unannotated
    normalizer: Callable[[str], str] = make(json.loads(spelling_table()))
    return normalizer


def normalized_words(text: str) -> list[str]:
    """Words of ``text`` after Whisper's English normalization.

    Example:
        >>> normalized_words("Mr. Smith paid twenty-five dollars for the colour TV.")
        ['mister', 'smith', 'paid', '$25', 'for', 'the', 'color', 'tv']
    """
    return whisper_normalizer()(text).split()


def word_error_rate(script: str, transcript: str) -> float | None:
    """(S + D + I) / reference words after Whisper normalization; None when the script has no words.

    Example:
        >>> word_error_rate("Mr. Smith has 5 apples.", "mister smith has five apples")
        0.0
    """
    reference = normalized_words(script)
    if not reference:
        return None
    return edit_counts(reference, normalized_words(transcript)).errors / len(reference)


# -- measurement ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AcbenchMeasurement:
    """What was measured on one clip (None where the instance's feature does not need it).

    Attributes:
        status: ``ok``, an :class:`~omnieval.audio.AudioStatus` value or ``inference_error``.
        message: Why the clip was not measured (names the file).
        transcript: ASR text.
        wer: Word error rate (fraction).
        wpm: Transcript words per minute of trimmed speech.
        per: Phone error rate of the decided reading against the target reading (fraction).
        reading: The heteronym reading the speech was decided to carry.
        vfr: Voiced-frame ratio (0-1).
        predicted: The evaluator's label.
    """

    status: str
    message: str = ""
    transcript: str | None = None
    wer: float | None = None
    wpm: float | None = None
    per: float | None = None
    reading: str | None = None
    vfr: float | None = None
    predicted: str | None = None


class _Models:
    """The models one run uses, loaded on first use and shared by the worker threads."""

    def __init__(self, config: AcbenchMetricsConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._asr: Transcriber | None = None
        self._evaluators: dict[str, AttributeClassifier] = {}

    def asr(self) -> Transcriber:
        with self._lock:
            if self._asr is None:
                self._asr = load_asr(self.config)
            return self._asr

    def evaluator(self, feature: str) -> AttributeClassifier | None:
        ref = self.config.evaluators.get(feature)
        if ref is None:
            return None
        with self._lock:
            if feature not in self._evaluators:
                self._evaluators[feature] = load_evaluator(ref)
            return self._evaluators[feature]

    @functools.cached_property
    def _shared_identity(self) -> dict[str, Any]:
        # Hashing the ASR weights takes a moment; every feature shares the result.
        c = self.config
        return {
            "version": METRICS_VERSION,
            "asr": self.asr().identity().as_dict(),
            "normalizer": sha256_bytes(spelling_table().encode()),
            "audio": [c.trim_top_db, c.max_audio_seconds, c.silence_peak_dbfs],
        }

    def identity(self, feature: str) -> dict[str, Any]:
        """Everything a measurement of ``feature`` depends on besides the clip and the instance."""
        c = self.config
        out = dict(self._shared_identity)
        if feature == "phonation":
            out["pitch"] = c.pitch_decoder
        elif feature == "pronunciation":
            out["pronunciation"] = _pronunciation_identity(c.pronunciation)
        elif feature in EVALUATED_FEATURES:
            model = self.evaluator(feature)
            out["evaluator"] = None if model is None else classifier_identity(c.evaluators[feature], model)
        return out

    def measure(self, inst: AcbenchInstance, path: Path) -> AcbenchMeasurement:
        c = self.config
        try:
            speech = prepare_speech(
                path,
                top_db=c.trim_top_db,
                max_duration_s=c.max_audio_seconds,
                silence_peak_dbfs=c.silence_peak_dbfs,
            )
        except AudioError as exc:
            return AcbenchMeasurement(status=exc.status.value, message=str(exc))
        try:
            heard = self.asr().transcribe_file(speech.path)
            found: dict[str, Any] = {}
            if inst.feature == "speech_rate":
                found["wpm"] = 60.0 * len(normalize_words(heard.text)) / speech.trimmed_duration_s
            elif inst.feature == "phonation":
                from omnieval.metrics.functional.pitch import pyin_f0

                vfr = pyin_f0(speech.trimmed, sr=TARGET_RATE, decoder=c.pitch_decoder).voiced_frame_ratio
                found["vfr"] = vfr if math.isfinite(vfr) else None
            elif inst.feature == "pronunciation" and inst.heteronym is not None:
                from omnieval.backends.phones import pronunciation_decision
                from omnieval.metrics.functional import reading_per

                ref = inst.heteronym
                # The aligner wants ARPAbet without stress; the manifest may keep CMUdict's digits.
                readings = {
                    key: tuple(p.rstrip("012") for p in phones) for key, phones in ref.readings.items()
                }
                # Untrimmed audio: the aligner models the silence around the script itself.
                decision = pronunciation_decision(speech.wave, inst.script, ref.word, readings)
                found["per"] = reading_per(decision, ref.reading, readings)
                found["reading"] = decision.chosen
            elif inst.feature in EVALUATED_FEATURES:
                model = self.evaluator(inst.feature)
                if model is not None:
                    probs = model.predict_proba(speech.trimmed)
                    found["predicted"] = model.labels[max(range(len(probs)), key=lambda i: float(probs[i]))]
            return AcbenchMeasurement(
                status=AudioStatus.OK.value,
                transcript=heard.text,
                wer=word_error_rate(inst.script, heard.text),
                **found,
            )
        except ConfigError:
            raise
        except Exception as exc:
            # One clip that breaks a model must not sink the run; the row says what happened.
            return AcbenchMeasurement(status=_INFERENCE_ERROR, message=f"{path}: {type(exc).__name__}: {exc}")


def load_asr(config: SpeechAnalysisConfig) -> Transcriber:
    """The configured Whisper, one replica per worker thread, the cores split between them."""
    from omnieval.backends.asr import WhisperTranscriber

    assert config.asr_model is not None  # AcbenchMetricsConfig refuses None
    return WhisperTranscriber(
        config.asr_model,
        beam_size=config.asr_beam_size,
        language=config.asr_language,
        cpu_threads=config.asr_threads or max(1, (os.cpu_count() or 1) // config.workers),
        num_workers=config.workers,
    )


def load_evaluator(ref: str) -> AttributeClassifier:
    """Load an evaluator by classifier reference (a seam for tests)."""
    from omnieval.metrics import load_classifier

    return load_classifier(ref)


def _pronunciation_identity(method: str) -> dict[str, Any]:
    from omnieval.backends.phones import load_pronunciation_aligner

    return {"method": method, "aligner": load_pronunciation_aligner().identity().as_dict()}


# -- rows ---------------------------------------------------------------------------------------------


def _value(inst: AcbenchInstance, m: AcbenchMeasurement, component: str) -> float | None:
    if component == ATTRIBUTE_ACCURACY.name:
        if m.predicted is None:
            return None
        return 1.0 if normalize_label(m.predicted) == normalize_label(inst.target_value) else 0.0
    # The other components are named like the measurement's fields (wer, wpm, per, vfr).
    value: float | None = getattr(m, component)
    return value


def _instance_rows(
    inst: AcbenchInstance, m: AcbenchMeasurement, system: str, condition: str
) -> list[ScoreRow]:
    if m.status == AudioStatus.OK.value:
        failed = None
    else:
        failed = Status.MISSING_OUTPUT.value if m.status in _ABSENT else Status.INFERENCE_ERROR.value
    rows = []
    for component in COMPONENTS_BY_FEATURE[inst.feature]:
        value = None if failed else _value(inst, m, component)
        # A measured clip without a value here means the component does not apply (no evaluator
        # configured, no heteronym, a script with no words), not that the output failed.
        status = failed or (Status.OK.value if value is not None else Status.NOT_APPLICABLE.value)
        rows.append(
            ScoreRow(
                benchmark=BENCHMARK,
                system=system,
                instance_id=inst.id,
                index=inst.index,
                track=inst.feature,
                component=component,
                judge="",
                criterion=inst.target_value,
                value=value,
                status=status,
                condition=condition,
            )
        )
    return rows


def _not_evaluated(root: Path, index: int) -> bool:
    """Whether the system marked row ``index`` as outside its evaluated subset (no WAV, and a
    ``missing.txt`` starting with :data:`~omnieval.benchmarks.acbench._systems.NOT_EVALUATED`)."""
    from omnieval.benchmarks.acbench._systems import NOT_EVALUATED

    if output_path(root, Modality.SPEECH, index).is_file():
        return False
    reason = root / Modality.SPEECH.value / str(index) / "missing.txt"
    return reason.is_file() and reason.read_text(encoding="utf-8", errors="replace").startswith(NOT_EVALUATED)


def compute_acbench_metrics(
    instances: Sequence[AcbenchInstance],
    system: str,
    candidates_root: Path,
    *,
    condition: str,
    cache_dir: Path | None,
    config: AcbenchMetricsConfig,
    progress: Callable[[int, int], None] | None = None,
) -> MetricsOutput:
    """Score one system's OmniACBench speech under one input condition.

    Args:
        instances: Manifest instances in index order; instance ``i`` is scored from
            ``<candidates_root>/speech/<i>/generated.wav``.
        system: System id written into the rows.
        candidates_root: That system's candidate folder for ``condition`` (FORMATS.md section 2).
        condition: ``original``, ``s_to_t``, ``i_to_t``, ``all_to_t`` or ``oracle``.
        cache_dir: Content-addressed result cache; None disables it.
        config: Models and settings.
        progress: Called with (done, total) instances.

    Returns:
        The rows (every instance: ``wer`` plus its feature's component), lineage (models, settings,
        per-status counts, problems), clips analysed and cache hits. The deviations from the paper
        are the run's ledger (``_deviations.py``).

    Raises:
        ConfigError: An unknown condition, or a model that cannot be loaded.
    """
    from omnieval.benchmarks.acbench._conditions import CONDITIONS
    from omnieval.scores import scores_frame

    if condition not in CONDITIONS:
        raise ConfigError(f"unknown acbench condition {condition!r}; known: {', '.join(CONDITIONS)}")
    # Rows the system left out of its evaluated subset on purpose get no score row at all (a
    # missing output would count them as failures of the system).
    left_out = [inst.id for inst in instances if _not_evaluated(Path(candidates_root), inst.index)]
    instances = [inst for inst in instances if inst.id not in left_out]
    models = _Models(config)
    cache = MetricCache(cache_dir)
    identities: dict[str, dict[str, Any]] = {}
    measured: dict[int, AcbenchMeasurement] = {}
    todo: list[tuple[AcbenchInstance, Path, str]] = []
    hits = 0
    for inst in instances:
        cand = read_candidate(Path(candidates_root), Modality.SPEECH, inst.index, decode=False)
        if cand.path is None:
            measured[inst.index] = AcbenchMeasurement(status=AudioStatus.MISSING.value, message=cand.problem)
            continue
        if inst.feature not in identities:
            identities[inst.feature] = models.identity(inst.feature)
        key = cache_key(
            audio=sha256_file(cand.path),
            script=inst.script,
            feature=inst.feature,
            target=inst.target_value,
            heteronym=None if inst.heteronym is None else inst.heteronym.to_json(),
            models=identities[inst.feature],
        )
        hit = cache.get(BENCHMARK, key)
        if hit is not None:
            measured[inst.index] = AcbenchMeasurement(**hit)
            hits += 1
        else:
            todo.append((inst, cand.path, key))
    done = len(measured)
    if progress:
        progress(done, len(instances))
    with ThreadPoolExecutor(max_workers=config.workers) as pool:
        results = pool.map(lambda item: models.measure(item[0], item[1]), todo)
        for (inst, _path, key), m in zip(todo, results, strict=True):
            measured[inst.index] = m
            if m.status != _INFERENCE_ERROR:
                cache.put(BENCHMARK, key, asdict(m))
            done += 1
            if progress:
                progress(done, len(instances))

    rows = [
        row for inst in instances for row in _instance_rows(inst, measured[inst.index], system, condition)
    ]
    lineage = {
        "benchmark": BENCHMARK,
        "system": system,
        "condition": condition,
        "version": METRICS_VERSION,
        "metrics": {spec.name: spec.as_dict() for spec in ACBENCH_METRICS},
        "models": identities,
        "config": config.model_dump(mode="json"),
        "statuses": dict(Counter(m.status for m in measured.values())),
        "not_evaluated": left_out,
        "problems": [
            f"{inst.index} ({inst.id}): {measured[inst.index].status}: {measured[inst.index].message}"
            for inst in instances
            if measured[inst.index].status != AudioStatus.OK.value
        ][:500],
    }
    return MetricsOutput(scores_frame(rows), lineage, computed=len(todo), cache_hits=hits)
