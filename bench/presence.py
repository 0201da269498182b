"""Is there speech in the clip? The ``no_speech`` decision on synthetic non-speech and espeak-ng speech.

``python -m bench presence`` renders 32 clips that hold no speech (white, pink and brown noise,
pure tones, chords, a mains hum, arpeggios, speech-shaped noise bursts, clicks; each at two or three
levels) and ``OMNIEVAL_BENCH_PRESENCE_SPEECH`` (default 100) espeak-ng lines (sentences of the
bundled sample over eleven voices, whispered variants included, several rates and pitches), runs
:func:`omnieval.metrics.describe_audio` on each with the packaged models, and prints how many clips
were decided wrongly each way: a non-speech clip that got a transcript and labels (status ``ok``)
and a spoken line marked ``no_speech``.

These clips are made here, by this code, not the ones the thresholds in docs/metrics.md were first
set on; the thresholds were chosen by hand, so a run here is a check of the same decision on
comparable clips, still in-sample in spirit (same synthesis methods).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

SR = 16_000
SAMPLE_TEXTS = Path("data/storybench-sample/texts")
VOICES = (
    "en-us+f3",
    "en-us+m3",
    "en-us+f2",
    "en-us+m7",
    "en+f4",
    "en+m1",
    "en-gb+f3",
    "en-gb+m3",
    "en-us+whisper",
    "en+whisperf",
    "en-us+croak",
)
RATES = (120, 140, 160, 175, 190, 210, 240)
PITCHES = (20, 35, 50, 65, 80)


def _noise(kind: str, seconds: float, rng: np.random.Generator) -> np.ndarray:
    white = rng.standard_normal(int(SR * seconds))
    if kind == "white":
        return white
    spectrum = np.fft.rfft(white)
    freqs = np.fft.rfftfreq(white.size, 1 / SR)
    freqs[0] = freqs[1]
    shaped = spectrum / (np.sqrt(freqs) if kind == "pink" else freqs)
    return np.fft.irfft(shaped, n=white.size)


def _tone(freqs: tuple[float, ...], seconds: float) -> np.ndarray:
    t = np.arange(int(SR * seconds)) / SR
    out: np.ndarray = np.sum([np.sin(2 * np.pi * f * t) for f in freqs], axis=0)
    return out


def _arpeggio(root: float, seconds: float) -> np.ndarray:
    notes = [root * r for r in (1.0, 1.26, 1.5, 2.0)]
    per = int(SR * seconds / 8)
    t = np.arange(per) / SR
    envelope = np.exp(-3 * t / (per / SR))
    return np.concatenate([np.sin(2 * np.pi * notes[i % 4] * t) * envelope for i in range(8)])


def _bursts(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """Pink noise under a syllable-rate (4 Hz) envelope: speech's rhythm without words."""
    noise = _noise("pink", seconds, rng)
    t = np.arange(noise.size) / SR
    out: np.ndarray = noise * np.clip(np.sin(2 * np.pi * 4 * t), 0, None) ** 2
    return out


def _clicks(seconds: float, rng: np.random.Generator) -> np.ndarray:
    y = np.zeros(int(SR * seconds))
    y[rng.choice(y.size, size=12, replace=False)] = 1.0
    return y


def nonspeech_clips(folder: Path, seed: int = 0) -> list[Path]:
    """The 32 non-speech clips, 3 s each, written as 16 kHz WAVs."""
    import soundfile as sf

    rng = np.random.default_rng(seed)
    makers: list[tuple[str, Callable[[], np.ndarray], tuple[float, ...]]] = [
        ("white", lambda: _noise("white", 3, rng), (0.05, 0.2, 0.6)),
        ("pink", lambda: _noise("pink", 3, rng), (0.05, 0.2, 0.6)),
        ("brown", lambda: _noise("brown", 3, rng), (0.05, 0.2, 0.6)),
        ("tone220", lambda: _tone((220.0,), 3), (0.1, 0.5)),
        ("tone440", lambda: _tone((440.0,), 3), (0.1, 0.5)),
        ("tone1k", lambda: _tone((1000.0,), 3), (0.1, 0.5)),
        ("chord-c", lambda: _tone((261.6, 329.6, 392.0), 3), (0.1, 0.5)),
        ("chord-a", lambda: _tone((220.0, 277.2, 329.6), 3), (0.1, 0.5)),
        ("chord-g", lambda: _tone((196.0, 246.9, 293.7), 3), (0.1, 0.5)),
        ("hum", lambda: _tone((50.0, 100.0, 150.0), 3), (0.1, 0.5)),
        ("arp-low", lambda: _arpeggio(130.8, 3), (0.1, 0.5)),
        ("arp-high", lambda: _arpeggio(523.3, 3), (0.1, 0.5)),
        ("bursts", lambda: _bursts(3, rng), (0.1, 0.3, 0.6)),
        ("clicks", lambda: _clicks(3, rng), (0.3, 0.9)),
    ]
    paths: list[Path] = []
    for name, make, levels in makers:
        for level in levels:
            y = make()
            y = level * y / max(float(np.max(np.abs(y))), 1e-9)
            path = folder / f"nonspeech-{name}-{level:g}.wav"
            sf.write(path, y.astype(np.float32), SR)
            paths.append(path)
    return paths


def _sentences(limit: int) -> list[str]:
    found: list[str] = []
    for text_file in sorted(SAMPLE_TEXTS.rglob("*.txt")):
        for sentence in text_file.read_text(encoding="utf-8").replace("\n", " ").split(". "):
            sentence = sentence.strip().rstrip(".")
            if len(sentence.split()) >= 4 and sentence not in found:
                found.append(sentence + ".")
    if not found:
        raise RuntimeError(f"no sentences under {SAMPLE_TEXTS} (run dvc pull)")
    return [found[i % len(found)] for i in range(limit)]


def speech_clips(folder: Path, count: int) -> list[Path]:
    """``count`` espeak-ng lines over the voices, rates and pitches (whispered voices included)."""
    from omnieval.audio import espeak_wav

    paths: list[Path] = []
    for i, sentence in enumerate(_sentences(count)):
        voice = VOICES[i % len(VOICES)]
        rate, pitch = RATES[i % len(RATES)], PITCHES[i % len(PITCHES)]
        paths.append(
            espeak_wav(sentence, folder / f"speech-{i:03d}.wav", voice=voice, rate_wpm=rate, pitch=pitch)
        )
    return paths


def run() -> dict[str, Any]:
    from omnieval.metrics import describe_audio

    count = int(os.environ.get("OMNIEVAL_BENCH_PRESENCE_SPEECH", "100"))
    with tempfile.TemporaryDirectory(prefix="omnieval-presence-") as tmp_name:
        tmp = Path(tmp_name)
        quiet = nonspeech_clips(tmp)
        spoken = speech_clips(tmp, count)
        started = time.monotonic()
        heard_in_noise = [p.name for p in quiet if describe_audio(p).status == "ok"]
        missed_speech = [p.name for p in spoken if describe_audio(p).status == "no_speech"]
        seconds = time.monotonic() - started
    print(
        f"presence: {len(quiet)} non-speech clips, {len(spoken)} espeak-ng lines; "
        f"non-speech taken for speech: {len(heard_in_noise)}, speech marked no_speech: {len(missed_speech)} "
        f"({seconds:.0f} s)",
        flush=True,
    )
    for name in heard_in_noise + missed_speech:
        print(f"  wrong: {name}", flush=True)
    return {
        "nonspeech": len(quiet),
        "speech": len(spoken),
        "nonspeech_taken_for_speech": heard_in_noise,
        "speech_marked_no_speech": missed_speech,
        "seconds": seconds,
    }
