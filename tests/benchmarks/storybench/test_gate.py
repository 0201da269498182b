"""The dataset gate (derived from :class:`StoryBenchRecord`) on the sample and on broken copies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data._corrupt import CASES, PARQUET, SEA
from omnieval.benchmarks import BENCHMARKS
from omnieval.benchmarks._records import dataset_suite, gate_columns, read_rows
from omnieval.benchmarks.storybench._record import SOURCE, StoryBenchRecord
from omnieval.benchmarks.storybench._schema import PATH_COLUMNS, REQUIRED_COLUMNS, SPEECH_LABELS
from omnieval.errors import GateFailed
from omnieval.gates import enforce

BROKEN = (
    "path leaves the folder",
    "corrupt image",
    "unreadable text",
    "invalid characters JSON",
    "duplicated id",
    "label outside the vocabulary",
    "empty string",
)


def test_the_suite_is_derived_from_the_record_model() -> None:
    assert list(StoryBenchRecord.model_fields) == list(REQUIRED_COLUMNS)
    suite = dataset_suite(StoryBenchRecord, "storybench")
    assert suite["name"] == "storybench_dataset"
    by_type: dict[str, list[dict[str, object]]] = {}
    for e in suite["expectations"]:
        by_type.setdefault(e["type"], []).append(e["kwargs"])
    assert {k["column"] for k in by_type["expect_column_values_to_not_be_null"]} == set(REQUIRED_COLUMNS)
    assert {"column": "id"} in by_type["expect_column_values_to_be_unique"]
    checked = {k["column"] for k in by_type["expect_column_values_to_be_in_set"]}
    assert checked <= set(gate_columns(StoryBenchRecord))
    for column in [*SPEECH_LABELS, "id", "topic", "condition_characters", "book_characters"]:
        assert f"{column}__valid" in checked
    for column in PATH_COLUMNS:
        assert {f"{column}__present", f"{column}__decodable"} <= checked


@pytest.fixture(scope="module")
def broken_root(tmp_path_factory: pytest.TempPathFactory, sample_root: Path) -> Path:
    import shutil

    root = tmp_path_factory.mktemp("broken") / "storybench"
    shutil.copytree(sample_root, root)
    for case in CASES:
        if case.name in BROKEN:
            case.apply(root)
    return root


def test_check_columns_flag_the_broken_rows(broken_root: Path) -> None:
    rows = read_rows(broken_root, SOURCE, StoryBenchRecord).rows
    assert not rows[2]["current_image__present"]
    assert "leaves the dataset folder" in rows[2]["current_image__problem"]
    assert rows[12]["next_image__present"] and not rows[12]["next_image__decodable"]
    assert not rows[17]["next_text_path__decodable"]
    assert not rows[4]["condition_characters__valid"] and not rows[12]["speech_pitch__valid"]
    assert rows[14]["topic__problem"].startswith("row 14: topic: expected a non-empty string")
    checks = [
        c for c in gate_columns(StoryBenchRecord) if c.endswith(("__valid", "__present", "__decodable"))
    ]
    assert all(rows[i][c] for i in (0, 1) for c in checks)


def test_sample_passes_and_result_is_saved(sample_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "gates" / "dataset.json"
    out.parent.mkdir()
    result = BENCHMARKS.get("storybench").gate(sample_root, out)
    assert result.success, result.report()
    suite = dataset_suite(StoryBenchRecord, "storybench")
    assert result.n_rows == 20 and result.evaluated == len(suite["expectations"])
    enforce(result)
    assert json.loads(out.read_text())["success"] is True


def test_broken_dataset_fails_with_a_readable_report(broken_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "dataset.json"
    result = BENCHMARKS.get("storybench").gate(broken_root, out)
    assert not result.success
    report = result.report()
    failed = {(f.expectation_type, f.column) for f in result.failed}
    assert ("expect_column_values_to_be_unique", "id") in failed
    for column in (
        "speech_pitch__valid",
        "topic__valid",
        "current_image__present",
        "next_image__decodable",
        "next_text_path__decodable",
        "condition_characters__valid",
    ):
        assert ("expect_column_values_to_be_in_set", column) in failed, column
    assert f"rows: 5 (id '{SEA}/p01__p02'); 6 (id '{SEA}/p01__p02')" in report
    assert "'very high'" in report and "cannot decode image" in report and "not valid UTF-8" in report
    assert "Traceback" not in report
    saved = json.loads(out.read_text())
    assert saved["success"] is False and saved["report"] == report
    with pytest.raises(GateFailed):
        enforce(result)


def test_unreadable_parquet_fails_first_as_unreadable(sample_copy: Path, tmp_path: Path) -> None:
    (sample_copy / PARQUET).write_bytes(b"nope")
    out = tmp_path / "dataset.json"
    result = BENCHMARKS.get("storybench").gate(sample_copy, out)
    assert not result.success and result.n_rows == 0
    assert result.failed[0].expectation_type == "table_is_readable"
    assert "cannot read parquet" in result.failed[0].describe()
    assert json.loads(out.read_text())["success"] is False


def test_a_missing_column_fails_the_gate(sample_copy: Path) -> None:
    CASES[0].apply(sample_copy)  # drops ambient_sound
    result = BENCHMARKS.get("storybench").gate(sample_copy, None)
    assert not result.success
    assert result.failed[0].expectation_type == "table_is_readable"
    assert "missing required column(s): ambient_sound" in result.failed[0].describe()
    failed = {(f.expectation_type, f.column) for f in result.failed}
    assert ("expect_column_values_to_not_be_null", "ambient_sound") in failed


def test_characters_as_list_of_structs_pass_the_gate(sample_copy: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = pq.read_table(sample_copy / PARQUET).to_pylist()
    for row in rows:
        for column in ("condition_characters", "book_characters"):
            row[column] = json.loads(row[column])
    pq.write_table(pa.Table.from_pylist(rows), sample_copy / PARQUET)
    gate_rows = read_rows(sample_copy, SOURCE, StoryBenchRecord).rows.values()
    assert len(gate_rows) == len(rows)
    assert all(r["condition_characters__valid"] and r["book_characters__valid"] for r in gate_rows)
    result = BENCHMARKS.get("storybench").gate(sample_copy, None)
    assert result.success, result.report()
