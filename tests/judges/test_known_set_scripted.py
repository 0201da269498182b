"""The known-set check end to end with scripted judges on the bundled storybench sample: a judge that
always prefers the ground truth passes, a constant one fails; the judge stage writes the result
into health.json once per judge checkpoint; a judge below its floor makes the night INCONCLUSIVE;
and ``omnieval judge check`` as a user runs it (console script in a fresh process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import known_scripts
import pandas as pd
import pytest

from omnieval.benchmarks import get_benchmark
from omnieval.config import SuiteConfig
from omnieval.judges import check_known_set
from omnieval.metrics import MetricsConfig

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OMNIEVAL = Path(sys.executable).with_name("omnieval")


@pytest.fixture(scope="module")
def transitions(sample_root: Path) -> tuple[Any, ...]:
    bench = get_benchmark("storybench")
    return bench.instances(bench.load(sample_root))


def _runner(transitions: tuple[Any, ...]) -> Any:
    return get_benchmark("storybench").known_set(transitions, MetricsConfig())


def test_scripted_judge_preferring_the_ground_truth_passes(
    tmp_path: Path, transitions: tuple[Any, ...]
) -> None:
    panel = known_scripts.write_panel(tmp_path, "prefers_ground_truth")
    doc = check_known_set(_runner(transitions), panel, cache_dir=tmp_path / "cache")
    text = doc["judges"]["scripted-ground-truth"]["text"]
    # 4 page turns x (shuffled words, wrong character name, another book's page) = 12 known pairs.
    assert (text["n_pairs"], text["correct"], text["ties"], text["accuracy"], text["agreement"]) == (
        12,
        12,
        0,
        1.0,
        1.0,
    )
    assert text["status"] == "ok" and doc["passed"] and doc["below_floor"] == []
    assert set(text["by_variant"]) == {"shuffled_words", "wrong_name", "other_page"}
    # Real calls through the judges' runner (4 items x 4 variants), counted in its usage; the text
    # variants are built exactly as pinned.
    assert doc["model_calls"] == 16 and doc["usage"]["scripted-ground-truth"]["calls"] == 16
    assert doc["pins"]["matched"] == 16 and doc["pins"]["mismatched"] == []
    assert set(doc["unavailable"]) == {"speech", "image", "integrated"}
    assert any((tmp_path / "cache" / "judges").rglob("*.json")), "answers go to the shared response cache"

    again = check_known_set(_runner(transitions), panel, cache_dir=tmp_path / "cache")
    assert again["reused"] and again["model_calls"] == 0 and again["key"] == doc["key"]
    assert again["judges"] == doc["judges"]


def test_scripted_constant_judge_fails_its_floor(tmp_path: Path, transitions: tuple[Any, ...]) -> None:
    panel = known_scripts.write_panel(tmp_path, "constant")
    doc = check_known_set(_runner(transitions), panel, cache_dir=tmp_path / "cache")
    text = doc["judges"]["scripted-constant"]["text"]
    assert (text["ties"], text["accuracy"], text["agreement"], text["status"]) == (
        12,
        0.0,
        0.0,
        "below_floor",
    )
    assert doc["below_floor"] == [
        {"judge": "scripted-constant", "track": "text", "accuracy": 0.0, "floor": 0.7, "n_pairs": 12}
    ]


def _suite(tmp_path: Path, panel: str, sample_root: Path) -> SuiteConfig:
    return SuiteConfig.model_validate(
        {
            "suite": "known",
            "dataset": {"path": str(sample_root)},
            "systems": {"oracle": {"kind": "oracle"}},
            "judges": {"panels": [panel], "meta_eval": {"enabled": True, "floors": {"text": 0.75}}},
            "state_dir": str(tmp_path / "state" / "known"),
            "runs_dir": str(tmp_path / "runs"),
        }
    )


def _run_folder(tmp_path: Path, config: SuiteConfig) -> Path:
    """A minimal run folder (lineage + a one-row scores table) holding the judge stage's health.json."""
    folder = tmp_path / "runs" / "known" / "run1"
    folder.mkdir(parents=True)
    (folder / "lineage.json").write_text(json.dumps({"run_id": "run1", "suite": "known"}))
    row = {
        "benchmark": "storybench",
        "system": "oracle",
        "instance_id": "x",
        "index": 0,
        "track": "text",
        "component": "bertscore_f1",
        "judge": "",
        "criterion": "value",
        "value": 0.9,
        "status": "ok",
        "panel": "",
    }
    pd.DataFrame([row]).to_parquet(folder / "scores.parquet")
    health = config.state / "judge" / "health.json"
    (folder / "health.json").write_bytes(health.read_bytes())
    return folder


@pytest.mark.parametrize(
    ("script", "verdict"), [("constant", "INCONCLUSIVE"), ("prefers_ground_truth", "GO")]
)
def test_judge_stage_writes_health_and_a_failing_judge_makes_the_night_inconclusive(
    tmp_path: Path,
    transitions: tuple[Any, ...],
    sample_root: Path,
    mlflow_uri: str,
    script: str,
    verdict: str,
) -> None:
    from omnieval.compare import nightly_regression
    from omnieval.stages import judge as judge_stage

    config = _suite(tmp_path, known_scripts.write_panel(tmp_path, script), sample_root)
    health = config.state / "judge" / "health.json"
    health.parent.mkdir(parents=True)
    health.write_text(json.dumps({"judges": {}, "degenerate": []}))
    assert judge_stage._meta_eval(config, transitions) == 16
    section = json.loads(health.read_text())["meta_eval"]
    assert json.loads(health.read_text())["judges"] == {}, "the judge stage's own health figures stay"
    (key,) = section["judges"]
    entry = section["judges"][key]["text"]
    assert key.endswith(("/scripted-constant", "/scripted-ground-truth")) and entry["floor"] == 0.75
    # Once per judge checkpoint: the second night makes no call.
    assert judge_stage._meta_eval(config, transitions) == 0
    assert json.loads(health.read_text())["meta_eval"]["panels"][key.rsplit("/", 1)[0]]["reused"]

    doc = nightly_regression(config, _run_folder(tmp_path, config), run_id="run1")
    assert doc["verdict"] == verdict, doc["reasons"]
    if verdict == "INCONCLUSIVE":
        assert doc["reasons"][0] == (
            f"judge {key} below its floor on the known set: track text accuracy 0.00 < 0.75 (12 pairs)"
        )
        assert doc["judge_checks"] == doc["reasons"][:1]
    else:
        assert doc["reasons"] == ["no previous run to compare with"] and "judge_checks" not in doc


def _cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [str(OMNIEVAL), "judge", "check", *args, "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_judge_check_as_a_user_runs_it(tmp_path: Path) -> None:
    good = known_scripts.write_panel(tmp_path, "prefers_ground_truth")
    done = _cli(good, "--benchmark", "storybench", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("scripted-ground-truth"))
    assert row.split() == [
        "scripted-ground-truth",
        "text",
        "12",
        "12",
        "0",
        "0",
        "0",
        "1.00",
        "+1.00",
        "n/a",  # a scripted judge reports no probabilities: no judge_expected accuracy
        "0.70",
        "ok",
    ]
    assert "a tie" in done.stdout and "track image: not checked" in done.stdout
    assert "model calls: 16" in done.stdout

    bad = known_scripts.write_panel(tmp_path, "constant")
    done = _cli(bad, "--benchmark", "storybench", "--json", tmp_path=tmp_path)
    assert done.returncode == 3, done.stderr
    document = json.loads(done.stdout)
    assert (
        document["below_floor"][0]["accuracy"] == 0.0
        and document["judges"]["scripted-constant"]["text"]["ties"] == 12
    )


def test_cli_judge_check_floors_reuse_and_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from omnieval.cli import main

    bad = known_scripts.write_panel(tmp_path, "constant")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert main(["judge", "check", bad, "--benchmark", "storybench", *cache]) == 3
    out = capsys.readouterr().out
    assert "BELOW FLOOR: scripted-constant on track text: accuracy 0.00 < floor 0.70 (12 pairs)" in out
    assert main(["judge", "check", bad, "--benchmark", "storybench", "--track-floor", "text=0", *cache]) == 0
    assert "(result reused" in capsys.readouterr().out
    for args, message in (
        (["no-such-panel"], "unknown judge panel 'no-such-panel'"),
        ([bad], "pass --benchmark NAME"),
        ([bad, "--benchmark", "acbench"], "has no known set"),
        ([bad, "--benchmark", "storybench", "--track-floor", "text"], "expected KEY=X"),
        (["cpu", "--dataset", str(tmp_path / "absent")], f"--dataset: {tmp_path / 'absent'} does not exist"),
    ):
        assert main(["judge", "check", *args, *cache]) == 2, args
        assert message in capsys.readouterr().err, args


def test_suite_floors_are_checked_when_the_suite_loads(tmp_path: Path, sample_root: Path) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="floors must lie in"):
        SuiteConfig.model_validate(
            {
                "suite": "x",
                "systems": {"oracle": {"kind": "oracle"}},
                "judges": {"meta_eval": {"floors": {"text": 2}}},
            }
        )
    assert _suite(tmp_path, "cpu", sample_root).judges.meta_eval.floor == 0.7
