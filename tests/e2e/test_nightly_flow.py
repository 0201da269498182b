"""End to end: the Prefect nightly flow on part of the sample, run as a user runs it and checked
through what MLflow holds, the run folders and the commands that read a run.

The flow runs inside a throwaway copy of the project's DVC DAG (``dvc.yaml``, the suites, the code
and the sample the stages depend on), so a real ``dvc status`` can check that ``dvc repro`` has
nothing to do after a run. The first night is ``make run`` in that copy, the second ``omnieval run
pipelines/nightly.yaml --json``: the console script in a new process, which syncs ``dvc.lock``. The
suite keeps the shipped drift block on three of the nine pinned anchors (a good and a bad narration,
a good spoken line): the real CPU judge re-judges them, on both judged tracks. This is storybench's one real-judge run in CI; the tests that check the
judge's ranking and health read it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests._reference import check_headline_values
from tests.e2e._cli import OMNIEVAL, omnieval_all, run_suite_cli, viewing

ROOT = Path(__file__).resolve().parents[2]
# A whole flow runs in the first test's setup: 30 min, not the suite's 15, on a loaded 2-core machine.
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.usefixtures("prefect_api"),
    pytest.mark.timeout(1800),
]
# Two transitions of one book, two systems, four tracks: 2 x 2 x 4 = 16 verdicts, plus 3 drift anchors (E2E_ANCHORS).
LIMIT = 2
SYSTEMS = {"oracle": {"kind": "oracle"}, "shuffled": {"kind": "shuffled", "seed": 0}}


def _suite(
    tmp: Path, *, dataset: Path, limit: int, systems: dict[str, Any], state: Path | None = None
) -> Path:
    suite = yaml.safe_load((ROOT / "pipelines" / "nightly.yaml").read_text())
    suite.update(
        suite="e2e",
        state_dir=str(state or tmp / "state"),
        runs_dir=str(tmp / "runs"),
        systems=systems,
        analyses={"enabled": True, "seed": 0, "bootstrap_draws": 200},
        tracking={"experiment": "omnieval/e2e"},
    )
    suite["dataset"] = {"name": "storybench-sample", "path": str(dataset), "limit": limit}
    suite["drift"] = {**suite["drift"], "anchors": str(_anchor_subset(tmp / "anchors"))}
    path = tmp / "e2e.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


E2E_ANCHORS = ("anchor-01-oracle-1", "anchor-06-shuffled-15", "anchor-07-speech-oracle-1")
"""The pinned drift anchors this run re-judges: a good and a bad narration and a good spoken line
(of the nine `make run` re-judges; each anchor is a real verdict of ~25-55 s, so CI takes three:
both judged tracks, through the benchmark's own judging with its audio describer)."""


def _anchor_subset(dest: Path) -> Path:
    """The shipped anchor set cut to :data:`E2E_ANCHORS`, with their pinned scores and hashes as pinned."""
    shipped = ROOT / "data" / "anchors" / "storybench"
    if dest.exists():
        return dest
    manifest = json.loads((shipped / "manifest.json").read_text())
    pinned = json.loads((shipped / "pinned.json").read_text())
    manifest["anchors"] = [a for a in manifest["anchors"] if a["id"] in E2E_ANCHORS]
    pinned["anchors"] = {k: v for k, v in pinned["anchors"].items() if k in E2E_ANCHORS}
    pinned["tracks"] = {k: v for k, v in pinned["tracks"].items() if k in E2E_ANCHORS}
    assert len(manifest["anchors"]) == len(pinned["anchors"]) == len(E2E_ANCHORS)
    for anchor in manifest["anchors"]:
        shutil.copytree(shipped / anchor["candidate"], dest / anchor["candidate"])
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2))
    (dest / "pinned.json").write_text(json.dumps(pinned, indent=2))
    return dest


def _dvc() -> str:
    found = shutil.which("dvc") or str(Path(sys.executable).parent / "dvc")
    assert Path(found).is_file(), "dvc is not installed: run `make setup`"
    return found


def _project_copy(tmp: Path) -> Path:
    """The project's DVC DAG with what its storybench stages depend on, in a folder of its own."""
    project = tmp / "project"
    project.mkdir()
    shutil.copyfile(ROOT / "dvc.yaml", project / "dvc.yaml")
    for folder in ("pipelines", "expectations", "src/omnieval", "data/storybench-sample"):
        shutil.copytree(ROOT / folder, project / folder, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([_dvc(), "init", "--no-scm", "--quiet"], cwd=project, check=True, timeout=300)
    shutil.copyfile(ROOT / ".dvcignore", project / ".dvcignore")  # what the project's outs leave out
    return project


def _mlflow_runs(uri: str) -> Any:
    import mlflow

    mlflow.set_tracking_uri(uri)
    return mlflow.search_runs(experiment_names=["omnieval/e2e"], output_format="pandas")


def _setup_inputs() -> tuple[str, ...]:
    """What the Makefile's setup stamp (``.venv/.omnieval-setup``) depends on, read from its rule."""
    text = (ROOT / "Makefile").read_text()
    variables = dict(re.findall(r"^([A-Z_]+)\s*:=\s*(\S+)\s*$", text, flags=re.MULTILINE))
    (prerequisites,) = re.findall(r"^\$\(STAMP\):(.*)$", text, flags=re.MULTILINE)
    return tuple(
        re.sub(r"\$\(([A-Z_]+)\)", lambda m: variables[m.group(1)], name) for name in prerequisites.split()
    )


SETUP_INPUTS = _setup_inputs()


def test_setup_inputs_follow_the_makefile() -> None:
    assert {"requirements-cpu.lock", "pyproject.toml", "scripts/setup.sh"} <= set(SETUP_INPUTS)
    assert all((ROOT / name).is_file() for name in SETUP_INPUTS), SETUP_INPUTS


def _make_ready(project: Path) -> None:
    """Make ``make run`` in the project copy run the flow with the checkout's environment, setup done.

    ``make run`` runs in the project copy (its working directory is the copy: the flow, the DVC
    stages and ``dvc.lock`` are the copy's, as for a user in their checkout). The Makefile's ``setup``
    is a no-op when ``.venv/.omnieval-setup`` is newer than ``SETUP_INPUTS``; the copy gets its own
    ``.venv`` (links to every entry of the checkout's, so ``.venv/bin/python`` is the same interpreter
    and packages) with its own stamp, newer than its copies of those inputs. The checkout's stamp may
    be older than an input a developer just edited, and touching it would hide a setup they need.
    """
    venv = project / ".venv"
    venv.mkdir()
    for entry in (ROOT / ".venv").iterdir():
        if entry.name != ".omnieval-setup":
            (venv / entry.name).symlink_to(entry)
    an_hour_ago = time.time() - 3600
    for name in SETUP_INPUTS:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, project / name)
        os.utime(project / name, (an_hour_ago, an_hour_ago))
    (venv / ".omnieval-setup").touch()


def _judge_calls(folder: Path) -> tuple[int, int]:
    """The judge calls a night made (lineage ``this_run``): its panels' own, and its drift anchors'."""
    judges = json.loads((folder / "lineage.json").read_text())["judges"].values()
    panel_calls = sum(int(panel["this_run"]["model_calls"]) for panel in judges)
    drift_calls = sum(int(panel["this_run"].get("drift_anchor_model_calls", 0)) for panel in judges)
    return panel_calls, drift_calls


def _make_run(project: Path) -> dict[str, Any]:
    """``make run`` as a user types it in the project; the run named by the lines it closes with."""
    started_on = dt.date.today()
    made = subprocess.run(
        ["make", "-C", str(project), "-f", str(ROOT / "Makefile"), "run"],
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=1700,
    )
    assert made.returncode == 0, (made.stdout[-3000:], made.stderr[-8000:])
    assert "scripts/setup.sh" not in made.stdout, "make run ran setup: the stamp was not newer"
    closing = dict(re.findall(r"^  (run folder|report|viewer|verdict): +(.+)$", made.stdout, re.M))
    [run_id] = re.findall(r"^run (\S+) finished in [\d.]+ s$", made.stdout, re.M)
    folder = Path(closing["run folder"])
    panel_calls, drift_calls = _judge_calls(folder)
    return {
        "run_id": run_id,
        "run_folder": str(folder),
        "closing": closing,
        "judge_model_calls": panel_calls + drift_calls,
        "panel_model_calls": panel_calls,
        "drift_model_calls": drift_calls,
        # The drift anchors' answers are cached per calendar day, so the days a run spans matter.
        "days": (started_on, dt.date.today()),
        "make_stdout": made.stdout,
    }


@pytest.fixture(scope="module")
def flow_env(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("e2e")
    project = _project_copy(tmp)
    _make_ready(project)
    mp = pytest.MonkeyPatch()
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    mp.setenv("MLFLOW_TRACKING_URI", uri)
    mp.setenv("OMNIEVAL_MLFLOW_ARTIFACTS", str(tmp / "artifacts"))
    mp.setenv("OMNIEVAL_PROJECT_ROOT", str(project))
    mp.setenv("PATH", f"{Path(_dvc()).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    # The suite is the project's pipelines/nightly.yaml (what `make run` runs), so the run records
    # the DVC stages that name it; its state lives where those stages' outputs are declared
    # (state/<suite>/).
    written = _suite(
        tmp,
        dataset=project / "data" / "storybench-sample",
        limit=LIMIT,
        systems=SYSTEMS,
        state=project / "state" / "e2e",
    )
    suite = project / "pipelines" / "nightly.yaml"
    shutil.copyfile(written, suite)
    first = _make_run(project)
    first_drift = json.loads((project / "state" / "e2e" / "judge" / "drift.json").read_text())
    second_started_on = dt.date.today()
    second = run_suite_cli(Path("pipelines/nightly.yaml"), cwd=project)
    second["days"] = (second_started_on, dt.date.today())
    second["panel_model_calls"], second["drift_model_calls"] = _judge_calls(Path(second["run_folder"]))
    yield {
        "tmp": tmp,
        "uri": uri,
        "suite": suite,
        "project": project,
        "first": first,
        "second": second,
        "first_drift": first_drift,
    }
    mp.undo()


def test_make_run_closes_with_the_report_the_viewer_and_the_verdict(flow_env: dict[str, Any]) -> None:
    first = flow_env["first"]
    folder = Path(first["run_folder"])
    assert folder.parent.parent == flow_env["tmp"] / "runs" and folder.name == first["run_id"]
    closing = first["closing"]
    assert closing["report"] == str(folder / "report.html") and (folder / "report.html").is_file()
    assert closing["viewer"] == f"omnieval view {folder}  (serves {folder / 'instances.html'})"
    assert (folder / "instances.html").is_file()
    regression = json.loads((folder / "regression.json").read_text())
    assert closing["verdict"] == f"{regression['verdict']}  (regression.json in the run folder)"
    # The Makefile ran the suite it names by default, with the project's environment.
    assert ".venv/bin/python -m omnieval run pipelines/nightly.yaml" in first["make_stdout"]
    # The second night, through the console script: the same summary keys, pointing at its folder.
    second = flow_env["second"]
    assert second["report"] == str(Path(second["run_folder"]) / "report.html")
    assert second["viewer"] == str(Path(second["run_folder"]) / "instances.html")
    assert Path(second["stage_report"]).is_file()
    # The second night judged the same candidates with the same judge (answers from the cache): two
    # identical nights are GO, never NO-GO, and not INCONCLUSIVE either (nothing changed to doubt).
    night = json.loads((Path(second["run_folder"]) / "regression.json").read_text())
    assert second["regression"] == night["verdict"] == "GO", night["reasons"]
    assert night["baseline"]["run_id"] == first["run_id"]


def test_mlflow_holds_parent_and_child_runs_with_the_contract_metrics(flow_env: dict[str, Any]) -> None:
    runs = _mlflow_runs(flow_env["uri"])
    first_parent = flow_env["first"]["run_id"]
    children = runs[runs["tags.mlflow.parentRunId"] == first_parent]
    systems = children[children["tags.omnieval.kind"] == "system"]
    assert set(systems["tags.omnieval.system"]) == set(SYSTEMS)
    by_system = systems.set_index("tags.omnieval.system")
    # tests/e2e/test_sample_ordering.py checks the full order on the whole sample.
    for key in ("storybench.valid_only.bertscore_f1", "storybench.valid_only.image_similarity"):
        values = by_system[f"metrics.{key}"]
        assert values["oracle"] > values["shuffled"], key
    assert (children["tags.omnieval.kind"] == "analysis").any()
    parent = runs.set_index("run_id").loc[first_parent]
    assert parent["tags.omnieval.dataset.version"]
    assert parent["tags.omnieval.git_sha"]
    # The deviation ledger's ids on the parent run only (FORMATS.md section 12).
    ledger = json.loads((Path(flow_env["first"]["run_folder"]) / "lineage.json").read_text())["deviations"]
    assert parent["tags.omnieval.deviations"] == ",".join(d["id"] for d in ledger)
    assert systems["tags.omnieval.deviations"].isna().all()
    # Tokens and time per judge on the parent run (docs/judges.md, "Tokens, time and cost").
    calls = [c for c in runs.columns if c.startswith("metrics.usage.judge.") and c.endswith(".calls")]
    assert calls and parent[calls].fillna(0).sum() > 0, calls
    tokens = [
        c for c in runs.columns if c.startswith("metrics.usage.judge.") and c.endswith(".prompt_tokens")
    ]
    assert tokens and parent[tokens].fillna(0).sum() > 0, tokens


def test_real_judge_ranks_the_oracle_above_the_floor_and_is_not_degenerate(flow_env: dict[str, Any]) -> None:
    """The default suite's targets for the packaged CPU judge (its `cpu` prompts): on the rows
    `make run` judges, the oracle above the shuffled floor on every row of both judged tracks, and
    the judge's health not degenerate (>= 5 distinct greedy values, < 50 % of verdicts giving every
    criterion the same score). This run is the one real-judge run of storybench in CI."""
    import pandas as pd

    folder = Path(flow_env["first"]["run_folder"])
    board = json.loads((folder / "leaderboard.json").read_text())
    valid = {s: v["valid_only"] for s, v in board["systems"].items()}
    # The automatic metrics, which compare with the next page, rank them strictly (the oracle is it).
    for component in ("bertscore_f1", "image_similarity"):
        assert valid["oracle"][component] > valid["shuffled"][component], (component, valid)
    scores = pd.read_parquet(folder / "scores.parquet")
    judged = scores[(scores.component == "judge") & scores.track.isin(JUDGED_TRACKS)]
    assert set(judged["status"]) == {"ok"}, judged[judged.status != "ok"]
    # Every track is judged on CPU (image and integrated through cascades of measured facts).
    unjudged = scores[(scores.component == "judge") & ~scores.track.isin(JUDGED_TRACKS)]
    assert unjudged.empty, unjudged
    per_row = judged.pivot_table(
        index=["track", "instance_id"], columns="system", values="value", aggfunc="mean"
    )
    assert set(per_row.index.get_level_values("track")) == set(JUDGED_TRACKS)
    assert len(per_row) == len(JUDGED_TRACKS) * LIMIT
    assert (per_row["oracle"] > per_row["shuffled"]).all(), per_row.to_dict()
    for system in SYSTEMS:
        assert 1.0 <= valid[system]["judge.text"] <= 10.0
        assert valid[system]["judge.speech"] is not None
    assert valid["oracle"]["judge.text"] > valid["shuffled"]["judge.text"], valid
    assert valid["oracle"]["judge.speech"] > valid["shuffled"]["judge.speech"], valid
    for track in ("image", "integrated"):  # the cascades: oracle above shuffled, in the Total Average
        assert valid["oracle"][f"judge.{track}"] > valid["shuffled"][f"judge.{track}"], valid
        assert f"judge.{track}" in valid["oracle"]["total_average_components"]
    health = json.loads((folder / "health.json").read_text())
    figures = health["judges"]["cpu/cpu-qwen2.5-coder-1.5b"]
    assert health["degenerate"] == [] and not figures["degenerate"], figures
    assert figures["distinct_values"] >= 5, figures
    assert figures["identical_share"] < 0.5, figures


def test_drift_rejudges_the_pinned_anchors_with_the_real_judge(flow_env: dict[str, Any]) -> None:
    drift = flow_env["first_drift"]
    # The anchors lie outside the judged rows (dataset.limit); the check still judges each of them.
    assert drift["status"] == "ok", drift["reasons"]
    assert drift["n_anchors"] == len(E2E_ANCHORS) and drift["model_calls"] == len(E2E_ANCHORS), drift
    assert drift["mean_shift"] is not None and drift["mean_shift"] <= drift["threshold"]
    current = {entry["anchor"]: entry["current"] for entry in drift["anchors"]}
    # The real judge still tells the pinned good narration from the pinned bad one.
    assert current["anchor-01-oracle-1"] > current["anchor-06-shuffled-15"], current
    # Each judged track has its own shift: the spoken line went through the speech cascade.
    assert set(drift["by_track"]) == {"text", "speech"}, drift["by_track"]
    assert drift["by_track"]["speech"]["n_anchors"] == 1
    # The verdict of the night carries it: a run judged with a drifted judge would be INCONCLUSIVE.
    assert flow_env["first"]["judge_model_calls"] >= len(E2E_ANCHORS)


def test_instances_viewer_of_the_run_opens_in_a_browser(flow_env: dict[str, Any]) -> None:
    """instances.html of the real run, served by `omnieval view`: filter to one system, open an
    instance, find its input image, its audio candidate and the judge's rationale, and fetch them."""
    import mlflow
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait
    from tests._browser import chromium, fetch_statuses, wait_ready

    folder = Path(flow_env["first"]["run_folder"])
    assert (folder / "instances.html").is_file()
    mlflow.set_tracking_uri(flow_env["uri"])
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(flow_env["first"]["run_id"])}
    assert "instances.html" in artifacts
    with viewing(folder, cwd=flow_env["project"]) as url:
        assert url.endswith("/instances.html"), url
        with chromium() as driver:
            driver.get(url)
            wait_ready(driver)
            Select(driver.find_element(By.ID, "f-system")).select_by_visible_text("oracle")
            driver.find_elements(By.CSS_SELECTOR, "#list tr.inst")[0].click()
            WebDriverWait(driver, 20).until(
                lambda d: d.find_elements(By.CSS_SELECTOR, ".detail .sys[data-system]")
            )
            shown = {
                e.get_attribute("data-system")
                for e in driver.find_elements(By.CSS_SELECTOR, ".detail .sys[data-system]")
            }
            assert shown == {"oracle"}
            images = driver.find_elements(By.CSS_SELECTOR, ".detail img.player")
            audio = driver.find_elements(By.CSS_SELECTOR, ".detail audio.player, .detail video.player")
            rationales = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".detail .rationale")]
            assert len(images) >= 2, "the input page's image and the oracle's image"
            assert audio, "the oracle's speech"
            assert any(len(r) > 20 for r in rationales), rationales
            urls = [e.get_attribute("src") for e in images + audio]
            assert fetch_statuses(driver, urls) == [200] * len(urls), urls
            assert all(driver.execute_script("return arguments[0].naturalWidth", e) > 0 for e in images)


#: Tracks the cpu panel judges with the packaged model: every track (speech, image and integrated
#: through cascades of measured facts).
JUDGED_TRACKS = ("text", "speech", "image", "integrated")


def check_run_folder_contents(
    folder: Path, *, suite: str, systems: set[str], n_instances: int, judged_tracks: tuple[str, ...]
) -> None:
    """Assert that a storybench run folder's files hold this run (FORMATS.md sections 2-4): the
    suite, its systems and ``n_instances`` examples each, with the contracts' keys and types."""
    import pandas as pd

    from omnieval.benchmarks import get_benchmark
    from omnieval.candidates import Modality, read_candidate
    from omnieval.judges import JUDGMENT_COLUMNS
    from omnieval.scores import ALL_STATUSES, ROW_KEY, SCORE_COLUMNS, VALUED_STATUSES

    indices = set(range(n_instances))
    config = yaml.safe_load((folder / "config.resolved.yaml").read_text())
    assert (config["suite"], config["benchmark"]) == (suite, "storybench"), config
    assert set(config["systems"]) == systems and config["dataset"]["limit"] == n_instances
    lineage = json.loads((folder / "lineage.json").read_text())
    assert lineage["run_id"] == folder.name and lineage["suite"] == suite
    dataset, code = lineage["dataset"], lineage["code"]
    assert all(isinstance(dataset[k], str) and dataset[k] for k in ("name", "version", "dvc_md5", "git_rev"))
    assert isinstance(code["git_dirty"], bool) and code["git_sha"]
    assert code["package_digest"] == config["resolved"]["code_digest"]
    assert set(lineage["systems"]) == systems and isinstance(lineage["seeds"]["analyses"], int)
    assert lineage["packages"] and all(isinstance(v, str) for v in lineage["packages"].values())
    assert lineage["judges"], "no judge lineage"
    for panel in lineage["judges"].values():  # judge checkpoints and prompt hashes
        assert set(panel["prompts"]) == set(judged_tracks), panel["prompts"]
        assert all(len(p["sha256"]) == 64 for p in panel["prompts"].values())
        assert all("revision" in j and "weights_sha256" in j for j in panel["judges"].values())
    gates = {p.stem: json.loads(p.read_text()) for p in (folder / "gates").glob("*.json")}
    assert {"dataset", "scores", "judgments", *(f"candidates-{s}" for s in systems)} <= set(gates)
    assert all(g["success"] is True and g["n_failed"] == 0 for g in gates.values()), {
        name: g["success"] for name, g in gates.items()
    }

    for system in systems:  # FORMATS.md section 2, every output present and decodable
        for modality in (Modality.TEXT, Modality.IMAGE, Modality.SPEECH):
            for index in indices:
                assert read_candidate(folder / "candidates" / system, modality, index).present
    scores = pd.read_parquet(folder / "scores.parquet")  # FORMATS.md section 3
    assert list(scores.columns) == list(SCORE_COLUMNS)
    assert scores["index"].dtype == "int64" and scores["value"].dtype == "float64"
    assert all(pd.api.types.is_string_dtype(scores[c]) for c in SCORE_COLUMNS if c not in ("index", "value"))
    assert set(scores["status"]) <= ALL_STATUSES and set(scores["benchmark"]) == {"storybench"}
    assert (scores["value"].notna() == scores["status"].isin(VALUED_STATUSES)).all()
    assert not scores.duplicated(list(ROW_KEY)).any()
    assert set(scores["system"]) == systems and len(scores) == gates["scores"]["n_rows"]
    per_example = scores.groupby(["system", "index"]).size()
    assert set(per_example.index) == {(s, i) for s in systems for i in indices}
    assert per_example.nunique() == 1, per_example  # every example has the same rows
    judgments = pd.read_parquet(folder / "judgments.parquet")
    assert list(judgments.columns)[: len(JUDGMENT_COLUMNS)] == list(JUDGMENT_COLUMNS)
    assert len(judgments) == gates["judgments"]["n_rows"]
    key = ["system", "instance_id", "track", "judge"]
    judge_rows = scores[scores["component"] == "judge"]
    assert set(map(tuple, judgments[key].to_numpy())) == set(map(tuple, judge_rows[key].to_numpy()))
    assert not judgments.duplicated(key).any()
    judged = judgments[judgments["track"].isin(judged_tracks)]
    # One judgment per system, judged track and example (whatever its status).
    assert judged.groupby(["system", "track"]).size().to_dict() == {
        (s, t): n_instances for s in systems for t in judged_tracks
    }
    ok = judged[judged["status"] == "ok"]
    assert all(isinstance(json.loads(r), dict) and json.loads(r) for r in ok["rationales"])
    board = json.loads((folder / "leaderboard.json").read_text())  # FORMATS.md section 4
    get_benchmark("storybench").leaderboard_model().model_validate(board)  # both policies, typed
    assert set(board["systems"]) == systems and board["suite"] == suite
    assert board["n_instances"] == board["n_instances_scored"] == n_instances
    report = (folder / "report.html").read_text(encoding="utf-8")
    assert "<html" in report.lower() and all(s in report for s in systems)


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
    check_run_folder_contents(
        folder, suite="e2e", systems=set(SYSTEMS), n_instances=LIMIT, judged_tracks=JUDGED_TRACKS
    )


def test_second_run_reuses_everything_and_calls_no_model(flow_env: dict[str, Any]) -> None:
    second = flow_env["second"]
    assert all(second["skipped"].values()), second["skipped"]
    assert second["panel_model_calls"] == 0
    # The drift anchors are re-judged on the first check of each calendar day (docs/judges.md, "Judge drift"):
    # on the same day the second night reuses the first's answers; a CI run whose two nights fall on
    # either side of midnight asks the model again for the anchors, and only for them.
    if flow_env["first"]["days"][0] == second["days"][1]:
        assert second["drift_model_calls"] == 0
    else:
        assert second["drift_model_calls"] in (0, len(E2E_ANCHORS)), second["drift_model_calls"]
    # 2 transitions x 2 systems x 2 tracks (text, speech cascade) + the drift anchors.
    assert flow_env["first"]["judge_model_calls"] == LIMIT * len(SYSTEMS) * len(JUDGED_TRACKS) + len(
        E2E_ANCHORS
    )
    assert second["run_id"] != flow_env["first"]["run_id"]
    # The second night is compared with the first. On its LIMIT = 2 paired instances no minimum
    # detectable effect is computable: each test says so, and none is logged on MLflow (a finite
    # one would be, as regression.<system>.<component>.mde; tests/compare).
    regression = json.loads((Path(second["run_folder"]) / "regression.json").read_text())
    assert regression["mde_power"] == 0.8 and regression["baseline"]["run_id"] == flow_env["first"]["run_id"]
    paired = [t for t in regression["tests"] if t["n_paired"]]
    assert paired and all(
        t["mde"] is None and t["mde_note"] == f"not computable with n = {t['n_paired']}" for t in paired
    ), regression["tests"]
    parent = _mlflow_runs(flow_env["uri"]).set_index("run_id").loc[second["run_id"]]
    mde = [k for k in parent.index if k.startswith("metrics.regression.") and k.endswith(".mde")]
    assert not mde or parent[mde].isna().all(), mde


def test_dvc_has_nothing_to_do_after_a_run(flow_env: dict[str, Any]) -> None:
    """README: after `omnieval run SUITE`, `dvc repro` has nothing to do for that suite's stages."""
    from omnieval.runner import dvc_stages_for

    project: Path = flow_env["project"]
    stages = dvc_stages_for(Path("pipelines/nightly.yaml"), project / "dvc.yaml")
    assert {"validate", "generate", "metrics", "judge", "report", "track"} <= set(stages), stages
    locked = yaml.safe_load((project / "dvc.lock").read_text())["stages"]
    expected = {"validate", "judge", "report", "track"} | {
        f"{s}@{k}" for s in ("generate", "metrics") for k in SYSTEMS
    }
    assert expected <= set(locked), sorted(locked)
    status = subprocess.run(
        [_dvc(), "status", *stages], cwd=project, capture_output=True, text=True, timeout=600
    )
    assert status.returncode == 0, status.stderr
    assert "Data and pipelines are up to date" in status.stdout, status.stdout
    # And it is a real check: touching a declared output makes the stage stale.
    scores = project / "state" / "e2e" / "report" / "scores.parquet"
    original = scores.read_bytes()
    try:
        scores.write_bytes(original + b"\n")
        stale = subprocess.run(
            [_dvc(), "status", "report"], cwd=project, capture_output=True, text=True, timeout=600
        )
        assert "report" in stale.stdout and "modified" in stale.stdout, stale.stdout
    finally:
        scores.write_bytes(original)
    # Only what a run's result is made of is an out; the night's ledgers and timings are not, so a
    # cold run elsewhere writes the same lock (README, "DVC").
    outs = {o["path"] for stage in locked.values() for o in stage.get("outs", [])}
    assert not any(p.endswith(("judgments.parquet", "leaderboard.json", "report.html")) for p in outs), outs


def test_bad_dataset_stops_the_run_with_exit_2_and_a_failed_run(flow_env: dict[str, Any]) -> None:
    tmp: Path = flow_env["tmp"]
    broken = tmp / "broken"
    shutil.copytree(ROOT / "data" / "storybench-sample", broken)
    victim = next((broken / "images").rglob("*.png"))
    victim.write_bytes(b"not a png")
    (tmp / "bad").mkdir()
    suite = _suite(tmp / "bad", dataset=broken, limit=2, systems={"oracle": {"kind": "oracle"}})
    done = subprocess.run(
        [str(OMNIEVAL), "run", str(suite)],
        cwd=tmp / "bad",
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2, (done.stdout[-2000:], done.stderr[-4000:])
    # The command's own short report comes last, and bad input is never a traceback (neither ours
    # nor the one Prefect would log for the failed validate task and flow).
    report = done.stderr[done.stderr.rindex("\nerror: ") :]
    assert report.startswith(f"\nerror: dataset {broken} failed validation")
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    assert victim.name in report
    runs = _mlflow_runs(flow_env["uri"])
    failed = runs[runs["tags.omnieval.failed"].notna()] if "tags.omnieval.failed" in runs else runs.iloc[0:0]
    assert len(failed) == 1 and failed.iloc[0]["status"] == "FAILED"
    assert not (tmp / "bad" / "state" / "candidates").exists()


# -- the commands that read a run, on these two nights (console script, new processes) ---------------


@pytest.fixture(scope="module")
def commands(flow_env: dict[str, Any]) -> dict[str, str]:
    first = Path(flow_env["first"]["run_folder"])
    second = Path(flow_env["second"]["run_folder"])
    out: Path = flow_env["tmp"] / "cli"
    return omnieval_all(
        {
            "lineage": ["lineage", first],
            "compare": ["compare", first, second, "--suite", "pipelines/nightly.yaml", "--json"],
            "trend": ["trend", "--suite", "pipelines/nightly.yaml", "--json"],
            "aggregate": ["aggregate", first / "scores.parquet", "--json"],
            # The suite's analysis settings (seed 0, 200 bootstrap draws; see _suite).
            "analyze": ["analyze", first / "scores.parquet", "--out", out / "analyses", "--draws", "200"],
        },
        cwd=flow_env["project"],
    )


def test_lineage_names_the_run_its_dataset_and_the_judge_calls(
    flow_env: dict[str, Any], commands: dict[str, str]
) -> None:
    folder = Path(flow_env["first"]["run_folder"])
    lineage = json.loads((folder / "lineage.json").read_text())
    out = commands["lineage"]
    assert out.startswith(f"run {flow_env['first']['run_id']}  ({folder})"), out[:300]
    assert f"dataset: storybench-sample at {flow_env['project'] / 'data' / 'storybench-sample'}" in out
    assert f"version (content digest): {lineage['dataset']['version']}" in out
    assert f"DVC md5: {lineage['dataset']['dvc_md5']}" in out
    assert "systems: oracle (oracle), shuffled (shuffled)" in out
    verdicts = LIMIT * len(SYSTEMS) * len(JUDGED_TRACKS)  # text, and the three cascades
    anchors = len(E2E_ANCHORS)
    assert (
        f"cpu: {verdicts} model calls this run, drift anchors: {anchors} calls; judged 2 of 20 rows" in out
    ), out
    # The deviation ledger: in lineage.json, printed with each effect, and under the report's verdict.
    ledger = lineage["deviations"]
    assert {"judge-substitute-cpu", "prompt-cpu-own", "metric-backbone-bertscore", "dataset-limit"} <= {
        d["id"] for d in ledger
    }
    assert "  deviations from the paper's protocol:" in out
    for deviation in ledger:
        assert f"    {deviation['id']}: {deviation['what']}\n      effect: {deviation['effect']}" in out
    verdict = (folder / "report.html").read_text().split('id="verdict"')[1].split("<section")[0]
    assert all(f"<code>{d['id']}</code>" in verdict for d in ledger)


def test_compare_of_the_two_nights_gives_the_second_nights_verdict(
    flow_env: dict[str, Any], commands: dict[str, str]
) -> None:
    document = json.loads(commands["compare"])
    assert document["run_a"]["run_id"] == flow_env["first"]["run_id"]
    assert document["run_b"]["run_id"] == flow_env["second"]["run_id"]
    # The second night compared itself with the first when it finished (regression.json): the
    # command, given the suite's tolerances, says the same.
    night = json.loads((Path(flow_env["second"]["run_folder"]) / "regression.json").read_text())
    assert document["verdict"] == night["verdict"] == flow_env["second"]["regression"]
    assert document["systems"] == night["systems"] and set(document["systems"]) == set(SYSTEMS)


def test_trend_reads_both_nights_from_mlflow(flow_env: dict[str, Any], commands: dict[str, str]) -> None:
    from mlflow.tracking import MlflowClient

    document = json.loads(commands["trend"])
    # Two runs on one day (the suite's schedule.timezone, UTC) are one night: the later one.
    client = MlflowClient(flow_env["uri"])
    first, second = flow_env["first"]["run_id"], flow_env["second"]["run_id"]
    day = {
        run_id: dt.datetime.fromtimestamp(client.get_run(run_id).info.start_time / 1000, tz=dt.UTC).date()
        for run_id in (first, second)
    }
    expected = [second] if day[first] == day[second] else [first, second]
    assert [r["run_id"] for r in document["runs"]] == expected
    assert document["nights"] == len(expected)
    recorded = json.loads((Path(flow_env["second"]["run_folder"]) / "trend.json").read_text())
    assert document["components"] and document["components"] == recorded["components"]


def test_aggregate_gives_the_leaderboards_numbers(flow_env: dict[str, Any], commands: dict[str, str]) -> None:
    board = json.loads((Path(flow_env["first"]["run_folder"]) / "leaderboard.json").read_text())
    # Both policies' headline values against the independent aggregation of the run's scores table.
    assert check_headline_values(Path(flow_env["first"]["run_folder"])) > 0
    printed = json.loads(commands["aggregate"])
    assert printed["benchmark"] == "storybench" and set(printed["systems"]) == set(SYSTEMS)
    assert printed["n_instances"] == board["n_instances"] == LIMIT
    for system in SYSTEMS:
        for policy in ("valid_only", "zero_filled"):
            mine, run = printed["systems"][system][policy], board["systems"][system][policy]
            # Every figure; the reasons a component is missing may name the run's panels.
            assert {k: v for k, v in mine.items() if k != "not_computed"} == {
                k: v for k, v in run.items() if k != "not_computed"
            }, (system, policy)


def test_analyze_writes_what_the_runs_report_stage_wrote(
    flow_env: dict[str, Any], commands: dict[str, str]
) -> None:
    folder = Path(flow_env["first"]["run_folder"])
    out: Path = flow_env["tmp"] / "cli" / "analyses"
    assert "wrote 15 analyses" in commands["analyze"]
    written = {p.name: json.loads(p.read_text()) for p in sorted(out.glob("*.json"))}
    assert len(written) == 15
    for name, document in written.items():
        assert document == json.loads((folder / "analyses" / name).read_text()), name
    # Two systems: the bootstrap, the zero-filled sensitivity and the per-track judge differences
    # run; the rest need more systems, human ratings or components the CPU run does not compute, and
    # say so.
    ran = {name for name, document in written.items() if document["status"] == "ok"}
    assert {"bootstrap.json", "zero_filled_sensitivity.json", "judge_track_differences.json"} <= ran
    tracks = written["judge_track_differences.json"]["tracks"]
    assert set(tracks) == set(JUDGED_TRACKS)
    for track in tracks.values():
        (pair,) = track["pairs"]
        assert (pair["a"], pair["b"], pair["n_paired"]) == ("oracle", "shuffled", LIMIT), pair
        # The oracle is above the floor on every row (test above), so every resample's mean is too.
        assert pair["difference"] > 0 and pair["ci95"][0] > 0 and pair["above_zero"], pair
    assert all(d["status"] == "ok" or d.get("reason") for d in written.values())
