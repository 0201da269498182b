"""The PRISM-Bench dataset gate passes on the sample and names the failing row and field otherwise."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.prism._corrupt import edit_line, lavfi_clip
from omnieval.benchmarks.prism._gate import (
    PRISM_SUITE,
    gate_prism_dataset,
    helper_columns,
    prism_gate_frame,
    suite_document,
    valid_tag_set_keys,
)
from omnieval.benchmarks.prism._tags import SUBSETS, valid_tag_sets


def test_suite_file_matches_the_code() -> None:
    on_disk = json.loads(PRISM_SUITE.read_text(encoding="utf-8"))
    assert on_disk == json.loads(json.dumps(suite_document()))


def test_tag_set_values_are_the_valid_combinations() -> None:
    keys = valid_tag_set_keys()
    assert len(keys) == len(set(keys)) == 29
    # Independent spelling: rebuild each key from the vocabulary by hand.
    rebuilt = set()
    order = ["SPEECH_A", "MUSIC_A", "SOUND_A", "SPEECH_B", "MUSIC_B", "SOUND_B"]
    for subset in SUBSETS:
        for tags in valid_tag_sets(subset):
            rebuilt.add(subset + ":" + ",".join(t for t in order if t in tags))
    assert set(keys) == rebuilt


def test_gate_passes_on_the_sample(prism_sample: Path, tmp_path: Path) -> None:
    result = gate_prism_dataset(prism_sample, tmp_path / "gate.json")
    assert result.success, result.report()
    assert result.n_rows == 29 and result.evaluated >= 20
    saved = json.loads((tmp_path / "gate.json").read_text(encoding="utf-8"))
    assert saved["success"] is True and saved["suite"] == "prism_dataset"


def test_frame_has_helper_columns(prism_small: Path) -> None:
    frame, whole = prism_gate_frame(prism_small)
    assert not whole and len(frame) == 4
    assert set(helper_columns()) <= set(frame.columns)
    assert frame.loc[1, "tag_set"] == "on_screen:SPEECH_A,MUSIC_A,SOUND_A"
    assert frame["duration_s"].round(3).tolist() == [3.0] * 4
    assert frame["fps"].tolist() == [15.0] * 4
    assert bool(frame["reference_video__decodable"].all()) and bool(frame["reference_video__has_audio"].all())


def test_gate_fails_and_names_row_and_field(prism_small: Path, tmp_path: Path) -> None:
    edit_line(prism_small, 3, lambda o: o.update(active_tags=["MUSIC_A"]))
    edit_line(prism_small, 2, lambda o: o.update(id="on-01", caption=" "))
    (prism_small / "videos" / "on-01.mp4").unlink()
    lavfi_clip(prism_small / "videos" / "on-01.mp4", audio=False, fps=3)
    edit_line(prism_small, 4, lambda o: o.update(extra_field=1))
    result = gate_prism_dataset(prism_small, tmp_path / "gate.json")
    assert not result.success
    by_column = {f.column: f.describe() for f in result.failed}
    assert (
        "off-03" in by_column["tag_set"]
        and "tag MUSIC_A is not valid for subset off_screen" in by_column["tag_set"]
    )
    assert "line 2: id: duplicate of line 1" in by_column["id"]
    assert "line 2: caption: empty" in by_column["caption__nonempty"]
    assert (
        "line 1: reference_video: videos/on-01.mp4: no audio stream"
        in by_column["reference_video__has_audio"]
    )
    assert "unexpected" in by_column["fps"] and "frame rate 3 fps" in by_column["reference_video__fps_ok"]
    assert "line 4: extra_field: unknown field" in by_column["fields__known"]
    saved = json.loads((tmp_path / "gate.json").read_text(encoding="utf-8"))
    assert saved["success"] is False and saved["n_failed"] == len(result.failed)


def test_gate_fails_on_a_bad_line(prism_small: Path) -> None:
    path = prism_small / "manifest.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = "{broken"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = gate_prism_dataset(prism_small, None)
    failed = {f.column: f.describe() for f in result.failed}
    assert "line 3: not valid JSON" in failed["record__parses"]


def test_gate_without_manifest(tmp_path: Path) -> None:
    result = gate_prism_dataset(tmp_path, None)
    assert not result.success
    assert result.failed[0].expectation_type == "manifest_is_readable"
    assert "manifest.jsonl: file not found" in result.report()
