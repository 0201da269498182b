"""dvc.yaml follows the suites it covers: `omnieval dvc-yaml` renders it, `--check` guards it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from omnieval.flows.dvc_yaml import covered_suites, differences, render

ROOT = Path(__file__).resolve().parents[1]
SUITES = ("pipelines/nightly.yaml", "pipelines/acbench.yaml", "pipelines/prism.yaml")


def _tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).with_name(name))
    # Not a skip: a machine without the project's tools must fail here, not pass by skipping.
    assert Path(found).is_file(), f"{name} is not installed: run `make setup`"
    return found


def _suite(path: str) -> tuple[str, list[str]]:
    raw = yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))
    return str(raw["suite"]), list(raw["systems"])


def test_dvc_yaml_covers_the_three_suites_the_default_first() -> None:
    assert covered_suites(ROOT / "dvc.yaml") == list(SUITES)


def test_dvc_stage_list_gives_each_suites_systems() -> None:
    """The real dvc CLI: each suite's generate and metrics stages are exactly its `systems:` keys."""
    done = subprocess.run(
        [_tool("dvc"), "stage", "list", "--name-only"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    names = done.stdout.split()
    for index, path in enumerate(SUITES):
        suite, systems = _suite(path)
        prefix = "" if index == 0 else f"{suite}_"
        for stage in ("generate", "metrics"):
            found = sorted(n.split("@", 1)[1] for n in names if n.startswith(f"{prefix}{stage}@"))
            assert found == sorted(systems), (path, stage, found)


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_tool("omnieval"), "dvc-yaml", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_check_passes_on_the_committed_dvc_yaml() -> None:
    done = _cli("--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "up to date" in done.stdout


def test_check_fails_on_a_tampered_copy_naming_the_stage_and_suite(tmp_path: Path) -> None:
    tampered = tmp_path / "dvc.yaml"
    doc = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))
    # The drift this guards against: a system of the suite missing from its generate stage.
    doc["stages"]["acbench_generate"]["foreach"].remove("cascade-cpu")
    tampered.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    before = tampered.read_text(encoding="utf-8")
    done = _cli("--check", "--file", str(tampered))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "acbench_generate (suite pipelines/acbench.yaml) differs" in done.stderr
    assert "cascade-cpu" in done.stderr
    assert tampered.read_text(encoding="utf-8") == before, "--check writes nothing"


def test_without_check_it_rewrites_the_file_the_suites_give(tmp_path: Path) -> None:
    target = tmp_path / "dvc.yaml"
    target.write_text((ROOT / "dvc.yaml").read_text(encoding="utf-8").replace("neutral", "gone"))
    done = _cli("--file", str(target))
    assert done.returncode == 0, done.stdout + done.stderr
    assert target.read_text(encoding="utf-8") == (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    assert not [p for p in tmp_path.iterdir() if p.name != "dvc.yaml"], "no temporary file left behind"


def test_stages_follow_the_suite_and_declare_only_reproducible_outputs() -> None:
    text, parts = render(list(SUITES), ROOT)
    assert differences(text, text, parts) == []
    stages = yaml.safe_load(text)["stages"]
    nightly, acbench, prism = parts
    assert (nightly.prefix, acbench.prefix, prism.prefix) == ("", "acbench_", "prism_")
    for part in parts:
        _, systems = _suite(part.suite)
        assert part.systems == tuple(systems)
        p = part.prefix
        # tracking.json names a new MLflow run each time: not an output DVC could compare.
        assert "outs" not in stages[f"{p}track"]
        # Per-system inputs, not the folders that also hold each run's accounting files.
        assert f"state/{part.suite.split('/')[1][:-5]}/metrics" not in stages[f"{p}report"]["deps"]
        if f"{p}judge" in stages:
            assert [d for d in stages[f"{p}judge"]["deps"] if d.startswith("state/")]
            assert all("/candidates/" in d for d in stages[f"{p}judge"]["deps"] if d.startswith("state/"))
    assert "acbench_judge" not in stages, "a suite without judge panels has no judge stage"
    assert stages["acbench_generate"]["do"]["params"] == [
        {"pipelines/acbench.yaml": ["systems.${item}", "conditions"]}
    ]


def test_differences_name_a_missing_and_an_extra_stage() -> None:
    text, parts = render(list(SUITES), ROOT)
    doc = yaml.safe_load(text)
    doc["stages"]["extra"] = doc["stages"].pop("prism_report")
    found = differences(yaml.safe_dump(doc, sort_keys=False), text, parts)
    assert "stage prism_report (suite pipelines/prism.yaml) is missing" in found
    assert any(line.startswith("stage extra is not one the suites give") for line in found)
