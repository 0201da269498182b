"""Speech recognition with word timestamps (faster-whisper / CTranslate2 Whisper models).

The paper transcribes with Whisper large-v3 through the Hugging Face ASR pipeline, which decodes
greedily (one beam, temperature 0, no fallback). The embedded default here runs the packaged Whisper
tiny.en with the same decoding; ``whisper-base`` (multilingual), ``whisper-large-v3`` (a converted
CTranslate2 folder in the model cache, :func:`whisper_large_v3_dir`) or any local CTranslate2
Whisper folder can be configured instead, and ``auto`` (:func:`auto_asr_model`) takes large-v3
whenever it is on disk.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from omnieval.errors import ConfigError


@dataclass(frozen=True)
class Word:
    """One recognized word and its span in seconds from the start of the input."""

    text: str
    start: float
    end: float


@dataclass(frozen=True)
class WindowEvidence:
    """Whisper's own speech evidence for one decoded 30 s window.

    Attributes:
        no_speech_prob: Probability of the no-speech token at the window's first decoding step (0-1).
        avg_logprob: Mean log-probability per decoded token (natural log, <= 0).
        skipped: Whether the decoder dropped the window as silence (faster-whisper's rule:
            ``no_speech_prob > no_speech_threshold`` and ``avg_logprob <= log_prob_threshold``).
        text: What the decoder read in the window, kept or dropped (timestamps left out).
    """

    no_speech_prob: float
    avg_logprob: float
    skipped: bool
    text: str = ""


@dataclass(frozen=True)
class Transcript:
    """What the ASR heard: the full text, its words with timestamps and the per-window evidence.

    ``windows`` is empty for transcribers that expose no such evidence.
    """

    text: str
    words: tuple[Word, ...]
    windows: tuple[WindowEvidence, ...] = ()

    @property
    def no_speech_prob(self) -> float | None:
        """Highest no-speech probability over the decoded windows; None without windows."""
        return max((w.no_speech_prob for w in self.windows), default=None)

    @property
    def avg_logprob(self) -> float | None:
        """Mean token log-probability over the decoded windows; None without windows."""
        if not self.windows:
            return None
        return sum(w.avg_logprob for w in self.windows) / len(self.windows)


@dataclass(frozen=True)
class ModelIdentity:
    """Identity of a model for lineage and cache keys."""

    name: str
    path: str
    sha256: str
    settings: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "path": self.path, "sha256": self.sha256, "settings": self.settings}


class Transcriber(Protocol):
    """Speech to text with word timestamps."""

    name: str

    def transcribe(self, wave_16k: npt.NDArray[np.float32]) -> Transcript:
        """Transcribe mono 16 kHz audio, shape ``(n,)``."""
        ...

    def transcribe_file(self, path: Path) -> Transcript:
        """Transcribe an audio file, decoded by the ASR library's own loader."""
        ...

    def identity(self) -> ModelIdentity: ...


def _packaged_whisper(name: str) -> Callable[[], Path]:
    def locate() -> Path:
        from omnieval.backends import assets

        getter = {"whisper-tiny.en": assets.whisper_tiny_path, "whisper-base": assets.whisper_base_path}[name]
        return getter()

    return locate


WHISPER_LARGE_V3 = "whisper-large-v3"
"""Config name of the paper's ASR, looked for in the model cache (no registry package ships it)."""

AUTO_ASR = "auto"
"""Config value meaning: Whisper large-v3 when it is on disk, else the packaged tiny.en."""


def whisper_large_v3_dir() -> Path:
    """Where ``whisper-large-v3`` is expected: ``<model cache>/whisper-large-v3``, the model cache
    being ``$OMNIEVAL_MODEL_CACHE`` (default ``~/.cache/omnieval/models``), beside the assembled
    packaged models. It is a CTranslate2 conversion of ``openai/whisper-large-v3``, made once with
    ``ct2-transformers-converter --model openai/whisper-large-v3 --output_dir <this folder>
    --copy_files tokenizer.json preprocessor_config.json --quantization float16``."""
    from omnieval.backends.assets import model_cache

    return model_cache() / WHISPER_LARGE_V3


def whisper_large_v3_present() -> bool:
    """Whether a converted large-v3 (a ``model.bin``) sits in :func:`whisper_large_v3_dir`."""
    return (whisper_large_v3_dir() / "model.bin").is_file()


def _local_large_v3() -> Path:
    path = whisper_large_v3_dir()
    if not whisper_large_v3_present():
        raise ConfigError(
            f"ASR model {WHISPER_LARGE_V3!r}: no CTranslate2 folder with model.bin at {path}; convert it once "
            f"with `ct2-transformers-converter --model openai/whisper-large-v3 --output_dir {path} "
            "--copy_files tokenizer.json preprocessor_config.json --quantization float16`"
        )
    return path


def auto_asr_model() -> str:
    """``whisper-large-v3`` (the paper's ASR) when its folder is present, else ``whisper-tiny.en``.

    Resolved when a config is validated, so lineage, cache keys and the resolved config name the
    model that actually ran, never ``auto``.
    """
    return WHISPER_LARGE_V3 if whisper_large_v3_present() else "whisper-tiny.en"


ASR_MODELS: dict[str, Callable[[], Path]] = {
    "whisper-tiny.en": _packaged_whisper("whisper-tiny.en"),
    "whisper-base": _packaged_whisper("whisper-base"),
    WHISPER_LARGE_V3: _local_large_v3,
}
"""Whisper models by config name (packaged, or large-v3 in the model cache); any other value is
read as a local CTranslate2 folder."""


def resolve_whisper(model: str) -> Path:
    """Folder of a CTranslate2 Whisper model given a packaged name or a local path."""
    if model in ASR_MODELS:
        return ASR_MODELS[model]()
    path = Path(model).expanduser()
    if (path / "model.bin").is_file():
        return path
    known = ", ".join(sorted(ASR_MODELS))
    raise ConfigError(
        f"ASR model {model!r} is neither a packaged model ({known}) nor a local CTranslate2 Whisper folder "
        "(a directory with model.bin); convert Hugging Face checkpoints with ct2-transformers-converter"
    )


def decode_for_whisper(path: Path | str, sampling_rate: int = 16_000) -> npt.NDArray[np.float32]:
    """Mono float32 samples at ``sampling_rate``, equal to ``faster_whisper.decode_audio(path)``.

    Same PyAV steps (decode, skip invalid frames, resample to signed 16-bit mono, scale by 1/32768)
    without the full ``gc.collect()`` faster-whisper runs after every file: in a process holding
    torch and the other models that collection costs ~0.14 s per clip (more than a third of a short
    clip's ASR on two cores) and, holding the GIL, stalls every other worker thread. The resampler
    objects it was freeing are reclaimed by the ordinary collector instead.
    """
    import av

    resampler = av.audio.resampler.AudioResampler(format="s16", layout="mono", rate=sampling_rate)
    chunks: list[npt.NDArray[Any]] = []

    def resample(frame: Any) -> None:  # None flushes the resampler
        chunks.extend(out.to_ndarray().reshape(-1) for out in resampler.resample(frame))

    with av.open(str(path), mode="r", metadata_errors="ignore") as container:
        fifo = av.audio.fifo.AudioFifo()
        frames = container.decode(audio=0)
        while True:
            try:
                frame = next(frames)
            except StopIteration:
                break
            except av.error.InvalidDataError:
                continue
            frame.pts = None  # concatenated regardless of timestamps, as faster-whisper does
            fifo.write(frame)
            if fifo.samples >= 500_000:
                resample(fifo.read())
        if fifo.samples > 0:
            resample(fifo.read())
        resample(None)
    samples = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)
    return samples.astype(np.float32) / 32768.0


_EVIDENCE = threading.local()

WHISPER_FRAMES = 3000
"""Mel frames of Whisper's 30 s window (what faster-whisper pads every window to)."""


def clip_window(features: npt.NDArray[Any], min_frames: int) -> npt.NDArray[Any]:
    """Features cut to the window's content, padded to at least ``min_frames`` (even), never longer.

    faster-whisper zero-pads each window's scaled log-mel features to 3000 frames; a frame of real
    audio is all zero only if every mel band sits exactly at log10 power -4, so trailing all-zero
    frames are that padding. Shape ``(n_mels, frames)`` or ``(batch, n_mels, frames)``; frames stay a multiple of 2
    (the encoder's stride).
    """
    frames = features.shape[-1]
    used = np.flatnonzero(np.any(features.reshape(-1, features.shape[-2], frames) != 0, axis=(0, 1)))
    content = int(used[-1]) + 1 if used.size else 0
    keep = min(frames, max(content, min_frames, 2))
    keep += keep % 2
    return features if keep >= frames else np.ascontiguousarray(features[..., :keep])


@functools.cache
def _evidence_model_class() -> Any:
    """``faster_whisper.WhisperModel`` that also records each window's no-speech evidence.

    faster-whisper computes the no-speech probability and mean log-probability of every window but
    keeps them only on segments it yields: a window it drops as silence leaves no trace. The
    subclass records them where they are produced (``generate_with_fallback``), per calling thread,
    without changing what is decoded.
    """
    from faster_whisper import WhisperModel

    class EvidenceWhisperModel(WhisperModel):  # type: ignore[misc]
        encoder_frames: int | None = None
        """Shortest encoder input in mel frames (100 per second); None = Whisper's full 3000."""

        def encode(self, features: Any) -> Any:
            if self.encoder_frames is not None:
                features = clip_window(np.asarray(features), self.encoder_frames)
            return super().encode(features)

        def generate_with_fallback(
            self, encoder_output: Any, prompt: Any, tokenizer: Any, options: Any
        ) -> Any:
            out = super().generate_with_fallback(encoder_output, prompt, tokenizer, options)
            sink: list[WindowEvidence] | None = getattr(_EVIDENCE, "windows", None)
            if sink is not None:
                result, avg_logprob = out[0], float(out[1])
                nsp = float(result.no_speech_prob)
                skipped = options.no_speech_threshold is not None and nsp > options.no_speech_threshold
                if options.log_prob_threshold is not None and avg_logprob > options.log_prob_threshold:
                    skipped = False
                tokens = [t for t in result.sequences_ids[0] if t < tokenizer.eot]
                sink.append(WindowEvidence(nsp, avg_logprob, bool(skipped), tokenizer.decode(tokens)))
            return out

    return EvidenceWhisperModel


@functools.lru_cache(maxsize=16)
def _model_sha256(path: str) -> str:
    from omnieval.backends.assets import tree_sha256

    return tree_sha256(Path(path))


class WhisperTranscriber:
    """faster-whisper with greedy decoding and word timestamps; the model loads on first use.

    Args:
        model: ``whisper-tiny.en``, ``whisper-base`` or a local CTranslate2 Whisper folder.
        beam_size: 1 = greedy, as in the paper's pipeline.
        language: Language code forced on the decoder (None = detect; English-only models need "en").
        compute_type: CTranslate2 compute type (``int8`` on CPU).
        cpu_threads: Intra-op threads (0 = CTranslate2's default).
        num_workers: Model replicas that may run at the same time; callers transcribing from
            several threads set it to their thread count (otherwise the calls queue on one replica).
        encoder_window_s: Encode each window only up to its content, padded to at least this many
            seconds, instead of Whisper's full 30 s. Faster on short clips but NOT equivalent: the
            encoder attends over the padding, so transcripts change (``python -m bench metrics``
            measures how often the speed label does). None = the full window (the default).
    """

    def __init__(
        self,
        model: str = "whisper-tiny.en",
        *,
        beam_size: int = 1,
        language: str | None = "en",
        compute_type: str = "int8",
        cpu_threads: int = 0,
        num_workers: int = 1,
        encoder_window_s: float | None = None,
    ) -> None:
        self.name = model
        self.path = resolve_whisper(model)
        self.beam_size = beam_size
        self.language = language
        self.compute_type = compute_type
        self.cpu_threads = cpu_threads
        self.num_workers = num_workers
        self.encoder_window_s = encoder_window_s
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    model_class = _evidence_model_class()
                except ImportError as exc:  # pragma: no cover - in the CPU lock
                    raise ConfigError("faster-whisper is not installed (pip install faster-whisper)") from exc
                self._model = model_class(
                    str(self.path),
                    device="cpu",
                    compute_type=self.compute_type,
                    cpu_threads=self.cpu_threads,
                    num_workers=self.num_workers,
                )
                if self.encoder_window_s is not None:
                    self._model.encoder_frames = round(self.encoder_window_s * 100)
            return self._model

    def transcribe(self, wave_16k: npt.NDArray[np.float32]) -> Transcript:
        return self._run(np.asarray(wave_16k, dtype=np.float32))

    def transcribe_file(self, path: Path) -> Transcript:
        """Transcribe a file decoded and resampled the way faster-whisper decodes a path (PyAV).

        The paper's harness hands the original file to its ASR pipeline; decoding it the same way here
        (rather than feeding our own 16 kHz resampling) keeps transcripts, and so speed labels,
        identical to a plain per-file run.
        """
        return self._run(decode_for_whisper(path))

    def _run(self, audio: Any) -> Transcript:
        model = self._load()
        windows: list[WindowEvidence] = []
        # The segments generator decodes lazily, so the sink stays set until it is exhausted.
        _EVIDENCE.windows = windows
        try:
            segments, _info = model.transcribe(
                audio,
                language=self.language,
                beam_size=self.beam_size,
                temperature=0.0,
                word_timestamps=True,
                vad_filter=False,
            )
            words: list[Word] = []
            texts: list[str] = []
            for segment in segments:
                texts.append(segment.text)
                for word in segment.words or ():
                    words.append(Word(str(word.word), float(word.start), float(word.end)))
        finally:
            _EVIDENCE.windows = None
        return Transcript(" ".join(t.strip() for t in texts if t.strip()), tuple(words), tuple(windows))

    def line_logprob(self, path: Path, line: str) -> float:
        """How well ``line`` fits the clip: the mean natural-log probability per token of ``line``
        when the decoder is forced to read it from the clip's first 30 s window (<= 0).

        A recogniser that mishears a line still finds it far more probable than another line: on the
        bundled sample's 80 spoken clips (Whisper tiny.en) the requested line scored above -3.0 on 17
        of the 20 clips that say it and below -3.1 on all 60 that say something else, while the
        transcript had 60 % of the line's words on only 9 of the 20. Uses CTranslate2's ``align``
        (the step faster-whisper runs for word timestamps), so no decoding and no sampling.

        Example:
            >>> asr.line_logprob(Path("oh_no.wav"), "Oh no. Not tonight, of all nights.")  # doctest: +SKIP
            -1.12
        """
        from faster_whisper.tokenizer import Tokenizer

        if not line.strip():
            raise ValueError("line_logprob needs a line with at least one token")
        model = self._load()
        tokenizer = Tokenizer(
            model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language=self.language or "en"
        )
        tokens = tokenizer.encode(" " + line.strip())
        features = model.feature_extractor(decode_for_whisper(path))
        window = model.feature_extractor.nb_max_frames
        content_frames = min(int(features.shape[-1]), window)
        features = features[:, :window]
        if features.shape[-1] < window:
            features = np.pad(features, ((0, 0), (0, window - features.shape[-1])))
        encoded = model.encode(features)
        result = model.model.align(encoded, tokenizer.sot_sequence, [tokens], content_frames)[0]
        probs = np.maximum(np.asarray(result.text_token_probs, dtype=np.float64), 1e-9)
        return float(np.mean(np.log(probs)))

    def identity(self) -> ModelIdentity:
        settings = f"beam={self.beam_size};temperature=0;language={self.language};compute={self.compute_type}"
        if self.encoder_window_s is not None:
            settings += f";encoder_window_s={self.encoder_window_s:g}"
        return ModelIdentity(self.name, str(self.path), _model_sha256(str(self.path)), settings)


@functools.lru_cache(maxsize=4)
def load_transcriber(
    model: str = "whisper-tiny.en", beam_size: int = 1, language: str | None = "en"
) -> WhisperTranscriber:
    """A shared transcriber per configuration, so the model loads once per process."""
    return WhisperTranscriber(model, beam_size=beam_size, language=language)
