"""examples/caption_f1 is a complete benchmark: ``omnieval run <copy>/suite.yaml`` from a copy of the
folder outside the project, in a fresh process, exits 0 and writes the hand-computed leaderboard."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "caption_f1"
OMNIEVAL = Path(sys.executable).with_name("omnieval")

# Token F1 by hand (case-folded bags of words). template writes "a photo of a <subject>":
#   fox: 3 shared of 6 + 7 tokens -> 6/13; owl: 2 of 5 + 8 -> 4/13; cat: 3 of 6 + 6 -> 6/12.
# subject-only answers the one-word subject only: owl "owl" -> 2/9; fox and cat are missing.
TEMPLATE = (6 / 13 + 4 / 13 + 6 / 12) / 3
SUBJECT_ONLY = 2 / 9


def test_the_example_runs_from_a_copy_anywhere(tmp_path: Path) -> None:
    copy = tmp_path / "somewhere" / "my_benchmark"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
        "OMNIEVAL_MLFLOW_ARTIFACTS": str(tmp_path / "mlartifacts"),
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "OMNIEVAL_CACHE": str(tmp_path / "cache"),
    }
    done = subprocess.run(
        [str(OMNIEVAL), "run", str(copy / "suite.yaml"), "--json"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-5000:])
    assert "Traceback" not in done.stderr, done.stderr[-5000:]
    # Great Expectations' INFO line for each gate's temporary context is not for the user.
    assert "ephemeral docs site" not in done.stderr, done.stderr[-5000:]
    summary = json.loads(done.stdout[done.stdout.rindex("\n{") :])
    folder = cwd / summary["run_folder"]
    board = json.loads((folder / "leaderboard.json").read_text(encoding="utf-8"))
    assert board["benchmark"] == "caption_f1" and board["n_instances"] == 3
    template = board["systems"]["template"]["components"]["token_f1"]
    assert template["valid_only"] == pytest.approx(TEMPLATE) == template["zero_filled"]
    lo, hi = template["valid_only_ci95"]
    # Scores are written to 6 decimals (omnieval.scores.DEFAULT_PRECISION): 4/13 is 0.307692.
    half = 0.5e-6
    assert 4 / 13 - half <= lo <= TEMPLATE <= hi <= 6 / 12 + half
    lazy = board["systems"]["subject-only"]["components"]["token_f1"]
    assert lazy["valid_only"] == pytest.approx(SUBJECT_ONLY)
    assert lazy["zero_filled"] == pytest.approx(SUBJECT_ONLY / 3)
    assert (lazy["n_valid"], lazy["n_missing"]) == (1, 2)
    assert "Leaderboard" in (folder / "report.html").read_text(encoding="utf-8")
    # The run's outputs went to the working directory, nothing beside the copy (but Python's cache).
    assert sorted(p.name for p in copy.iterdir() if p.name != "__pycache__") == sorted(
        p.name for p in EXAMPLE.iterdir() if p.name != "__pycache__"
    )


def test_the_example_is_small() -> None:
    """The worked example stays what docs/benchmarks.md says: three files, at most 150 lines."""
    files = sorted(p.name for p in EXAMPLE.iterdir() if p.is_file())
    assert files == ["benchmark.yaml", "hooks.py", "suite.yaml"]
    assert sum(len((EXAMPLE / f).read_text(encoding="utf-8").splitlines()) for f in files) <= 150
