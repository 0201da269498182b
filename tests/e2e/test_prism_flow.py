"""End to end: PRISM-Bench through the same Prefect flow on one instance per subset, with the real
cascade judge, run as a user runs it (``omnieval run SUITE --json``), checked through MLflow, the
run folder and the commands that read a run."""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests._reference import check_headline_values
from tests.e2e._cli import fetch, omnieval_all, run_suite_cli, viewing

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "prism-sample"
# A whole flow runs in the first test's setup: 30 min, not the suite's 15, on a loaded 2-core machine.
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.usefixtures("prefect_api"),
    pytest.mark.timeout(1800),
]
SYSTEMS = ("ground-truth", "swapped-audio")
E2E_ANCHOR = "anchor-01-ground-truth-on-01"
"""The pinned drift anchor this run re-judges (of the four the shipped suite re-judges): the
reference of on-01, an instance of this run's dataset; two real stage calls score its four
dimensions."""


def _anchor_subset(dest: Path) -> Path:
    """The shipped prism anchor set cut to :data:`E2E_ANCHOR`, with its pins as pinned."""
    shipped = ROOT / "data" / "anchors" / "prism"
    manifest = json.loads((shipped / "manifest.json").read_text())
    pinned = json.loads((shipped / "pinned.json").read_text())
    manifest["anchors"] = [a for a in manifest["anchors"] if a["id"] == E2E_ANCHOR]
    keep = {k for k in pinned["anchors"] if k.startswith(E2E_ANCHOR + ".")}
    pinned["anchors"] = {k: v for k, v in pinned["anchors"].items() if k in keep}
    pinned["tracks"] = {k: v for k, v in pinned["tracks"].items() if k in keep}
    assert len(manifest["anchors"]) == 1 and len(keep) == 4
    shutil.copytree(shipped / manifest["anchors"][0]["candidate"], dest / manifest["anchors"][0]["candidate"])
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2))
    (dest / "pinned.json").write_text(json.dumps(pinned, indent=2))
    return dest


def _one_per_subset(dest: Path) -> list[dict[str, Any]]:
    """Copy the first sample instance of each subset (and its video) into ``dest``."""
    chosen: dict[str, dict[str, Any]] = {}
    for line in (SAMPLE / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        chosen.setdefault(record["subset"], record)
    dest.mkdir(parents=True)
    for record in chosen.values():
        target = dest / record["reference_video"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SAMPLE / record["reference_video"], target)
    records = list(chosen.values())
    (dest / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return records


@pytest.fixture(scope="module")
def prism_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("prism-e2e")
    records = _one_per_subset(tmp / "data")
    shipped = yaml.safe_load((ROOT / "pipelines" / "prism.yaml").read_text())
    suite = {
        **shipped,
        "suite": "prism-e2e",
        "state_dir": str(tmp / "state"),
        "runs_dir": str(tmp / "runs"),
        "systems": {sid: shipped["systems"][sid] for sid in SYSTEMS},
        "tracking": {"experiment": "omnieval/prism-e2e"},
        "dataset": {"name": "prism-e2e", "path": str(tmp / "data")},
        "drift": {**shipped["drift"], "anchors": str(_anchor_subset(tmp / "anchors"))},
    }
    path = tmp / "prism-e2e.yaml"
    path.write_text(yaml.safe_dump(suite))
    mp = pytest.MonkeyPatch()
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    mp.setenv("MLFLOW_TRACKING_URI", uri)
    mp.setenv("OMNIEVAL_MLFLOW_ARTIFACTS", str(tmp / "artifacts"))
    mp.setenv("OMNIEVAL_PROJECT_ROOT", str(ROOT))
    # The suite lies outside the project's DVC DAG, so the run records nothing in dvc.lock.
    summary = run_suite_cli(path, cwd=tmp)
    yield {"tmp": tmp, "uri": uri, "summary": summary, "records": records, "suite": path}
    mp.undo()


def test_drift_rejudges_the_pinned_clip_per_dimension_with_the_real_judge(prism_run: dict[str, Any]) -> None:
    drift = json.loads((prism_run["tmp"] / "state" / "judge" / "drift.json").read_text())
    assert drift["status"] == "ok", drift["reasons"]
    assert drift["model_calls"] == 2, drift  # one clip, both stages, real calls (a new day's cache)
    assert set(drift["by_track"]) == {"av_coherence", "audio_quality", "expressiveness", "prompt_following"}
    assert drift["n_anchors"] == 4 and drift["mean_shift"] <= drift["threshold"]
    assert {entry["anchor"] for entry in drift["anchors"]} == {
        f"{E2E_ANCHOR}.{track}" for track in drift["by_track"]
    }


def test_mlflow_holds_prism_keys_per_system(prism_run: dict[str, Any]) -> None:
    import mlflow

    mlflow.set_tracking_uri(prism_run["uri"])
    runs = mlflow.search_runs(experiment_names=["omnieval/prism-e2e"], output_format="pandas")
    parent = runs.set_index("run_id").loc[prism_run["summary"]["run_id"]]
    assert parent["tags.omnieval.benchmark"] == "prism"
    children = runs[runs["tags.mlflow.parentRunId"] == prism_run["summary"]["run_id"]]
    systems = children[children["tags.omnieval.kind"] == "system"].set_index("tags.omnieval.system")
    assert set(systems.index) == set(SYSTEMS)
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(prism_run["summary"]["run_id"])}
    assert {"report.html", "leaderboard.json", "report_radar.png"} <= artifacts
    analyses = set(children.loc[children["tags.omnieval.kind"] == "analysis", "tags.mlflow.runName"])
    assert "analysis: stability" in analyses
    for subset in ("on_screen", "off_screen", "mixed"):
        assert systems[f"metrics.prism.{subset}.final"].notna().all(), subset
        assert systems[f"metrics.prism.{subset}.prompt_following"].notna().all(), subset


def test_run_folder_aggregate_and_analyze(prism_run: dict[str, Any], commands: dict[str, str]) -> None:
    folder = Path(prism_run["summary"]["run_folder"])
    for name in ("lineage.json", "scores.parquet", "judgments.parquet", "leaderboard.json", "report.html"):
        assert (folder / name).is_file(), name
    board = json.loads((folder / "leaderboard.json").read_text())
    # Calibrated cells, dimension totals and finals against the independent aggregation.
    assert check_headline_values(folder) > 0
    printed = json.loads(commands["aggregate"])
    assert printed["benchmark"] == "prism"
    assert printed["systems"] == board["systems"]
    # analyze on the run's table writes what the run's report stage wrote (same seed and draws).
    out: Path = prism_run["tmp"] / "analyze"
    written = {p.name: json.loads(p.read_text()) for p in sorted(out.glob("*.json"))}
    assert {"stability.json", "judge_ablation.json", "human_preference.json"} <= set(written)
    for name, document in written.items():
        assert document == json.loads((folder / "analyses" / name).read_text()), name
    stability = written["stability.json"]
    assert stability["status"] == "ok" and {"subsets", "dimensions", "pairs"} <= set(stability)
    report = html.unescape((folder / "report.html").read_text())
    # The CPU judge is named as what it is (the page title alone says "omnieval").
    assert "cpu-cascade" in report and "not the paper's omni judge" in report


def test_scores_rows_follow_the_contract(prism_run: dict[str, Any]) -> None:
    import pandas as pd

    scores = pd.read_parquet(Path(prism_run["summary"]["run_folder"]) / "scores.parquet")
    assert set(scores["benchmark"]) == {"prism"}
    gt = scores[scores["system"] == "ground_truth"]
    assert set(gt["paired_with"]) == set(SYSTEMS)
    assert set(scores.loc[scores["system"] != "ground_truth", "paired_with"]) == {"ground_truth"}
    assert set(scores["subset"]) == {"on_screen", "off_screen", "mixed"}
    # Every cell of the real cascade judge is a valid 0-10 score (its answers are schema-constrained).
    assert set(scores["status"]) <= {"ok", "repaired"}, scores["status"].value_counts().to_dict()
    assert scores["value"].between(0, 10).all()


def test_the_packaged_cascade_judged_every_stage_of_every_pairing(prism_run: dict[str, Any]) -> None:
    """PRISM's one real-judge run in CI: the packaged model through the cpu-cascade panel."""
    lineage = json.loads((Path(prism_run["summary"]["run_folder"]) / "lineage.json").read_text())
    panel = lineage["judges"]["cpu-cascade"]
    assert panel["unavailable"] == [] and panel["judge_kind"] == "cascade"
    # 2 stages (without, then with the caption) x 3 instances x 2 pairings with the ground truth.
    assert panel["model_calls"] == 2 * len(prism_run["records"]) * len(SYSTEMS), panel["model_calls"]
    assert panel["seconds_per_call"] > 0
    judge = panel["judges"]["cpu-qwen2.5-coder-1.5b"]
    assert len(judge["weights_digest"]) == 64 and judge["model"] == "Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf"


def test_ground_truth_beats_swapped_audio(prism_run: dict[str, Any]) -> None:
    """The floor: another clip's sound under the same pictures scores below the clip's own sound.

    Compared cell by cell (instance, dimension, audio type) between the reference and the
    swapped-audio clip it was judged beside, on AV coherence (where the cascade measures audio
    onsets against the drawn events and speech against the moving mouth), over all dimensions, and
    on prompt following per subset.
    """
    import pandas as pd

    scores = pd.read_parquet(Path(prism_run["summary"]["run_folder"]) / "scores.parquet")
    keys = ["subset", "instance_id", "track", "criterion"]
    gt = scores[(scores["system"] == "ground_truth") & (scores["paired_with"] == "swapped-audio")]
    swapped = scores[scores["system"] == "swapped-audio"]
    pairs = gt.merge(swapped, on=keys, suffixes=("_gt", "_swapped"))
    assert len(pairs) == len(gt) == len(swapped) > 0
    av = pairs[pairs["track"] == "av_coherence"]
    assert len(av) > 0 and set(av["subset"]) == {"on_screen", "mixed"}  # no AV cell off screen
    assert av["value_gt"].mean() > av["value_swapped"].mean(), av[[*keys, "value_gt", "value_swapped"]]
    assert pairs["value_gt"].mean() > pairs["value_swapped"].mean(), pairs[
        [*keys, "value_gt", "value_swapped"]
    ]
    # Stage 2 reads each audio type against the caption (the quoted line, the tempo, the events asked
    # for): in every subset the run judges, the clip's own sound follows the prompt better.
    follow = pairs[pairs["track"] == "prompt_following"].groupby("subset")[["value_gt", "value_swapped"]]
    means = follow.mean()
    assert set(means.index) == {"on_screen", "off_screen", "mixed"}
    assert (means["value_gt"] > means["value_swapped"]).all(), means


# -- the commands that read a run, on this one (console script, new processes) ------------------------


@pytest.fixture(scope="module")
def commands(prism_run: dict[str, Any]) -> dict[str, str]:
    tmp: Path = prism_run["tmp"]
    folder = Path(prism_run["summary"]["run_folder"])
    # The run's systems are a reference and a probe, whose tasks measure nothing (refused); the
    # human-study tasks are made for the probe's clips copied as outputs made elsewhere ("sut").
    shutil.copytree(folder / "candidates" / "swapped-audio", tmp / "elsewhere" / "sut")
    return omnieval_all(
        {
            "lineage": ["lineage", folder],
            "compare": ["compare", folder, folder, "--json"],
            "trend": ["trend", "--suite", prism_run["suite"], "--json"],
            "aggregate": ["aggregate", folder / "scores.parquet", "--json"],
            "analyze": ["analyze", folder / "scores.parquet", "--out", tmp / "analyze"],
            "human-tasks": [
                *("human-tasks", "prism", tmp / "data", "--system", "sut"),
                *("--candidates", f"sut={tmp / 'elsewhere' / 'sut'}"),
                *("--per-combination", "1", "--out", tmp / "tasks.json"),
            ],
        },
        cwd=tmp,
    )


def test_lineage_names_the_run_its_dataset_and_judge(
    prism_run: dict[str, Any], commands: dict[str, str]
) -> None:
    folder = Path(prism_run["summary"]["run_folder"])
    lineage = json.loads((folder / "lineage.json").read_text())
    out = commands["lineage"]
    assert out.startswith(f"run {prism_run['summary']['run_id']}  ({folder})"), out[:300]
    assert f"dataset: prism-e2e at {prism_run['tmp'] / 'data'}" in out
    assert f"version (content digest): {lineage['dataset']['version']}" in out
    assert "systems: ground-truth (ground-truth), swapped-audio (swapped-audio)" in out
    assert "judge calls:" in out and "cpu-cascade: " in out


def test_compare_a_run_with_itself_is_inconclusive_with_no_change(
    prism_run: dict[str, Any], commands: dict[str, str]
) -> None:
    document = json.loads(commands["compare"])
    run_id = prism_run["summary"]["run_id"]
    assert document["run_a"]["run_id"] == document["run_b"]["run_id"] == run_id
    # A run against itself measures nothing: never a GO, and it says why.
    assert document["verdict"] == "INCONCLUSIVE", document["reasons"]
    assert "the same run" in document["reasons"][0]
    deltas = [cell["delta"] for system in document["systems"].values() for cell in system.values()]
    assert deltas and all(d == 0.0 for d in deltas), deltas


def test_trend_reads_the_night_from_mlflow(prism_run: dict[str, Any], commands: dict[str, str]) -> None:
    document = json.loads(commands["trend"])
    folder = Path(prism_run["summary"]["run_folder"])
    recorded = json.loads((folder / "trend.json").read_text())  # what the run itself computed
    assert document["nights"] == 1 and [r["run_id"] for r in document["runs"]] == [folder.name]
    assert document["components"] and document["components"] == recorded["components"]


def test_human_tasks_pair_each_reference_with_the_runs_clip(
    prism_run: dict[str, Any], commands: dict[str, str]
) -> None:
    tmp: Path = prism_run["tmp"]
    folder = Path(prism_run["summary"]["run_folder"])
    tasks = json.loads((tmp / "tasks.json").read_text())
    key = json.loads((tmp / "tasks.key.json").read_text())["tasks"]
    records = {r["id"]: (index, r) for index, r in enumerate(prism_run["records"])}
    assert sorted(t["data"]["instance_id"] for t in tasks) == sorted(records)
    for task in tasks:
        data, entry = task["data"], key[str(task["data"]["num"])]
        # Blind: the task names neither the system nor which clip is the ground truth; the key does.
        assert "system" not in data and "order" not in data
        index, record = records[data["instance_id"]]
        assert entry["system"] == "sut" and data["subset"] == record["subset"]
        reference = tmp / "data" / record["reference_video"]
        candidate = folder / "candidates" / "swapped-audio" / "video" / str(index) / "generated.mp4"
        # Blind order: the ground truth is video1 or video2 as the key's order says; each clip is
        # linked under a blind name holding the same bytes.
        expected = [reference, candidate] if entry["order"] == "gt_first" else [candidate, reference]
        shown = [Path(data["video1"]), Path(data["video2"])]
        assert [p.name for p in shown] == [f"{data['num']:04d}-1.mp4", f"{data['num']:04d}-2.mp4"]
        assert [p.read_bytes() for p in shown] == [p.read_bytes() for p in expected], data


def test_view_serves_the_runs_instances_and_its_clips(prism_run: dict[str, Any]) -> None:
    folder = Path(prism_run["summary"]["run_folder"])
    assert prism_run["summary"]["viewer"] == str(folder / "instances.html")
    # The dataset lies outside the project's data/ folder: served only when named (docs/viewer.md).
    with viewing(folder, cwd=prism_run["tmp"], options=("--dataset", str(prism_run["tmp"] / "data"))) as url:
        assert url.endswith("/instances.html"), url
        page = fetch(url).decode()
        assert f"prism-e2e · {folder.name}" in page and all(s in page for s in SYSTEMS)
        base = url.removesuffix("instances.html")
        clip = folder / "candidates" / "swapped-audio" / "video" / "0" / "generated.mp4"
        assert fetch(base + "candidates/swapped-audio/video/0/generated.mp4") == clip.read_bytes()
        reference = prism_run["records"][0]["reference_video"]
        assert fetch(base + "_dataset/" + reference) == (prism_run["tmp"] / "data" / reference).read_bytes()
