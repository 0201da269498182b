"""Frame-level prosody (pitch, periodicity, level) aligned with Whisper encoder frames.

Whisper's last encoder layer is trained to transcribe, so it keeps little of the voice's pitch and
voicing; those are exactly the cues for apparent gender, phonation, emotion and speaking style. The
CPU backbone therefore appends three prosodic values to every encoder frame (50 per second):

- ``log2(F0 / 100 Hz)`` on voiced frames, 0 elsewhere;
- periodicity ``1 - d'(T0)`` in [0, 1], where ``d'`` is YIN's cumulative-mean-normalised difference
  function (de Cheveigne & Kawahara 2002) at the chosen period (1 = perfectly periodic);
- frame level in dB relative to the clip's loudest frame, divided by 60 and clipped to [-1, 0].

The difference function is computed for every frame at once with FFT cross-correlations and
running sums of squares, which is fast enough to run on every clip of a corpus.
"""

from __future__ import annotations

import numpy as np

HOP = 320
"""Samples per frame at 16 kHz: 20 ms, the Whisper encoder's frame rate."""
FRAME = 1024
"""Analysis window (64 ms): two periods of a 31 Hz voice, comfortably more than the 60 Hz floor."""
F0_MIN = 60.0
F0_MAX = 500.0
THRESHOLD = 0.2
"""YIN's absolute threshold: the first dip below it is taken as the period."""
VOICED_PERIODICITY = 0.7
VOICED_MIN_DB = -35.0
PROSODY_DIM = 3


def prosody_frames(wave_16k: np.ndarray, *, rate: int = 16_000) -> np.ndarray:
    """Per-frame ``[log2(F0/100), periodicity, level]``, shape ``[len(wave) // 320, 3]`` float32.

    Example:
        >>> t = np.arange(16000) / 16000
        >>> frames = prosody_frames(0.5 * np.sin(2 * np.pi * 200 * t))
        >>> frames.shape
        (50, 3)
        >>> round(float(2 ** np.median(frames[5:-5, 0]) * 100))
        200
    """
    wave = np.asarray(wave_16k, dtype=np.float64).reshape(-1)
    count = wave.size // HOP
    if count == 0:
        return np.zeros((0, PROSODY_DIM), dtype=np.float32)
    padded = np.pad(wave, (FRAME // 2, FRAME // 2 + HOP))
    index = np.arange(count)[:, None] * HOP + np.arange(FRAME)[None, :]
    frames = padded[index]
    frames = frames - frames.mean(axis=1, keepdims=True)
    tau_min = int(rate / F0_MAX)
    tau_max = int(rate / F0_MIN)
    # YIN's difference function over a fixed window of W samples for every lag up to tau_max:
    # d(tau) = sum_j (x_j - x_{j+tau})^2 = E(x[0:W]) + E(x[tau:tau+W]) - 2 sum_j x_j x_{j+tau}.
    width = FRAME - tau_max
    head = np.fft.rfft(frames[:, :width], n=2 * FRAME, axis=1)
    whole = np.fft.rfft(frames, n=2 * FRAME, axis=1)
    cross = np.fft.irfft(np.conj(head) * whole, axis=1)[:, : tau_max + 1]
    squares = np.concatenate([np.zeros((count, 1)), np.cumsum(frames**2, axis=1)], axis=1)
    lags = np.arange(tau_max + 1)
    shifted = squares[:, lags + width] - squares[:, lags]
    diff = np.maximum(squares[:, width : width + 1] + shifted - 2.0 * cross, 0.0)
    running = np.cumsum(diff[:, 1:], axis=1) / np.arange(1, tau_max + 1)[None, :]
    cmndf = np.ones_like(diff)
    cmndf[:, 1:] = diff[:, 1:] / np.maximum(running, 1e-12)
    window = cmndf[:, tau_min : tau_max + 1]
    rows = np.arange(count)
    below = window < THRESHOLD
    lag = np.where(below.any(axis=1), below.argmax(axis=1), window.argmin(axis=1))
    # From the first dip below the threshold, walk down to the bottom of that dip.
    for _ in range(tau_max):
        step = np.minimum(lag + 1, window.shape[1] - 1)
        better = window[rows, step] < window[rows, lag]
        if not better.any():
            break
        lag = np.where(better, step, lag)
    periodicity = 1.0 - np.clip(window[rows, lag], 0.0, 1.0)
    f0 = rate / (lag + tau_min)
    level = 20.0 * np.log10(np.sqrt(np.mean(frames**2, axis=1)) + 1e-8)
    level = level - level.max()
    voiced = (periodicity >= VOICED_PERIODICITY) & (level > VOICED_MIN_DB)
    out = np.stack(
        [np.where(voiced, np.log2(f0 / 100.0), 0.0), periodicity, np.clip(level / 60.0, -1.0, 0.0)], axis=1
    )
    return out.astype(np.float32)
