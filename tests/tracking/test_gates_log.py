"""Gate results on the suite's parent run: metrics, tags and the result files under gates/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnieval.gates import FailedExpectation, GateResult, write_result
from omnieval.tracking.gates_log import gate_metrics, gate_tags, log_gate_results, read_gate_results


@pytest.fixture
def gates_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "gates"
    write_result(GateResult("acbench_dataset", "data", True, 12, n_rows=40), folder / "dataset.json")
    write_result(
        GateResult("candidates", "c", True, 5, n_rows=40), folder / "candidates-oracle-control-original.json"
    )
    failed = [FailedExpectation("expect_column_values_to_be_between", "value", 1)] * 2
    write_result(GateResult("scores_table", "t", False, 30, failed, n_rows=800), folder / "scores.json")
    # The validate stage's own record of a dataset that failed strict validation (no n_failed).
    (folder / "judgments.json").write_text(json.dumps({"success": False, "problems": ["a", "b", "c"]}))
    (folder / "notes.txt").write_text("not a gate")
    return folder


def test_summaries_metrics_and_tags(gates_dir: Path) -> None:
    summaries = read_gate_results(gates_dir)
    assert [(g.stage, g.success, g.failed_expectations) for g in summaries] == [
        ("candidates-oracle-control-original", True, 0),
        ("dataset", True, 0),
        ("judgments", False, 3),
        ("scores", False, 2),
    ]
    metrics = gate_metrics(summaries)
    assert metrics["gate.scores.success"] == 0.0 and metrics["gate.scores.failed_expectations"] == 2.0
    assert metrics["gate.dataset.success"] == 1.0
    assert metrics["gate.candidates-oracle-control-original.success"] == 1.0
    tags = gate_tags(summaries)
    assert tags["omnieval.gate.scores"] == "failed" and tags["omnieval.gate.dataset"] == "passed"
    assert tags["omnieval.gates.failed"] == "judgments,scores"


def test_damaged_result_counts_as_failed(tmp_path: Path) -> None:
    (tmp_path / "scores.json").write_text("{not json")
    [summary] = read_gate_results(tmp_path)
    assert not summary.success and summary.failed_expectations == 1
    assert read_gate_results(tmp_path / "absent") == []


def test_logged_on_a_finished_parent_run(gates_dir: Path, mlflow_uri: str) -> None:
    import mlflow

    from omnieval.tracking import configure_mlflow

    configure_mlflow("omnieval/gates-log")
    with mlflow.start_run(run_name="suite") as run:
        mlflow.set_tag("omnieval.kind", "suite")
    logged = log_gate_results(run.info.run_id, gates_dir)
    assert len(logged) == 4
    client = mlflow.MlflowClient(mlflow_uri)
    data = client.get_run(run.info.run_id).data
    assert data.metrics["gate.scores.success"] == 0.0
    assert data.metrics["gate.scores.failed_expectations"] == 2.0
    assert data.metrics["gate.dataset.success"] == 1.0
    assert data.tags["omnieval.gate.judgments"] == "failed"
    assert data.tags["omnieval.gates.failed"] == "judgments,scores"
    artifacts = sorted(a.path for a in client.list_artifacts(run.info.run_id, "gates"))
    assert artifacts == [
        "gates/candidates-oracle-control-original.json",
        "gates/dataset.json",
        "gates/judgments.json",
        "gates/scores.json",
    ]
    downloaded = Path(client.download_artifacts(run.info.run_id, "gates/scores.json"))
    assert json.loads(downloaded.read_text())["n_failed"] == 2
