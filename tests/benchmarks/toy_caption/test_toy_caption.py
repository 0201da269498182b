"""toy_caption (a DeclaredBenchmark) through the Benchmark API the stages use (load -> gate ->
fingerprint -> generate -> metrics -> leaderboard -> report), from a dataset built here."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from benchmarks.toy_caption import TOY_BENCHMARKS, ToyMetricsConfig
from omnieval.benchmarks import BENCHMARKS, Benchmark, GenerateJob, MetricsJob, ReportJob, RunFacts
from omnieval.errors import DataError
from omnieval.scores import SCORE_COLUMNS
from omnieval.systems import SYSTEMS, resolve_candidates_root

CAPTIONS = [
    {"id": "fox", "prompt": "Caption the fox picture.", "reference": "a red fox jumps"},
    {"id": "owl", "prompt": "Caption the owl picture.", "reference": "an owl at night"},
    {"id": "cat", "prompt": "Caption the cat picture.", "reference": "a sleeping cat"},
]


@pytest.fixture
def bench() -> Benchmark:
    return TOY_BENCHMARKS.get("toy_caption")


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "toy"
    root.mkdir()
    (root / "captions.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CAPTIONS), encoding="utf-8")
    return root


@pytest.fixture
def outputs(tmp_path: Path) -> Path:
    """Outputs made elsewhere (FORMATS.md section 2): exact, half right, and one missing."""
    root = tmp_path / "outputs"
    for index, text in {0: "A red fox jumps", 1: "an owl"}.items():
        (root / "text" / str(index)).mkdir(parents=True)
        (root / "text" / str(index) / "generated.txt").write_text(text, encoding="utf-8")
    return root


def test_declared_as_data_and_kept_out_of_production(bench: Benchmark) -> None:
    assert bench.spec is not None and bench.name == bench.spec.name == "toy_caption"
    assert bench.dataset_marker == "captions.jsonl" and bench.modalities == ("text",)
    assert bench.conditions == ("",) and bench.judge_tracks == ()
    assert "toy_caption" not in BENCHMARKS


def test_the_stage_sequence(bench: Benchmark, dataset: Path, outputs: Path, tmp_path: Path) -> None:
    # validate stage
    assert bench.detect(dataset)
    instances = bench.instances(bench.load(dataset))
    assert [c.id for c in instances] == ["fox", "owl", "cat"]
    assert bench.gate(dataset, tmp_path / "gate.json").success
    assert json.loads((tmp_path / "gate.json").read_text())["suite"] == "toy_caption_dataset"
    assert len(bench.fingerprint(bench.load(dataset)).digest) == 64
    assert list(bench.dataset_frame(dataset)["id"]) == ["fox", "owl", "cat"]
    # what a generating system may see: the prompt, never the reference
    task = bench.visible_task(instances[0])
    assert task.fields() == {
        "benchmark": "toy_caption",
        "index": 0,
        "id": "fox",
        "condition": "",
        "prompt": "Caption the fox picture.",
    }
    # generate stage: the import system, with the benchmark's modalities
    system = SYSTEMS.get("import")(outputs, modalities=bench.modalities)
    out_root = tmp_path / "candidates" / "imported"
    bench.generate(GenerateJob(system, instances, out_root))
    # metrics stage
    config = bench.metrics_config.model_validate({"casefold": True})
    result = bench.compute_metrics(
        MetricsJob(instances, "imported", {"": resolve_candidates_root(out_root)}, config)
    )
    assert list(result.scores.columns) == list(SCORE_COLUMNS)
    assert list(result.scores["status"]) == ["ok", "ok", "missing_output"]
    assert result.scores["value"].iloc[0] == 1.0
    # report stage: valid-only (1 + 2/3) / 2, zero-filled (1 + 2/3 + 0) / 3
    board = bench.leaderboard(result.scores, RunFacts(n_instances=len(instances)))
    entry = board.document["systems"]["imported"]["components"]["token_f1"]
    assert entry["valid_only"] == pytest.approx(5 / 6) and entry["zero_filled"] == pytest.approx(5 / 9)
    assert (entry["n_valid"], entry["n_missing"]) == (2, 1)
    lo, hi = entry["valid_only_ci95"]
    assert 2 / 3 <= lo <= 5 / 6 <= hi <= 1.0
    keys = list(board.mlflow_metrics["imported"])
    assert keys == ["toy_caption.valid_only.token_f1", "toy_caption.zero_filled.token_f1"]
    assert all(any(fnmatch.fnmatch(k, p) for p in bench.headline_metric_patterns) for k in keys)
    assert bench.leaderboard_model() is not None
    components = bench.instance_components(result.scores)
    assert set(components["component"]) <= set(bench.headline_components)
    assert "imported" in bench.leaderboard_text(board.document)
    report = tmp_path / "report.html"
    suite = cast(Any, SimpleNamespace(suite="toy"))  # the declared report reads the suite's name only
    bench.write_report(ReportJob(report, suite, board.document, tmp_path))
    assert "imported" in report.read_text(encoding="utf-8")


def test_metrics_config_is_strict(bench: Benchmark) -> None:
    assert bench.metrics_config is ToyMetricsConfig
    with pytest.raises(ValueError, match="casefld"):
        bench.metrics_config.model_validate({"casefld": False})


def test_a_bad_dataset_is_named_by_line_and_field(bench: Benchmark, dataset: Path, tmp_path: Path) -> None:
    lines = (dataset / "captions.jsonl").read_text(encoding="utf-8").splitlines()
    lines[1] = json.dumps({"id": "owl", "prompt": "Caption the owl picture.", "reference": ""})
    lines.append(lines[0])
    (dataset / "captions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as raised:
        bench.load(dataset)
    assert raised.value.problems == [
        "captions.jsonl:2 (owl): reference: String should have at least 1 character",
        "captions.jsonl:4 (fox): id: repeats line 1",
    ]
    gate = bench.gate(dataset, None)
    assert not gate.success
    assert {(f.expectation_type, f.column) for f in gate.failed} == {
        ("expect_column_values_to_be_in_set", "record__parses"),
        ("expect_column_values_to_be_unique", "id"),
    }
