"""OmniACBench acoustic-control metrics over a JSONL manifest and a candidate folder (paper section 4.1).

Manifest (FORMATS.md section 6): one JSON object per line with ``id, feature, target_value, script,
instruction_audio, instruction_text, image, image_keywords``; line order is the candidate index, and
the candidate for line ``i`` is ``<candidates>/speech/<i>/generated.wav``.

Rows (benchmark ``acbench``, track = the feature, judge ``""``):

- ``wer`` (every instance): WER of the ASR transcript against the script after normalization.
- ``wpm`` (speech_rate): transcript words per minute of trimmed speech; criterion = target value
  (``fast``/``slow``), so delta-WPM = mean(fast) - mean(slow) can be computed from the table.
- ``per`` (pronunciation): phone error rate against the script's G2P pronunciation.
- ``vfr`` and ``whisper_detected`` (phonation): voiced frame ratio and 1.0 when VFR <= 0.3.
- ``classifier_accuracy`` (emotion, global_accent, timbre): 1.0 when the configured evaluator's
  label equals the target value; ``not_applicable`` when no evaluator is configured.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.audio import TARGET_RATE, AudioError, AudioStatus, prepare_speech
from omnieval.candidates import Modality, read_candidate
from omnieval.errors import DataError
from omnieval.hashing import sha256_file
from omnieval.jsonio import read_jsonl_objects
from omnieval.metrics._cache import MetricCache, cache_key
from omnieval.metrics._classifiers import AttributeClassifier, classifier_identity, load_classifier
from omnieval.metrics._config import MetricsConfig
from omnieval.metrics._spec import CLASSIFIER_ACCURACY, PER, VFR, WER, WHISPER_DETECTED, WPM
from omnieval.metrics.functional.acoustic import is_whisper_like, phone_error_rate, words_per_minute
from omnieval.metrics.functional.labels import normalize_label
from omnieval.metrics.functional.pitch import pyin_f0
from omnieval.metrics.functional.text import edit_counts, normalize_words
from omnieval.scores import ScoreRow, Status

if TYPE_CHECKING:
    import pandas as pd

BENCHMARK = "acbench"
ACBENCH_VERSION = "2"

MANIFEST_FIELDS = (
    "id",
    "feature",
    "target_value",
    "script",
    "instruction_audio",
    "instruction_text",
    "image",
    "image_keywords",
)

FEATURE_VALUES: dict[str, frozenset[str]] = {
    "speech_rate": frozenset({"fast", "slow"}),
    "phonation": frozenset({"whisper"}),
    "pronunciation": frozenset({"heteronym"}),
    "emotion": frozenset({"angry", "disgust", "fear", "joy", "sadness", "surprised"}),
    "global_accent": frozenset({"australia", "india", "uk"}),
    "timbre": frozenset({"adult female", "adult male", "elderly female", "elderly male"}),
}
"""Features and target values of OmniACBench (lower case)."""

CLASSIFIER_FEATURES = ("emotion", "global_accent", "timbre")


def canonical_feature(name: str) -> str:
    """``"Speech Rate"`` / ``"speech-rate"`` -> ``speech_rate``."""
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


@dataclass(frozen=True)
class AcbenchInstance:
    """One manifest line; media paths are resolved against the manifest's folder."""

    index: int
    id: str
    feature: str
    target_value: str
    script: str
    instruction_audio: Path | None
    instruction_text: str
    image: Path | None
    image_keywords: tuple[str, ...]


def read_manifest(path: Path) -> list[AcbenchInstance]:
    """Read and validate an OmniACBench manifest; every problem is reported with its line number."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"acbench manifest {path} not found")
    base = path.parent
    problems: list[str] = []
    out: list[AcbenchInstance] = []
    seen: set[str] = set()
    for line in read_jsonl_objects(path):
        if line.obj is None:
            problems.append(str(line.problem))
            continue
        obj, where = line.obj, line.where
        missing = [f for f in MANIFEST_FIELDS if f not in obj]
        if missing:
            problems.append(f"{where}: missing fields {', '.join(missing)}")
            continue
        feature = canonical_feature(str(obj["feature"]))
        target = normalize_label(str(obj["target_value"]))
        script = obj["script"]
        if feature not in FEATURE_VALUES:
            problems.append(
                f"{where}: unknown feature {obj['feature']!r}; known: {', '.join(FEATURE_VALUES)}"
            )
            continue
        if target not in FEATURE_VALUES[feature]:
            known = ", ".join(sorted(FEATURE_VALUES[feature]))
            problems.append(
                f"{where}: target_value {obj['target_value']!r} is not one of {known} for {feature}"
            )
            continue
        if not isinstance(script, str) or not script.strip():
            problems.append(f"{where}: script must be a non-empty string")
            continue
        if str(obj["id"]) in seen:
            problems.append(f"{where}: duplicate id {obj['id']!r}")
            continue
        seen.add(str(obj["id"]))
        keywords = obj["image_keywords"]
        if isinstance(keywords, str):
            keywords = [keywords]
        out.append(
            AcbenchInstance(
                index=len(out),
                id=str(obj["id"]),
                feature=feature,
                target_value=target,
                script=script,
                instruction_audio=base / obj["instruction_audio"] if obj["instruction_audio"] else None,
                instruction_text=str(obj["instruction_text"] or ""),
                image=base / obj["image"] if obj["image"] else None,
                image_keywords=tuple(str(k) for k in (keywords or ())),
            )
        )
    if problems:
        raise DataError(f"{path}: invalid acbench manifest", problems)
    if not out:
        raise DataError(f"{path}: the manifest has no instances")
    return out


@dataclass(frozen=True)
class AcbenchMeasurement:
    """What was measured on one candidate clip (None where the feature does not need it)."""

    status: str
    message: str = ""
    transcript: str | None = None
    wer: float | None = None
    wer_errors: int | None = None
    reference_words: int | None = None
    wpm: float | None = None
    per: float | None = None
    vfr: float | None = None
    predicted: str | None = None


@dataclass(frozen=True)
class AcbenchSummary:
    """Headline numbers in the paper's units (percentages where the paper prints them)."""

    instances: int
    scored: int
    wer_pct: float | None
    delta_wpm: float | None
    per_pct: float | None
    vfr_at_0_3_pct: float | None
    emotion_acc_pct: float | None
    global_accent_acc_pct: float | None
    timbre_acc_pct: float | None
    unavailable: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AcbenchResult:
    scores: pd.DataFrame
    summary: AcbenchSummary
    lineage: dict[str, Any]
    computed: int
    cache_hits: int
    measurements: dict[int, AcbenchMeasurement]


class _Measurer:
    def __init__(self, config: MetricsConfig) -> None:
        from omnieval.backends.asr import WhisperTranscriber
        from omnieval.backends.phones import load_phone_recognizer

        if config.asr_model is None:
            from omnieval.errors import ConfigError

            raise ConfigError("acbench metrics need an ASR model (asr_model) for WER")
        self.config = config
        self.asr = WhisperTranscriber(
            config.asr_model,
            beam_size=config.asr_beam_size,
            language=config.asr_language,
            cpu_threads=config.asr_threads,
        )
        self._phone_name = config.phone_recognizer
        self._phones: Any = None
        self._load_phones = load_phone_recognizer
        self.classifiers: dict[str, AttributeClassifier] = {}
        self.classifier_refs = {canonical_feature(k): v for k, v in config.acbench_classifiers.items()}

    def phones(self) -> Any:
        if self._phones is None:
            self._phones = self._load_phones(self._phone_name)
        return self._phones

    def classifier(self, feature: str) -> AttributeClassifier | None:
        ref = self.classifier_refs.get(feature)
        if ref is None:
            return None
        if feature not in self.classifiers:
            self.classifiers[feature] = load_classifier(ref)
        return self.classifiers[feature]

    def identity(self, features: set[str]) -> dict[str, Any]:
        ident: dict[str, Any] = {"version": ACBENCH_VERSION, "asr": self.asr.identity().as_dict()}
        if "pronunciation" in features:
            ident["phones"] = self.phones().identity().as_dict()
        ident["classifiers"] = {}
        for feature in sorted(features & set(CLASSIFIER_FEATURES)):
            model = self.classifier(feature)
            if model is not None:
                ident["classifiers"][feature] = classifier_identity(self.classifier_refs[feature], model)
        return ident

    def measure(self, inst: AcbenchInstance, path: Path) -> AcbenchMeasurement:
        from omnieval.backends.phones import reference_phones

        try:
            speech = prepare_speech(
                path,
                top_db=self.config.trim_top_db,
                max_duration_s=self.config.max_audio_seconds,
                silence_peak_dbfs=self.config.silence_peak_dbfs,
            )
        except AudioError as exc:
            return AcbenchMeasurement(status=exc.status.value, message=str(exc))
        try:
            heard = self.asr.transcribe_file(speech.path)
            ref_words = normalize_words(inst.script)
            hyp_words = normalize_words(heard.text)
            counts = edit_counts(ref_words, hyp_words)
            wer = counts.errors / len(ref_words) if ref_words else None
            wpm = per = vfr = None
            predicted = None
            if inst.feature == "speech_rate":
                wpm = words_per_minute(len(hyp_words), speech.trimmed_duration_s)
            elif inst.feature == "pronunciation":
                recognizer = self.phones()
                reference = reference_phones(inst.script, recognizer.inventory)
                per = phone_error_rate(reference, recognizer.recognize(speech.trimmed)) if reference else None
            elif inst.feature == "phonation":
                track = pyin_f0(speech.trimmed, sr=TARGET_RATE, decoder=self.config.pitch_decoder)
                vfr = track.voiced_frame_ratio
            else:
                model = self.classifier(inst.feature)
                if model is not None:
                    probs = model.predict_proba(speech.trimmed)
                    predicted = model.labels[int(max(range(len(probs)), key=lambda i: float(probs[i])))]
            return AcbenchMeasurement(
                status=AudioStatus.OK.value,
                transcript=heard.text,
                wer=wer,
                wer_errors=counts.errors,
                reference_words=len(ref_words),
                wpm=wpm,
                per=per,
                vfr=vfr if vfr is None or math.isfinite(vfr) else None,
                predicted=predicted,
            )
        except Exception as exc:
            from omnieval.errors import ConfigError

            if isinstance(exc, ConfigError):
                raise
            return AcbenchMeasurement(
                status="inference_error", message=f"{path}: {type(exc).__name__}: {exc}"
            )


def _pct(values: Sequence[float]) -> float | None:
    return 100.0 * sum(values) / len(values) if values else None


def compute_acbench_metrics(
    manifest: Path,
    candidates_root: Path,
    system: str,
    *,
    cache_dir: Path | None = None,
    config: MetricsConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AcbenchResult:
    """Score one system's OmniACBench outputs.

    Args:
        manifest: JSONL manifest (FORMATS.md section 6).
        candidates_root: Folder with ``speech/<index>/generated.wav``.
        system: System id written into the rows.
        cache_dir: Content-addressed result cache; None disables it.
        config: Models and settings (ASR, phone recognizer, evaluators per feature).
        progress: Called with (done, total) instances.
    """
    from omnieval.scores import scores_frame

    config = config or MetricsConfig()
    instances = read_manifest(manifest)
    cache = MetricCache(cache_dir)
    measurer = _Measurer(config)
    features = {inst.feature for inst in instances}
    ident = measurer.identity(features)
    results: dict[int, AcbenchMeasurement] = {}
    todo: list[tuple[AcbenchInstance, Path, str]] = []
    computed = hits = 0
    for inst in instances:
        cand = read_candidate(Path(candidates_root), Modality.SPEECH, inst.index, decode=False)
        if cand.path is None:
            results[inst.index] = AcbenchMeasurement(status=AudioStatus.MISSING.value, message=cand.problem)
            continue
        key = cache_key(
            audio=sha256_file(cand.path),
            script=inst.script,
            feature=inst.feature,
            target=inst.target_value,
            model=ident,
        )
        hit = cache.get("acbench", key)
        if hit is not None:
            results[inst.index] = AcbenchMeasurement(**hit)
            hits += 1
        else:
            todo.append((inst, cand.path, key))
    done = len(results)
    if progress:
        progress(done, len(instances))

    def run(item: tuple[AcbenchInstance, Path, str]) -> AcbenchMeasurement:
        return measurer.measure(item[0], item[1])

    with ThreadPoolExecutor(max_workers=max(1, config.workers)) as pool:
        for (inst, _path, key), measured in zip(todo, pool.map(run, todo), strict=True):
            results[inst.index] = measured
            computed += 1
            if measured.status != "inference_error":
                cache.put("acbench", key, asdict(measured))
            done += 1
            if progress:
                progress(done, len(instances))

    rows: list[ScoreRow] = []
    unavailable: dict[str, str] = {}
    wer_err = wer_words = 0
    fast: list[float] = []
    slow: list[float] = []
    pers: list[float] = []
    detected: list[float] = []
    acc: dict[str, list[float]] = {f: [] for f in CLASSIFIER_FEATURES}
    for inst in instances:
        m = results[inst.index]

        def add(
            component: str, value: float | None, criterion: str = "value", *, inst: AcbenchInstance = inst
        ) -> None:
            status = Status.OK.value if value is not None else Status.NOT_APPLICABLE.value
            rows.append(
                ScoreRow(
                    BENCHMARK,
                    system,
                    inst.id,
                    inst.index,
                    inst.feature,
                    component,
                    "",
                    criterion,
                    value,
                    status,
                )
            )

        components = [WER.name]
        if inst.feature == "speech_rate":
            components.append(WPM.name)
        elif inst.feature == "pronunciation":
            components.append(PER.name)
        elif inst.feature == "phonation":
            components += [VFR.name, WHISPER_DETECTED.name]
        else:
            components.append(CLASSIFIER_ACCURACY.name)
        if m.status != AudioStatus.OK.value:
            status = (
                Status.INFERENCE_ERROR.value
                if m.status in ("inference_error", "too_long")
                else Status.MISSING_OUTPUT.value
            )
            for comp in components:
                criterion = inst.target_value if comp == WPM.name else "value"
                rows.append(
                    ScoreRow(
                        BENCHMARK,
                        system,
                        inst.id,
                        inst.index,
                        inst.feature,
                        comp,
                        "",
                        criterion,
                        None,
                        status,
                    )
                )
            continue
        add(WER.name, m.wer)
        if m.wer_errors is not None and m.reference_words:
            wer_err += m.wer_errors
            wer_words += m.reference_words
        if inst.feature == "speech_rate":
            add(WPM.name, m.wpm, inst.target_value)
            if m.wpm is not None:
                (fast if inst.target_value == "fast" else slow).append(m.wpm)
        elif inst.feature == "pronunciation":
            add(PER.name, m.per)
            if m.per is not None:
                pers.append(m.per)
        elif inst.feature == "phonation":
            add(VFR.name, m.vfr)
            hit = None if m.vfr is None else (1.0 if is_whisper_like(m.vfr) else 0.0)
            add(WHISPER_DETECTED.name, hit)
            if hit is not None:
                detected.append(hit)
        else:
            if m.predicted is None:
                unavailable[inst.feature] = (
                    f"no evaluator configured for {inst.feature} (acbench_classifiers)"
                )
                add(CLASSIFIER_ACCURACY.name, None)
            else:
                value = 1.0 if normalize_label(m.predicted) == inst.target_value else 0.0
                add(CLASSIFIER_ACCURACY.name, value)
                acc[inst.feature].append(value)

    summary = AcbenchSummary(
        instances=len(instances),
        scored=sum(1 for m in results.values() if m.status == AudioStatus.OK.value),
        wer_pct=100.0 * wer_err / wer_words if wer_words else None,
        delta_wpm=(sum(fast) / len(fast) - sum(slow) / len(slow)) if fast and slow else None,
        per_pct=_pct(pers),
        vfr_at_0_3_pct=_pct(detected),
        emotion_acc_pct=_pct(acc["emotion"]),
        global_accent_acc_pct=_pct(acc["global_accent"]),
        timbre_acc_pct=_pct(acc["timbre"]),
        unavailable=unavailable,
    )
    lineage = {
        "metrics": {
            spec.name: spec.as_dict() for spec in (WER, WPM, PER, VFR, WHISPER_DETECTED, CLASSIFIER_ACCURACY)
        },
        "models": ident,
        "manifest": str(manifest),
        "manifest_sha256": sha256_file(Path(manifest)),
        "deviations": [
            f"ASR {config.asr_model} instead of Whisper large-v3 (WER, WPM)",
            f"phone recognizer {config.phone_recognizer} instead of POWSM (PER); reference phones from espeak-ng G2P",
            "WPM = transcript words per minute of speech trimmed at 30 dB (the paper does not define the duration)",
        ],
        "problems": [
            f"{inst.index} ({inst.id}): {results[inst.index].status}: {results[inst.index].message}"
            for inst in instances
            if results[inst.index].status != AudioStatus.OK.value
        ][:500],
    }
    return AcbenchResult(scores_frame(rows), summary, lineage, computed, hits, results)
