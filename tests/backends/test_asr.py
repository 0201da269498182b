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
    assert all(w.end >= w.start for w in heard.words)
    assert heard.words[-1].end <= speech.duration_s + 0.5
    ident = asr.identity()
    assert ident.name == "whisper-tiny.en" and len(ident.sha256) == 64 and "beam=1" in ident.settings
