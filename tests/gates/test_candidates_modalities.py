"""The candidates gate is generic over a benchmark's modalities: speech-only (acbench) and video (prism)."""

from __future__ import annotations

import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest

from omnieval.errors import ConfigError
from omnieval.gates import candidates_gate_frame, gate_candidates, output_file


def _mp4(path: Path) -> Path:
    """Half a second of test pattern with a sine soundtrack (prism candidates carry both streams)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "ffmpeg", "-v", "error", "-y",
            "-f", "lavfi", "-i", "testsrc=size=32x32:rate=8",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000",
            "-t", "0.5", "-c:v", "mpeg4", "-c:a", "aac", str(path),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return path


def _wav(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tone = (0.2 * np.sin(2 * np.pi * 200 * np.arange(800) / 16000) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(tone.tobytes())
    return path


needs_ffmpeg = pytest.mark.skipif(
    shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None, reason="ffmpeg/ffprobe not installed"
)


def test_output_files_per_modality() -> None:
    assert [output_file(m) for m in ("text", "image", "speech", "video")] == [
        "generated.txt",
        "generated.png",
        "generated.wav",
        "generated.mp4",
    ]
    with pytest.raises(ConfigError, match="modality 'hologram' has no candidate output file"):
        output_file("hologram")


@needs_ffmpeg
def test_video_candidates(tmp_path: Path) -> None:
    root = tmp_path / "cands"
    _mp4(root / "video" / "0" / "generated.mp4")
    (root / "video" / "1").mkdir(parents=True)
    (root / "video" / "1" / "generated.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 but nothing else")
    silent = root / "video" / "4" / "generated.mp4"
    _mp4(silent)
    subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-y",
            "-i",
            str(silent),
            "-an",
            "-c:v",
            "copy",
            str(silent.with_suffix(".tmp.mp4")),
        ],
        check=True,
    )
    silent.with_suffix(".tmp.mp4").replace(silent)
    (root / "video" / "2").mkdir(parents=True)
    (root / "video" / "2" / "missing.txt").write_text("renderer timed out\n", encoding="utf-8")
    frame = candidates_gate_frame(root, 5, ("video",)).set_index("index")
    assert frame.loc[0, "status"] == "ok" and frame.loc[0, "entry"] == "video/0/generated.mp4"
    assert frame.loc[1, "present"] and not frame.loc[1, "decodable"]
    assert "cannot decode video" in frame.loc[1, "problem"]
    assert frame.loc[2, "problem"] == "renderer timed out"
    assert frame.loc[3, "problem"] == "video/3/generated.mp4: no output"
    assert frame.loc[4, "problem"] == "video/4/generated.mp4: no audio stream"
    result = gate_candidates(root, 5, tmp_path / "gate.json", modalities=("video",))
    assert result.success, result.report()
    assert result.notes == ["video: 4 of 5 outputs missing (scored as missing_output)"]


@needs_ffmpeg
def test_video_layout_strays_fail(tmp_path: Path) -> None:
    root = tmp_path / "cands"
    _mp4(root / "video" / "0" / "generated.mp4")
    (root / "video" / "0" / "generated.mov").write_bytes(b"x")
    (root / "text").mkdir()  # the base layout's folders stay allowed, empty or not
    (root / "video" / "5").mkdir()
    result = gate_candidates(root, 2, None, modalities=("video",))
    assert not result.success
    report = result.report()
    assert "video/0/generated.mov: not part of the candidate layout" in report
    assert "video/5/: index 5 is not a dataset row (0..1)" in report


def test_speech_only_benchmark(tmp_path: Path) -> None:
    """acbench: one folder per condition, speech only; an empty text/ folder is still layout."""
    root = tmp_path / "original"
    _wav(root / "speech" / "0" / "generated.wav")
    (root / "text").mkdir()
    frame = candidates_gate_frame(root, 2, ("speech",))
    assert set(frame["modality"]) == {"speech"} and frame["in_layout"].all()
    assert frame.set_index("index").loc[0, "status"] == "ok"
    assert frame.set_index("index").loc[1, "status"] == "missing_output"
