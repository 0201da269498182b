"""faster-whisper ASR on the packaged Whisper tiny.en: words with sane timestamps, config errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnieval.errors import ConfigError


def test_unknown_model_is_a_config_error(tmp_path: Path) -> None:
    from omnieval.backends.asr import resolve_whisper

    with pytest.raises(ConfigError, match="CTranslate2"):
        resolve_whisper(str(tmp_path / "nothing-here"))


@pytest.mark.slow
def test_transcribes_espeak_with_word_timestamps(tmp_path: Path) -> None:
    from omnieval.audio import espeak_wav, prepare_speech
    from omnieval.backends.asr import load_transcriber

    path = espeak_wav(
        "Come back here, you little rascal, before the tide takes you away.", tmp_path / "l.wav"
    )
    speech = prepare_speech(path)
    asr = load_transcriber("whisper-tiny.en")
    heard = asr.transcribe(speech.wave)
    words = [w.text.strip(" .,").lower() for w in heard.words]
    assert len({"come", "back", "here", "rascal", "tide", "away"} & set(words)) >= 4
    starts = [w.start for w in heard.words]
    assert starts == sorted(starts)
    assert heard.words
    assert all(w.end >= w.start for w in heard.words)
    assert heard.words[-1].end <= speech.duration_s + 0.5
    ident = asr.identity()
    assert ident.name == "whisper-tiny.en" and len(ident.sha256) == 64 and "beam=1" in ident.settings


@pytest.mark.slow
def test_line_logprob_tells_the_spoken_line_from_another(tmp_path: Path) -> None:
    """The forced reading of the line a clip says is far likelier than that of another line, even in
    a high-pitched voice; both are mean natural-log probabilities per token (<= 0)."""
    from omnieval.audio import espeak_wav
    from omnieval.backends.asr import load_transcriber

    said = "If it goes out, the mice will never find their way home."
    other = "Good evening, Nia. Same street tomorrow?"
    path = espeak_wav(said, tmp_path / "high.wav", voice="en-us+f2", pitch=90)
    asr = load_transcriber("whisper-tiny.en")
    right, wrong = asr.line_logprob(path, said), asr.line_logprob(path, other)
    assert -1.5 <= right <= 0.0
    assert wrong < -3.0 and right - wrong > 2.0
    # Deterministic: the same clip and line give the same number.
    assert asr.line_logprob(path, said) == right
    with pytest.raises(ValueError, match="at least one token"):
        asr.line_logprob(path, "   ")


@pytest.mark.parametrize(
    ("rate", "channels", "seconds"), [(22_050, 1, 2.5), (8_000, 2, 1.0), (44_100, 2, 0.3)]
)
def test_decode_matches_faster_whisper_decode_audio(
    tmp_path: Path, rate: int, channels: int, seconds: float
) -> None:
    import numpy as np
    import soundfile as sf
    from faster_whisper.audio import decode_audio

    from omnieval.backends.asr import decode_for_whisper

    t = np.arange(int(rate * seconds)) / rate
    tone = 0.3 * np.sin(2 * np.pi * 220.0 * t) * np.exp(-t)
    noise = 0.05 * np.random.default_rng(0).standard_normal((t.size, channels))
    wave = (tone[:, None] + noise).astype(np.float32)
    path = tmp_path / f"clip-{rate}-{channels}.wav"
    sf.write(path, wave if channels > 1 else wave[:, 0], rate, subtype="PCM_16")

    ours = decode_for_whisper(path)
    theirs = decode_audio(str(path), sampling_rate=16_000)
    assert ours.dtype == theirs.dtype == np.float32
    np.testing.assert_array_equal(ours, theirs)


def test_decode_of_a_non_audio_file_raises(tmp_path: Path) -> None:
    import av

    from omnieval.backends.asr import decode_for_whisper

    path = tmp_path / "not.wav"
    path.write_bytes(b"RIFF\x00\x00")
    with pytest.raises(av.error.FFmpegError):
        decode_for_whisper(path)


def test_clip_window_cuts_only_the_zero_padding() -> None:
    import numpy as np

    from omnieval.backends.asr import WHISPER_FRAMES, clip_window

    rng = np.random.default_rng(0)
    features = np.zeros((80, WHISPER_FRAMES), dtype=np.float32)
    features[:, :437] = rng.uniform(-1.5, 1.0, size=(80, 437))
    assert clip_window(features, 0).shape == (80, 438)  # content, rounded up to the encoder's stride
    assert clip_window(features, 1000).shape == (80, 1000)  # padded to the minimum window
    np.testing.assert_array_equal(clip_window(features, 1000), features[:, :1000])
    assert clip_window(features, 5000) is features  # never longer than the window
    batch = np.stack([features, np.zeros_like(features)])
    assert clip_window(batch, 0).shape == (2, 80, 438)
    assert clip_window(np.zeros((80, WHISPER_FRAMES), dtype=np.float32), 0).shape == (80, 2)
