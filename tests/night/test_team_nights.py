"""One night on several machines sharing a tracking server (issue 47): a real ``mlflow server`` on
loopback (sqlite, served artifacts), two project folders with their own ``runs/`` as two machines.

Each machine writes its night with the night code (``finish_night`` on run folders built by
``runs.write_run``); ``omnieval night DATE`` runs as the console script, in a fresh process, from
machine B.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from omnieval.night import NightRecord, failed_suite, finish_night, suite_night
from omnieval.tracking.nights import MACHINE_TAG, NIGHT_TAG, NIGHTS_EXPERIMENT, night_machine

from .runs import WORSE_WER, write_run

OMNIEVAL = str(Path(sys.executable).with_name("omnieval"))
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _client_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MLFLOW_TRACKING_", "OMNIEVAL_MLFLOW_CREDENTIALS", "OMNIEVAL_TRACKING_OFFLINE"))
    }
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("mlflow-server")
    port = _free_port()
    log = (base / "mlflow.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable, "-m", "mlflow", "server",
            "--backend-store-uri", f"sqlite:///{base / 'mlflow.db'}",
            "--artifacts-destination", str(base / "artifacts"),
            "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
        ],
        cwd=base, env=_client_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not start:\n{(base / 'mlflow.log').read_text()[-3000:]}")
            time.sleep(0.3)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)
        log.close()


@pytest.fixture
def machines(tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    for key in list(os.environ):
        if key.startswith(("MLFLOW_TRACKING_", "OMNIEVAL_MLFLOW_CREDENTIALS", "OMNIEVAL_TRACKING_OFFLINE")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server)
    a, b = tmp_path / "machine-a", tmp_path / "machine-b"
    for folder in (a, b):
        (folder / "runs").mkdir(parents=True)
    return a, b


def _night(project: Path, date: str, suites: dict[str, tuple[str, list[str]]]) -> str:
    """Machine ``project`` runs ``suites`` (name -> verdict, reasons) as the night ``date``; its MLflow run id."""
    runs = project / "runs"
    entries = {
        name: (
            failed_suite("boom", stage="judge")
            if verdict == "FAILED"
            else suite_night(write_run(runs, name, f"{name}-{date}-{project.name}", verdict, reasons))
        )
        for name, (verdict, reasons) in suites.items()
    }
    outcome = finish_night(date, entries, nights_dir=runs / "nights")
    assert outcome.mlflow_run_id, outcome.problems
    return outcome.mlflow_run_id


def _night_runs(date: str) -> list[dict[str, str]]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    experiment = client.get_experiment_by_name(NIGHTS_EXPERIMENT)
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], filter_string=f"tags.`{NIGHT_TAG}` = '{date}'")
    return [{"run_id": r.info.run_id, **r.data.tags} for r in runs]


def _omnieval(*args: str, cwd: Path, server: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [OMNIEVAL, *args], cwd=cwd, env=_client_env(MLFLOW_TRACKING_URI=server),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_second_machine_logs_its_own_night_run_and_a_rerun_updates_its_own(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    date = "2026-11-01"
    run_a = _night(a, date, {"acbench": ("GO", ["fine"])})
    run_b = _night(b, date, {"prism": ("NO-GO", [WORSE_WER])})
    assert run_a != run_b
    runs = {r[MACHINE_TAG]: r for r in _night_runs(date)}
    assert set(runs) == {night_machine(a / "runs"), night_machine(b / "runs")}
    first = runs[night_machine(a / "runs")]
    assert first["run_id"] == run_a  # machine B's night left machine A's run as it was
    assert first["omnieval.night.verdict"] == "GO" and first["omnieval.night.suites"] == "acbench"
    assert runs[night_machine(b / "runs")]["omnieval.night.verdict"] == "NO-GO"
    # The same night again on machine A updates A's run; B's is untouched.
    assert _night(a, date, {"acbench": ("INCONCLUSIVE", ["judge drift"])}) == run_a
    after = {r[MACHINE_TAG]: r for r in _night_runs(date)}
    assert len(after) == 2 and len(_night_runs(date)) == 2
    assert after[night_machine(a / "runs")]["omnieval.night.verdict"] == "INCONCLUSIVE"
    assert after[night_machine(b / "runs")]["run_id"] == run_b


def test_night_on_machine_b_combines_both_machines_suites(machines: tuple[Path, Path], server: str) -> None:
    a, b = machines
    date = "2026-11-02"
    _night(a, date, {"nightly": ("GO", ["A's nightly"]), "acbench": ("GO", ["fine"])})
    _night(b, date, {"prism": ("NO-GO", [WORSE_WER]), "nightly": ("INCONCLUSIVE", ["B's nightly"])})
    _night(a, "2026-11-03", {"storybench": ("FAILED", [])})  # a later night, on machine A only
    here, there = night_machine(b / "runs"), night_machine(a / "runs")

    shown = _omnieval("night", date, "--json", cwd=b, server=server)
    assert shown.returncode == 0, shown.stderr[-3000:]
    doc = json.loads(shown.stdout)
    record = NightRecord.model_validate(doc)  # still a night record (FORMATS.md §11)
    assert record.date == date and set(record.suites) == {"nightly", "acbench", "prism"}
    assert record.verdict == "NO-GO" and record.reasons[0] == f"prism: {WORSE_WER}"
    # The suite both machines ran: B's record is the later one.
    assert record.suites["nightly"].reasons == ("B's nightly",)
    assert doc["machines"] == {"nightly": here, "acbench": there, "prism": here}
    assert list(doc)[:5] == ["date", "suites", "verdict", "reasons", "usage"]

    text = _omnieval("night", date, "--fail-on-regression", cwd=b, server=server)
    assert text.returncode == 3, text.stderr[-3000:]
    lines = text.stdout.splitlines()
    assert lines[0].startswith(f"night {date}: NO-GO") and "combined from 2 machines" in lines[0]
    suite_lines = {line.split()[0]: line for line in lines if line.startswith("  ") and " run " in line}
    assert suite_lines["acbench"].endswith(f"on {there}") and suite_lines["prism"].endswith(f"on {here}")
    assert suite_lines["nightly"].endswith(f"on {here}")
    assert any(
        line.startswith(f"  {there}") and "replaced by a later record: nightly" in line for line in lines
    )

    latest = _omnieval("night", "--json", cwd=b, server=server)  # no DATE: the latest, seen on the server
    assert latest.returncode == 0, latest.stderr[-3000:]
    doc = json.loads(latest.stdout)
    assert doc["date"] == "2026-11-03" and doc["verdict"] == "INCONCLUSIVE"
    assert doc["machines"] == {"storybench": there}


def test_an_unreachable_server_is_said_in_one_line_and_the_local_record_is_printed(
    machines: tuple[Path, Path],
) -> None:
    _, b = machines
    date = "2026-11-04"
    _night(b, date, {"prism": ("GO", ["fine"])})
    local = _omnieval("night", date, "--json", cwd=b, server="")
    down = _omnieval("night", date, "--json", cwd=b, server=f"http://127.0.0.1:{_free_port()}")
    assert local.returncode == down.returncode == 0, down.stderr[-3000:]
    assert down.stdout == local.stdout  # exactly the local night.json
    said = [line for line in down.stderr.splitlines() if "cannot be reached" in line]
    assert len(said) == 1 and "this machine's record only" in said[0]
    assert "machines" not in json.loads(down.stdout)
    missing = _omnieval("night", "2026-11-05", cwd=b, server=f"http://127.0.0.1:{_free_port()}")
    assert missing.returncode == 2 and "no night record for 2026-11-05" in missing.stderr


def test_in_a_local_store_a_night_logged_before_machines_were_named_is_updated_not_doubled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnieval.tracking.nights import log_night, night_tags

    for key in list(os.environ):
        if key.startswith(("MLFLOW_TRACKING_", "OMNIEVAL_MLFLOW_CREDENTIALS", "OMNIEVAL_TRACKING_OFFLINE")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setenv("OMNIEVAL_MLFLOW_ARTIFACTS", str(tmp_path / "artifacts"))
    date, tags = "2026-11-06", night_tags("2026-11-06", "GO", {}, [])
    old = log_night(night=date, tags=tags, metrics={}, artifacts=[])  # no machine: as before issue 47
    here = night_machine(tmp_path / "runs")
    assert log_night(night=date, tags=tags, metrics={}, artifacts=[], machine=here) == old
    other = log_night(night=date, tags=tags, metrics={}, artifacts=[], machine="elsewhere:/runs")
    assert other != old
    assert {r["run_id"]: r.get(MACHINE_TAG) for r in _night_runs(date)} == {
        old: here,
        other: "elsewhere:/runs",
    }
