"""The schedule fires: ``omnieval serve`` with no Prefect server and no PREFECT_API_URL.

One subprocess serves a tiny suite (one transition, the oracle, no judges, no analyses) on a
one-minute cron. It must start a persistent local server on 127.0.0.1 and complete a scheduled run
(run folder and MLflow run) within three minutes. Then ``serve`` and its flow-run processes are
killed with SIGKILL and ``serve`` is started again: the second one must reuse the orphaned server
and run again; no scheduled minute may have been run twice, and a run killed in flight must be
marked crashed. SIGTERM then stops the second ``serve`` and, as its last user, the server.

Prefect's runner poll and scheduler loops are shortened through their settings; everything else
(server, scheduler, runner, flow, MLflow) is the real thing.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
OMNIEVAL = Path(sys.executable).with_name("omnieval")
"""The installed console script: ``serve`` as a user starts it."""
pytestmark = [pytest.mark.slow, pytest.mark.e2e]

FIRST_RUN_LIMIT_S = float(os.environ.get("OMNIEVAL_SERVE_FIRST_RUN_LIMIT_S", "180"))
"""Issue 22's bar: serve start to a completed scheduled run. The variable only exists so that a
machine known to be overloaded can still run the rest of the test; CI uses the default."""


def _suite(tmp: Path) -> Path:
    suite = yaml.safe_load((ROOT / "pipelines" / "nightly.yaml").read_text())
    suite.update(
        suite="servetest",
        state_dir=str(tmp / "state"),
        runs_dir=str(tmp / "runs"),
        systems={"oracle": {"kind": "oracle"}},
        metrics={"asr_model": None},  # no Whisper: speech speed is reported as not computed
        judges={"panels": []},
        analyses={"enabled": False},
        drift={"enabled": False},
        tracking={"experiment": "omnieval/servetest"},
        schedule={"cron": "* * * * *", "timezone": "UTC"},
    )
    suite["dataset"] = {
        "name": "storybench-sample",
        "path": str(ROOT / "data" / "storybench-sample"),
        "limit": 1,
    }
    path = tmp / "servetest.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


class Serve:
    """One ``omnieval serve`` subprocess, its output in a file."""

    def __init__(self, suite: Path, env: dict[str, str], log: Path) -> None:
        self.log = log
        self.started = time.monotonic()
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [str(OMNIEVAL), "serve", str(suite)],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, which kill_group() hits as a whole
            )

    def kill_group(self) -> None:
        """SIGKILL to serve and its flow-run processes (a crash, an OOM kill, a closed terminal).

        The Prefect server is in a session of its own and survives, as it would then.
        """
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, what: str, check: Callable[[], Any], limit_s: float) -> Any:
        deadline = self.started + limit_s
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            assert self.process.poll() is None, f"serve exited ({self.process.returncode}):\n{self.output()}"
            time.sleep(2.0)
        raise AssertionError(f"{what}: not within {limit_s:.0f} s of starting serve\n{self.output()[-6000:]}")


def _api(url: str, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{url}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def _flow_runs(api_url: str) -> list[dict[str, Any]]:
    return list(_api(api_url, "/flow_runs/filter", {"sort": "EXPECTED_START_TIME_ASC", "limit": 200}))


def _completed(api_url: str) -> list[dict[str, Any]]:
    try:
        return [run for run in _flow_runs(api_url) if run["state_type"] == "COMPLETED"]
    except OSError:
        return []


def _mlflow_parent_runs(uri: str) -> list[Any]:
    import mlflow

    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["omnieval/servetest"], output_format="list")
    return [run for run in runs if "mlflow.parentRunId" not in run.data.tags]


def _slot(run: dict[str, Any]) -> str:
    """The scheduled minute a run stands for (a catch-up run names it in a tag)."""
    for tag in run["tags"]:
        if tag.startswith("omnieval-slot:"):
            return str(tag.split(":", 1)[1])
    return str(run["expected_start_time"])


def _listening(pids: list[int]) -> list[tuple[int, str]]:
    import psutil

    found = []
    for pid in pids:
        try:
            process = psutil.Process(pid)
            for proc in [process, *process.children(recursive=True)]:
                found += [
                    (proc.pid, c.laddr.ip)
                    for c in proc.net_connections("tcp")
                    if c.status == psutil.CONN_LISTEN
                ]
        except psutil.NoSuchProcess:
            continue
    return found


@pytest.fixture
def no_leftovers(tmp_path: Path) -> Any:
    """Whatever happens in the test, stop the server and flow runs a killed serve left behind."""
    yield
    import psutil

    folder = tmp_path / "prefect" / "server"
    pids = [int(p.read_text()) for p in (folder / "flow-runs").glob("*.pid")]
    if (folder / "server.json").is_file():
        pids.append(int(json.loads((folder / "server.json").read_text())["pid"]))
    for pid in pids:
        try:
            process = psutil.Process(pid)
            command = " ".join(process.cmdline())
            if "spawn_main" in command or "prefect" in command:  # ours, not a recycled pid
                process.terminate()
                process.wait(timeout=20)
        except (psutil.NoSuchProcess, psutil.TimeoutExpired):
            continue


def test_serve_fires_the_schedule_and_survives_a_restart_without_running_a_slot_twice(
    tmp_path: Path, no_leftovers: None
) -> None:
    suite = _suite(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(
        PREFECT_HOME=str(tmp_path / "prefect"),
        MLFLOW_TRACKING_URI=uri,
        OMNIEVAL_MLFLOW_ARTIFACTS=str(tmp_path / "artifacts"),
        OMNIEVAL_PROJECT_ROOT=str(ROOT),
        # Shorter loops than Prefect's defaults (runner poll 10 s, scheduler 60 s), same code paths.
        PREFECT_RUNNER_POLL_FREQUENCY="1",
        PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS="5",
        # The restart below must find the killed serve's server: its watchdog waits that long.
        OMNIEVAL_SERVE_ORPHAN_S="900",
    )
    record_path = tmp_path / "prefect" / "server" / "server.json"
    runs_folder = tmp_path / "runs" / "servetest"

    # 1. Nothing running, no PREFECT_API_URL: serve starts a server and the cron fires.
    first = Serve(suite, env, tmp_path / "serve-1.log")
    try:
        record = first.wait_for(
            "server record", lambda: record_path.is_file() and json.loads(record_path.read_text()), 120
        )
        api_url = record["api_url"]
        assert api_url.startswith("http://127.0.0.1:")
        assert "started local server" in first.output()
        first.wait_for("next run times", lambda: "next runs" in first.output(), 150)
        done = first.wait_for("a completed scheduled run", lambda: _completed(api_url), FIRST_RUN_LIMIT_S)
        elapsed = time.monotonic() - first.started
        print(f"first scheduled run completed {elapsed:.0f} s after serve started")
        assert done[0]["auto_scheduled"]
        folders = [p for p in runs_folder.iterdir() if p.is_dir()]
        assert folders and all((f / "leaderboard.json").is_file() for f in folders)
        assert {f.name for f in folders} <= {r.info.run_id for r in _mlflow_parent_runs(uri)}
        listening = _listening([first.process.pid, record["pid"]])
        assert listening and all(ip == "127.0.0.1" for _, ip in listening), listening
        # Kill it with a run in flight (the next minute's), so the restart has a run to mark crashed.
        first.wait_for(
            "a run in flight",
            lambda: [r for r in _flow_runs(api_url) if r["state_type"] in ("PENDING", "RUNNING")],
            FIRST_RUN_LIMIT_S + 120,  # seconds since serve started, like every wait_for
        )
    finally:
        first.kill_group()

    # 2. A restarted serve adopts the orphaned server, leaves its run to finish, runs the next minute.
    before = _flow_runs(api_url)
    first_completed = {run["id"] for run in before if run["state_type"] == "COMPLETED"}
    killed = {run["id"] for run in before if run["state_type"] in ("PENDING", "RUNNING")}
    assert killed, "the first serve was killed with no run in flight"
    second = Serve(suite, env, tmp_path / "serve-2.log")
    try:
        second.wait_for(
            "reuse", lambda: f"reusing the running local server (pid {record['pid']})" in second.output(), 120
        )

        def new_completed() -> list[dict[str, Any]]:
            return [run for run in _completed(api_url) if run["id"] not in first_completed]

        second.wait_for("a run completed after the restart", new_completed, 420)
        # A third serve of the same suite is refused while the second one serves it.
        third = subprocess.run(
            [str(OMNIEVAL), "serve", str(suite)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert third.returncode == 1 and "already served by omnieval serve" in third.stderr, third.stderr
    finally:
        second.process.send_signal(signal.SIGTERM)
        try:
            second.process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            second.process.kill()
            raise
    out = second.output()
    assert f"Prefect server (pid {record['pid']}) stopped" in out, out[-3000:]
    assert not record_path.exists()
    import psutil

    assert (
        not psutil.pid_exists(record["pid"]) or psutil.Process(record["pid"]).status() == psutil.STATUS_ZOMBIE
    )

    # 3. Read the stopped server's database: one run per scheduled minute, one folder per completed run.
    with sqlite3.connect(tmp_path / "prefect" / "server" / "prefect.db") as db:
        rows = db.execute(
            "SELECT id, expected_start_time, state_type, tags, auto_scheduled FROM flow_run"
        ).fetchall()
    runs = [
        {
            "id": r[0],
            "expected_start_time": r[1],
            "state_type": r[2],
            "tags": json.loads(r[3]),
            "auto_scheduled": r[4],
        }
        for r in rows
    ]
    # A run killed with the first serve was marked crashed by the second; one it had only claimed
    # (PENDING before its minute, nothing started) was deleted, the schedule's own run taking its minute.
    states = {run["id"]: run["state_type"] for run in runs}
    assert all(states.get(run_id, "deleted") in ("CRASHED", "deleted") for run_id in killed), [
        (run_id, states.get(run_id, "deleted")) for run_id in killed
    ]
    auto = Counter(str(run["expected_start_time"]) for run in runs if run["auto_scheduled"])
    assert max(auto.values()) == 1, [slot for slot, n in auto.items() if n > 1]
    completed = Counter(_slot(run) for run in runs if run["state_type"] == "COMPLETED")
    assert sum(completed.values()) >= 2
    assert max(completed.values()) == 1, [slot for slot, n in completed.items() if n > 1]
    folders = [p for p in runs_folder.iterdir() if p.is_dir()]
    parents = _mlflow_parent_runs(uri)
    assert len(folders) == len(parents) == sum(completed.values()), (len(folders), len(parents), completed)


def test_catch_up_marks_crashes_supersedes_and_reruns_a_night_once_on_a_real_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``catch_up`` against a real local server (no flow runs execute: the runs are made by hand)."""
    import asyncio
    import datetime as dt

    from omnieval.flows._server import acquire_server, server_folder
    from omnieval.flows._serving import SLOT_TAG, catch_up, deployment_name

    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    server = acquire_server(["catchup"], folder=server_folder())
    assert server.started

    async def scenario() -> None:
        from prefect import flow
        from prefect.client.orchestration import get_client
        from prefect.states import Crashed, Running, Scheduled

        @flow(name="omnieval-catchup-probe")
        def probe() -> None:
            return None

        night = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0) - dt.timedelta(minutes=2)
        earlier = night - dt.timedelta(minutes=1)
        async with get_client() as client:
            flow_id = await client.create_flow(probe)
            deployment = await client.create_deployment(flow_id=flow_id, name=deployment_name("catchup"))

            async def make(slot: dt.datetime) -> Any:
                return await client.create_flow_run_from_deployment(
                    deployment, state=Scheduled(scheduled_time=slot), tags=[f"{SLOT_TAG}{slot.isoformat()}"]
                )

            left_running = await make(night)
            await client.set_flow_run_state(left_running.id, Running(), force=True)
            missed = await make(earlier)

            async def runs_of(slot: dt.datetime) -> list[Any]:
                found = await client.read_flow_runs(limit=50)
                return [r for r in found if f"{SLOT_TAG}{slot.isoformat()}" in r.tags]

            first = await catch_up(client, deployment, "catchup")
            assert len(first.lines) == 3, first.lines  # crashed, superseded, rerun
            assert first.running == {}
            states = {r.id: r.state.type.value for r in await runs_of(night)}
            assert states[left_running.id] == "CRASHED"
            reruns = [run_id for run_id in states if run_id != left_running.id]
            assert len(reruns) == 1 and states[reruns[0]] == "SCHEDULED"
            assert (await client.read_flow_run(missed.id)).state.type.value == "CANCELLED"

            # A second start while the catch-up waits: nothing new.
            again = await catch_up(client, deployment, "catchup")
            assert again.lines == [] and len(await runs_of(night)) == 2
            # The catch-up crashed too: the night runs once more, under a new key.
            await client.set_flow_run_state(reruns[0], Crashed(), force=True)
            third = await catch_up(client, deployment, "catchup")
            assert len(third.lines) == 1 and "running it again now" in third.lines[0]
            assert len(await runs_of(night)) == 3

    from prefect.settings import PREFECT_API_URL, temporary_settings

    try:
        with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
            asyncio.run(scenario())
    finally:
        assert server.release()
    assert not (server_folder() / "server.json").exists()
