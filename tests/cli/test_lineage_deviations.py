"""``omnieval lineage RUN`` prints the run's deviation ledger: the installed console script in a new
process, on run folders written here (a lineage.json with a ledger, one without, a malformed one)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from omnieval.benchmarks import Deviation
from omnieval.config import load_suite
from omnieval.stages._deviations import run_deviations

OMNIEVAL = str(Path(sys.executable).with_name("omnieval"))
ROOT = Path(__file__).resolve().parents[2]


def _run_folder(runs: Path, run_id: str, **extra: Any) -> Path:
    """A run folder (FORMATS.md section 4) holding what ``omnieval lineage`` reads."""
    folder = runs / "nightly" / run_id
    folder.mkdir(parents=True)
    lineage = {
        "run_id": run_id,
        "suite": "nightly",
        "dataset": {"name": "storybench-sample", "path": "data/storybench-sample", "version": "v1"},
        "code": {"git_sha": "abc", "git_dirty": False, "package_digest": "p" * 64},
        "systems": {"oracle": {"kind": "oracle"}},
        "metrics": {},
        "judges": {},
        "seeds": {"analyses": 0},
        **extra,
    }
    (folder / "lineage.json").write_text(json.dumps(lineage), encoding="utf-8")
    # What makes it a finished run for 'latest' (omnieval lineage reads only lineage.json).
    (folder / "leaderboard.json").write_text("{}", encoding="utf-8")
    (folder / "scores.parquet").write_bytes(b"")
    (folder / "mlflow.json").write_text(json.dumps({"parent": run_id, "systems": {}, "analyses": {}}))
    return folder


def _lineage(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [OMNIEVAL, "lineage", *(str(a) for a in args)], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.fixture(scope="module")
def ledger() -> list[Deviation]:
    """The default nightly suite's ledger, as the track stage writes it (image backbone as recorded)."""
    config = load_suite(ROOT / "pipelines" / "nightly.yaml")
    return run_deviations(
        config,
        {s: {"metrics": {"image_similarity": {"backbone": "efficientnet-lite0"}}} for s in config.systems},
    )


def test_lineage_prints_each_deviation_with_its_effect(tmp_path: Path, ledger: list[Deviation]) -> None:
    runs = tmp_path / "runs"
    folder = _run_folder(runs, "night-1", deviations=[d.as_dict() for d in ledger])
    done = _lineage("latest", "--runs-dir", runs, cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == f"run night-1  ({folder})"
    head = lines.index("  deviations from the paper's protocol:")
    printed = lines[head + 1 :]
    assert len(printed) == 2 * len(ledger)
    for k, deviation in enumerate(ledger):
        assert printed[2 * k] == f"    {deviation.id}: {deviation.what}"
        assert printed[2 * k + 1] == f"      effect: {deviation.effect}"
    assert {"judge-substitute-cpu", "prompt-cpu-own", "dataset-limit"} <= {d.id for d in ledger}
    as_json = _lineage(folder, "--json", cwd=tmp_path)
    assert json.loads(as_json.stdout)["deviations"] == [d.as_dict() for d in ledger]


def test_an_empty_ledger_and_an_old_lineage_say_which_they_are(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    followed = _lineage(_run_folder(runs, "followed", deviations=[]), cwd=tmp_path)
    assert followed.returncode == 0, followed.stderr[-2000:]
    assert followed.stdout.endswith(
        "  deviations from the paper's protocol:\n    none: the run followed the paper's protocol\n"
    )
    old = _lineage(_run_folder(runs, "old"), cwd=tmp_path)
    assert old.returncode == 0, old.stderr[-2000:]
    assert "(not recorded: this lineage.json predates the deviation ledger)" in old.stdout


def test_a_malformed_ledger_is_exit_2_naming_the_entry(tmp_path: Path) -> None:
    folder = _run_folder(tmp_path / "runs", "bad", deviations=[{"id": "dataset-limit", "what": "Only 2."}])
    done = _lineage(folder, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        f"{folder / 'lineage.json'}, deviations[0], field 'effect': expected a non-empty string"
        in done.stderr
    )
    assert done.stdout == ""


def test_run_id_starts_resolve_through_the_one_resolver(tmp_path: Path) -> None:
    """A unique start names its run; a start shared by two runs is exit 2 listing both (it used to
    pick the oldest silently)."""
    runs = tmp_path / "runs"
    _run_folder(runs, "abc111000000", deviations=[])
    _run_folder(runs, "abc222000000", deviations=[])
    unique = _lineage("abc1", "--runs-dir", runs, cwd=tmp_path)
    assert unique.returncode == 0, unique.stderr
    assert "abc111000000" in unique.stdout
    ambiguous = _lineage("abc", "--runs-dir", runs, cwd=tmp_path)
    assert ambiguous.returncode == 2, ambiguous.stdout + ambiguous.stderr
    assert "ambiguous" in ambiguous.stderr
    assert "abc111000000" in ambiguous.stderr and "abc222000000" in ambiguous.stderr
    assert "Traceback" not in ambiguous.stderr
