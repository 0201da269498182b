"""Speech attributes of a generated clip: pitch, speed, gender, emotion (Omni-StoryBench appendix E.2).

Steps for one clip:

1. load, mono, 16 kHz, trim at 30 dB (:func:`omnieval.audio.prepare_speech`);
2. gender (if a classifier is configured): window probabilities averaged over 3.0 s / 1.5 s windows of
   the trimmed audio, binarized female vs male;
3. pitch: median pYIN F0 of the trimmed audio (>= 5 finite), else YIN (>= 5 finite positive), else
   ``normal``; thresholds from the gender hint if given, else the predicted gender, else the
   gender-unknown pair (145/220 Hz);
4. speed: ASR word chunks per second; the ASR reads the original file, as in the harness (fallback:
   transcript tokens per second of energy-detected speech in the untrimmed 16 kHz audio); 2.6 / 4.7
   thresholds;
5. emotion (if recognizers are configured): equal-weight mean of their canonical 4-class
   distributions, arg-max.

A clip in which Whisper heard no speech (noise, music, near-silence: the rule is in
:mod:`omnieval.metrics.functional.presence`) gets status ``no_speech``: its measured facts (F0,
voiced-frame ratio, spectral flatness, Whisper's no-speech probability and mean log-probability)
are kept, its transcript is empty and no label (pitch, speed, gender, emotion) is derived.

Fields with no model here are None, never guessed.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from omnieval.audio import TARGET_RATE, AudioError, AudioStatus, PreparedSpeech, prepare_speech
from omnieval.metrics._classifiers import AttributeClassifier, classifier_identity, load_classifier
from omnieval.metrics._config import MetricsConfig
from omnieval.metrics.functional.emotion import ensemble_emotion, to_canonical
from omnieval.metrics.functional.gender import binarize_gender, mean_probabilities, window_spans
from omnieval.metrics.functional.pitch import median_f0, pitch_label, pitch_thresholds
from omnieval.metrics.functional.presence import heard_speech, no_speech_message, spectral_flatness
from omnieval.metrics.functional.speed import WordChunk, speaking_rate, speed_label

if TYPE_CHECKING:
    from omnieval.metrics._cache import MetricCache

SPEECH_VERSION = "3"
"""Version of the attribute extraction (part of cache keys)."""

INFERENCE_ERROR = "inference_error"
"""Status of a clip whose audio was fine but a model failed on it."""

NO_SPEECH = "no_speech"
"""Status of a decodable, audible clip in which Whisper heard no speech (noise, music, near-silence)."""

CLI_KEYS = (
    "path",
    "status",
    "f0_median_hz",
    "pitch",
    "gender",
    "words_per_second",
    "speed",
    "voiced_frame_ratio",
    "emotion",
    "transcript",
)


@dataclass(frozen=True)
class SpeechAttributes:
    """Everything measured on one clip. Values are None when unavailable or when ``status`` is not ok.

    Attributes:
        path: The audio file.
        status: ``ok``, ``no_speech``, an :class:`~omnieval.audio.AudioStatus` value, or
            ``inference_error``.
        message: Why the clip was not analysed or holds no speech (names the file); '' when ok.
        f0_median_hz: Median F0 in Hz (pYIN, or YIN fallback); None when neither had 5 estimates.
        f0_method: ``pyin``, ``yin`` or ``none``.
        pitch: ``low`` / ``normal`` / ``high``.
        pitch_rule: Which thresholds were used: ``hint:<gender>``, ``predicted:<gender>`` or ``unknown``.
        gender: ``female`` / ``male``; None without a gender classifier.
        words_per_second: Speaking rate in units per second; None when unmeasurable or without ASR.
        speed_method: ``timestamps``, ``energy_fallback`` or ``none``.
        speed: ``slow`` / ``normal`` / ``fast``; None without ASR.
        voiced_frame_ratio: Share of pYIN frames with an F0 (0-1).
        emotion: ``neutral`` / ``happy`` / ``sad`` / ``angry``; None without recognizers.
        transcript: ASR text ('' for ``no_speech``); None without ASR.
        duration_s: Untrimmed duration in seconds.
        no_speech_prob: Whisper's highest no-speech probability over the clip's windows (0-1).
        asr_avg_logprob: Whisper's mean token log-probability over the clip's windows (<= 0).
        spectral_flatness: Median spectral flatness of the untrimmed 16 kHz audio (0-1).
    """

    path: str
    status: str
    message: str = ""
    f0_median_hz: float | None = None
    f0_method: str | None = None
    pitch: str | None = None
    pitch_rule: str | None = None
    gender: str | None = None
    words_per_second: float | None = None
    speed_method: str | None = None
    speed: str | None = None
    voiced_frame_ratio: float | None = None
    emotion: str | None = None
    transcript: str | None = None
    duration_s: float | None = None
    no_speech_prob: float | None = None
    asr_avg_logprob: float | None = None
    spectral_flatness: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == AudioStatus.OK.value

    @property
    def no_speech(self) -> bool:
        """The clip was measured but holds no speech (no label is derived from it)."""
        return self.status == NO_SPEECH

    def labels(self) -> dict[str, str | None]:
        """The four scored fields."""
        return {"emotion": self.emotion, "speed": self.speed, "pitch": self.pitch, "gender": self.gender}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: the CLI keys first, then the details."""
        data = asdict(self)
        ordered = {k: data[k] for k in CLI_KEYS}
        ordered.update({k: v for k, v in data.items() if k not in ordered})
        return ordered

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SpeechAttributes:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def with_path(self, path: Path | str) -> SpeechAttributes:
        """The same measurements attributed to another file with identical content."""
        data = asdict(self)
        data["path"] = str(path)
        if self.message and str(self.path) in self.message:
            data["message"] = self.message.replace(str(self.path), str(path))
        return SpeechAttributes(**data)


def _finite_or_none(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


class SpeechAnalyzer:
    """Extracts :class:`SpeechAttributes`; models load lazily and are shared across clips.

    Args:
        config: Model choices and thresholds; defaults are the packaged models.
        gender_model: An already loaded gender classifier (overrides ``config.gender_classifier``).
        emotion_models: Already loaded emotion recognizers (override ``config.emotion_classifiers``).
    """

    def __init__(
        self,
        config: MetricsConfig | None = None,
        *,
        gender_model: AttributeClassifier | None = None,
        emotion_models: Sequence[AttributeClassifier] | None = None,
    ) -> None:
        self.config = config or MetricsConfig()
        self._lock = threading.Lock()
        self._transcriber: Any = None
        self._gender_model: AttributeClassifier | None = gender_model
        self._gender_ref = self.config.gender_classifier or (
            f"in-memory:{type(gender_model).__name__}" if gender_model is not None else None
        )
        self._emotion_models: list[AttributeClassifier] | None = (
            list(emotion_models) if emotion_models else None
        )
        self._emotion_refs: tuple[str, ...] = self.config.emotion_classifiers or tuple(
            f"in-memory:{type(m).__name__}" for m in (emotion_models or ())
        )

    # -- models ---------------------------------------------------------------------------------

    def transcriber(self) -> Any:
        """The ASR backend, or None when ``asr_model`` is None."""
        if self.config.asr_model is None:
            return None
        with self._lock:
            if self._transcriber is None:
                from omnieval.backends.asr import WhisperTranscriber

                workers = self.config.workers
                # One model replica per worker thread, the cores split between them: concurrent
                # calls on a single replica would queue, and every replica taking all cores
                # oversubscribes them.
                threads = self.config.asr_threads or max(1, (os.cpu_count() or 1) // workers)
                self._transcriber = WhisperTranscriber(
                    self.config.asr_model,
                    beam_size=self.config.asr_beam_size,
                    language=self.config.asr_language,
                    cpu_threads=threads,
                    num_workers=workers,
                )
            return self._transcriber

    def gender_classifier(self) -> AttributeClassifier | None:
        ref = self.config.gender_classifier
        with self._lock:
            if self._gender_model is None and ref is not None:
                self._gender_model = load_classifier(ref)
            return self._gender_model

    def emotion_classifiers(self) -> list[AttributeClassifier]:
        with self._lock:
            if self._emotion_models is None:
                self._emotion_models = [load_classifier(ref) for ref in self.config.emotion_classifiers]
            return self._emotion_models

    def fields_covered(self) -> list[str]:
        """Scored fields this configuration can predict, in the paper's order."""
        covered = []
        if self._emotion_refs:
            covered.append("emotion")
        if self.config.asr_model is not None:
            covered.append("speed")
        covered.append("pitch")
        if self._gender_ref is not None:
            covered.append("gender")
        return covered

    def unavailable_fields(self) -> dict[str, str]:
        """Fields that cannot be predicted here, with the reason."""
        out = {}
        if not self._emotion_refs:
            out["emotion"] = "no emotion recognizer configured (none is available offline here)"
        if self.config.asr_model is None:
            out["speed"] = "no ASR model configured"
        if self._gender_ref is None:
            out["gender"] = "no gender classifier configured (none is available offline here)"
        return out

    def identity(self) -> dict[str, Any]:
        """Models and settings that determine the output (lineage and cache keys)."""
        asr = self.transcriber()
        gender = self.gender_classifier()
        return {
            "version": SPEECH_VERSION,
            "asr": asr.identity().as_dict() if asr is not None else None,
            "gender_classifier": (
                classifier_identity(self.config.gender_classifier, gender)
                if gender is not None and self.config.gender_classifier
                else None
            ),
            "emotion_classifiers": [
                classifier_identity(ref, model)
                for ref, model in zip(
                    self.config.emotion_classifiers, self.emotion_classifiers(), strict=True
                )
            ],
            "trim_top_db": self.config.trim_top_db,
            "max_audio_seconds": self.config.max_audio_seconds,
            "silence_peak_dbfs": self.config.silence_peak_dbfs,
            "pitch": "pyin C2-C7 median (>=5 finite), yin fallback (>=5 finite positive), else normal",
        }

    # -- steps ----------------------------------------------------------------------------------

    def _gender(self, speech: PreparedSpeech) -> str | None:
        model = self.gender_classifier()
        if model is None:
            return None
        y = speech.trimmed
        probs = [
            model.predict_proba(y[span.start : span.end]) for span in window_spans(y.shape[0], TARGET_RATE)
        ]
        return binarize_gender(model.labels, mean_probabilities(probs))

    def _emotion(self, speech: PreparedSpeech) -> str | None:
        models = self.emotion_classifiers()
        if not models:
            return None
        return ensemble_emotion([to_canonical(m.labels, m.predict_proba(speech.trimmed)) for m in models])

    def analyse(self, speech: PreparedSpeech, *, gender_hint: str | None = None) -> SpeechAttributes:
        """Attributes of prepared speech (see the module docstring for the steps)."""
        transcript: str | None = None
        rate = None
        nsp = logprob = None
        asr = self.transcriber()
        if asr is not None:
            heard = asr.transcribe_file(speech.path)
            nsp, logprob = _finite_or_none(heard.no_speech_prob), _finite_or_none(heard.avg_logprob)
            if not heard_speech(heard.text, heard.windows):
                return self._no_speech(speech, heard)
            transcript = heard.text
            chunks = [WordChunk(w.text, w.start, w.end) for w in heard.words]
            rate = speaking_rate(chunks, heard.text, speech.wave, TARGET_RATE)
        gender = self._gender(speech)
        hint = (gender_hint or "").strip().lower() or None
        if hint is not None:
            rule = f"hint:{hint}" if hint in ("female", "male") else "unknown"
            basis = hint
        elif gender is not None:
            rule, basis = f"predicted:{gender}", gender
        else:
            rule, basis = "unknown", None
        f0 = median_f0(speech.trimmed, sr=TARGET_RATE, decoder=self.config.pitch_decoder)
        limits = pitch_thresholds(basis)
        return SpeechAttributes(
            path=str(speech.path),
            status=AudioStatus.OK.value,
            f0_median_hz=_finite_or_none(f0.hz),
            f0_method=f0.method.value,
            pitch=pitch_label(f0.hz, basis),
            pitch_rule=f"{rule} ({limits.low:g}/{limits.high:g} Hz)",
            gender=gender,
            words_per_second=_finite_or_none(rate.units_per_second) if rate else None,
            speed_method=rate.method.value if rate else None,
            speed=speed_label(rate.units_per_second) if rate else None,
            voiced_frame_ratio=_finite_or_none(f0.voiced_frame_ratio),
            emotion=self._emotion(speech),
            transcript=transcript,
            duration_s=speech.duration_s,
            no_speech_prob=nsp,
            asr_avg_logprob=logprob,
            spectral_flatness=_finite_or_none(spectral_flatness(speech.wave)),
        )

    def _no_speech(self, speech: PreparedSpeech, heard: Any) -> SpeechAttributes:
        """A clip Whisper heard no speech in: measured facts kept, no label derived."""
        f0 = median_f0(speech.trimmed, sr=TARGET_RATE, decoder=self.config.pitch_decoder)
        nsp, logprob = _finite_or_none(heard.no_speech_prob), _finite_or_none(heard.avg_logprob)
        reason = no_speech_message(heard.text, heard.windows)
        return SpeechAttributes(
            path=str(speech.path),
            status=NO_SPEECH,
            message=f"{speech.path}: {reason}",
            f0_median_hz=_finite_or_none(f0.hz),
            f0_method=f0.method.value,
            voiced_frame_ratio=_finite_or_none(f0.voiced_frame_ratio),
            transcript="",
            duration_s=speech.duration_s,
            no_speech_prob=nsp,
            asr_avg_logprob=logprob,
            spectral_flatness=_finite_or_none(spectral_flatness(speech.wave)),
        )

    def describe(self, path: Path | str, *, gender_hint: str | None = None) -> SpeechAttributes:
        """Attributes of one audio file; unusable audio gives a status and message, not an exception."""
        path = Path(path)
        try:
            speech = prepare_speech(
                path,
                top_db=self.config.trim_top_db,
                max_duration_s=self.config.max_audio_seconds,
                silence_peak_dbfs=self.config.silence_peak_dbfs,
            )
        except AudioError as exc:
            return SpeechAttributes(path=str(path), status=exc.status.value, message=str(exc))
        try:
            return self.analyse(speech, gender_hint=gender_hint)
        except Exception as exc:
            # A model failing on one clip must not sink the run; the clip is reported, not scored.
            from omnieval.errors import ConfigError

            if isinstance(exc, ConfigError):
                raise
            return SpeechAttributes(
                path=str(path),
                status=INFERENCE_ERROR,
                message=f"{path}: speech analysis failed: {type(exc).__name__}: {exc}",
                duration_s=speech.duration_s,
            )

    def describe_many(
        self,
        paths: Sequence[Path | str],
        *,
        gender_hints: Sequence[str | None] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[SpeechAttributes]:
        """Describe clips concurrently (``config.workers`` threads); results in input order."""
        hints = list(gender_hints) if gender_hints is not None else [None] * len(paths)
        if len(hints) != len(paths):
            raise ValueError("gender_hints must match paths")
        # Load models once, before the threads start.
        self.transcriber()
        self.gender_classifier()
        self.emotion_classifiers()
        results: list[SpeechAttributes | None] = [None] * len(paths)
        done = 0
        if self.config.workers <= 1 or len(paths) <= 1:
            for i, (p, h) in enumerate(zip(paths, hints, strict=True)):
                results[i] = self.describe(p, gender_hint=h)
                done += 1
                if progress:
                    progress(done, len(paths))
        else:
            with ThreadPoolExecutor(max_workers=self.config.workers) as pool:
                futures = [
                    pool.submit(self.describe, p, gender_hint=h) for p, h in zip(paths, hints, strict=True)
                ]
                for i, fut in enumerate(futures):
                    results[i] = fut.result()
                    done += 1
                    if progress:
                        progress(done, len(paths))
        return [r for r in results if r is not None]


def speech_cache_key(audio_sha256: str, identity: dict[str, Any]) -> str:
    """Cache key of one clip's attributes: its content and the analyzer's :meth:`~SpeechAnalyzer.identity`."""
    from omnieval.metrics._cache import cache_key

    return cache_key(audio=audio_sha256, model=identity)


class CachedSpeech(NamedTuple):
    """What :func:`describe_cached` found: attributes in input order and where they came from."""

    attributes: list[SpeechAttributes]
    computed: int
    """Distinct clips (by content) analysed now."""
    hits: int
    """Input files served from the cache."""


def describe_cached(
    analyzer: SpeechAnalyzer,
    paths: Sequence[Path],
    cache: MetricCache,
    *,
    progress: Callable[[int], None] | None = None,
) -> CachedSpeech:
    """Attributes of files through the ``speech_meta`` cache (byte-identical files analysed once).

    The one path from audio files to cached attributes: the storybench metrics stage and the
    candidates gate both use it, so a clip analysed by one is a cache hit for the other.

    Args:
        progress: Called with the number of input files just resolved: once for the cache hits,
            then once per analysed clip (with every file sharing its content).
    """
    from omnieval.hashing import sha256_file
    from omnieval.metrics._spec import SPEECH_META

    identity = analyzer.identity()
    digests = [sha256_file(p) for p in paths]
    found: dict[str, SpeechAttributes] = {}
    uncached: dict[str, list[Path]] = {}
    hits = 0
    for digest, path in zip(digests, paths, strict=True):
        if digest in uncached:
            uncached[digest].append(Path(path))
            continue
        if digest not in found:
            hit = cache.get(SPEECH_META.name, speech_cache_key(digest, identity))
            if hit is None:
                uncached[digest] = [Path(path)]
                continue
            found[digest] = SpeechAttributes.from_dict(hit)
        hits += 1
    if progress is not None and hits:
        progress(hits)
    order = list(uncached)

    def on_clip(done: int, _total: int) -> None:
        if progress is not None:
            progress(len(uncached[order[done - 1]]))

    described = analyzer.describe_many([uncached[d][0] for d in order], progress=on_clip)
    for digest, attrs in zip(order, described, strict=True):
        if attrs.status != INFERENCE_ERROR:
            cache.put(SPEECH_META.name, speech_cache_key(digest, identity), attrs.to_dict())
        found[digest] = attrs
    out = [found[d].with_path(p) for d, p in zip(digests, paths, strict=True)]
    return CachedSpeech(out, len(order), hits)


_DEFAULT_ANALYZERS: dict[str, SpeechAnalyzer] = {}
_DEFAULT_LOCK = threading.Lock()


def default_analyzer(config: MetricsConfig | None = None) -> SpeechAnalyzer:
    """A process-wide analyzer per configuration, so models load once."""
    config = config or MetricsConfig()
    key = config.model_dump_json()
    with _DEFAULT_LOCK:
        if key not in _DEFAULT_ANALYZERS:
            _DEFAULT_ANALYZERS[key] = SpeechAnalyzer(config)
        return _DEFAULT_ANALYZERS[key]


def describe_audio(
    path: Path, *, gender_hint: str | None = None, config: MetricsConfig | None = None
) -> SpeechAttributes:
    """Speech attributes of one file with the default (or given) configuration.

    Args:
        path: Audio file.
        gender_hint: ``female`` / ``male`` to choose the pitch thresholds (overrides a predicted gender).
        config: Metric settings; default = the packaged models.

    Returns:
        The attributes; ``status`` says whether the clip could be analysed.
    """
    return default_analyzer(config).describe(path, gender_hint=gender_hint)
