"""The PRISM-Bench dataset gate (derived from its record model) passes on the sample and names the
failing row and field otherwise."""

from __future__ import annotations

import json
import typing
from pathlib import Path

from benchmarks.prism._corrupt import edit_line, lavfi_clip
from omnieval.benchmarks import BENCHMARKS
from omnieval.benchmarks._records import dataset_suite, gate_columns
from omnieval.benchmarks.prism._record import PrismRecord, Subset
from omnieval.benchmarks.prism._tags import SUBSETS


def test_the_suite_is_derived_from_the_record_model() -> None:
    suite = dataset_suite(PrismRecord, "prism")
    columns = [e["kwargs"].get("column") for e in suite["expectations"]]
    assert suite["name"] == "prism_dataset" and set(columns) - {None} <= set(gate_columns(PrismRecord))
    for name in ("subset__valid", "active_tags__valid", "caption__valid", "visual_events__valid"):
        assert name in columns
    assert "reference_video__present" in columns and "reference_video__decodable" in columns
    assert "visual_events" not in columns  # optional field: may be null
    assert typing.get_args(Subset) == SUBSETS  # the gate's subset set is the loader's


def test_gate_passes_on_the_sample(prism_sample: Path, tmp_path: Path) -> None:
    result = BENCHMARKS.get("prism").gate(prism_sample, tmp_path / "gate.json")
    assert result.success, result.report()
    assert result.n_rows == 29 and result.evaluated >= 10
    saved = json.loads((tmp_path / "gate.json").read_text(encoding="utf-8"))
    assert saved["success"] is True and saved["suite"] == "prism_dataset"


def test_gate_fails_and_names_row_and_field(prism_small: Path, tmp_path: Path) -> None:
    edit_line(prism_small, 3, lambda o: o.update(active_tags=["MUSIC_A"]))
    edit_line(prism_small, 2, lambda o: o.update(id="on-01", caption=" "))
    (prism_small / "videos" / "on-01.mp4").unlink()
    lavfi_clip(prism_small / "videos" / "on-01.mp4", audio=False, fps=3)
    edit_line(prism_small, 4, lambda o: o.update(extra_field=1))
    result = BENCHMARKS.get("prism").gate(prism_small, tmp_path / "gate.json")
    assert not result.success
    by_column = {f.column: f.describe() for f in result.failed}
    tags = by_column["active_tags__valid"]
    assert "off-03" in tags and "tag MUSIC_A is not valid for subset off_screen" in tags
    assert "line 2: id: duplicate of line 1" in by_column["id"]
    assert "line 2: caption: empty" in by_column["caption__valid"]
    video = by_column["reference_video__decodable"]
    assert "line 1: reference_video: videos/on-01.mp4: no audio stream" in video
    assert "reference_video: videos/on-01.mp4: frame rate 3 fps is outside 5-120 fps" in video
    assert "line 4: extra_field: unknown field" in by_column["record__parses"]
    saved = json.loads((tmp_path / "gate.json").read_text(encoding="utf-8"))
    assert saved["success"] is False and saved["n_failed"] == len(result.failed)


def test_gate_fails_on_a_bad_line(prism_small: Path) -> None:
    path = prism_small / "manifest.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = "{broken"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = BENCHMARKS.get("prism").gate(prism_small, None)
    failed = {f.column: f.describe() for f in result.failed}
    assert "line 3: not valid JSON" in failed["record__parses"]


def test_gate_without_manifest(tmp_path: Path) -> None:
    result = BENCHMARKS.get("prism").gate(tmp_path, None)
    assert not result.success
    assert result.failed[0].expectation_type == "manifest_is_readable"
    assert "manifest.jsonl: file not found" in result.report()
