"""The DVC side of the runner: which stages a run records, and the evaluator-training stages."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from omnieval import runner
from omnieval.errors import OmnievalError

ROOT = Path(__file__).resolve().parents[1]


def _dvc_stages() -> dict[str, Any]:
    stages: dict[str, Any] = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    return stages


NIGHTLY = ("validate", "generate", "metrics", "judge", "report", "track")
ACBENCH = ("acbench_validate", "acbench_generate", "acbench_metrics", "acbench_report", "acbench_track")
PRISM = ("prism_validate", "prism_generate", "prism_metrics", "prism_judge", "prism_report", "prism_track")


def test_a_run_records_its_suites_stages_and_nothing_else() -> None:
    nightly = runner.dvc_stages_for(Path("pipelines/nightly.yaml"), ROOT / "dvc.yaml")
    acbench = runner.dvc_stages_for(Path("pipelines/acbench.yaml"), ROOT / "dvc.yaml")
    prism = runner.dvc_stages_for(Path("pipelines/prism.yaml"), ROOT / "dvc.yaml")
    assert nightly == list(NIGHTLY) and acbench == list(ACBENCH) and prism == list(PRISM)
    assert set(_dvc_stages()) == {*NIGHTLY, *ACBENCH, *PRISM, "train_evaluator"}


def test_sync_commits_only_the_suites_stages(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "dvc.yaml").write_text((ROOT / "dvc.yaml").read_text())
    (tmp_path / ".dvc").mkdir()
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "nightly.yaml").write_text("suite: nightly\n")
    calls: list[list[str]] = []

    def fake_run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(runner, "project_root", lambda start=None: tmp_path)
    monkeypatch.setattr(runner.shutil, "which", lambda name: "/usr/bin/dvc")
    monkeypatch.setattr(runner.subprocess, "run", fake_run)
    runner.sync_dvc_lock(tmp_path / "pipelines" / "nightly.yaml")
    assert calls == [["/usr/bin/dvc", "commit", "--force", "--quiet", *NIGHTLY]]
    runner.sync_dvc_lock(tmp_path.parent / "elsewhere.yaml")
    assert len(calls) == 1, "a suite outside the project is not part of its DAG"


def test_sync_outside_any_dvc_project_does_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A suite run from a folder with no dvc.yaml above it has no lock to sync: no error, no dvc call."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OMNIEVAL_PROJECT_ROOT", raising=False)
    monkeypatch.setattr(runner.shutil, "which", lambda name: "/usr/bin/dvc")
    monkeypatch.setattr(runner.subprocess, "run", lambda *a, **k: pytest.fail("dvc must not run"))
    with pytest.raises(OmnievalError):
        runner.project_root()
    runner.sync_dvc_lock(tmp_path / "suite.yaml")


def test_train_evaluator_stage_covers_every_configured_feature() -> None:
    stage = _dvc_stages()["train_evaluator"]
    assert stage["foreach"] == "${features}"
    assert stage["do"]["outs"] == ["models/evaluators/${item.registered_name}"]
    assert "--feature ${item.feature}" in stage["do"]["cmd"]
    features = yaml.safe_load((ROOT / "pipelines" / "train_evaluators.yaml").read_text())["features"]
    lock = yaml.safe_load((ROOT / "dvc.lock").read_text())["stages"]
    for index, feature in enumerate(features):
        locked = lock[f"train_evaluator@{index}"]
        assert locked["outs"][0]["path"] == f"models/evaluators/{feature['registered_name']}"
        assert f"--feature {feature['feature']} " in locked["cmd"]


def test_committed_checkpoints_match_their_corpus_config_and_training_code() -> None:
    # Fails when training code, config or a corpus changed without `dvc repro train_evaluator`
    # (and a commit of dvc.lock), or when `make setup` did not pull the checkpoints.
    dvc = shutil.which("dvc") or str(Path(sys.executable).with_name("dvc"))
    assert Path(dvc).is_file(), "dvc is not installed: run `make setup`"
    result = subprocess.run(
        [dvc, "status", "train_evaluator"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout, result.stdout


def test_drift_names_the_stages_dvc_yaml_lacks_for_the_suite(tmp_path: Path) -> None:
    """A suite whose systems changed since dvc.yaml was rendered: the run names the stale stages."""
    assert runner.dvc_yaml_drift(Path("pipelines/acbench.yaml"), ROOT) == []
    shutil.copytree(ROOT / "pipelines", tmp_path / "pipelines")
    for folder in ("data", "expectations", "src"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    doc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    doc["stages"]["acbench_metrics"]["foreach"].remove("neutral")
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    assert runner.dvc_yaml_drift(Path("pipelines/acbench.yaml"), tmp_path) == ["acbench_metrics"]
    assert runner.dvc_yaml_drift(Path("pipelines/nightly.yaml"), tmp_path) == []
    assert runner.dvc_yaml_drift(Path("pipelines/nightly-full.yaml"), tmp_path) == [], "not covered"


def test_a_run_of_a_changed_suite_rewrites_its_stages_before_recording_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A system dropped from the suite: the run rewrites dvc.yaml from the suites, then commits the
    stages the suite now has (never a stage of a system the run did not evaluate)."""
    shutil.copytree(ROOT / "pipelines", tmp_path / "pipelines")
    for folder in ("data", "expectations", "src"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    (tmp_path / "dvc.yaml").write_text((ROOT / "dvc.yaml").read_text())
    (tmp_path / ".dvc").mkdir()
    suite = tmp_path / "pipelines" / "nightly.yaml"
    doc = yaml.safe_load(suite.read_text())
    del doc["systems"]["orchestrated-cpu"]
    suite.write_text(yaml.safe_dump(doc, sort_keys=False))
    calls: list[list[str]] = []

    def fake_run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "project_root", lambda start=None: tmp_path)
    monkeypatch.setattr(runner.shutil, "which", lambda name: "/usr/bin/dvc")
    monkeypatch.setattr(runner.subprocess, "run", fake_run)
    runner.sync_dvc_lock(suite)
    assert "dvc.yaml: rewrote the stages of pipelines/nightly.yaml" in capsys.readouterr().out
    rewritten = yaml.safe_load((tmp_path / "dvc.yaml").read_text())["stages"]
    assert rewritten["generate"]["foreach"] == ["oracle", "copy-current", "shuffled"]
    assert runner.dvc_yaml_drift(Path("pipelines/nightly.yaml"), tmp_path) == []
    assert calls == [["/usr/bin/dvc", "commit", "--force", "--quiet", *NIGHTLY]]
