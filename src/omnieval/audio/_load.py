"""Load and prepare speech the way Omni-StoryBench's harness does, with explicit failure statuses.

Preparation (appendix E.2 of the paper): decode at the native rate, average channels to mono,
resample to 16 kHz, trim leading/trailing silence at 30 dB below the peak, keeping the untrimmed
audio when trimming would leave nothing. Every way a file can be unusable (absent, empty, cut short,
undecodable, non-finite samples, silence, over the length limit) raises :class:`AudioError` carrying
an :class:`AudioStatus` and a message that names the file, so callers report it instead of scoring
garbage.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np
import numpy.typing as npt

from omnieval.errors import OmnievalError

TARGET_RATE = 16_000
"""Sample rate (Hz) every speech metric works at."""

FloatArray = npt.NDArray[np.float32]


class AudioStatus(StrEnum):
    """Why an audio file could (not) be analysed. Only ``ok`` carries measurements."""

    OK = "ok"
    MISSING = "missing"
    EMPTY_FILE = "empty_file"
    TRUNCATED = "truncated"
    UNDECODABLE = "undecodable"
    NO_SAMPLES = "no_samples"
    NON_FINITE = "non_finite"
    SILENT = "silent"
    TOO_LONG = "too_long"


class AudioError(OmnievalError):
    """An audio file that cannot be analysed; ``status`` says why, the message names the file."""

    exit_code = 2

    def __init__(self, status: AudioStatus, path: Path, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.status = status
        self.path = path
        self.detail = detail


@dataclass(frozen=True)
class Waveform:
    """Decoded audio. ``samples`` has shape ``(n_samples,)`` (mono) or ``(n_samples, channels)``."""

    path: Path
    samples: FloatArray
    sample_rate: int
    channels: int

    @property
    def duration_s(self) -> float:
        return float(self.samples.shape[0]) / float(self.sample_rate)


@dataclass(frozen=True)
class PreparedSpeech:
    """Mono 16 kHz speech ready for analysis.

    Attributes:
        path: Source file.
        wave: Untrimmed mono signal at 16 kHz, shape ``(n,)``, float32 (ASR input, like the harness's
            ASR, which reads the original file).
        trimmed: ``wave`` with leading/trailing silence (30 dB below peak) removed, shape ``(m,)``;
            equals ``wave`` when trimming would leave nothing.
        native_rate: Sample rate of the file (Hz).
        channels: Channel count of the file.
        trim_kept_untrimmed: True when trimming found no non-silent frame and the untrimmed signal
            was kept.
    """

    path: Path
    wave: FloatArray
    trimmed: FloatArray
    native_rate: int
    channels: int
    trim_kept_untrimmed: bool

    @property
    def duration_s(self) -> float:
        """Untrimmed duration in seconds."""
        return float(self.wave.shape[0]) / TARGET_RATE

    @property
    def trimmed_duration_s(self) -> float:
        return float(self.trimmed.shape[0]) / TARGET_RATE


def _wav_truncation(path: Path, head: bytes, size: int) -> str:
    """Return a reason when a RIFF/WAVE file declares more audio data than the file holds, else ''.

    libsndfile silently reads what is there, so a file cut off mid-write would otherwise look like a
    shorter, valid clip. Streaming writers that leave the size unknown (0 or 0xFFFFFFFF) are accepted.
    """
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return ""
    offset = 12
    while offset + 8 <= len(head):
        chunk_id = head[offset : offset + 4]
        (chunk_size,) = struct.unpack("<I", head[offset + 4 : offset + 8])
        if chunk_id == b"data":
            if chunk_size in (0, 0xFFFFFFFF):
                return ""
            available = size - (offset + 8)
            if chunk_size > available:
                return (
                    f"truncated WAV: the data chunk declares {chunk_size} bytes but only "
                    f"{max(available, 0)} are present"
                )
            return ""
        offset += 8 + chunk_size + (chunk_size & 1)
    return ""


def load_audio(path: Path, *, max_duration_s: float | None = None) -> Waveform:
    """Decode an audio file at its native rate.

    Args:
        path: Audio file (any format libsndfile reads: WAV, FLAC, OGG, MP3...).
        max_duration_s: Refuse files longer than this many seconds (checked from the header before
            decoding); None = no limit.

    Returns:
        The decoded float32 samples, shape ``(n,)`` for mono or ``(n, channels)``.

    Raises:
        AudioError: with the status ``missing``, ``empty_file``, ``truncated``, ``undecodable``,
            ``no_samples``, ``non_finite`` or ``too_long``.
    """
    import soundfile as sf

    path = Path(path)
    if path.is_dir():
        raise AudioError(AudioStatus.MISSING, path, "is a directory, not an audio file")
    if not path.is_file():
        raise AudioError(AudioStatus.MISSING, path, "no such audio file")
    size = path.stat().st_size
    if size == 0:
        raise AudioError(AudioStatus.EMPTY_FILE, path, "audio file is empty (0 bytes)")
    with path.open("rb") as fh:
        head = fh.read(1 << 16)
    truncated = _wav_truncation(path, head, size)
    if truncated:
        raise AudioError(AudioStatus.TRUNCATED, path, truncated)
    try:
        info = sf.info(str(path))
        if info.frames <= 0 or info.samplerate <= 0:
            raise AudioError(AudioStatus.NO_SAMPLES, path, "audio file holds no samples")
        if max_duration_s is not None and info.frames / info.samplerate > max_duration_s:
            raise AudioError(
                AudioStatus.TOO_LONG,
                path,
                f"{info.frames / info.samplerate:.1f} s of audio exceeds the {max_duration_s:g} s limit "
                "(raise max_audio_seconds in the metrics config to analyse it)",
            )
        samples, rate = sf.read(str(path), dtype="float32", always_2d=True)
    except AudioError:
        raise
    except Exception as exc:
        raise AudioError(AudioStatus.UNDECODABLE, path, f"cannot decode audio: {exc}") from None
    if samples.shape[0] == 0:
        raise AudioError(AudioStatus.NO_SAMPLES, path, "audio file holds no samples")
    if not np.isfinite(samples).all():
        bad = int((~np.isfinite(samples)).sum())
        raise AudioError(AudioStatus.NON_FINITE, path, f"{bad} samples are NaN or infinite")
    channels = int(samples.shape[1])
    data: FloatArray = samples[:, 0].copy() if channels == 1 else samples
    return Waveform(path=path, samples=data, sample_rate=int(rate), channels=channels)


def to_mono(samples: FloatArray) -> FloatArray:
    """Average channels: ``(n, c) -> (n,)`` (librosa.to_mono does the same on ``(c, n)``)."""
    if samples.ndim == 1:
        return samples
    return np.asarray(samples.mean(axis=1), dtype=np.float32)


def resample(samples: FloatArray, orig_rate: int, target_rate: int = TARGET_RATE) -> FloatArray:
    """Resample with soxr's high-quality mode, as ``librosa.load(sr=...)`` does by default."""
    if orig_rate == target_rate:
        return samples
    import librosa

    out = librosa.resample(samples, orig_sr=orig_rate, target_sr=target_rate, res_type="soxr_hq")
    return np.asarray(out, dtype=np.float32)


def trim_silence(samples: FloatArray, top_db: float = 30.0) -> tuple[FloatArray, bool]:
    """Trim leading/trailing frames quieter than ``top_db`` below the peak (librosa.effects.trim).

    Returns:
        The trimmed signal and whether the untrimmed one was kept because nothing survived.
    """
    import librosa

    trimmed, _ = librosa.effects.trim(samples, top_db=top_db)
    if trimmed.size == 0:
        return samples, True
    return np.asarray(trimmed, dtype=np.float32), False


def prepare_speech(
    path: Path,
    *,
    top_db: float = 30.0,
    max_duration_s: float | None = None,
    silence_peak_dbfs: float = -60.0,
) -> PreparedSpeech:
    """Load, mix to mono, resample to 16 kHz and trim silence (the paper's audio preparation).

    Args:
        path: Audio file.
        top_db: Trim threshold in dB below the peak (30 in the paper).
        max_duration_s: Refuse longer files (status ``too_long``); None = no limit.
        silence_peak_dbfs: A file whose absolute peak is below this level (dB relative to full
            scale) has no audible content and is reported ``silent`` rather than analysed.

    Raises:
        AudioError: see :func:`load_audio`, plus ``silent``.
    """
    wave = load_audio(path, max_duration_s=max_duration_s)
    mono = to_mono(wave.samples)
    peak = float(np.max(np.abs(mono))) if mono.size else 0.0
    if peak <= 10.0 ** (silence_peak_dbfs / 20.0):
        level = "digital silence" if peak == 0.0 else f"peak {20.0 * np.log10(peak):.1f} dBFS"
        raise AudioError(AudioStatus.SILENT, Path(path), f"audio is silent ({level})")
    mono16 = resample(mono, wave.sample_rate, TARGET_RATE)
    trimmed, kept = trim_silence(mono16, top_db)
    return PreparedSpeech(
        path=Path(path),
        wave=mono16,
        trimmed=trimmed,
        native_rate=wave.sample_rate,
        channels=wave.channels,
        trim_kept_untrimmed=kept,
    )
