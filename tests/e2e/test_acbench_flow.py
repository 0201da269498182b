"""End to end: the OmniACBench suite through the same Prefect flow, run as a user runs it (``omnieval
run SUITE --json``), checked through MLflow, the run folder and the commands that read a run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from tests._reference import check_headline_values
from tests.e2e._cli import fetch, omnieval_all, run_suite_cli, viewing

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
    # The suite lies outside the project's DVC DAG, so the run records nothing in dvc.lock.
    summary = run_suite_cli(path, cwd=tmp)
    yield {"tmp": tmp, "uri": uri, "summary": summary, "suite": path}
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


def test_run_folder_and_aggregate_cli_agree(acbench_run: dict[str, Any], commands: dict[str, str]) -> None:
    folder = Path(acbench_run["summary"]["run_folder"])
    for name in ("config.resolved.yaml", "lineage.json", "scores.parquet", "leaderboard.json", "report.html"):
        assert (folder / name).is_file(), name
    assert acbench_run["summary"]["report"] == str(folder / "report.html")
    board = json.loads((folder / "leaderboard.json").read_text())
    # Every metric of every system and condition against the independent aggregation.
    assert check_headline_values(folder) > 0
    printed = json.loads(commands["aggregate"])
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
    scores = pd.read_parquet(folder / "scores.parquet")
    assert set(scores["condition"]) == set(CONDITIONS)


# -- the commands that read a run, on this one (console script, new processes) ------------------------

METRICS_ROWS = 4
"""``omnieval metrics acbench`` re-scores the sample's first four instances (the speech-rate ones):
Whisper on 4 clips, not the run's 28."""
CAPABILITIES = [
    {"system": "neutral", "setting": "script_only", "instance_id": "ac-0001", "wer": 0.25},
    {
        "system": "oracle-control",
        "setting": "visual_cue",
        "instance_id": "ac-0001",
        "answer": "fast",
        "choice": "Fast",
    },
]
"""Per-item capability results (docs/acbench.md) for ``analyze --capabilities``."""


@pytest.fixture(scope="module")
def commands(acbench_run: dict[str, Any]) -> dict[str, str]:
    tmp: Path = acbench_run["tmp"]
    folder = Path(acbench_run["summary"]["run_folder"])
    subset = tmp / "first-instances"
    shutil.copytree(ROOT / "data" / "acbench-sample", subset)
    manifest = (subset / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    (subset / "manifest.jsonl").write_text("\n".join(manifest[:METRICS_ROWS]) + "\n", encoding="utf-8")
    (tmp / "capabilities.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CAPABILITIES))
    return omnieval_all(
        {
            "lineage": ["lineage", folder],
            "compare": ["compare", folder, folder, "--json"],
            "trend": ["trend", "--suite", acbench_run["suite"], "--json", "--out", tmp / "trend"],
            "aggregate": ["aggregate", folder / "scores.parquet", "--json"],
            "analyze": [
                *("analyze", folder / "scores.parquet", "--out", tmp / "analyses"),
                *("--capabilities", tmp / "capabilities.jsonl"),
            ],
            "metrics": [
                *("metrics", "acbench", subset, folder / "candidates" / "oracle-control" / "original"),
                *("--system", "oracle-control", "--condition", "original", "--json"),
                *("--out", tmp / "metrics.parquet", "--cache-dir", tmp / "metrics-cache"),
            ],
        },
        cwd=tmp,
    )


def test_lineage_names_the_run_its_dataset_and_systems(
    acbench_run: dict[str, Any], commands: dict[str, str]
) -> None:
    folder = Path(acbench_run["summary"]["run_folder"])
    lineage = json.loads((folder / "lineage.json").read_text())
    out = commands["lineage"]
    assert out.startswith(f"run {acbench_run['summary']['run_id']}  ({folder})"), out[:300]
    assert f"version (content digest): {lineage['dataset']['version']}" in out
    assert "systems: neutral (neutral), oracle-control (oracle-control)" in out
    assert "asr.sha256: " in out  # the metric models behind the numbers


def test_compare_a_run_with_itself_is_inconclusive_with_no_change(
    acbench_run: dict[str, Any], commands: dict[str, str]
) -> None:
    document = json.loads(commands["compare"])
    run_id = acbench_run["summary"]["run_id"]
    assert document["run_a"]["run_id"] == document["run_b"]["run_id"] == run_id
    # A run against itself measures nothing: never a GO, and it says why.
    assert document["verdict"] == "INCONCLUSIVE", document["reasons"]
    assert "the same run" in document["reasons"][0]
    assert set(document["systems"]) == set(SYSTEMS)
    deltas = [cell["delta"] for system in document["systems"].values() for cell in system.values()]
    assert deltas and all(d == 0.0 for d in deltas), deltas


def test_trend_reads_the_night_from_mlflow(acbench_run: dict[str, Any], commands: dict[str, str]) -> None:
    document = json.loads(commands["trend"])
    folder = Path(acbench_run["summary"]["run_folder"])
    recorded = json.loads((folder / "trend.json").read_text())  # what the run itself computed
    assert document["nights"] == 1 and [r["run_id"] for r in document["runs"]] == [folder.name]
    assert document["components"] == recorded["components"]
    assert {c["system"] for c in document["components"]} == set(SYSTEMS)
    assert (
        json.loads((acbench_run["tmp"] / "trend" / "trend.json").read_text())["components"]
        == (recorded["components"])
    )


def test_analyze_puts_the_capabilities_beside_the_runs_task_wer(
    acbench_run: dict[str, Any], commands: dict[str, str]
) -> None:
    assert "wrote 2 analyses (1 ran, 1 skipped)" in commands["analyze"]
    table3 = json.loads((acbench_run["tmp"] / "analyses" / "capability_diagnostics.json").read_text())
    assert table3["status"] == "ok"
    board = json.loads((Path(acbench_run["summary"]["run_folder"]) / "leaderboard.json").read_text())
    for system in SYSTEMS:  # the full task's WER is the leaderboard's, in the same unit
        wer = board["systems"][system]["conditions"]["original"]["wer"]
        assert table3["systems"][system]["task_wer_original"] == pytest.approx(wer)
    assert table3["systems"]["neutral"]["script_only"] == {"wer": pytest.approx(25.0), "n": 1}
    assert table3["systems"]["oracle-control"]["visual_cue"]["accuracy"] == pytest.approx(100.0)
    skipped = json.loads((acbench_run["tmp"] / "analyses" / "human_validation.json").read_text())
    assert skipped["status"] == "skipped" and "--humans" in skipped["reason"]


def test_metrics_acbench_rescores_the_runs_candidates_to_the_same_rows(
    acbench_run: dict[str, Any], commands: dict[str, str]
) -> None:
    printed = json.loads(commands["metrics"])
    assert printed["n"] == METRICS_ROWS and printed["wer"] is not None and printed["delta_wpm"] > 40
    mine = pd.read_parquet(acbench_run["tmp"] / "metrics.parquet")
    run = pd.read_parquet(Path(acbench_run["summary"]["run_folder"]) / "scores.parquet")
    run = run[
        (run["system"] == "oracle-control")
        & (run["condition"] == "original")
        & run["instance_id"].isin(mine["instance_id"])
    ]
    key = ["system", "instance_id", "index", "track", "component", "criterion", "condition"]
    assert len(mine) == len(run) == 2 * METRICS_ROWS  # WER and WPM per speech-rate instance
    joined = mine.merge(run, on=key, suffixes=("_cli", "_run"), validate="one_to_one")
    assert len(joined) == len(mine)
    assert (joined["status_cli"] == joined["status_run"]).all()
    assert joined["value_cli"].to_numpy() == pytest.approx(joined["value_run"].to_numpy())


def test_view_serves_the_runs_instances_and_its_clips(acbench_run: dict[str, Any]) -> None:
    folder = Path(acbench_run["summary"]["run_folder"])
    assert acbench_run["summary"]["viewer"] == str(folder / "instances.html")
    with viewing(folder, cwd=acbench_run["tmp"]) as url:
        assert url.endswith("/instances.html"), url
        page = fetch(url).decode()
        assert f"acbench-e2e · {folder.name}" in page and all(s in page for s in SYSTEMS)
        base = url.removesuffix("instances.html")
        clip = fetch(base + "candidates/oracle-control/original/speech/0/generated.wav")
        assert (
            clip[:4] == b"RIFF"
            and clip
            == (
                folder / "candidates" / "oracle-control" / "original" / "speech" / "0" / "generated.wav"
            ).read_bytes()
        )
        first = json.loads((ROOT / "data" / "acbench-sample" / "manifest.jsonl").read_text().splitlines()[0])
        assert fetch(base + "_dataset/" + first["instruction_audio"])[:4] == b"RIFF"
