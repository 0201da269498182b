"""The OmniACBench dataset gate (derived from its record model) passes on the sample and names the
failing row and field otherwise."""

from __future__ import annotations

import json
import typing
from pathlib import Path

from benchmarks.acbench._corrupt import edit_line
from omnieval.benchmarks import BENCHMARKS
from omnieval.benchmarks._records import dataset_suite, gate_columns
from omnieval.benchmarks.acbench._record import FEATURES, AcbenchRecord, Feature


def test_gate_passes_on_the_sample(ac_sample: Path, tmp_path: Path) -> None:
    result = BENCHMARKS.get("acbench").gate(ac_sample, tmp_path / "gate.json")
    assert result.success, result.report()
    assert result.n_rows == 40 and result.evaluated >= 20
    saved = json.loads((tmp_path / "gate.json").read_text(encoding="utf-8"))
    assert saved["success"] is True and saved["suite"] == "acbench_dataset"


def test_the_suite_is_derived_from_the_record_model() -> None:
    suite = dataset_suite(AcbenchRecord, "acbench")
    columns = [e["kwargs"].get("column") for e in suite["expectations"]]
    assert suite["name"] == "acbench_dataset" and set(columns) - {None} <= set(gate_columns(AcbenchRecord))
    for name in ("feature__valid", "target_value__valid", "heteronym__valid", "image__decodable"):
        assert name in columns
    assert "instruction_audio__present" in columns and "heteronym" not in columns  # optional field
    assert typing.get_args(Feature) == tuple(FEATURES)  # the gate's feature set is the loader's


def test_gate_names_row_and_field(ac_copy: Path, tmp_path: Path) -> None:
    edit_line(ac_copy, 5, lambda o: o.update(target_value="loud"))
    (ac_copy / "images" / "ac-0011.png").write_bytes(b"not a picture")
    edit_line(ac_copy, 4, lambda o: o.update(id="ac-0002"))
    edit_line(ac_copy, 8, lambda o: o["heteronym"]["readings"].update(metal=["L", "QQ", "D"]))
    result = BENCHMARKS.get("acbench").gate(ac_copy, tmp_path / "gate.json")
    assert not result.success
    report = result.report()
    by_column = {f.column: f for f in result.failed}
    pair = by_column["target_value__valid"].describe()
    assert "ac-0005" in pair and "target_value: 'loud' is not a value of phonation" in pair
    image = by_column["image__decodable"].describe()
    assert "ac-0011" in image and "image: images/ac-0011.png: cannot decode image" in image
    unique = by_column["id"].describe()
    assert "line 4" in unique and "id: duplicate of line 2" in unique
    heteronym = by_column["heteronym__valid"].describe()
    assert "ac-0008" in heteronym and "heteronym.readings.metal: 'QQ' is not an ARPAbet phone" in heteronym
    assert "ac-0005" in report and "ac-0011" in report
    saved = json.loads((tmp_path / "gate.json").read_text(encoding="utf-8"))
    assert saved["success"] is False and saved["n_failed"] == len(result.failed)


def test_gate_fails_on_a_bad_line(ac_copy: Path) -> None:
    path = ac_copy / "manifest.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = "{broken"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = BENCHMARKS.get("acbench").gate(ac_copy, None)
    failed = {f.column: f.describe() for f in result.failed}
    assert "line 3: not valid JSON" in failed["record__parses"]


def test_gate_without_manifest(tmp_path: Path) -> None:
    result = BENCHMARKS.get("acbench").gate(tmp_path, None)
    assert not result.success
    assert result.failed[0].expectation_type == "manifest_is_readable"
    assert "manifest.jsonl: file not found" in result.report()
