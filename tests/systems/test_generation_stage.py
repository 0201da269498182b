"""Generation as a stage: kill -9 in the middle loses nothing (tests/flows/test_dask_runner.py runs a
generating system on a separately started Dask cluster).

It uses a ``command`` system running the stdlib generator of ``conftest.py`` in another venv, so the
examples cost a subprocess each and their invocations are counted in a log file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = {"storybench": ROOT / "data" / "storybench-sample"}


def _suite(folder: Path, name: str, system: dict[str, Any], *, limit: int, **extra: Any) -> Path:
    suite = {
        "suite": name,
        "benchmark": "storybench",
        "dataset": {"name": "storybench-sample", "path": str(SAMPLES["storybench"]), "limit": limit},
        "systems": {"gen": system},
        "judges": {"panels": []},
        "analyses": {"enabled": False},
        "drift": {"enabled": False},
        "state_dir": str(folder / "state"),
        "runs_dir": str(folder / "runs"),
        **extra,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def _env(folder: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "OMNIEVAL_PROJECT_ROOT": str(ROOT), "GEN_LOG": str(folder / "calls.log"), **extra}
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{folder / 'mlflow.db'}"
    return env


def _calls(folder: Path) -> list[str]:
    log = folder / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.is_file() else []


def _stage(stage: str, suite: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", f"omnieval.stages.{stage}", "--suite", str(suite), *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_kill_9_during_generation_loses_nothing(
    tmp_path: Path, foreign_python: Path, generator_script: Path
) -> None:
    # Each example sleeps a little so the kill lands between examples of a running stage.
    slow = generator_script.read_text(encoding="utf-8").replace(
        'index = str(task["index"])', 'time.sleep(0.7)\nindex = str(task["index"])', 1
    )
    generator_script.write_text(slow, encoding="utf-8")
    system = {
        "kind": "command",
        "argv": [str(foreign_python), str(generator_script), "{input_dir}", "{output_dir}"],
    }
    suite = _suite(tmp_path, "gen-kill", system, limit=6)
    env = _env(tmp_path)
    assert _stage("validate", suite, env).returncode == 0
    process = subprocess.Popen(
        [sys.executable, "-m", "omnieval.stages.generate", "--suite", str(suite), "--system", "gen"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while len(_calls(tmp_path)) < 3 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert process.poll() is None, "the stage ended before the kill"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    before = _calls(tmp_path)
    assert 3 <= len(before) < 6

    done = _stage("generate", suite, env, "--system", "gen")
    assert done.returncode == 0, done.stderr
    after = _calls(tmp_path)[len(before) :]
    # Examples whose results were stored before the kill are not generated again; at most the one
    # in flight when the kill landed is redone.
    assert len(after) <= 6 - len(before) + 1
    assert sorted(set(before) | set(after)) == sorted(f"storybench-{i}-" for i in range(6))
    candidates = tmp_path / "state" / "candidates" / "gen"
    for index in range(6):
        for modality, name in (
            ("text", "generated.txt"),
            ("image", "generated.png"),
            ("speech", "generated.wav"),
        ):
            assert (candidates / modality / str(index) / name).is_file(), (modality, index)
    cache = tmp_path / "state" / ".cache" / "generate"
    leftovers = [p for p in (*candidates.rglob("*partial*"), *cache.rglob("*partial*"))]
    assert leftovers == []
    # A third run with nothing changed generates nothing at all.
    again = _stage("generate", suite, env, "--system", "gen")
    assert again.returncode == 0 and len(_calls(tmp_path)) == len(before) + len(after)
