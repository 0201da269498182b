"""``serve``'s shutdown ends the MLflow runs a stopped flow run left open: KILLED, with the reason.

A flow-like process (``log_suite_run`` blocked inside the track stage, SIGTERM unwinding it as
Prefect's TerminationSignal does in a served flow-run process) is stopped with SIGTERM; then the
shutdown path of ``serve`` (``end_interrupted_runs``, what ``_serve`` calls once its runner has
stopped) runs. No Prefect server or real ``omnieval serve`` starts: that costs minutes here
(docs/nightly.md), so the runner's part (SIGTERM to the flow-run process) is played by the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from omnieval.flows._serving import end_interrupted_runs
from omnieval.tracking.open_runs import KILLED_REASON_TAG, OPEN_RUNS_FILE

FLOW = """
import signal, sys, time
from pathlib import Path
import pandas as pd
from omnieval.cli import _sigterm_unwinds
from omnieval.tracking import log_suite_run

marker = Path(sys.argv[1])

def build(run_id, analyses):
    print("open", run_id, flush=True)
    time.sleep(60)

with _sigterm_unwinds():
    if sys.argv[2] == "stuck":  # a process that outlasts the runner's grace period (then SIGKILL)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    log_suite_run(
        experiment="serve-stop", suite="nightly", config={}, tags={},
        dataset_frame=pd.DataFrame({"instance_id": ["a"]}), dataset_name="d", dataset_source=".",
        dataset_digest="f" * 64, system_metrics={"s1": {}}, system_params={"s1": {}}, artifacts=[],
        run_folder_for=build, open_marker=marker,
    )
"""

REASON = "omnieval serve stopped (SIGTERM) during the track stage"


@pytest.mark.parametrize("behaviour", ["unwinds", "stuck"])
def test_sigterm_to_a_flow_run_in_track_leaves_its_mlflow_runs_killed_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, behaviour: str
) -> None:
    from mlflow.tracking import MlflowClient

    uri = (tmp_path / "mlruns").as_uri()
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    env = {
        **os.environ,
        "MLFLOW_ALLOW_FILE_STORE": "true",
        "MLFLOW_TRACKING_URI": uri,
        "OMNIEVAL_STOPPED_BY": "omnieval serve",  # what serve gives its flow-run processes
    }
    marker = tmp_path / "state" / OPEN_RUNS_FILE
    flow = subprocess.Popen(
        [sys.executable, "-c", FLOW, str(marker), behaviour], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert flow.stdout is not None
        line = flow.stdout.readline()
        assert line.startswith("open "), line
        parent = line.split()[1]
        assert json.loads(marker.read_text())["runs"][0] == parent
        flow.send_signal(signal.SIGTERM)  # the runner stopping its flow runs
        if behaviour == "stuck":
            time.sleep(0.5)
            assert flow.poll() is None
            flow.kill()  # past the grace period
        flow.wait(timeout=20)
    finally:
        if flow.poll() is None:
            flow.kill()
            flow.wait()

    if behaviour == "unwinds":
        assert not marker.exists()  # the process ended its runs itself
    else:
        assert marker.is_file()  # SIGKILL left them open
    lines = end_interrupted_runs([marker, tmp_path / "other" / OPEN_RUNS_FILE], "SIGTERM", wait_s=5)
    assert not marker.exists()
    assert len(lines) == (2 if behaviour == "stuck" else 0), lines

    client = MlflowClient(uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == "serve-stop"]
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 2 and parent in {run.info.run_id for run in runs}
    for run in runs:
        assert run.info.status == "KILLED"
        assert run.data.tags[KILLED_REASON_TAG] == REASON
