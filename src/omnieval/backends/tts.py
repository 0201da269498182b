"""Controllable speech synthesis with espeak-ng (Debian package ``espeak-ng``).

Requested delivery (gender, speed, pitch, whisper) maps onto espeak-ng's voice variant (``+f3``,
``+m3``, ``+whisper``, ``+whisperf``), speaking rate ``-s`` (words per minute) and pitch ``-p``
(0-99). The mapping is data (:class:`EspeakProsody`) calibrated so that the measured labels of
omnieval's speech metrics (words/s thresholds 2.6 / 4.7, gender-dependent F0 thresholds) land on the
requested value; ``tests/backends/test_tts.py`` checks the calibration. Emotion is not rendered:
espeak-ng has no emotional voices, and faking it with rate/pitch changes would corrupt the speed and
pitch labels.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from omnieval.errors import OmnievalError


class SynthesisError(OmnievalError):
    """espeak-ng is missing or failed."""


@dataclass(frozen=True)
class SpeechRequest:
    """What to say and how. Labels use the Omni-StoryBench vocabularies."""

    text: str
    gender: str = "female"
    speed: str = "normal"
    pitch: str = "normal"
    whisper: bool = False


@dataclass(frozen=True)
class EspeakProsody:
    """espeak-ng settings per label. Rates are espeak's nominal words per minute."""

    rate_wpm: tuple[tuple[str, int], ...] = (("slow", 95), ("normal", 150), ("fast", 280))
    pitch_female: tuple[tuple[str, int], ...] = (("low", 5), ("normal", 55), ("high", 92))
    pitch_male: tuple[tuple[str, int], ...] = (("low", 25), ("normal", 88), ("high", 99))
    male_high_shift_semitones: float = 5.0
    """espeak-ng's male voices top out near 175 Hz, below the 220 Hz "high" threshold used when the
    speaker's gender is unknown; male "high" is therefore shifted up afterwards (phase vocoder,
    duration kept)."""
    target_words_per_second: tuple[tuple[str, float], ...] = (("slow", 1.9), ("normal", 3.6), ("fast", 6.2))
    """Speaking-rate targets (words over the speech span after a 30 dB trim, as the speed metric
    counts them), well inside the metric's bands (< 2.6 slow, > 4.7 fast). espeak-ng's nominal
    rate ignores punctuation pauses, so short exclamatory lines come out much slower than asked;
    :func:`synthesize` corrects the rate by measurement."""
    rate_bounds: tuple[int, int] = (70, 520)
    rate_iterations: int = 3
    female_variant: str = "f1"
    male_variant: str = "m2"
    language: str = "en-us"
    version: str = "espeak-prosody-v3"

    def voice(self, request: SpeechRequest) -> str:
        if request.whisper:
            variant = "whisperf" if request.gender == "female" else "whisper"
        else:
            variant = self.female_variant if request.gender == "female" else self.male_variant
        return f"{self.language}+{variant}"

    def rate(self, speed: str) -> int:
        return _lookup(self.rate_wpm, speed, "speed")

    def target_rate(self, speed: str) -> float:
        for label, value in self.target_words_per_second:
            if label == speed.strip().lower():
                return value
        raise SynthesisError(f"unknown speed label {speed!r}")

    def pitch(self, gender: str, pitch: str) -> int:
        table = self.pitch_female if gender == "female" else self.pitch_male
        return _lookup(table, pitch, "pitch")

    def shift_semitones(self, request: SpeechRequest) -> float:
        if request.gender != "female" and request.pitch.strip().lower() == "high" and not request.whisper:
            return self.male_high_shift_semitones
        return 0.0


def _lookup(table: tuple[tuple[str, int], ...], key: str, field: str) -> int:
    for label, value in table:
        if label == key.strip().lower():
            return value
    known = ", ".join(label for label, _ in table)
    raise SynthesisError(f"unknown {field} label {key!r} (known: {known})")


@dataclass(frozen=True)
class SynthesisInfo:
    path: Path
    command: tuple[str, ...]
    engine: str


def espeak_binary() -> str:
    binary = shutil.which("espeak-ng")
    if binary is None:
        raise SynthesisError(
            "espeak-ng is not installed (Debian package espeak-ng; `make setup` installs it)"
        )
    return binary


def synthesize(
    request: SpeechRequest,
    out_path: Path,
    prosody: EspeakProsody | None = None,
    *,
    controlled_rate: bool = True,
) -> SynthesisInfo:
    """Write ``request`` as a WAV (22.05 kHz mono, 16-bit) to ``out_path`` atomically.

    With ``controlled_rate`` the espeak-ng rate is corrected (up to ``rate_iterations`` times) until
    the measured words per second of the speech span is within 8 % of the label's target.
    """
    prosody = prosody or EspeakProsody()
    text = " ".join(request.text.split())
    if not text:
        raise SynthesisError("nothing to say: empty text")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.stem + ".partial.wav")
    rate = prosody.rate(request.speed)
    command = _run_espeak(prosody, request, text, rate, tmp, out_path)
    if controlled_rate:
        target = prosody.target_rate(request.speed)
        low, high = prosody.rate_bounds
        for _ in range(prosody.rate_iterations):
            measured = _words_per_second(tmp, len(text.split()))
            if measured is None or abs(measured - target) <= 0.08 * target:
                break
            new_rate = int(min(high, max(low, round(rate * target / measured))))
            if new_rate == rate:
                break
            rate = new_rate
            command = _run_espeak(prosody, request, text, rate, tmp, out_path)
    shift = prosody.shift_semitones(request)
    if shift:
        _pitch_shift_in_place(tmp, shift)
    tmp.replace(out_path)
    return SynthesisInfo(out_path, command[1:], f"espeak-ng:{prosody.version}")


def _run_espeak(
    prosody: EspeakProsody, request: SpeechRequest, text: str, rate: int, tmp: Path, out_path: Path
) -> tuple[str, ...]:
    command = (
        espeak_binary(),
        "-v",
        prosody.voice(request),
        "-s",
        str(rate),
        "-p",
        str(prosody.pitch(request.gender, request.pitch)),
        "-w",
        str(tmp),
        "--",
        text,
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 or not tmp.is_file() or tmp.stat().st_size <= 44:
        tmp.unlink(missing_ok=True)
        raise SynthesisError(f"espeak-ng failed for {out_path}: {done.stderr.strip() or done.returncode}")
    return command


def _words_per_second(path: Path, n_words: int) -> float | None:
    """Words over the speech span left by a 30 dB trim (the speed metric's audio preparation)."""
    import librosa
    import soundfile as sf

    wave, rate = sf.read(str(path), dtype="float32")
    _trimmed, (start, end) = librosa.effects.trim(wave, top_db=30)
    span = (end - start) / rate
    return n_words / span if span > 0.2 and n_words > 0 else None


def _pitch_shift_in_place(path: Path, semitones: float) -> None:
    import librosa
    import numpy as np
    import soundfile as sf

    wave, rate = sf.read(str(path), dtype="float32")
    shifted = librosa.effects.pitch_shift(wave, sr=rate, n_steps=semitones)
    peak = float(np.max(np.abs(shifted))) or 1.0
    sf.write(str(path), (shifted / max(peak, 1.0)).astype(np.float32), rate, subtype="PCM_16", format="WAV")
