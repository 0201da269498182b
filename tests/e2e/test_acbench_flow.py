"""End to end: the OmniACBench suite through the same Prefect flow, checked through MLflow and the run folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from omnieval.cli import main

ROOT = Path(__file__).resolve().parents[2]
# A whole flow runs in the first test's setup: 30 min, not the suite's 15, on a loaded 2-core machine.
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.usefixtures("prefect_api"),
    pytest.mark.timeout(1800),
]
CONDITIONS = ["original", "oracle"]
SYSTEMS = ("oracle-control", "neutral")
# The sample's first 14 instances hold every speech-rate, phonation and heteronym instance (4, 2 and
# 8), so delta-WPM, VFR@0.3 and PER are the full sample's; WER runs on all 14. The 26 emotion,
# accent and timbre instances only add Whisper transcripts of metrics the CPU run cannot compute.
LIMIT = 14


@pytest.fixture(scope="module")
def acbench_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("acbench-e2e")
    # The shipped suite, with private state, runs, MLflow experiment and two of the five conditions.
    shipped = yaml.safe_load((ROOT / "pipelines" / "acbench.yaml").read_text())
    # The two reference systems; the generating kinds have tests of their own (tests/systems/).
    suite = {
        **shipped,
        "systems": {sid: shipped["systems"][sid] for sid in SYSTEMS},
        "suite": "acbench-e2e",
        "state_dir": str(tmp / "state"),
        "runs_dir": str(tmp / "runs"),
        "conditions": CONDITIONS,
        "tracking": {"experiment": "omnieval/acbench-e2e"},
        "dataset": {"name": "acbench-sample", "path": str(ROOT / "data" / "acbench-sample"), "limit": LIMIT},
    }
    path = tmp / "acbench-e2e.yaml"
    path.write_text(yaml.safe_dump(suite))
    mp = pytest.MonkeyPatch()
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    mp.setenv("MLFLOW_TRACKING_URI", uri)
    mp.setenv("OMNIEVAL_MLFLOW_ARTIFACTS", str(tmp / "artifacts"))
    mp.setenv("OMNIEVAL_PROJECT_ROOT", str(ROOT))
    from omnieval.runner import run_suite

    summary = run_suite(path, sync_dvc=False)
    yield {"tmp": tmp, "uri": uri, "summary": summary}
    mp.undo()


def test_mlflow_holds_parent_and_per_system_child_runs(acbench_run: dict[str, Any]) -> None:
    import mlflow

    mlflow.set_tracking_uri(acbench_run["uri"])
    runs = mlflow.search_runs(experiment_names=["omnieval/acbench-e2e"], output_format="pandas")
    parent_id = acbench_run["summary"]["run_id"]
    parent = runs.set_index("run_id").loc[parent_id]
    assert parent["tags.omnieval.benchmark"] == "acbench"
    assert parent["tags.omnieval.suite"] == "acbench-e2e"
    assert parent["tags.omnieval.dataset.version"]
    children = runs[runs["tags.mlflow.parentRunId"] == parent_id]
    systems = children[children["tags.omnieval.kind"] == "system"].set_index("tags.omnieval.system")
    assert set(systems.index) == set(SYSTEMS)
    assert set(systems["tags.omnieval.benchmark"]) == {"acbench"}
    for condition in CONDITIONS:
        for metric in ("wer", "delta_wpm", "per", "vfr_at_0_3"):
            assert systems[f"metrics.acbench.{condition}.{metric}"].notna().all(), (condition, metric)
    # The oracle renders rate and whisper; the neutral voice ignores the target.
    oracle, neutral = systems.loc["oracle-control"], systems.loc["neutral"]
    assert oracle["metrics.acbench.original.delta_wpm"] > 40 > neutral["metrics.acbench.original.delta_wpm"]
    assert oracle["metrics.acbench.original.vfr_at_0_3"] > neutral["metrics.acbench.original.vfr_at_0_3"]
    assert oracle["metrics.acbench.original.per"] < neutral["metrics.acbench.original.per"]


def test_run_folder_and_aggregate_cli_agree(
    acbench_run: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = Path(acbench_run["summary"]["run_folder"])
    for name in ("config.resolved.yaml", "lineage.json", "scores.parquet", "leaderboard.json", "report.html"):
        assert (folder / name).is_file(), name
    board = json.loads((folder / "leaderboard.json").read_text())
    assert main(["aggregate", str(folder / "scores.parquet"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["benchmark"] == "acbench"
    assert printed["systems"] == board["systems"]
    for entry in printed["systems"].values():
        assert set(entry["conditions"]) == set(CONDITIONS)
        for metrics in entry["conditions"].values():
            assert metrics["n"] == LIMIT
            assert set(metrics["not_computed"]) == {"emotion_accuracy", "accent_accuracy", "timbre_accuracy"}
            assert all(metrics[k] is None for k in metrics["not_computed"])
    report = (folder / "report.html").read_text()
    assert "Deviations from the paper" in report and "oracle-control" in report
    scores = __import__("pandas").read_parquet(folder / "scores.parquet")
    assert set(scores["condition"]) == set(CONDITIONS)
