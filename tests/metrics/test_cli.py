"""``omnieval metrics speech|text|image``: JSON keys, statuses for bad inputs, exit codes.

An unusable input (empty text, missing file, directory, undecodable bytes) is exit code 2 with a
message naming it, never a traceback or a score.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from PIL import Image

from omnieval.cli import main

KEYS = [
    "path",
    "status",
    "f0_median_hz",
    "pitch",
    "gender",
    "words_per_second",
    "speed",
    "voiced_frame_ratio",
    "emotion",
    "transcript",
]


@pytest.mark.slow
def test_speech_json_with_good_and_bad_files(
    clips: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    silent = tmp_path / "silent.wav"
    sf.write(str(silent), np.zeros(8000), 16000)
    nan = tmp_path / "nan.wav"
    sf.write(str(nan), np.full(8000, np.nan), 16000, subtype="FLOAT")
    stereo8k = tmp_path / "stereo8k.wav"
    y, sr = sf.read(str(clips["male"]))
    import librosa

    y8 = librosa.resample(y, orig_sr=sr, target_sr=8000)
    sf.write(str(stereo8k), np.stack([y8, y8], axis=1), 8000)
    code = main(
        [
            "metrics",
            "speech",
            str(clips["female"]),
            str(empty),
            str(silent),
            str(nan),
            str(stereo8k),
            "--gender",
            "female",
            "--json",
        ]
    )
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 2  # some files are unusable audio
    assert [o["status"] for o in out] == ["ok", "empty_file", "silent", "non_finite", "ok"]
    for obj in out:
        assert list(obj)[: len(KEYS)] == KEYS
    good = out[0]
    assert good["pitch"] in ("low", "normal", "high") and good["gender"] is None and good["emotion"] is None
    assert good["speed"] == "normal" and "come back here" in good["transcript"].lower()
    assert good["pitch_rule"].startswith("hint:female")
    for bad in out[1:4]:
        assert bad["pitch"] is None and bad["f0_median_hz"] is None and bad["path"] in bad["message"]
    assert out[4]["transcript"]


@pytest.mark.slow
def test_text_and_image(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", "text", "--ref", "The cat sat.", "--hyp", "The cat sat.", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["f1"] == pytest.approx(1.0, abs=1e-5)
    # Only zero-width characters: not blank to str.strip(), but the tokenizer keeps nothing.
    assert main(["metrics", "text", "--ref", "\u200b\u200b", "--hyp", "The cat sat.", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--ref has no token the encoder keeps" in captured.err

    a = tmp_path / "a.png"
    Image.fromarray((np.random.default_rng(0).random((64, 64, 3)) * 255).astype("uint8")).save(a)
    assert main(["metrics", "image", str(a), str(a), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["similarity"] == pytest.approx(1.0, abs=1e-5)
    corrupt = tmp_path / "bad.png"
    corrupt.write_bytes(b"\x89PNG\r\n\x1a\nnope")
    assert main(["metrics", "image", str(a), str(corrupt), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and f"{corrupt}: cannot decode image" in captured.err


def test_help_and_bad_config(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["metrics", "speech", "--help"])
    assert "--gender" in capsys.readouterr().out
    assert main(["metrics", "speech", "x.wav", "--gender-classifier", "nonsense"]) == 2
    assert "classifier reference" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("ref", "hyp", "expected"),
    [
        ("", "x", "--ref is empty"),
        ("  \n\t", "x", "--ref is whitespace only"),
        ("The cat sat.", "", "--hyp is empty"),
        ("The cat sat.", " ", "--hyp is whitespace only"),
        ("", "", "--ref is empty; --hyp is empty"),
    ],
)
def test_text_with_an_empty_side_is_an_error(
    ref: str, hyp: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["metrics", "text", "--ref", ref, "--hyp", hyp, "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: cannot compute BERTScore: {expected}\n"


def _bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Unusable inputs and the words the error must show after the file name."""
    folder = tmp_path / "folder.png"
    folder.mkdir()
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    binary = tmp_path / "noise.png"
    binary.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    text = tmp_path / "notes.txt"
    text.write_text("not an image, not audio\n")
    return {
        "missing": (tmp_path / "nope.png", "no such file"),
        "directory": (folder, "is a directory"),
        "empty": (empty, "empty"),
        "binary": (binary, "cannot decode"),
        "text": (text, "cannot decode"),
    }


@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "binary", "text"])
def test_image_with_an_unusable_file_is_an_error(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.png"
    Image.fromarray(np.zeros((8, 8, 3), dtype="uint8")).save(good)
    bad, words = _bad_files(tmp_path)[kind]
    for argv in ([str(good), str(bad)], [str(bad), str(good)], [str(bad), str(good), "--json"]):
        assert main(["metrics", "image", *argv]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and "Traceback" not in captured.err
        assert captured.err.startswith("error: cannot compare the images\n")
        assert f"{bad}: " in captured.err and words in captured.err and str(good) not in captured.err


def test_image_names_both_unusable_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _bad_files(tmp_path)
    assert main(["metrics", "image", str(bad["directory"][0]), str(bad["binary"][0])]) == 2
    err = capsys.readouterr().err
    assert (
        f"  - {bad['directory'][0]}: is a directory" in err
        and f"  - {bad['binary'][0]}: cannot decode" in err
    )


def test_speech_with_unusable_files_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = {kind: path for kind, (path, _) in _bad_files(tmp_path).items()}
    files = [str(bad[k]) for k in ("missing", "directory", "empty", "binary", "text")]
    assert main(["metrics", "speech", *files]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    lines = captured.err.splitlines()
    assert lines[:3] == [
        f"error: {bad['missing']}: no such audio file (missing)",
        f"error: {bad['directory']}: is a directory, not an audio file (missing)",
        f"error: {bad['empty']}: audio file is empty (0 bytes) (empty_file)",
    ]
    assert lines[3].startswith(f"error: {bad['binary']}: cannot decode audio") and lines[3].endswith(
        "(undecodable)"
    )
    assert lines[4].startswith(f"error: {bad['text']}: cannot decode audio") and len(lines) == 5

    assert main(["metrics", "speech", *files, "--json"]) == 2
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o["status"] for o in out] == ["missing", "missing", "empty_file", "undecodable", "undecodable"]
    assert all(o["path"] in o["message"] and o["pitch"] is None for o in out)
