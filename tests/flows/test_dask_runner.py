"""The nightly flow on a separately started Dask cluster gives the default runner's scores.

The cluster is run the way a lab runs one: a ``dask scheduler`` process and a ``dask worker``
process with two worker processes, on 127.0.0.1, reached through the suite's ``execution.address``.
The suite holds a generating ``command`` system beside two reference systems, so generation, metrics
and judging all run on the workers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from bench.chaos import CALL_LOG_ENV, write_suite

ROOT = Path(__file__).resolve().parents[2]
# A whole flow runs in the first test's setup: 30 min, not the suite's 15, on a loaded 2-core machine.
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.usefixtures("prefect_api"),
    pytest.mark.timeout(1800),
]


def _scores(summary: dict[str, Any]) -> pd.DataFrame:
    frame = pd.read_parquet(Path(summary["run_folder"]) / "scores.parquet")
    keys = [c for c in frame.columns if c != "value"]
    return frame.sort_values(keys).reset_index(drop=True)


#: A stdlib-only generating command: writes text, copies the current image, writes a tone, and
#: records the process that started it (the Dask worker, under the dask runner).
GENERATOR = r"""
import json, math, os, shutil, struct, sys, wave
input_dir, output_dir = sys.argv[1], sys.argv[2]
task = json.load(open(os.path.join(input_dir, "task.json"), encoding="utf-8"))
with open(os.environ["GEN_LOG"], "a", encoding="utf-8") as fh:
    fh.write(f"{task['index']}\t{os.getppid()}\n")
open(os.path.join(output_dir, "text.txt"), "w", encoding="utf-8").write("Next: " + task["current_text"][:60])
shutil.copyfile(os.path.join(input_dir, task["current_image"]), os.path.join(output_dir, "image.png"))
with wave.open(os.path.join(output_dir, "speech.wav"), "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
    w.writeframes(b"".join(struct.pack("<h", int(6000 * math.sin(i / 8))) for i in range(12000)))
"""


@contextmanager
def dask_cluster(folder: Path, env: dict[str, str]) -> Iterator[str]:
    """``dask scheduler`` and ``dask worker`` (two processes, environment ``env``) on 127.0.0.1;
    yields the scheduler's address."""
    scheduler_file = folder / "scheduler.json"
    cli = [sys.executable, "-m"]
    procs = [
        subprocess.Popen(
            [*cli, "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(scheduler_file)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not scheduler_file.is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = str(json.loads(scheduler_file.read_text())["address"])
        assert address.startswith("tcp://127.0.0.1:")
        procs.append(
            subprocess.Popen(
                [*cli, "distributed.cli.dask_worker", address, "--nworkers", "2", "--nthreads", "1",
                 "--host", "127.0.0.1", "--no-dashboard"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env,
            )
        )  # fmt: skip
        yield address
    finally:
        for process in reversed(procs):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    import yaml

    from omnieval.runner import run_suite

    tmp = tmp_path_factory.mktemp("dask")
    script = tmp / "generate.py"
    script.write_text(GENERATOR, encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("OMNIEVAL_PROJECT_ROOT", str(ROOT))
    out: dict[str, Any] = {}
    # The workers are started before the runs, as on a cluster: they get the judge's call log here.
    worker_env = {
        **os.environ,
        "OMNIEVAL_PROJECT_ROOT": str(ROOT),
        CALL_LOG_ENV: str(tmp / "dask" / "calls.log"),
    }
    with dask_cluster(tmp, worker_env) as address:
        for runner in ("default", "dask"):
            folder = tmp / runner
            suite = write_suite(
                folder, f"dask-{runner}", limit=2, dataset=ROOT / "data" / "storybench-sample"
            )
            config = yaml.safe_load(suite.read_text(encoding="utf-8"))
            config["systems"]["gen"] = {
                "kind": "command",
                "argv": [sys.executable, str(script), "{input_dir}", "{output_dir}"],
                "env": {"GEN_LOG": str(folder / "generate.log")},
            }
            if runner == "dask":
                config["execution"] = {"runner": "dask", "address": address}
            suite.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
            mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{folder / 'mlflow.db'}")
            mp.setenv("OMNIEVAL_MLFLOW_ARTIFACTS", str(folder / "artifacts"))
            mp.setenv(CALL_LOG_ENV, str(folder / "calls.log"))
            out[runner] = run_suite(suite, sync_dvc=False)
            out[f"{runner}_state"] = folder / "state"
    mp.undo()
    yield out


def test_dask_runner_gives_the_default_runners_scores(both_runs: dict[str, Any]) -> None:
    default, dask = both_runs["default"], both_runs["dask"]
    assert default["runner"] == "default" and dask["runner"] == "dask"
    a, b = _scores(default), _scores(dask)
    assert len(a) > 0 and len(a) == len(b)
    pd.testing.assert_frame_equal(a.drop(columns=["value"]), b.drop(columns=["value"]))
    # Judge scores are exact; embedding metrics may differ in the last float bits, since a worker
    # runs torch with its own thread count (a different summation order).
    judged = a["component"].str.startswith("judge")
    assert a.loc[judged, "value"].equals(b.loc[judged, "value"])
    assert a["value"].isna().equals(b["value"].isna())
    assert np.allclose(a["value"].fillna(0), b["value"].fillna(0), rtol=0, atol=1e-6)
    # Both judged every record once: same number of model calls, split over shards under Dask.
    assert default["judge_model_calls"] == dask["judge_model_calls"] > 0


def test_dask_runner_judges_one_shard_per_system(both_runs: dict[str, Any]) -> None:
    lineage = json.loads((both_runs["dask_state"] / "judge" / "lineage.json").read_text())
    assert sorted(map(tuple, lineage["shards"])) == [("gen",), ("oracle",), ("shuffled",)]
    default_lineage = json.loads((both_runs["default_state"] / "judge" / "lineage.json").read_text())
    assert [sorted(s) for s in default_lineage["shards"]] == [["gen", "oracle", "shuffled"]]
    # Shard lineages merge by summing: every record's status is counted once.
    (merged,) = (info["statuses"] for info in lineage["panels"].values())
    (single,) = (info["statuses"] for info in default_lineage["panels"].values())
    assert merged == single


def test_judge_shards_run_in_worker_processes(both_runs: dict[str, Any]) -> None:
    import os

    # The chaos judge logs the pid of every call; the Dask run's calls came from worker processes.
    log = both_runs["dask_state"].parent / "calls.log"
    pids = {int(line.split("\t")[1]) for line in log.read_text().splitlines() if line}
    assert pids and os.getpid() not in pids


def test_the_generating_system_runs_on_the_workers(both_runs: dict[str, Any]) -> None:
    import os

    default_log = both_runs["default_state"].parent / "generate.log"
    dask_log = both_runs["dask_state"].parent / "generate.log"
    default_parents = {line.split("\t")[1] for line in default_log.read_text().splitlines()}
    dask_rows = [line.split("\t") for line in dask_log.read_text().splitlines()]
    assert default_parents == {str(os.getpid())}
    assert sorted(r[0] for r in dask_rows) == ["0", "1"]
    assert str(os.getpid()) not in {r[1] for r in dask_rows}
    board = json.loads((Path(both_runs["dask"]["run_folder"]) / "leaderboard.json").read_text())
    generation = board["systems"]["gen"]["generation"]
    assert generation["completeness"] == {"examples": 2, "missing": {}}
    assert generation["examples_generated"] == 2 and set(generation["seconds"]) == {"command"}
