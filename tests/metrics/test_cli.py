"""``omnieval metrics speech|text|image``: JSON keys, statuses for bad inputs, exit codes."""

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
    assert code == 1  # some inputs could not be analysed
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
    assert main(["metrics", "text", "--ref", "The cat sat.", "--hyp", "  ", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "missing_output" and result["f1"] is None

    a = tmp_path / "a.png"
    Image.fromarray((np.random.default_rng(0).random((64, 64, 3)) * 255).astype("uint8")).save(a)
    assert main(["metrics", "image", str(a), str(a), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["similarity"] == pytest.approx(1.0, abs=1e-5)
    corrupt = tmp_path / "bad.png"
    corrupt.write_bytes(b"\x89PNG\r\n\x1a\nnope")
    assert main(["metrics", "image", str(a), str(corrupt), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "missing_output" and str(corrupt) in result["message"]


def test_help_and_bad_config(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["metrics", "speech", "--help"])
    assert "--gender" in capsys.readouterr().out
    assert main(["metrics", "speech", "x.wav", "--gender-classifier", "nonsense"]) == 2
    assert "classifier reference" in capsys.readouterr().err
