"""validate_frame / GateResult / enforce on small synthetic tables and suites."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from omnieval.errors import ConfigError, GateFailed
from omnieval.gates import FailedExpectation, GateResult, enforce, validate_frame

SUITE = {
    "name": "toy",
    "expectations": [
        {
            "type": "expect_table_columns_to_match_set",
            "kwargs": {"column_set": ["id", "label", "file__ok"], "exact_match": False},
        },
        {"type": "expect_column_values_to_be_unique", "kwargs": {"column": "id"}},
        {"type": "expect_column_values_to_be_in_set", "kwargs": {"column": "label", "value_set": ["a", "b"]}},
        {"type": "expect_column_values_to_be_in_set", "kwargs": {"column": "file__ok", "value_set": [True]}},
    ],
}


@pytest.fixture(scope="module")
def suite_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("suite") / "toy.json"
    path.write_text(json.dumps(SUITE), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def outcomes(
    suite_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[GateResult, Path]]:
    """One good and one bad table through GX (each run costs seconds, so share them)."""
    out = tmp_path_factory.mktemp("results")
    good = pd.DataFrame(
        {"id": ["x", "y"], "label": ["a", "b"], "file__ok": [True, True], "file__problem": ["", ""]}
    )
    bad = pd.DataFrame(
        {
            "id": ["x", "x", "z"],
            "label": ["a", "c", "b"],
            "file__ok": [True, True, False],
            "file__problem": ["", "", "pages/z.png: cannot decode image"],
        }
    )
    return {
        name: (
            validate_frame(
                frame, suite_file, artifact=f"{name} table", out_json=out / f"{name}.json", id_column="id"
            ),
            out / f"{name}.json",
        )
        for name, frame in (("good", good), ("bad", bad))
    }


def test_good_table_passes(outcomes: dict[str, tuple[GateResult, Path]]) -> None:
    result, path = outcomes["good"]
    assert result.success and result.failed == [] and result.evaluated == 4 and result.n_rows == 2
    enforce(result)
    saved = json.loads(path.read_text())
    assert saved["success"] is True and saved["suite"] == "toy"


def test_bad_table_fails_with_a_readable_report(outcomes: dict[str, tuple[GateResult, Path]]) -> None:
    result, path = outcomes["bad"]
    assert not result.success
    kinds = [(f.expectation_type, f.column) for f in result.failed]
    # Reported in the suite's order, not GX's.
    assert kinds == [
        ("expect_column_values_to_be_unique", "id"),
        ("expect_column_values_to_be_in_set", "label"),
        ("expect_column_values_to_be_in_set", "file__ok"),
    ]
    report = result.report()
    lines = report.splitlines()
    assert lines[0] == "gate toy failed on bad table: 3 of 4 expectations failed (3 rows)"
    assert lines[1] == "  - expect_column_values_to_be_unique(id): 2 unexpected; rows: 0 (id 'x'); 1 (id 'x')"
    assert "e.g. 'c'" in lines[2] and "rows: 1 (id 'x')" in lines[2]
    assert "rows: 2 (id 'z') pages/z.png: cannot decode image" in lines[3]
    assert len(report) < 1200
    saved = json.loads(path.read_text())
    assert saved["success"] is False and saved["n_failed"] == 3 and saved["report"] == report
    label = next(f for f in result.failed if f.column == "label")
    assert label.unexpected_count == 1 and label.unexpected_rows == [1]


def test_enforce_raises_gate_failed_with_exit_code_2(outcomes: dict[str, tuple[GateResult, Path]]) -> None:
    result, _ = outcomes["bad"]
    with pytest.raises(GateFailed) as info:
        enforce(result)
    assert info.value.exit_code == 2 and str(info.value) == result.report()


def test_missing_column_is_named(suite_file: Path) -> None:
    frame = pd.DataFrame({"id": ["x"], "label": ["a"]})
    result = validate_frame(frame, suite_file, artifact="t")
    lines = result.report().splitlines()
    assert "expect_table_columns_to_match_set: missing columns: file__ok" in lines[1]
    assert "expect_column_values_to_be_in_set(file__ok): column 'file__ok' is missing" in lines[2]


def test_report_is_capped() -> None:
    failed = [FailedExpectation("expect_column_values_to_not_be_null", f"c{i}", 1) for i in range(40)]
    report = GateResult("s", "t", False, 40, failed, n_rows=1).report()
    assert len(report.splitlines()) == 17 and report.endswith("25 more (see the saved gate result)")


def test_suite_file_problems_are_config_errors(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": [1]})
    with pytest.raises(ConfigError, match="not found"):
        validate_frame(frame, tmp_path / "absent.json", artifact="t")
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="not readable JSON"):
        validate_frame(frame, bad, artifact="t")
    bad.write_text('{"expectations": []}', encoding="utf-8")
    with pytest.raises(ConfigError, match="needs a string 'name'"):
        validate_frame(frame, bad, artifact="t")
