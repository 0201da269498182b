"""A run folder a killed track stage left half-built: removed, and its MLflow run ended KILLED with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnieval.stages.track import INTERRUPTED_REASON, INTERRUPTED_TAG, _sweep_interrupted


def test_half_built_run_folder_is_removed_and_its_running_mlflow_run_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    client = MlflowClient()
    experiment = client.create_experiment("sweep", artifact_location=str(tmp_path / "artifacts"))
    interrupted = client.create_run(experiment).info.run_id  # left RUNNING, as by a killed process
    finished = client.create_run(experiment).info.run_id
    client.set_terminated(finished, status="FINISHED")

    runs = tmp_path / "runs" / "suite"
    (runs / interrupted).mkdir(parents=True)
    (runs / interrupted / "scores.parquet").write_bytes(b"PAR1")  # half-built: no mlflow.json
    (runs / finished).mkdir()
    (runs / finished / "mlflow.json").write_text("{}")

    _sweep_interrupted(runs)

    assert not (runs / interrupted).exists()
    assert (runs / finished / "mlflow.json").is_file()
    killed = client.get_run(interrupted)
    assert killed.info.status == "KILLED"
    assert killed.data.tags[INTERRUPTED_TAG] == INTERRUPTED_REASON
    assert client.get_run(finished).info.status == "FINISHED"
    assert INTERRUPTED_TAG not in client.get_run(finished).data.tags
