"""The nightly flow on a real two-worker Dask LocalCluster gives the default runner's scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from omnieval.chaos import CALL_LOG_ENV, write_suite

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.usefixtures("prefect_api")]


def _scores(summary: dict[str, Any]) -> pd.DataFrame:
    frame = pd.read_parquet(Path(summary["run_folder"]) / "scores.parquet")
    keys = [c for c in frame.columns if c != "value"]
    return frame.sort_values(keys).reset_index(drop=True)


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from omnieval.runner import run_suite

    tmp = tmp_path_factory.mktemp("dask")
    mp = pytest.MonkeyPatch()
    mp.setenv("OMNIEVAL_PROJECT_ROOT", str(ROOT))
    out: dict[str, Any] = {}
    for runner in ("default", "dask"):
        folder = tmp / runner
        suite = write_suite(folder, f"dask-{runner}", limit=2, dataset=ROOT / "data" / "storybench-sample")
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{folder / 'mlflow.db'}")
        mp.setenv("OMNIEVAL_MLFLOW_ARTIFACTS", str(folder / "artifacts"))
        mp.setenv(CALL_LOG_ENV, str(folder / "calls.log"))
        out[runner] = run_suite(suite, sync_dvc=False, runner=runner)
        out[f"{runner}_state"] = folder / "state"
    mp.undo()
    return out


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
    assert sorted(map(tuple, lineage["shards"])) == [("oracle",), ("shuffled",)]
    default_lineage = json.loads((both_runs["default_state"] / "judge" / "lineage.json").read_text())
    assert [sorted(s) for s in default_lineage["shards"]] == [["oracle", "shuffled"]]
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
