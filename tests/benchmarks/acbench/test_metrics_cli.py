"""``omnieval metrics acbench``: offered by the benchmark package (the CLI names no benchmark), its
own ``--help``, a bad option as exit code 2, and one real clip scored through the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnieval.audio import espeak_wav
from omnieval.cli import main

SAMPLE = Path("data/acbench-sample")


def test_help_is_the_benchmarks_own(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["metrics", "acbench", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: omnieval metrics acbench")
    assert "--evaluator FEATURE=REF" in out


def test_metrics_help_lists_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["metrics", "--help"])
    assert "OmniACBench acoustic metrics of a candidate folder" in capsys.readouterr().out


def test_bad_evaluator_is_a_config_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", "acbench", str(SAMPLE), str(tmp_path), "--evaluator", "emotion"]) == 2
    assert "--evaluator 'emotion': expected FEATURE=REF" in capsys.readouterr().err


def test_a_missing_candidates_folder_or_a_stray_file_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Scoring a folder that is not there would report every clip missing, with exit code 0.
    assert main(["metrics", "acbench", str(SAMPLE), str(tmp_path / "none")]) == 2
    assert f"candidates folder {tmp_path / 'none'} does not exist" in capsys.readouterr().err
    assert main(["metrics", "acbench", str(SAMPLE), str(tmp_path)]) == 2
    assert f"candidates folder {tmp_path} holds no speech/ folder" in capsys.readouterr().err
    stray = tmp_path / "notes.txt"
    stray.write_text("x")
    assert main(["metrics", "acbench", str(stray), str(tmp_path)]) == 2
    assert f"{stray}: not an OmniACBench dataset folder nor its manifest.jsonl" in capsys.readouterr().err


def test_one_spoken_clip_is_scored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = json.loads(SAMPLE.joinpath("manifest.jsonl").read_text(encoding="utf-8").splitlines()[0])
    clip = tmp_path / "candidates" / "speech" / "0" / "generated.wav"
    clip.parent.mkdir(parents=True)
    espeak_wav(first["script"], clip)
    out = tmp_path / "scores.parquet"
    argv = ["metrics", "acbench", str(SAMPLE), str(tmp_path / "candidates"), "--json"]
    argv += ["--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--condition", "original"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert "note (per): " in captured.err and "word-level" in captured.err
    assert out.is_file()
    # One clip of the sample exists: espeak reads the script, so tiny.en gets most words right;
    # the other instances have no candidate and are counted as missing, not scored.
    assert summary["wer"] is not None and summary["wer"] < 50.0
