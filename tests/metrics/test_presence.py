"""The ``no_speech`` status: noise, music and near-silence are measured but not labelled as speech.

Fast tests drive the analyzer with a scripted transcriber; the slow ones run the packaged Whisper
tiny.en on synthesized pink/white noise, a melody, a chord, quiet noise, digital silence and espeak-ng
speech (normal and whispered), which must stay ``ok``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from omnieval.backends.asr import Transcript, WindowEvidence, Word
from omnieval.metrics import SpeechAnalyzer
from omnieval.metrics.functional.presence import (
    has_words,
    heard_speech,
    no_speech_message,
    spectral_flatness,
    window_heard_speech,
)

RATE = 16_000


def _pink(seconds: float, seed: int = 0) -> np.ndarray:
    """Pink noise (power 1/f) by shaping white noise's spectrum, peak 0.5."""
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE)
    spectrum = np.fft.rfft(rng.standard_normal(n))
    k = np.arange(spectrum.size, dtype=float)
    k[0] = 1.0
    y = np.fft.irfft(spectrum / np.sqrt(k), n)
    return np.asarray(0.5 * y / np.abs(y).max())


def _melody(seconds: float) -> np.ndarray:
    """Decaying harmonic notes over a drone: pYIN calls nearly every frame voiced."""
    n = int(seconds * RATE)
    t = np.arange(n) / RATE
    y = 0.3 * np.sin(2 * np.pi * 110.0 * t)
    step = n // 8
    for j, semitones in enumerate((0, 4, 7, 12, 7, 4, 0, 5)):
        f0 = 220.0 * 2 ** (semitones / 12)
        tt = t[j * step : (j + 1) * step] - t[j * step]
        for h in range(1, 5):
            y[j * step : (j + 1) * step] += np.exp(-3 * tt) * np.sin(2 * np.pi * f0 * h * tt) / h
    return np.asarray(0.5 * y / np.abs(y).max())


def _write(path: Path, y: np.ndarray) -> Path:
    sf.write(str(path), y.astype(np.float32), RATE, subtype="PCM_16")
    return path


# -- the rule and its evidence --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes.", True),
        ("7", True),
        ("¿Qué?", True),
        (". . . .", False),
        ("", False),
        ("  ", False),
        (None, False),
    ],
)
def test_has_words(text: str | None, expected: bool) -> None:
    assert has_words(text) is expected


def test_spectral_flatness_matches_a_plain_loop() -> None:
    y = _pink(0.5, seed=3).astype(np.float32)
    n_fft, hop, amin = 512, 128, 1e-10
    padded = np.pad(y, n_fft // 2, mode="constant")
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)  # periodic Hann
    values = []
    for start in range(0, padded.size - n_fft + 1, hop):
        power = np.abs(np.fft.rfft(padded[start : start + n_fft] * window)) ** 2
        power = np.maximum(power, amin)
        values.append(math.exp(float(np.mean(np.log(power)))) / float(np.mean(power)))
    ours = spectral_flatness(y, n_fft=n_fft, hop_length=hop)
    assert ours == pytest.approx(float(np.median(values)), rel=1e-3)
    tone = np.sin(2 * np.pi * 440.0 * np.arange(RATE) / RATE)
    white = np.random.default_rng(1).standard_normal(RATE)
    assert spectral_flatness(tone) < 1e-3 < 0.3 < spectral_flatness(white)  # type: ignore[operator]
    assert spectral_flatness(np.zeros(0)) is None


# (no-speech probability, mean log-probability, dropped as silence, decoded text, heard speech):
# the closest cases of the module docstring's evidence, on both sides of each threshold.
WINDOWS = [
    (0.62, -0.70, False, " I'm going to break up the dark anymore.", True),  # kept speech, highest prob
    (0.77, -1.15, True, " Good boy, Tundra.", True),  # short fast speech faster-whisper dropped
    (0.64, -1.13, True, " Good evening, Nia.", True),
    (0.88, -0.77, False, " Thank you.", False),  # a melody, kept by faster-whisper
    (0.95, -1.17, True, " you", False),  # pink noise
    (0.79, -1.51, True, " We're going to do this.", False),  # a tone: hallucination at low log-prob
    (0.30, -0.25, False, " . . . .", False),  # punctuation only
    (0.81, -0.50, False, " Hello there.", False),  # above the no-speech limit
    (0.50, -1.40, True, " Hello there.", False),  # dropped, at the log-prob limit
]


@pytest.mark.parametrize(("nsp", "logprob", "skipped", "text", "expected"), WINDOWS)
def test_window_rule(nsp: float, logprob: float, skipped: bool, text: str, expected: bool) -> None:
    assert window_heard_speech(WindowEvidence(nsp, logprob, skipped, text)) is expected


def test_a_clip_heard_speech_when_any_window_did() -> None:
    noise = WindowEvidence(0.95, -1.17, True, " you")
    speech = WindowEvidence(0.2, -0.4, False, " Come here.")
    assert heard_speech("", [noise, speech]) and not heard_speech("", [noise, noise])
    assert heard_speech("Hi.", []) and not heard_speech(". .", [])  # no window evidence: words decide


def test_no_speech_message_names_the_evidence() -> None:
    one = no_speech_message("", [WindowEvidence(0.94, -1.18, True, " .")])
    assert one.startswith("no speech detected") and "0.94" in one and "-1.18" in one
    assert "dropped as silence" in one and "read '.'" in one
    two = no_speech_message(
        ". .", [WindowEvidence(0.96, -0.3, False, " . ."), WindowEvidence(0.9, -1, True, "")]
    )
    assert "window 1:" in two and "window 2:" in two and "read nothing" in two and "kept" in two
    assert "decoded only '. .'" in no_speech_message(". .", [])


def test_transcript_evidence_summaries() -> None:
    heard = Transcript("", (), (WindowEvidence(0.7, -1.5, True), WindowEvidence(0.9, -0.5, False)))
    assert heard.no_speech_prob == 0.9 and heard.avg_logprob == pytest.approx(-1.0)
    assert Transcript("hi", ()).no_speech_prob is None and Transcript("hi", ()).avg_logprob is None


# -- the analyzer with a scripted ASR --------------------------------------------------------------


@dataclass
class _ScriptedASR:
    """Returns a fixed transcript for every file and counts calls."""

    heard: Transcript
    name: str = "scripted"
    calls: list[Path] = field(default_factory=list)

    def transcribe_file(self, path: Path) -> Transcript:
        self.calls.append(Path(path))
        return self.heard


def _analyzer(heard: Transcript) -> SpeechAnalyzer:
    from omnieval.metrics import MetricsConfig

    analyzer = SpeechAnalyzer(MetricsConfig(workers=1))
    analyzer._transcriber = _ScriptedASR(heard)
    return analyzer


def test_no_word_heard_is_no_speech_with_facts_kept(tmp_path: Path) -> None:
    path = _write(tmp_path / "melody.wav", _melody(2.0))
    heard = Transcript("", (), (WindowEvidence(0.92, -1.25, True, " ."),))
    attrs = _analyzer(heard).describe(path, gender_hint="female")
    assert attrs.status == "no_speech" and attrs.no_speech and not attrs.ok
    assert attrs.transcript == "" and str(path) in attrs.message and "silence" in attrs.message
    assert attrs.labels() == {"emotion": None, "speed": None, "pitch": None, "gender": None}
    assert attrs.pitch_rule is None and attrs.speed_method is None and attrs.words_per_second is None
    # Measured facts stay: the melody is nearly all voiced, with a median F0 in its note range.
    assert attrs.voiced_frame_ratio is not None and attrs.voiced_frame_ratio > 0.8
    assert attrs.f0_median_hz is not None and 100.0 < attrs.f0_median_hz < 1000.0
    assert attrs.f0_method == "pyin" and attrs.duration_s == pytest.approx(2.0, abs=0.01)
    assert attrs.no_speech_prob == pytest.approx(0.92) and attrs.asr_avg_logprob == pytest.approx(-1.25)
    assert attrs.spectral_flatness is not None and 0.0 <= attrs.spectral_flatness < 0.05
    data = attrs.to_dict()
    assert json.loads(json.dumps(data))["status"] == "no_speech"
    assert type(attrs).from_dict(data) == attrs


def test_hallucination_is_no_speech_and_words_are_speech(tmp_path: Path) -> None:
    path = _write(tmp_path / "pink.wav", _pink(1.5))
    words = (Word(" Thank", 0.0, 0.4), Word(" you.", 0.5, 0.9))
    thanks = _analyzer(Transcript("Thank you.", words, (WindowEvidence(0.88, -0.77, False, " Thank you."),)))
    attrs = thanks.describe(path)
    assert attrs.status == "no_speech" and attrs.transcript == "" and "'Thank you.'" in attrs.message
    words = (Word(" Hello", 0.0, 0.4), Word(" there.", 0.5, 0.9))
    heard = Transcript("Hello there.", words, (WindowEvidence(0.1, -0.4, False, " Hello there."),))
    spoken = _analyzer(heard).describe(path)
    assert spoken.status == "ok" and spoken.transcript == "Hello there."
    assert spoken.pitch in ("low", "normal", "high") and spoken.speed in ("slow", "normal", "fast")
    assert spoken.no_speech_prob == pytest.approx(0.1) and spoken.spectral_flatness is not None


def test_speech_dropped_as_silence_keeps_the_plain_labels(tmp_path: Path) -> None:
    """faster-whisper dropped the window but read words in it: ok, empty transcript, speed ``normal``."""
    path = _write(tmp_path / "short.wav", _melody(0.8))
    heard = Transcript("", (), (WindowEvidence(0.77, -1.15, True, " Good boy, Tundra."),))
    attrs = _analyzer(heard).describe(path)
    assert attrs.status == "ok" and attrs.transcript == ""
    assert attrs.speed == "normal" and attrs.speed_method == "none"  # no rate: the protocol's default


def test_storybench_scores_no_speech_as_missing_and_the_report_says_so(tmp_path: Path) -> None:
    """The protocol's missing-audio rule (excluded valid-only, 0 zero-filled) and the lineage count."""
    from omnieval.benchmarks.storybench._metrics import _MISSING_AUDIO
    from omnieval.benchmarks.storybench._report import speech_status_lines
    from omnieval.scores import Status

    assert "no_speech" in _MISSING_AUDIO and "silent" in _MISSING_AUDIO
    assert Status.MISSING_OUTPUT.value == "missing_output"
    lines = speech_status_lines(
        {"sys-b": {"speech_status_counts": {"no_speech": 2, "ok": 5, "silent": 1}}, "sys-a": {}}
    )
    assert lines == [
        "sys-b: 2 of 8 speech clips held no speech (noise, music or silence): scored as missing output, "
        "i.e. excluded in valid-only and 0 in zero-filled"
    ]


# -- the packaged Whisper on synthesized fixtures --------------------------------------------------


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from omnieval.audio import espeak_wav

    root = tmp_path_factory.mktemp("presence")
    t = np.arange(int(2.5 * RATE)) / RATE
    chord = sum(np.sin(2 * np.pi * f * t) for f in (261.6, 329.6, 392.0))
    return {
        "pink": _write(root / "pink.wav", _pink(3.0)),
        "white": _write(root / "white.wav", 0.12 * np.random.default_rng(2).standard_normal(3 * RATE)),
        "melody": _write(root / "melody.wav", _melody(3.0)),
        "chord": _write(root / "chord.wav", 0.5 * chord / np.abs(chord).max()),
        "quiet": _write(root / "quiet.wav", 0.002 * np.random.default_rng(4).standard_normal(3 * RATE)),
        "silence": _write(root / "silence.wav", np.zeros(2 * RATE)),
        "speech": espeak_wav("Look, the stars are falling into the sea!", root / "speech.wav"),
        "whisper": espeak_wav(
            "Where did you put my red umbrella?", root / "whisper.wav", voice="en-us+whisper", rate_wpm=150
        ),
    }


@pytest.mark.slow
def test_whisper_tells_speech_from_noise_music_and_silence(
    fixtures: dict[str, Path], analyzer: SpeechAnalyzer
) -> None:
    described = dict(zip(fixtures, analyzer.describe_many(list(fixtures.values())), strict=True))
    statuses = {name: a.status for name, a in described.items()}
    assert statuses == {
        "pink": "no_speech",
        "white": "no_speech",
        "melody": "no_speech",
        "chord": "no_speech",
        "quiet": "no_speech",
        "silence": "silent",  # digital silence never reaches the ASR
        "speech": "ok",
        "whisper": "ok",
    }
    for name in ("pink", "white", "melody", "chord", "quiet"):
        attrs = described[name]
        assert attrs.transcript == "" and attrs.pitch is None and attrs.speed is None
        assert attrs.voiced_frame_ratio is not None and attrs.spectral_flatness is not None
        assert attrs.no_speech_prob is not None and attrs.no_speech_prob > 0.6  # Whisper's own witness
    assert described["chord"].voiced_frame_ratio == pytest.approx(1.0)  # pYIN alone would call it speech
    for name in ("speech", "whisper"):
        assert described[name].transcript and described[name].speed in ("slow", "normal", "fast")


@pytest.mark.slow
def test_cli_reports_no_speech_with_exit_2(
    fixtures: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from omnieval.cli import main

    code = main(["metrics", "speech", str(fixtures["speech"]), str(fixtures["pink"]), "--json"])
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 2
    assert [o["status"] for o in out] == ["ok", "no_speech"]
    noise = out[1]
    assert noise["transcript"] == "" and noise["pitch"] is None and noise["f0_median_hz"] is not None
    assert noise["no_speech_prob"] > 0.6 and noise["asr_avg_logprob"] is not None
    assert str(fixtures["pink"]) in noise["message"]
    code = main(["metrics", "speech", str(fixtures["pink"])])
    captured = capsys.readouterr()
    assert code == 2 and "no_speech" in captured.out and "no speech detected" in captured.err
