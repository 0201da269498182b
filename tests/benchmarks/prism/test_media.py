"""ffprobe/ffmpeg helpers: probing, decoding, frames, bit-exact encoding, clean errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from benchmarks.prism._corrupt import lavfi_clip
from omnieval.benchmarks.prism._media import (
    MediaError,
    decode_audio,
    encode_clip,
    extract_audio,
    extract_frames,
    fit_length,
    probe,
    replace_audio,
    run_ffmpeg,
)

SR = 16000
FPS = 10


def _frames(n: int = 20, height: int = 48, width: int = 64) -> np.ndarray:
    """Frame i is a flat grey of level 10 * i (easy to recognise after lossy coding)."""
    return np.stack([np.full((height, width, 3), 10 * i, dtype=np.uint8) for i in range(n)])


def _tone(seconds: float = 2.0, freq: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("media") / "clip.mp4"
    return encode_clip(_frames(), FPS, _tone(), SR, out)


def test_probe(clip: Path) -> None:
    info = probe(clip)
    assert (info.width, info.height, info.fps, info.n_frames) == (64, 48, 10.0, 20)
    assert (info.video_codec, info.pix_fmt, info.audio_codec) == ("h264", "yuv420p", "aac")
    assert info.has_audio and info.audio_rate == SR and info.audio_channels == 1
    assert info.duration_s == pytest.approx(2.0, abs=0.03)
    assert info.video_duration_s == pytest.approx(2.0, abs=1e-6)
    assert info.audio_duration_s == pytest.approx(2.0, abs=0.03)


def test_probe_with_decode(clip: Path) -> None:
    assert probe(clip, decode_s=1.0) == probe(clip)


def test_encoding_is_bit_exact(clip: Path, tmp_path: Path) -> None:
    again = encode_clip(_frames(), FPS, _tone(), SR, tmp_path / "again.mp4")
    assert again.read_bytes() == clip.read_bytes()


def test_decode_audio_round_trip(clip: Path) -> None:
    audio = decode_audio(clip, sr=SR)
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert abs(audio.shape[0] - 2 * SR) <= 1024  # AAC frame granularity at most
    n = min(audio.shape[0], 2 * SR)
    ref = _tone()[:n]
    # Lossy but aligned: strong correlation at lag 0, same level.
    assert float(np.corrcoef(audio[:n], ref)[0, 1]) > 0.98
    assert float(np.sqrt(np.mean(audio**2))) == pytest.approx(0.5 / np.sqrt(2), rel=0.05)


def test_extract_audio(clip: Path, tmp_path: Path) -> None:
    wav = extract_audio(clip, tmp_path / "out" / "a.wav", sr=8000)
    info = sf.info(str(wav))
    assert (info.samplerate, info.channels, info.subtype) == (8000, 1, "PCM_16")
    assert info.frames / 8000 == pytest.approx(2.0, abs=0.07)
    assert not list((tmp_path / "out").glob("*.partial.wav"))


def test_extract_frames_at_times_and_rate(clip: Path) -> None:
    frames = extract_frames(clip, times_s=[0.0, 0.55, 1.95])
    assert [f.shape for f in frames] == [(48, 64, 3)] * 3
    # frame k shows grey level 10 k; 0.55 s -> frame 5 (50), 1.95 s -> frame 19 (190)
    levels = [float(f.mean()) for f in frames]
    assert levels == pytest.approx([0.0, 50.0, 190.0], abs=4.0)
    sampled = extract_frames(clip, fps=5, size=(32, 24))
    assert len(sampled) == 10 and sampled[0].shape == (24, 32, 3)
    assert float(sampled[1].mean()) == pytest.approx(20.0, abs=4.0)
    with pytest.raises(ValueError):
        extract_frames(clip)
    with pytest.raises(MediaError, match="outside the clip"):
        extract_frames(clip, times_s=[5.0])


def test_replace_audio_keeps_the_picture(clip: Path, tmp_path: Path) -> None:
    out = replace_audio(clip, _tone(1.0, 880.0), SR, tmp_path / "swapped.mp4")
    info = probe(out)
    assert info.duration_s == pytest.approx(2.0, abs=0.03) and info.has_audio
    audio = decode_audio(out, sr=SR)
    assert float(np.sqrt(np.mean(audio[SR + 2048 :] ** 2))) < 1e-3  # padded with silence
    assert float(np.sqrt(np.mean(audio[1024 : SR - 1024] ** 2))) > 0.3
    same = [float(a.mean()) for a in extract_frames(out, times_s=[0.55, 1.25])]
    assert same == pytest.approx([50.0, 120.0], abs=4.0)
    with pytest.raises(ValueError):
        replace_audio(clip, _tone(), SR, clip)


def test_probe_errors(tmp_path: Path) -> None:
    with pytest.raises(MediaError, match="file not found"):
        probe(tmp_path / "none.mp4")
    text = tmp_path / "text.mp4"
    text.write_text("not a video\n" * 10)
    with pytest.raises(MediaError, match="not a readable media file") as info:
        probe(text)
    assert info.value.path == text and str(text) in str(info.value)
    audio_only = lavfi_clip(tmp_path / "audio.mp4", video=False)
    with pytest.raises(MediaError, match="no video stream"):
        probe(audio_only)
    silent = probe(lavfi_clip(tmp_path / "silent.mp4", audio=False))
    assert not silent.has_audio and silent.audio_rate == 0 and silent.fps == 15.0


def test_truncated_clip_fails_to_decode(clip: Path, tmp_path: Path) -> None:
    data = clip.read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: len(data) // 2])  # the index (moov) is at the end: gone
    with pytest.raises(MediaError):
        probe(cut, decode_s=1.0)


def test_run_ffmpeg_error_is_clean(tmp_path: Path) -> None:
    with pytest.raises(MediaError, match="ffmpeg failed") as info:
        run_ffmpeg(["-i", str(tmp_path / "missing.mp4"), "-f", "null", "-"], path=tmp_path / "missing.mp4")
    assert "missing.mp4" in str(info.value) and "Traceback" not in str(info.value)


def test_fit_length() -> None:
    x = np.arange(5, dtype=np.float32)
    assert fit_length(x, 3).tolist() == [0.0, 1.0, 2.0]
    assert fit_length(x, 7).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 0.0]
