"""End to end: the Prefect nightly flow on part of the sample, checked through what MLflow holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from omnieval.cli import main

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.usefixtures("prefect_api")]


def _suite(tmp: Path, *, dataset: Path, limit: int, systems: dict[str, Any]) -> Path:
    suite = yaml.safe_load((ROOT / "pipelines" / "nightly.yaml").read_text())
    suite.update(
        suite="e2e",
        state_dir=str(tmp / "state"),
        runs_dir=str(tmp / "runs"),
        systems=systems,
        analyses={"enabled": True, "seed": 0, "bootstrap_draws": 200},
        tracking={"experiment": "omnieval/e2e"},
    )
    suite["dataset"] = {"name": "storybench-sample", "path": str(dataset), "limit": limit}
    path = tmp / "e2e.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def _mlflow_runs(uri: str) -> Any:
    import mlflow

    mlflow.set_tracking_uri(uri)
    return mlflow.search_runs(experiment_names=["omnieval/e2e"], output_format="pandas")


@pytest.fixture(scope="module")
def flow_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("e2e")
    mp = pytest.MonkeyPatch()
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    mp.setenv("MLFLOW_TRACKING_URI", uri)
    mp.setenv("OMNIEVAL_MLFLOW_ARTIFACTS", str(tmp / "artifacts"))
    mp.setenv("OMNIEVAL_PROJECT_ROOT", str(ROOT))
    systems = {
        "oracle": {"kind": "oracle"},
        "copy-current": {"kind": "copy-current"},
        "shuffled": {"kind": "shuffled", "seed": 0},
    }
    suite = _suite(tmp, dataset=ROOT / "data" / "storybench-sample", limit=4, systems=systems)
    from omnieval.runner import run_suite

    first = run_suite(suite, sync_dvc=False)
    second = run_suite(suite, sync_dvc=False)
    yield {"tmp": tmp, "uri": uri, "suite": suite, "first": first, "second": second}
    mp.undo()


def test_mlflow_holds_parent_and_child_runs_with_the_contract_metrics(flow_env: dict[str, Any]) -> None:
    runs = _mlflow_runs(flow_env["uri"])
    first_parent = flow_env["first"]["run_id"]
    children = runs[runs["tags.mlflow.parentRunId"] == first_parent]
    systems = children[children["tags.omnieval.kind"] == "system"]
    assert set(systems["tags.omnieval.system"]) == {"oracle", "copy-current", "shuffled"}
    by_system = systems.set_index("tags.omnieval.system")
    # The first rows all come from one book, so copy-current vs shuffled is not ordered here;
    # tests/e2e/test_sample_ordering.py checks the full order on the whole sample.
    for key in ("storybench.valid_only.bertscore_f1", "storybench.valid_only.image_similarity"):
        values = by_system[f"metrics.{key}"]
        assert values["oracle"] > max(values["copy-current"], values["shuffled"]), key
    assert (children["tags.omnieval.kind"] == "analysis").any()
    parent = runs.set_index("run_id").loc[first_parent]
    assert parent["tags.omnieval.dataset.version"]
    assert parent["tags.omnieval.git_sha"]


def test_text_judge_ranks_oracle_above_shuffled(flow_env: dict[str, Any]) -> None:
    board = json.loads((Path(flow_env["first"]["run_folder"]) / "leaderboard.json").read_text())
    valid = {s: v["valid_only"] for s, v in board["systems"].items()}
    # The packaged 1.5B judge saturates on these four rows (all from one book), so only require that
    # it never prefers the floor; the full-sample ordering is reported by `make run`.
    assert valid["oracle"]["judge.text"] >= valid["shuffled"]["judge.text"]
    for system in ("oracle", "copy-current", "shuffled"):
        assert 1.0 <= valid[system]["judge.text"] <= 10.0
        assert valid[system]["judge.speech"] is not None
    assert valid["oracle"]["judge.image"] is None  # no vision model on CPU: not computed, not zero
    assert "judge.image" not in valid["oracle"]["total_average_components"]


def test_run_folder_has_the_contract_files(flow_env: dict[str, Any]) -> None:
    folder = Path(flow_env["first"]["run_folder"])
    for name in (
        "config.resolved.yaml",
        "lineage.json",
        "scores.parquet",
        "judgments.parquet",
        "leaderboard.json",
        "report.html",
        "gates/dataset.json",
    ):
        assert (folder / name).is_file(), name
    assert (folder / "candidates" / "oracle" / "speech" / "0" / "generated.wav").is_file()
    lineage = json.loads((folder / "lineage.json").read_text())
    assert lineage["dataset"]["version"] and lineage["code"]["git_sha"]


def test_second_run_reuses_everything_and_calls_no_model(flow_env: dict[str, Any]) -> None:
    second = flow_env["second"]
    assert all(second["skipped"].values()), second["skipped"]
    assert second["judge_model_calls"] == 0
    assert flow_env["first"]["judge_model_calls"] > 0
    assert second["run_id"] != flow_env["first"]["run_id"]


def test_bad_dataset_stops_the_run_with_exit_2_and_a_failed_run(
    flow_env: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp: Path = flow_env["tmp"]
    broken = tmp / "broken"
    shutil.copytree(ROOT / "data" / "storybench-sample", broken)
    victim = next((broken / "images").rglob("*.png"))
    victim.write_bytes(b"not a png")
    (tmp / "bad").mkdir()
    suite = _suite(tmp / "bad", dataset=broken, limit=2, systems={"oracle": {"kind": "oracle"}})
    code = main(["run", str(suite)])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert victim.name in err
    runs = _mlflow_runs(flow_env["uri"])
    failed = runs[runs["tags.omnieval.failed"].notna()] if "tags.omnieval.failed" in runs else runs.iloc[0:0]
    assert len(failed) == 1 and failed.iloc[0]["status"] == "FAILED"
    assert not (tmp / "bad" / "state" / "candidates").exists()
