"""Analyses logged as MLflow child runs, in a throwaway local store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from omnieval.analysis import AnalysisConfig, run_analyses
from omnieval_testkit.storybench_synthetic import make_scores


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # One store for the module: creating an MLflow sqlite database takes several seconds.
    root = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", uri)
        mp.setenv("OMNIEVAL_MLFLOW_ARTIFACTS", str(root / "artifacts"))
        yield uri


@pytest.fixture(scope="module")
def analyses(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:  # type: ignore[type-arg]
    out = tmp_path_factory.mktemp("analyses")
    frame = make_scores(n_systems=5, n_instances=30, seed=2, benchmark="storybench")
    outputs = run_analyses(
        frame,
        out,
        only=["bootstrap", "zero_filled_sensitivity", "human_agreement"],
        config=AnalysisConfig(bootstrap_draws=50, seed=3),
    )
    return out, outputs


def test_child_runs_nested_under_parent(store: str, analyses: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    import mlflow

    from omnieval.tracking import configure_mlflow
    from omnieval.tracking.analysis_runs import log_analysis_runs

    _, outputs = analyses
    configure_mlflow("omnieval/test")
    with mlflow.start_run(run_name="suite") as parent:
        runs = log_analysis_runs(outputs, parent_run_id=parent.info.run_id, experiment="omnieval/test")
    assert set(runs) == {"bootstrap", "zero_filled_sensitivity", "human_agreement"}
    client = mlflow.MlflowClient()
    boot = client.get_run(runs["bootstrap"])
    assert boot.data.tags["omnieval.kind"] == "analysis"
    assert boot.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert boot.data.params["seed"] == "3"
    assert boot.data.params["draws"] == "50"
    assert "leader.share_leader_beats_runner_up" in boot.data.metrics
    assert boot.info.status == "FINISHED"
    files = {f.path for f in client.list_artifacts(runs["bootstrap"])}
    assert "bootstrap.json" in files
    assert {f.path for f in client.list_artifacts(runs["bootstrap"], "plots")} == {"plots/bootstrap.png"}
    skipped = client.get_run(runs["human_agreement"])
    assert skipped.data.tags["omnieval.analysis.status"] == "skipped"
    assert "no human ratings" in skipped.data.tags["omnieval.analysis.skip_reason"]
    found = mlflow.search_runs(
        experiment_names=["omnieval/test"],
        filter_string="tags.`omnieval.kind` = 'analysis'",
        output_format="list",
    )
    assert {r.info.run_id for r in found} == set(runs.values())


def test_from_a_folder_without_active_run(store: str, analyses: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    import mlflow

    from omnieval.tracking.analysis_runs import log_analysis_runs

    out, _ = analyses
    runs = log_analysis_runs(out, experiment="omnieval/folder")
    assert set(runs) == {"bootstrap", "zero_filled_sensitivity", "human_agreement"}
    run = mlflow.MlflowClient().get_run(runs["zero_filled_sensitivity"])
    assert "mlflow.parentRunId" not in run.data.tags
    assert json.loads((out / "zero_filled_sensitivity.json").read_text())["status"] == "ok"
    assert "agreement.spearman" in run.data.metrics
