"""The open-runs marker: a suite execution's MLflow runs named while open, ended KILLED with the
reason when their process is gone; an interrupt while logging ends them KILLED, an error FAILED."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from omnieval.tracking.open_runs import (
    KILLED_REASON_TAG,
    OPEN_RUNS_FILE,
    end_open_runs,
    mark_open,
    read_open,
    stopped_reason,
)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    import mlflow
    from mlflow.tracking import MlflowClient

    # A file store is created in milliseconds, where a sqlite store takes seconds.
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (tmp_path / "mlruns").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.delenv("OMNIEVAL_STOPPED_BY", raising=False)
    # log_suite_run points mlflow at the store globally, which outranks the environment.
    mlflow.set_tracking_uri(uri)
    return MlflowClient(uri)


def _runs(client: Any) -> tuple[str, str, str]:
    experiment = client.create_experiment("open")
    parent = client.create_run(experiment).info.run_id
    child = client.create_run(experiment, tags={"mlflow.parentRunId": parent}).info.run_id
    done = client.create_run(experiment, tags={"mlflow.parentRunId": parent}).info.run_id
    client.set_terminated(done, status="FINISHED")
    return parent, child, done


def test_a_marker_left_by_a_dead_process_ends_its_runs_killed_with_the_reason(
    tmp_path: Path, store: Any
) -> None:
    parent, child, done = _runs(store)
    marker = tmp_path / "state" / OPEN_RUNS_FILE
    mark_open(marker, [parent])
    document = read_open(marker)
    assert document is not None and document["runs"] == [parent] and document["stage"] == "track"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    marker.write_text(marker.read_text().replace(f'"pid": {document["pid"]}', f'"pid": {gone.pid}'))

    ended = end_open_runs([marker], lambda stage: stopped_reason("SIGTERM", stage, by="omnieval serve"))

    assert sorted(ended) == sorted([parent, child])  # the RUNNING child found through its parent
    reason = "omnieval serve stopped (SIGTERM) during the track stage"
    for run_id in (parent, child):
        run = store.get_run(run_id)
        assert run.info.status == "KILLED" and run.data.tags[KILLED_REASON_TAG] == reason
    assert store.get_run(done).info.status == "FINISHED"
    assert KILLED_REASON_TAG not in store.get_run(done).data.tags
    assert not marker.exists()


def test_a_marker_of_a_live_process_is_left_alone(tmp_path: Path, store: Any) -> None:
    parent, _, _ = _runs(store)
    marker = tmp_path / OPEN_RUNS_FILE
    mark_open(marker, [parent])
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        text = marker.read_text()
        pid = read_open(marker)["pid"]  # type: ignore[index]
        marker.write_text(text.replace(f'"pid": {pid}', f'"pid": {live.pid}'))
        assert end_open_runs([marker], lambda stage: "x") == []
    finally:
        live.kill()
        live.wait()
    assert marker.is_file() and store.get_run(parent).info.status == "RUNNING"


def _log(tmp_path: Path, marker: Path, build: Any) -> Any:
    from omnieval.tracking import log_suite_run

    return log_suite_run(
        experiment="open-log",
        suite="nightly",
        config={"suite": "nightly"},
        tags={"omnieval.git_sha": "a" * 40},
        dataset_frame=pd.DataFrame({"instance_id": ["a"]}),
        dataset_name="d",
        dataset_source=str(tmp_path),
        dataset_digest="f" * 64,
        system_metrics={"s1": {"x.total_average": 1.0}, "s2": {"x.total_average": 2.0}},
        system_params={"s1": {}, "s2": {}},
        artifacts=[],
        run_folder_for=build,
        open_marker=marker,
    )


@pytest.mark.parametrize(
    ("raised", "status"), [(KeyboardInterrupt(), "KILLED"), (RuntimeError("disk full"), "FAILED")]
)
def test_an_interrupt_while_logging_ends_the_runs_killed_an_error_failed(
    tmp_path: Path, store: Any, raised: BaseException, status: str
) -> None:
    marker = tmp_path / "state" / OPEN_RUNS_FILE
    seen: list[dict[str, Any]] = []

    def build(run_id: str, _analyses: dict[str, str]) -> Path:
        seen.append(read_open(marker) or {})
        raise raised

    with pytest.raises(type(raised)):
        _log(tmp_path, marker, build)
    (open_doc,) = seen
    assert len(open_doc["runs"]) == 3  # the parent and both systems' runs, named while open
    assert not marker.exists()
    runs = [store.get_run(run_id) for run_id in open_doc["runs"]]
    assert {run.info.status for run in runs} == {status}
    if status == "KILLED":
        assert {run.data.tags[KILLED_REASON_TAG] for run in runs} == {
            "the run was stopped (Ctrl-C) during the track stage"
        }


def test_a_finished_run_leaves_no_marker(tmp_path: Path, store: Any) -> None:
    marker = tmp_path / OPEN_RUNS_FILE

    def build(run_id: str, _analyses: dict[str, str]) -> Path:
        assert marker.is_file()
        folder = tmp_path / "runs" / run_id
        folder.mkdir(parents=True)
        return folder

    ids = _log(tmp_path, marker, build)
    assert not marker.exists()
    assert store.get_run(ids.parent).info.status == "FINISHED"
