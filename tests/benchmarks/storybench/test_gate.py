"""The dataset gate: expectations/storybench_dataset.json on the sample and on broken copies."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from data._corrupt import CASES, PARQUET, SEA
from omnieval.benchmarks.storybench._gate import (
    gate_storybench_dataset,
    helper_columns,
    storybench_gate_frame,
)
from omnieval.benchmarks.storybench._schema import REQUIRED_COLUMNS, SPEECH_LABELS, STRING_COLUMNS
from omnieval.errors import GateFailed
from omnieval.gates import enforce, expectations_dir

BROKEN = (
    "path leaves the folder",
    "corrupt image",
    "unreadable text",
    "invalid characters JSON",
    "duplicated id",
    "label outside the vocabulary",
    "empty string",
)


def test_suite_agrees_with_the_schema() -> None:
    suite = json.loads((expectations_dir() / "storybench_dataset.json").read_text())
    by_type: dict[str, list[dict[str, object]]] = {}
    for e in suite["expectations"]:
        by_type.setdefault(e["type"], []).append(e["kwargs"])
    (columns,) = by_type["expect_table_columns_to_match_set"]
    assert columns["column_set"] == list(REQUIRED_COLUMNS)
    assert {k["column"] for k in by_type["expect_column_values_to_not_be_null"]} == set(REQUIRED_COLUMNS)
    in_set = {k["column"]: k["value_set"] for k in by_type["expect_column_values_to_be_in_set"]}
    for column, vocabulary in SPEECH_LABELS.items():
        assert in_set[column] == list(vocabulary)
    assert {c for c in helper_columns() if c != "id__expected"} == {
        c for c, v in in_set.items() if v == [True]
    }
    regex = {k["column"] for k in by_type["expect_column_values_to_match_regex"]}
    assert set(STRING_COLUMNS) <= regex
    assert {"column": "id"} in by_type["expect_column_values_to_be_unique"]


@pytest.fixture(scope="module")
def broken_root(tmp_path_factory: pytest.TempPathFactory, sample_root: Path) -> Path:
    import shutil

    root = tmp_path_factory.mktemp("broken") / "storybench"
    shutil.copytree(sample_root, root)
    for case in CASES:
        if case.name in BROKEN:
            case.apply(root)
    return root


def test_helper_columns_flag_the_broken_rows(broken_root: Path) -> None:
    frame = storybench_gate_frame(broken_root)
    assert (
        not frame.at[2, "current_image__present"]
        and "leaves the dataset folder" in frame.at[2, "current_image__problem"]
    )
    assert frame.at[12, "next_image__present"] and not frame.at[12, "next_image__decodable"]
    assert not frame.at[17, "next_text_path__readable"] and not frame.at[17, "next_text_path__matches"]
    assert not frame.at[4, "condition_characters__valid"]
    assert frame.at[0, "id__expected"] == frame.at[0, "id"]
    ok_columns = [c for c in helper_columns() if c != "id__expected"]
    assert frame.loc[[0, 1], ok_columns].all(axis=None)


def test_sample_passes_and_result_is_saved(sample_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "gates" / "dataset.json"
    result = gate_storybench_dataset(sample_root, out)
    assert result.success, result.report()
    assert result.n_rows == 20 and result.evaluated == len(
        json.loads((expectations_dir() / "storybench_dataset.json").read_text())["expectations"]
    )
    enforce(result)
    assert json.loads(out.read_text())["success"] is True


def test_broken_dataset_fails_with_a_readable_report(broken_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "dataset.json"
    result = gate_storybench_dataset(broken_root, out)
    assert not result.success
    report = result.report()
    failed = {(f.expectation_type, f.column) for f in result.failed}
    assert ("expect_column_values_to_be_unique", "id") in failed
    assert ("expect_column_values_to_be_in_set", "speech_pitch") in failed
    assert ("expect_column_values_to_match_regex", "topic") in failed
    assert ("expect_column_values_to_be_in_set", "current_image__present") in failed
    assert ("expect_column_values_to_be_in_set", "next_image__decodable") in failed
    assert ("expect_column_values_to_be_in_set", "next_text_path__readable") in failed
    assert ("expect_column_values_to_be_in_set", "condition_characters__valid") in failed
    assert f"rows: 5 (id '{SEA}/p01__p02'); 6 (id '{SEA}/p01__p02')" in report
    assert "'very high'" in report and "cannot decode image" in report and "not valid UTF-8" in report
    assert "Traceback" not in report
    saved = json.loads(out.read_text())
    assert saved["success"] is False and saved["report"] == report
    with pytest.raises(GateFailed):
        enforce(result)


def test_unreadable_parquet_fails_without_gx(sample_copy: Path, tmp_path: Path) -> None:
    (sample_copy / PARQUET).write_bytes(b"nope")
    out = tmp_path / "dataset.json"
    result = gate_storybench_dataset(sample_copy, out)
    assert not result.success and result.evaluated == 0
    assert result.failed[0].expectation_type == "table_is_readable"
    assert json.loads(out.read_text())["success"] is False


def test_expectations_dir_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNIEVAL_EXPECTATIONS", str(tmp_path))
    assert expectations_dir() == tmp_path
    monkeypatch.delenv("OMNIEVAL_EXPECTATIONS")
    assert (expectations_dir() / "storybench_dataset.json").is_file()
    assert os.path.basename(expectations_dir()) == "expectations"


def test_characters_as_list_of_structs_pass_the_gate(sample_copy: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = pq.read_table(sample_copy / PARQUET).to_pylist()
    for row in rows:
        for column in ("condition_characters", "book_characters"):
            row[column] = json.loads(row[column])
    pq.write_table(pa.Table.from_pylist(rows), sample_copy / PARQUET)
    frame = storybench_gate_frame(sample_copy)
    assert frame["condition_characters__valid"].all() and frame["book_characters__valid"].all()
    result = gate_storybench_dataset(sample_copy, None)
    assert result.success, result.report()
