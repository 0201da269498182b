"""Synthetic clips for the judging tests: drawn frames and a made-up soundtrack, encoded with ffmpeg."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from omnieval.benchmarks.prism._media import encode_clip

SR = 16_000


def clicks(times: Sequence[float], duration: float, sr: int = SR, amp: float = 0.6) -> np.ndarray:
    """Silence with a 30 ms decaying noise burst starting at each time (seconds)."""
    rng = np.random.default_rng(7)
    y = np.zeros(round(duration * sr), dtype=np.float32)
    n = int(0.03 * sr)
    burst = (rng.standard_normal(n) * np.exp(-np.arange(n) / (0.006 * sr))).astype(np.float32) * amp
    for t in times:
        start = round(t * sr)
        end = min(start + n, y.size)
        y[start:end] += burst[: end - start]
    return y


def tone(freq: float, duration: float, sr: int = SR, amp: float = 0.3) -> np.ndarray:
    t = np.arange(round(duration * sr)) / sr
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def flash_frames(
    events: Sequence[float], duration: float, fps: int = 25, size: tuple[int, int] = (64, 48)
) -> np.ndarray:
    """Dark grey frames with a white square lit for two frames from each event time on."""
    width, height = size
    n = round(duration * fps)
    frames = np.full((n, height, width, 3), 40, dtype=np.uint8)
    for t in events:
        k = round(t * fps)
        frames[k : k + 2, height // 4 : height // 2, width // 4 : width // 2] = 255
    return frames


def make_clip(
    out: Path,
    *,
    duration: float = 2.0,
    fps: int = 25,
    size: tuple[int, int] = (64, 48),
    events: Sequence[float] = (),
    audio: np.ndarray | None = None,
    grey: int | None = None,
) -> Path:
    """An mp4 of ``duration`` seconds: flashes at ``events`` and ``audio`` (default: a 440 Hz tone)."""
    frames = flash_frames(events, duration, fps, size)
    if grey is not None:
        frames[:] = grey
    track = tone(440.0, duration) if audio is None else audio
    return encode_clip(frames, fps, track, SR, out)


def make_silent_video(out: Path, *, duration: float = 1.0, size: str = "64x48") -> Path:
    """An mp4 with a video stream only (no audio track)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            f"testsrc=size={size}:rate=25:duration={duration}",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            str(out),
        ],
        check=True,
    )
    return out
