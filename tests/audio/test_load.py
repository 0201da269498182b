"""Audio preparation: the paper's steps, and a clear status for every kind of unusable file."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from omnieval.audio import (
    TARGET_RATE,
    AudioError,
    AudioStatus,
    harmonic_tone,
    load_audio,
    prepare_speech,
)


def _write(path: Path, y: np.ndarray, sr: int, subtype: str = "PCM_16") -> Path:
    sf.write(str(path), y, sr, subtype=subtype)
    return path


def _status(path: Path, **kwargs: object) -> AudioError:
    with pytest.raises(AudioError) as info:
        prepare_speech(path, **kwargs)  # type: ignore[arg-type]
    assert str(path) in str(info.value), "the message must name the file"
    return info.value


def test_matches_librosa_load_resample_trim(tmp_path: Path) -> None:
    import librosa

    y = np.concatenate([np.zeros(4410), harmonic_tone(180.0, 1.0, sr=22050), np.zeros(4410)])
    path = _write(tmp_path / "a.wav", y, 22050)
    prepared = prepare_speech(path)
    ref, _ = librosa.load(path, sr=TARGET_RATE, mono=True)
    np.testing.assert_allclose(prepared.wave, ref, atol=1e-6)
    trimmed, _ = librosa.effects.trim(ref, top_db=30)
    np.testing.assert_allclose(prepared.trimmed, trimmed, atol=1e-6)
    assert prepared.trimmed_duration_s < prepared.duration_s
    assert prepared.native_rate == 22050 and prepared.channels == 1


def test_8khz_stereo_is_mixed_and_resampled(tmp_path: Path) -> None:
    tone = harmonic_tone(150.0, 1.0, sr=8000)
    stereo = np.stack([tone, 0.5 * tone], axis=1)
    prepared = prepare_speech(_write(tmp_path / "st.wav", stereo, 8000))
    assert prepared.channels == 2 and prepared.native_rate == 8000
    assert prepared.wave.ndim == 1
    assert abs(prepared.wave.shape[0] - TARGET_RATE) <= 2


def test_missing_and_empty_files(tmp_path: Path) -> None:
    assert _status(tmp_path / "nope.wav").status is AudioStatus.MISSING
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    assert _status(empty).status is AudioStatus.EMPTY_FILE


def test_truncated_wav_is_detected(tmp_path: Path) -> None:
    whole = _write(tmp_path / "whole.wav", harmonic_tone(200.0, 1.0), TARGET_RATE).read_bytes()
    cut = tmp_path / "cut.wav"
    cut.write_bytes(whole[: len(whole) // 2])
    err = _status(cut)
    assert err.status is AudioStatus.TRUNCATED
    assert "declares" in err.detail


def test_streaming_wav_with_unknown_size_is_accepted(tmp_path: Path) -> None:
    data = bytearray(_write(tmp_path / "s.wav", harmonic_tone(200.0, 0.5), TARGET_RATE).read_bytes())
    offset = data.index(b"data")
    data[offset + 4 : offset + 8] = struct.pack("<I", 0xFFFFFFFF)
    path = tmp_path / "stream.wav"
    path.write_bytes(bytes(data))
    assert prepare_speech(path).duration_s > 0.4


def test_garbage_is_undecodable(tmp_path: Path) -> None:
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunkjunkjunk")
    assert _status(junk).status is AudioStatus.UNDECODABLE


def test_nan_samples_are_rejected(tmp_path: Path) -> None:
    y = harmonic_tone(200.0, 0.5)
    y[100:110] = np.nan
    err = _status(_write(tmp_path / "nan.wav", y, TARGET_RATE, subtype="FLOAT"))
    assert err.status is AudioStatus.NON_FINITE and "10 samples" in err.detail


def test_silence_is_reported(tmp_path: Path) -> None:
    assert _status(_write(tmp_path / "z.wav", np.zeros(16000), TARGET_RATE)).status is AudioStatus.SILENT
    hiss = np.random.default_rng(0).normal(0, 1e-5, 16000)
    assert (
        _status(_write(tmp_path / "h.wav", hiss, TARGET_RATE, subtype="FLOAT")).status is AudioStatus.SILENT
    )


def test_ten_minute_clip_over_the_limit(tmp_path: Path) -> None:
    # 8 kHz keeps the file small; the limit is checked from the header before decoding.
    long = _write(tmp_path / "long.wav", np.tile(harmonic_tone(120.0, 1.0, sr=8000), 600), 8000)
    err = _status(long, max_duration_s=120.0)
    assert err.status is AudioStatus.TOO_LONG and "600.0 s" in err.detail


def test_load_audio_keeps_channels(tmp_path: Path) -> None:
    y = np.stack([harmonic_tone(100.0, 0.2), harmonic_tone(300.0, 0.2)], axis=1)
    wave = load_audio(_write(tmp_path / "two.wav", y, TARGET_RATE))
    assert wave.channels == 2 and wave.samples.shape == (3200, 2)
