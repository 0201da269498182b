"""The candidate-folder gate: missing outputs are notes, structure problems are failures."""

from __future__ import annotations

import json
import wave
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from omnieval.candidates import Modality, write_missing
from omnieval.gates import CANDIDATE_COLUMNS, candidates_gate_frame, gate_candidates


def _write_outputs(root: Path, index: int) -> None:
    (root / "text" / str(index)).mkdir(parents=True)
    (root / "text" / str(index) / "generated.txt").write_text("The fox ran home.\n", encoding="utf-8")
    (root / "image" / str(index)).mkdir(parents=True)
    Image.new("RGB", (8, 8), (200, 100, 50)).save(root / "image" / str(index) / "generated.png")
    (root / "speech" / str(index)).mkdir(parents=True)
    tone = (0.3 * np.sin(2 * np.pi * 220 * np.arange(1600) / 16000) * 32767).astype("<i2")
    with wave.open(str(root / "speech" / str(index) / "generated.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(tone.tobytes())


@pytest.fixture
def candidates(tmp_path: Path) -> Path:
    """Three rows: row 0 complete, row 1 with a recorded missing image and an undecodable wav, row 2 absent."""
    root = tmp_path / "cands"
    _write_outputs(root, 0)
    _write_outputs(root, 1)
    (root / "image" / "1" / "generated.png").unlink()
    write_missing(root, Modality.IMAGE, 1, "planner produced no image prompt")
    (root / "speech" / "1" / "generated.wav").write_bytes(b"RIFF....")
    (root / "raw" / "0").mkdir(parents=True)
    (root / "raw" / "0" / "generated_raw.json").write_text("{}", encoding="utf-8")
    (root / "IMPORTED.json").write_text("{}", encoding="utf-8")
    (root / ".DS_Store").write_text("", encoding="utf-8")
    return root


def test_frame_marks_missing_outputs(candidates: Path) -> None:
    frame = candidates_gate_frame(candidates, 3)
    assert list(frame.columns) == list(CANDIDATE_COLUMNS)
    assert len(frame) == 9 and frame["in_layout"].all()
    by = frame.set_index(["modality", "index"])
    assert by.loc[("text", 0), "status"] == "ok" and by.loc[("text", 0), "decodable"]
    assert by.loc[("image", 1), "status"] == "missing_output"
    assert by.loc[("image", 1), "problem"] == "planner produced no image prompt"
    assert by.loc[("speech", 1), "present"] and not by.loc[("speech", 1), "decodable"]
    assert "cannot decode speech" in by.loc[("speech", 1), "problem"]
    assert by.loc[("text", 2), "status"] == "missing_output" and not by.loc[("text", 2), "present"]


def test_stray_entries_are_structural(candidates: Path) -> None:
    (candidates / "text" / "7").mkdir()
    (candidates / "text" / "01").mkdir()
    (candidates / "image" / "0" / "generated.jpg").write_bytes(b"x")
    (candidates / "speech" / "notes.txt").write_text("x", encoding="utf-8")
    (candidates / "video").mkdir()
    frame = candidates_gate_frame(candidates, 3)
    stray = frame[~frame["in_layout"]].set_index("entry")["problem"].to_dict()
    assert stray == {
        "image/0/generated.jpg": "image/0/generated.jpg: not part of the candidate layout",
        "speech/notes.txt": "speech/notes.txt: a file where index folders belong",
        "text/01": "text/01/: not a row index",
        "text/7": "text/7/: index 7 is not a dataset row (0..2)",
        "video": "video/: not part of the candidate layout",
    }


def test_gate_passes_with_missing_outputs_and_fails_on_structure(candidates: Path, tmp_path: Path) -> None:
    result = gate_candidates(candidates, 3, tmp_path / "ok.json")
    assert result.success, result.report()
    assert "image: 2 of 3 outputs missing (scored as missing_output)" in result.notes
    assert json.loads((tmp_path / "ok.json").read_text())["success"] is True

    (candidates / "text" / "9").mkdir()
    result = gate_candidates(candidates, 3, tmp_path / "bad.json")
    assert not result.success
    (failure,) = result.failed
    assert failure.column == "in_layout"
    assert "text/9/: index 9 is not a dataset row (0..2)" in result.report()


def test_absent_folder_is_structural(tmp_path: Path) -> None:
    frame = candidates_gate_frame(tmp_path / "nothing", 3)
    assert len(frame) == 1 and not frame.at[0, "in_layout"] and "not found" in frame.at[0, "problem"]


def test_raw_unscored_files_are_in_the_layout_and_nothing_else_there(candidates: Path) -> None:
    kept = candidates / "raw" / "0" / "unscored"
    kept.mkdir()
    for name in "text.txt", "image.png", "speech.wav":
        (kept / name).write_bytes(b"kept for inspection")
    assert candidates_gate_frame(candidates, 3)["in_layout"].all()
    (kept / "notes.md").write_text("x", encoding="utf-8")
    (kept / "nested").mkdir()
    (candidates / "raw" / "0" / "other").mkdir()
    frame = candidates_gate_frame(candidates, 3)
    stray = frame[~frame["in_layout"]].set_index("entry")["problem"].to_dict()
    assert stray == {
        "raw/0/other": "raw/0/other: not part of the candidate layout",
        "raw/0/unscored/nested": "raw/0/unscored/nested: not part of the candidate layout",
        "raw/0/unscored/notes.md": "raw/0/unscored/notes.md: not part of the candidate layout",
    }
