"""Synthetic test signals: harmonic tones with known F0 and espeak-ng speech with chosen delivery.

Used by tests and benchmarks so no audio has to be committed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import numpy.typing as npt

from omnieval.errors import OmnievalError


def harmonic_tone(
    f0_hz: float,
    seconds: float,
    *,
    sr: int = 16_000,
    harmonics: int = 8,
    vibrato_hz: float = 0.0,
    vibrato_depth: float = 0.0,
    noise: float = 0.0,
    seed: int = 0,
) -> npt.NDArray[np.float32]:
    """A voiced-like tone: harmonics with 1/k amplitudes, optional vibrato and white noise.

    Args:
        f0_hz: Fundamental frequency in Hz.
        seconds: Duration.
        sr: Sample rate in Hz.
        harmonics: Number of harmonics (kept below Nyquist).
        vibrato_hz: Vibrato rate in Hz (0 = steady).
        vibrato_depth: Relative F0 deviation (0.03 = +-3 %).
        noise: Standard deviation of added white noise.
        seed: Noise seed.

    Returns:
        Samples in [-1, 1], shape ``(round(seconds * sr),)``, float32.
    """
    n = round(seconds * sr)
    t = np.arange(n) / sr
    inst_f0 = f0_hz * (1.0 + vibrato_depth * np.sin(2 * np.pi * vibrato_hz * t))
    phase = 2 * np.pi * np.cumsum(inst_f0) / sr
    y = np.zeros(n)
    for k in range(1, harmonics + 1):
        if k * f0_hz * (1 + vibrato_depth) >= sr / 2:
            break
        y += np.sin(k * phase) / k
    if noise:
        y += np.random.default_rng(seed).normal(0.0, noise, n)
    y = 0.8 * y / max(float(np.max(np.abs(y))), 1e-9)
    return y.astype(np.float32)


def espeak_wav(
    text: str, path: Path, *, voice: str = "en-us+f3", rate_wpm: int = 175, pitch: int = 50
) -> Path:
    """Render ``text`` with espeak-ng (22.05 kHz mono WAV) and return the path.

    Args:
        text: What to say.
        path: Output WAV.
        voice: espeak-ng voice with variant, e.g. ``en-us+m3``, ``en-us+whisper``.
        rate_wpm: Speaking rate in words per minute (espeak's ``-s``).
        pitch: espeak's pitch setting 0-99 (``-p``).
    """
    binary = shutil.which("espeak-ng")
    if binary is None:
        raise OmnievalError("espeak-ng is not installed (apt-get install espeak-ng)")
    path.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [binary, "-v", voice, "-s", str(rate_wpm), "-p", str(pitch), "-w", str(path), "--", text],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0 or not path.is_file():
        raise OmnievalError(f"espeak-ng failed for {path}: {done.stderr.strip()}")
    return path
