"""``omnieval night [DATE]`` as a user runs it: the console script in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.night.runs import WORSE_WER, write_run

from omnieval.night import build_record, failed_suite, suite_night, write_night_page, write_record

OMNIEVAL = Path(sys.executable).with_name("omnieval")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with two recorded nights under runs/nights (the later one NO-GO)."""
    root = tmp_path_factory.mktemp("project")
    runs = root / "runs"
    calm = {"nightly": suite_night(write_run(runs, "nightly", "n0", "GO", ["fine"]))}
    write_record(build_record("2026-12-02", calm), runs / "nights")
    record = build_record(
        "2026-12-03",
        {
            "nightly": suite_night(write_run(runs, "nightly", "n1", "GO", ["fine"], mde=(0.25,))),
            "acbench": suite_night(write_run(runs, "acbench", "a1", "NO-GO", [WORSE_WER])),
            "prism": failed_suite(RuntimeError("judge server unreachable"), stage="judge"),
        },
    )
    write_record(record, runs / "nights")
    write_night_page(record, runs / "nights")
    return root


def _night(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [str(OMNIEVAL), "night", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_latest_night_is_printed_with_its_reasons_and_suites(project: Path) -> None:
    done = _night(project)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "night 2026-12-03: NO-GO  (runs/nights/2026-12-03/night.json)"
    assert lines[1] == f"  - acbench: {WORSE_WER}"
    assert lines[2] == "  - prism: failed to run in the judge stage: RuntimeError: judge server unreachable"
    assert lines[3] == "suites:"
    assert lines[4].split()[:4] == ["nightly", "GO", "run", "n1"] and "mde_max 0.25" in lines[4]
    assert lines[5].split()[:2] == ["acbench", "NO-GO"]
    assert lines[6].split() == ["prism", "INCONCLUSIVE", "failed", "to", "run"]
    assert lines[7].startswith("usage: generation")
    assert lines[8] == "page: runs/nights/2026-12-03/night.html"


def test_a_date_and_json(project: Path) -> None:
    done = _night(project, "2026-12-02", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["date"] == "2026-12-02" and doc["verdict"] == "GO"
    assert list(doc) == ["date", "suites", "verdict", "reasons", "usage"]


def test_exit_codes(project: Path, tmp_path: Path) -> None:
    missing = _night(project, "2026-11-30")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.startswith("error: no night record for 2026-11-30")
    none = _night(tmp_path)
    assert none.returncode == 2 and "no night record under runs/nights" in none.stderr
    bad = _night(project, "yesterday")
    assert bad.returncode == 2 and "expected a date written YYYY-MM-DD" in bad.stderr
    gate = _night(project, "--fail-on-regression")
    assert gate.returncode == 3 and "NO-GO; exit code 3" in gate.stderr
    assert _night(project, "2026-12-02", "--fail-on-regression").returncode == 0
    elsewhere = _night(tmp_path, "--runs-dir", str(project / "runs"), "2026-12-02")
    assert elsewhere.returncode == 0 and elsewhere.stdout.startswith("night 2026-12-02: GO")
