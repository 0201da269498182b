"""``omnieval validate DIR``: exit 0 with a summary, or exit 2 naming each row and field, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data._corrupt import CASES, Case
from omnieval.benchmarks.storybench._record import fingerprint_storybench, load_storybench
from omnieval.cli import main


def test_valid_sample_prints_summary(sample_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(sample_root)]) == 0
    out = capsys.readouterr().out
    digest = fingerprint_storybench(load_storybench(sample_root)).digest
    assert "20 transitions from 4 books" in out
    assert f"digest: {digest}" in out


def test_manifest_and_json_output(
    sample_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "out" / "manifest.json"
    manifest.parent.mkdir()  # the command never creates an output's folder
    assert main(["validate", str(sample_root), "--json", "--manifest", str(manifest)]) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["ok"] is True and outcome["n_rows"] == 20 and outcome["n_books"] == 4
    assert json.loads(manifest.read_text())["digest"] == outcome["digest"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_dataset_exits_2_naming_row_and_field(
    sample_copy: Path, tmp_path: Path, case: Case, capsys: pytest.CaptureFixture[str]
) -> None:
    case.apply(sample_copy)
    manifest = tmp_path / "manifest.json"
    assert main(["validate", str(sample_copy), "--manifest", str(manifest)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[0].startswith(f"error: dataset {sample_copy} failed validation")
    assert any(all(f in line for f in case.fragments) for line in lines), captured.err
    assert "Traceback" not in captured.err + captured.out
    assert not manifest.exists(), "a failed validation must not leave a manifest that looks successful"


def test_bad_dataset_json_lists_problems(sample_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    CASES[0].apply(sample_copy)
    assert main(["validate", str(sample_copy), "--json"]) == 2
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["ok"] is False and any("ambient_sound" in p for p in outcome["problems"])


def test_missing_folder_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "absent")]) == 2
    err = capsys.readouterr().err
    assert "dataset folder not found" in err and "Traceback" not in err


def test_gate_option_saves_a_passing_result(
    sample_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gates" / "dataset.json"
    # An output's folder is never created by the command (exit 2 naming it): make it first.
    assert main(["validate", str(sample_root), "--gate", "--gate-out", str(out)]) == 2
    assert f"--gate-out: folder {out.parent} does not exist" in capsys.readouterr().err
    out.parent.mkdir()
    assert main(["validate", str(sample_root), "--gate", "--gate-out", str(out)]) == 0
    assert "gate storybench_dataset: passed" in capsys.readouterr().out
    saved = json.loads(out.read_text())
    assert saved["success"] is True and saved["n_failed"] == 0 and saved["evaluated"] > 50
