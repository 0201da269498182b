"""The defaults of DeclaredBenchmark: the strict loader's messages, the gate derived from the record
model, and the aggregate (valid-only and zero-filled means with bootstrap CIs) against hand-computed
numbers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.toy_caption import TOY_BENCHMARKS, Caption
from omnieval.benchmarks import DeclaredBenchmark, RunFacts, summarize
from omnieval.benchmarks._declared import Record
from omnieval.benchmarks._records import JsonLines, dataset_suite, read_rows
from omnieval.errors import ConfigError
from omnieval.scores import ScoreRow, scores_frame


def _write(tmp_path: Path, *lines: str) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    (root / "captions.jsonl").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return root


def test_every_problem_names_file_line_id_and_field(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        '{"id": "a", "prompt": "p", "reference": "r"}',
        "",
        "not json",
        "[1, 2]",
        '{"id": "b", "prompt": "p", "reference": "r", "extra": 1}',
        '{"id": "c", "prompt": "", "reference": "r"}',
        '{"id": "a", "prompt": "p", "reference": "r"}',
        '{"prompt": "p", "reference": "r"}',
    )
    found = read_rows(root, JsonLines("captions.jsonl"), Caption)
    assert found.problems == [
        "captions.jsonl:3: not a JSON line (JSONDecodeError)",
        "captions.jsonl:4: not a JSON object",
        "captions.jsonl:5 (b): extra: Extra inputs are not permitted",
        "captions.jsonl:6 (c): prompt: String should have at least 1 character",
        "captions.jsonl:7 (a): id: repeats line 1",
        "captions.jsonl:8: id: Field required",
    ]
    assert found.instances == ()  # never half a dataset
    assert list(found.rows) == [1, 3, 4, 5, 6, 7, 8]
    report = TOY_BENCHMARKS.get("toy_caption").validate(root)
    assert not report.ok and report.dataset is None and report.n_rows == 7


def test_a_missing_file_is_one_problem(tmp_path: Path) -> None:
    report = TOY_BENCHMARKS.get("toy_caption").validate(tmp_path)
    assert report.problems == ["captions.jsonl: not found"] and not report.ok


def test_the_gate_suite_is_derived_from_the_record_model() -> None:
    suite = dataset_suite(Caption, "toy_caption")
    assert suite["name"] == "toy_caption_dataset"
    assert [(e["type"], e["kwargs"].get("column")) for e in suite["expectations"]] == [
        ("expect_table_row_count_to_be_between", None),
        ("expect_column_values_to_be_in_set", "record__parses"),
        ("expect_column_values_to_not_be_null", "id"),
        ("expect_column_values_to_not_be_null", "prompt"),
        ("expect_column_values_to_not_be_null", "reference"),
        ("expect_column_values_to_be_unique", "id"),
    ]


def test_the_gate_fails_on_bad_data_and_says_why(tmp_path: Path) -> None:
    bench = TOY_BENCHMARKS.get("toy_caption")
    root = _write(tmp_path, '{"id": "a", "prompt": "p"}', '{"id": "a", "prompt": "p", "reference": "r"}')
    gate = bench.gate(root, tmp_path / "gate.json")
    assert not gate.success
    failed = {(f.expectation_type, f.column): f for f in gate.failed}
    assert set(failed) == {
        ("expect_column_values_to_be_in_set", "record__parses"),
        ("expect_column_values_to_not_be_null", "reference"),
        ("expect_column_values_to_be_unique", "id"),
    }
    assert (
        "reference: Field required"
        in failed[("expect_column_values_to_be_in_set", "record__parses")].describe()
    )
    assert json.loads((tmp_path / "gate.json").read_text())["success"] is False
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "captions.jsonl").write_text("\n", encoding="utf-8")
    assert {f.expectation_type for f in bench.gate(empty, None).failed} >= {
        "expect_table_row_count_to_be_between"
    }


def test_summarize_against_hand_computed_means() -> None:
    s = summarize([0.2, 0.4, np.nan, 0.9], 5, worst=0.0, draws=500, seed=3)
    assert s.valid_only == pytest.approx(1.5 / 3) and s.zero_filled == pytest.approx(1.5 / 5)
    assert (s.n_valid, s.n_missing) == (3, 2)
    assert s.valid_only_ci95 is not None and 0.2 <= s.valid_only_ci95[0] < 0.5 < s.valid_only_ci95[1] <= 0.9
    assert s.zero_filled_ci95 is not None and 0.0 <= s.zero_filled_ci95[0] < 0.3 < s.zero_filled_ci95[1]
    # Constant values: every resample has the same mean, so the interval is that point.
    assert summarize([0.5, 0.5], 2, worst=0.0).valid_only_ci95 == (0.5, 0.5)
    # The same seed gives the same interval; a lower-is-better metric fills with its worst (upper) end.
    assert summarize([0.2, 0.4], 3, worst=1.0, seed=1) == summarize([0.2, 0.4], 3, worst=1.0, seed=1)
    assert summarize([0.2, 0.4], 3, worst=1.0).zero_filled == pytest.approx(1.6 / 3)
    nothing = summarize([], 2, worst=float("-inf"))
    assert nothing.valid_only is None and nothing.zero_filled is None and nothing.n_missing == 2


def test_summarize_matches_a_direct_bootstrap() -> None:
    """The interval is the percentile interval of resampled means, drawn as numpy's generator does."""
    values = np.array([0.1, 0.7, 0.3, 0.9])
    rng = np.random.default_rng(7)
    means = values[rng.integers(0, 4, size=(300, 4))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    assert summarize(values, 4, worst=0.0, draws=300, seed=7).valid_only_ci95 == pytest.approx((lo, hi))


def test_the_leaderboard_aggregates_per_system() -> None:
    bench = TOY_BENCHMARKS.get("toy_caption")
    rows = [
        ScoreRow("toy_caption", "a", "x", 0, "metrics", "token_f1", "", "", 1.0, "ok"),
        ScoreRow("toy_caption", "a", "y", 1, "metrics", "token_f1", "", "", 0.5, "ok"),
        ScoreRow("toy_caption", "a", "z", 2, "metrics", "token_f1", "", "", None, "missing_output"),
        ScoreRow("toy_caption", "b", "x", 0, "metrics", "token_f1", "", "", None, "missing_output"),
        ScoreRow("toy_caption", "b", "y", 1, "metrics", "token_f1", "", "", None, "missing_output"),
        ScoreRow("toy_caption", "b", "z", 2, "metrics", "token_f1", "", "", None, "missing_output"),
    ]
    board = bench.leaderboard(scores_frame(rows), RunFacts(n_instances=3))
    a = board.document["systems"]["a"]["components"]["token_f1"]
    b = board.document["systems"]["b"]["components"]["token_f1"]
    assert (a["valid_only"], a["zero_filled"]) == (pytest.approx(0.75), pytest.approx(0.5))
    assert b == {
        "valid_only": None,
        "valid_only_ci95": None,
        "zero_filled": 0.0,
        "zero_filled_ci95": [0.0, 0.0],
        "n_valid": 0,
        "n_missing": 3,
    }
    assert board.mlflow_metrics["b"] == {"toy_caption.zero_filled.token_f1": 0.0}
    assert bench.leaderboard_model().model_validate(board.document) is not None  # type: ignore[union-attr]
    lines = bench.leaderboard_text(board.document).splitlines()
    assert lines[0].split()[:3] == ["system", "token_f1", "[95%"] and lines[2].split()[:2] == ["b", "n/a"]
    components = bench.instance_components(scores_frame(rows))
    assert components.to_dict("list")["value"] == [1.0, 0.5]


def test_a_declaration_the_defaults_cannot_work_with_is_refused() -> None:
    with pytest.raises(ConfigError, match="set record to a Record subclass"):
        type("NoRecord", (DeclaredBenchmark,), {"score": lambda self, record, outputs, config: {}})()

    class Line(Record):
        text: str

    toy = type(TOY_BENCHMARKS.get("toy_caption"))
    with pytest.raises(ConfigError, match=r"score_range must give the range of each headline component"):
        type("NoRange", (toy,), {"score_range": {}})()
    with pytest.raises(ConfigError, match="targets that are record fields"):
        type("BadTarget", (toy,), {"record": Line, "targets": ("reference",)})()


def test_the_metric_must_return_the_declared_components(tmp_path: Path) -> None:
    from omnieval.benchmarks import MetricsJob

    toy = type(TOY_BENCHMARKS.get("toy_caption"))
    bench = type("Wrong", (toy,), {"score": lambda self, record, outputs, config: {"f1": 1.0}})()
    root = _write(tmp_path, '{"id": "a", "prompt": "p", "reference": "r"}')
    (tmp_path / "out" / "text" / "0").mkdir(parents=True)
    (tmp_path / "out" / "text" / "0" / "generated.txt").write_text("r", encoding="utf-8")
    job = MetricsJob(bench.instances(bench.load(root)), "s", {"": tmp_path / "out"}, bench.metrics_config())
    with pytest.raises(ConfigError, match=r"score\(\) returned \['f1'\], declared \['token_f1'\]"):
        bench.compute_metrics(job)


def test_a_declared_benchmark_without_score_cannot_be_registered() -> None:
    class NoScore(DeclaredBenchmark):
        record = Caption
        targets = ("reference",)

    with pytest.raises(TypeError, match="score"):
        NoScore()  # what @benchmark does when it registers the class
