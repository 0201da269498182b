"""Audio file helpers shared by the corpus tools, the trainer and the evaluators."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from omnieval.errors import DataError

TARGET_RATE = 16_000
"""Every model here consumes mono float32 audio at 16 kHz."""


@dataclass(frozen=True)
class AudioInfo:
    """What a file header says: duration in seconds and native sample rate in Hz."""

    duration_s: float
    sample_rate: int
    channels: int


def audio_info(path: Path) -> AudioInfo:
    """Read the header of ``path`` (any format libsndfile decodes) without loading samples."""
    import soundfile as sf

    try:
        info = sf.info(str(path))
    except Exception as exc:  # libsndfile raises its own error types; the message is what matters
        raise DataError(f"{path}: not a readable audio file ({exc})") from None
    return AudioInfo(
        duration_s=float(info.frames) / float(info.samplerate),
        sample_rate=int(info.samplerate),
        channels=int(info.channels),
    )


def to_mono_16k(samples: np.ndarray, rate: int) -> np.ndarray:
    """Average channels and resample to 16 kHz (soxr high quality); returns float32, shape ``[n]``.

    ``samples`` is ``[n]`` or ``[n, channels]`` as soundfile returns it.
    """
    wave = np.asarray(samples, dtype=np.float32)
    if wave.ndim == 2:
        wave = wave.mean(axis=1)
    if rate != TARGET_RATE:
        import soxr

        wave = soxr.resample(wave, rate, TARGET_RATE, quality="HQ").astype(np.float32)
    return np.ascontiguousarray(wave, dtype=np.float32)


def load_audio_16k(path: Path) -> np.ndarray:
    """Decode ``path`` to mono float32 at 16 kHz, shape ``[n]``, values in [-1, 1]."""
    import soundfile as sf

    try:
        samples, rate = sf.read(str(path), dtype="float32", always_2d=False)
    except Exception as exc:
        raise DataError(f"{path}: cannot decode audio ({exc})") from None
    if samples.size == 0:
        raise DataError(f"{path}: audio file has no samples")
    return to_mono_16k(samples, int(rate))
