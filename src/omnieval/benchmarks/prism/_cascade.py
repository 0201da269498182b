"""``cpu-t2av``: a CPU text-to-audio-video *cascade* for PRISM-Bench. NOT a generative model.

A plumbing system under test that runs anywhere: from each instance's caption alone (never the
reference clip) it draws simple frames with PIL (a background tinted from the prompt, the prompt's
words, a shape moving across), makes a soundtrack with fixed rules (espeak-ng says any quoted
speech in the prompt; a prompt that mentions music gets a few synthesized notes; one that mentions
other sounds gets noise bursts; a prompt with none of these gets a soft noise bed) and muxes both
with ffmpeg into ``<out_root>/video/<index>/generated.mp4`` (:func:`~._media.encode_clip`: H.264
yuv420p + mono AAC, bit-exact). Clip length, frame rate, size and sample rate follow the bundled
sample's conventions (3 s, 15 fps, 192 x 144, 24 kHz). Every random choice comes from a generator
seeded by (``seed``, instance id), so reruns write identical bytes.

It exists so the PRISM suite has a system under test whose pairings feed the calibration's global
ground-truth mean (FORMATS.md section 7); its scores say nothing about any real text-to-audio-video
model.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field

from omnieval.benchmarks.prism._media import MediaError, encode_clip, fit_length
from omnieval.benchmarks.prism._record import PrismInstance
from omnieval.benchmarks.prism._systems import ClipSystem
from omnieval.systems import SystemSpec

KIND = "cpu-t2av"
NOT_A_MODEL = "NOT a generative model: a rule-based CPU cascade (PIL frames + espeak-ng/numpy audio + ffmpeg)"

_QUOTED = re.compile(r"[\"\u201c]([^\"\u201d]{2,200})[\"\u201d]")
_MUSIC_WORDS = ("music", "melody", "song", "piano", "keyboard", "xylophone", "organ", "note", "bpm", "chord")
_SOUND_WORDS = ("sound", "bounc", "drum", "hammer", "knock", "hit", "rain", "wind", "surf", "thud", "impact")
_C_MAJOR = (0, 2, 4, 5, 7, 9, 11, 12)


class CpuT2avConfig(SystemSpec):
    """``kind: cpu-t2av`` (NOT a generative model; see the module docstring)."""

    seed: int = 0
    """Seed of every random choice (colours, shape path, notes, noise), combined with the instance id."""
    duration_s: float = Field(default=3.0, gt=0.5, le=120.0)
    """Clip length in seconds (the sample's clips last 3 s)."""
    fps: int = Field(default=15, ge=5, le=120)
    """Frames per second."""
    width: int = Field(default=192, ge=16, le=1920, multiple_of=2)
    """Frame width in pixels (even: yuv420p)."""
    height: int = Field(default=144, ge=16, le=1080, multiple_of=2)
    """Frame height in pixels (even: yuv420p)."""
    sample_rate: int = Field(default=24000, ge=8000, le=48000)
    """Audio sample rate in Hz (mono)."""
    voice: str = "en-us"
    """espeak-ng voice for quoted speech."""


def _rng(seed: int, instance_id: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}\0{instance_id}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def quoted_speech(caption: str) -> list[str]:
    """The quoted phrases of a prompt, in order.

    >>> quoted_speech('A man says "hello there" and a narrator says \u201cgood night\u201d.')
    ['hello there', 'good night']
    """
    return [m.strip() for m in _QUOTED.findall(caption) if m.strip()]


def audio_plan(caption: str) -> dict[str, Any]:
    """What the soundtrack holds for a prompt: quoted speech, music and/or sound (by keywords).

    >>> audio_plan('A keyboard plays a melody while a ball bounces.')
    {'speech': [], 'music': True, 'sound': True}
    """
    lower = caption.lower()
    return {
        "speech": quoted_speech(caption),
        "music": any(w in lower for w in _MUSIC_WORDS),
        "sound": any(w in lower for w in _SOUND_WORDS),
    }


def _espeak(text: str, voice: str, sr: int) -> npt.NDArray[np.float32]:
    import soundfile as sf
    import soxr

    from omnieval.backends.tts import espeak_binary

    with tempfile.TemporaryDirectory(prefix="cpu-t2av.") as scratch:
        wav = Path(scratch) / "speech.wav"
        try:
            done = subprocess.run(
                [espeak_binary(), "-v", voice, "-s", "190", "-w", str(wav), "--", text],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise MediaError(None, f"espeak-ng failed: {exc}") from None
        if done.returncode != 0 or not wav.is_file():
            raise MediaError(None, f"espeak-ng failed for {text!r}: {done.stderr.strip() or done.returncode}")
        samples, rate_in = sf.read(str(wav), dtype="float32")
    if samples.ndim > 1:
        samples = samples.mean(axis=1)
    return np.asarray(soxr.resample(samples, int(rate_in), sr, quality="HQ"), dtype=np.float32)


def _notes(n: int, sr: int, rng: np.random.Generator) -> npt.NDArray[np.float32]:
    """A few C-major notes spread over ``n`` samples (decaying partials)."""
    out = np.zeros(n, dtype=np.float64)
    count = int(rng.integers(3, 6))
    step = n // count
    t = np.arange(step) / sr
    for k in range(count):
        freq = 261.63 * 2 ** (int(rng.choice(_C_MAJOR)) / 12)
        wave = sum(a * np.sin(2 * np.pi * freq * m * t) for m, a in ((1, 1.0), (2, 0.4), (3, 0.2)))
        out[k * step : (k + 1) * step] += wave * np.exp(-4.0 * t) * np.minimum(1.0, t / 0.005)
    return (out / max(1e-9, float(np.max(np.abs(out))))).astype(np.float32)


def _bursts(n: int, sr: int, rng: np.random.Generator) -> npt.NDArray[np.float32]:
    """Three or four short decaying noise bursts at seeded times."""
    out = np.zeros(n, dtype=np.float64)
    length = int(0.15 * sr)
    env = np.exp(-np.arange(length) / (0.03 * sr))
    for start in sorted(rng.integers(0, max(1, n - length), size=int(rng.integers(3, 5)))):
        out[start : start + length] += rng.standard_normal(length) * env
    return (out / max(1e-9, float(np.max(np.abs(out))))).astype(np.float32)


def make_audio(caption: str, config: CpuT2avConfig, rng: np.random.Generator) -> npt.NDArray[np.float32]:
    """The soundtrack of one prompt (mono, ``duration_s`` long, peak at most 0.9)."""
    sr, n = config.sample_rate, round(config.duration_s * config.sample_rate)
    plan = audio_plan(caption)
    mix = np.zeros(n, dtype=np.float64)
    if plan["speech"]:
        speech = _espeak(" ... ".join(plan["speech"]), config.voice, sr)
        mix += 0.8 * fit_length(speech, n)
    if plan["music"]:
        mix += 0.5 * _notes(n, sr, rng)
    if plan["sound"]:
        mix += 0.5 * _bursts(n, sr, rng)
    if not any(plan.values()):
        mix += 0.05 * rng.standard_normal(n)  # a soft noise bed: something is heard
    peak = float(np.max(np.abs(mix))) if n else 0.0
    if peak > 0.9:
        mix *= 0.9 / peak
    return mix.astype(np.float32)


def draw_frames(caption: str, config: CpuT2avConfig, rng: np.random.Generator) -> npt.NDArray[np.uint8]:
    """Frames of the prompt's scene: a tinted background, the prompt's words, a moving disc."""
    from PIL import Image, ImageDraw

    w, h = config.width, config.height
    n = round(config.duration_s * config.fps)
    background = tuple(int(v) for v in rng.integers(20, 110, size=3))
    colour = tuple(int(v) for v in rng.integers(150, 256, size=3))
    words = textwrap.wrap(caption, width=max(8, w // 6))[: max(1, h // 24)]
    y0, y1 = float(rng.uniform(0.5, 0.8)) * h, float(rng.uniform(0.5, 0.8)) * h
    r = max(3, h // 10)
    frames = np.empty((n, h, w, 3), dtype=np.uint8)
    for k in range(n):
        image = Image.new("RGB", (w, h), background)
        draw = ImageDraw.Draw(image)
        for line, text in enumerate(words):
            draw.text((4, 4 + 11 * line), text, fill=(235, 235, 235))
        u = k / max(1, n - 1)
        x, y = r + u * (w - 2 * r), y0 + u * (y1 - y0)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=colour)
        frames[k] = np.asarray(image, dtype=np.uint8)
    return frames


class CpuT2av(ClipSystem):
    """The ``cpu-t2av`` system (NOT a generative model): prompt -> drawn frames + rule audio -> mp4.

    Args:
        config: The typed ``systems:`` entry.
    """

    kind: ClassVar[str] = KIND
    uses_ground_truth: ClassVar[bool] = False
    config_model: ClassVar[type[SystemSpec]] = CpuT2avConfig

    def __init__(self, config: CpuT2avConfig | None = None) -> None:
        self.config = config or CpuT2avConfig(kind=KIND)

    def make(self, instance: PrismInstance, out: Path, instances: Sequence[PrismInstance] = ()) -> None:
        """Write the clip of ``instance`` at ``out`` from its caption only."""
        rng = _rng(self.config.seed, instance.id)
        frames = draw_frames(instance.caption, self.config, rng)
        audio = make_audio(instance.caption, self.config, rng)
        encode_clip(frames, self.config.fps, audio, self.config.sample_rate, out)

    def describe(self, instances: Sequence[PrismInstance]) -> dict[str, Any]:
        """The lineage: made from the caption alone, by rules (no model)."""
        return {
            "source": "caption only",
            "what": NOT_A_MODEL,
            "config": self.config.model_dump(mode="json", exclude={"diagnostic"}),
        }


def cpu_t2av(config: CpuT2avConfig | None = None, **kwargs: Any) -> CpuT2av:
    """A :class:`CpuT2av` from a typed config, or from its fields as keywords."""
    return CpuT2av(config if config is not None else CpuT2avConfig(kind=KIND, **kwargs))
