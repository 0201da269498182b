"""Team mode against real processes on loopback: PostgreSQL, MLflow with accounts, Prefect.

``omnieval team up`` runs as a user runs it (the console script, a fresh process) on free ports in a
temporary folder whose credentials file was written beforehand with planted passwords. A suite runs
through ``omnieval run`` as the evaluator (credentials from the environment) with the team's
Prefect server; the viewer (credentials from a 0600 file) reads the run and is refused a write
(403); no planted password is in any file the run wrote, the team's logs or MLflow's params and
tags; ``omnieval team down`` leaves no process. Dask is left out (``--no-dask``): its scheduler and
workers are ordinary ``dask`` processes, checked by tests/flows/test_dask_runner.py.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
OMNIEVAL = str(Path(sys.executable).with_name("omnieval"))
PLANTED = {
    "postgres": "planted-pg-Qx7rT2vLw9",
    "admin": "planted-admin-Kp3mZ8sNq1",
    "evaluator": "planted-eval-Hd5yB4cRt6",
    "viewer": "planted-view-Wn2uF7jXe0",
}
SESSION_KEY = "planted-session-" + "ab" * 24


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _client_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MLFLOW_TRACKING_", "PREFECT_API_URL", "OMNIEVAL_MLFLOW_CREDENTIALS"))
    }
    env.update(extra)
    return env


def _omnieval(
    *args: str, cwd: Path, env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [OMNIEVAL, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _descendants(roots: set[int]) -> set[int]:
    """``roots`` and every live process below them."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            except OSError:
                continue
            if fields and fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found = {pid for pid in roots if pid in parents}
    grew = True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in found} - found
        grew = bool(more)
        found |= more
    return found


def _alive(pids: set[int]) -> set[int]:
    left = set()
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if fields and fields[0] != "Z":
            left.add(pid)
    return left


@pytest.fixture(scope="module")
def team() -> Iterator[dict[str, Any]]:
    # Not under pytest's tmp folder: a root caller runs PostgreSQL as 'postgres', which cannot pass
    # through pytest's 0700 base folder.
    base = Path(tempfile.mkdtemp(prefix="omnieval-team-test-", dir="/tmp"))
    os.chmod(base, 0o711)
    folder = base / "team"
    credentials = folder / "credentials"
    credentials.mkdir(parents=True)
    os.chmod(credentials, 0o700)
    master = credentials / "team.ini"
    master.write_text(
        f"[postgres]\npassword = {PLANTED['postgres']}\n"
        + "".join(
            f"[{n}]\nusername = {n}\npassword = {PLANTED[n]}\n" for n in ("admin", "evaluator", "viewer")
        )
        + f"[mlflow]\nsession_key = {SESSION_KEY}\n"
    )
    os.chmod(master, 0o600)
    pg, ml, pf, dk = _free_ports(4)
    env = _client_env()
    started = time.monotonic()
    up = _omnieval(
        "team", "up", "--dir", str(folder), "--postgres-port", str(pg), "--mlflow-port", str(ml),
        "--prefect-port", str(pf), "--dask-port", str(dk), "--no-dask", "--json",
        cwd=base, env=env,
    )  # fmt: skip
    up_seconds = time.monotonic() - started
    state: dict[str, Any] = {}
    try:
        assert up.returncode == 0, up.stderr[-4000:]
        state = json.loads(up.stdout)
        yield {
            "base": base,
            "folder": folder,
            "state": state,
            "up_seconds": up_seconds,
            "env": env,
            "ports": {"postgres": pg, "mlflow": ml, "prefect": pf, "dask": dk},
        }
    finally:
        recorded = {int(s["pid"]) for s in state.get("services", {}).values() if s.get("pid")}
        before = _descendants(recorded)
        down = _omnieval("team", "down", "--dir", str(folder), cwd=base, env=env, timeout=180)
        left = _alive(before)
        shutil.rmtree(base, ignore_errors=True)
        assert down.returncode == 0, down.stderr[-3000:]
        assert before and left == set(), (before, left)


def _evaluator_project(team: dict[str, Any], project: Path, suite_name: str = "teamcheck") -> dict[str, str]:
    """``project`` (its own state and runs folders: a machine of its own) with the small suite
    ``suite_name`` in ``suite.yaml``; returns the evaluator's environment for the team's servers."""
    project.mkdir()
    suite = yaml.safe_load((ROOT / "pipelines" / "nightly.yaml").read_text())
    suite.update(
        suite=suite_name,
        state_dir=str(project / "state"),
        runs_dir=str(project / "runs"),
        systems={"oracle": {"kind": "oracle"}},
        judges={"panels": []},
        drift={"enabled": False},
        tracking={"experiment": f"omnieval/{suite_name}"},
    )
    suite["dataset"] = {**suite["dataset"], "path": str(ROOT / "data" / "storybench-sample"), "limit": 1}
    (project / "suite.yaml").write_text(yaml.safe_dump(suite))
    urls = team["state"]["urls"]
    return _client_env(
        MLFLOW_TRACKING_URI=urls["MLFLOW_TRACKING_URI"],
        PREFECT_API_URL=urls["PREFECT_API_URL"],
        MLFLOW_TRACKING_USERNAME="evaluator",
        MLFLOW_TRACKING_PASSWORD=PLANTED["evaluator"],
        PREFECT_HOME=str(project / ".prefect"),
    )


def _run_as_evaluator(team: dict[str, Any], project: Path) -> dict[str, Any]:
    """The small ``teamcheck`` suite run through ``omnieval run`` as the evaluator, from ``project``,
    against the team's servers."""
    env = _evaluator_project(team, project)
    done = _omnieval("run", "suite.yaml", "--json", cwd=project, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads(done.stdout[done.stdout.index("{") :])
    return {"project": project, "summary": summary, "output": done.stdout + done.stderr, "env": env}


@pytest.fixture(scope="module")
def evaluated(team: dict[str, Any]) -> dict[str, Any]:
    """Machine A: one suite run as the evaluator against the team's servers."""
    return _run_as_evaluator(team, team["base"] / "project")


@pytest.fixture(scope="module")
def machine_b(team: dict[str, Any], evaluated: dict[str, Any]) -> dict[str, Any]:
    """Machine B: the same suite from another folder with no run of its own (a second clone). A's
    project is out of reach while B runs, as on another machine, so B must fetch A's run folder."""
    a_project: Path = evaluated["project"]
    hidden = a_project.with_name("project-elsewhere")
    a_project.rename(hidden)
    try:
        return _run_as_evaluator(team, team["base"] / "machine-b")
    finally:
        hidden.rename(a_project)


def test_team_up_starts_everything_on_loopback_with_accounts(team: dict[str, Any]) -> None:
    state = team["state"]
    assert set(state["services"]) == {"postgres", "mlflow", "prefect"}
    urls = state["urls"]
    assert urls["MLFLOW_TRACKING_URI"].startswith("http://127.0.0.1:")
    assert urls["PREFECT_API_URL"].startswith("http://127.0.0.1:") and urls["PREFECT_API_URL"].endswith(
        "/api"
    )
    assert state["accounts_created"] == ["evaluator", "viewer"]
    for name in ("admin", "evaluator", "viewer"):
        path = Path(state["accounts"][name])
        assert path.stat().st_mode & 0o777 == 0o600
    # Nothing without an account: the server asks for one.
    request = urllib.request.Request(
        f"{urls['MLFLOW_TRACKING_URI']}/api/2.0/mlflow/experiments/search?max_results=1"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401
    print(f"team up: {team['up_seconds']:.1f} s; stages {state['seconds']}")


def test_team_up_again_reuses_the_running_servers(team: dict[str, Any]) -> None:
    started = time.monotonic()
    again = _omnieval(
        "team", "up", "--dir", str(team["folder"]), "--no-dask", "--json", cwd=team["base"], env=team["env"]
    )
    assert again.returncode == 0, again.stderr[-3000:]
    # No port given: the folder's last ones; every server already runs and is kept.
    state = json.loads(again.stdout)
    assert {k: v["pid"] for k, v in state["services"].items()} == {
        k: v["pid"] for k, v in team["state"]["services"].items()
    }
    assert state["urls"] == team["state"]["urls"] and state["accounts_created"] == []
    print(f"team up again: {time.monotonic() - started:.1f} s")
    status = _omnieval(
        "team", "status", "--dir", str(team["folder"]), "--json", cwd=team["base"], env=team["env"]
    )
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)["services"]
    assert {name for name, entry in report.items() if entry["running"]} == {"postgres", "mlflow", "prefect"}


def test_a_run_as_evaluator_is_tracked_on_the_team_server(
    team: dict[str, Any], evaluated: dict[str, Any]
) -> None:
    import mlflow

    summary = evaluated["summary"]
    assert summary["regression"] in ("GO", "INCONCLUSIVE")
    client = mlflow.MlflowClient(team["state"]["urls"]["MLFLOW_TRACKING_URI"])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_USERNAME", "viewer")
        mp.setenv("MLFLOW_TRACKING_PASSWORD", PLANTED["viewer"])
        run = client.get_run(summary["run_id"])
        assert run.info.status == "FINISHED"
        assert run.info.artifact_uri.startswith("mlflow-artifacts:")
        assert any(a.path == "report.html" or a.is_dir for a in client.list_artifacts(summary["run_id"]))
        # The candidate manifest another machine's re-judging verifies against; the oracle's
        # candidates are copied into the run folder (run/), so no blob is uploaded for them.
        listed = {a.path for a in client.list_artifacts(summary["run_id"], "candidates")}
        assert listed == {"candidates/manifest.json"}, listed
    # The run's flow ran on the team's Prefect server (PostgreSQL), not a temporary one.
    api = team["state"]["urls"]["PREFECT_API_URL"]
    request = urllib.request.Request(
        f"{api}/flow_runs/count", data=b"{}", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert int(response.read()) >= 1


def test_the_viewer_reads_and_is_refused_a_write(team: dict[str, Any], evaluated: dict[str, Any]) -> None:
    from mlflow.exceptions import MlflowException

    from omnieval.tracking import tracking_uri

    viewer_file = Path(team["state"]["accounts"]["viewer"])
    with pytest.MonkeyPatch.context() as mp:
        for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
            mp.delenv(name, raising=False)
        mp.setenv("MLFLOW_TRACKING_URI", team["state"]["urls"]["MLFLOW_TRACKING_URI"])
        mp.setenv("OMNIEVAL_MLFLOW_CREDENTIALS", str(viewer_file))
        import mlflow

        client = mlflow.MlflowClient(tracking_uri())  # reads the 0600 file into MLflow's variables
        assert os.environ["MLFLOW_TRACKING_USERNAME"] == "viewer"
        run_id = evaluated["summary"]["run_id"]
        assert client.get_run(run_id).data.tags
        with pytest.raises(MlflowException) as refused:
            client.log_metric(run_id, "viewer.write", 1.0)
        assert refused.value.get_http_status_code() == 403
        with pytest.raises(MlflowException) as refused_tag:
            client.set_tag(run_id, "viewer.tag", "x")
        assert refused_tag.value.get_http_status_code() == 403
        assert "viewer.write" not in client.get_run(run_id).data.metrics


def test_a_credentials_file_others_can_read_is_refused(
    team: dict[str, Any], evaluated: dict[str, Any]
) -> None:
    loose = team["base"] / "loose.ini"
    loose.write_text(Path(team["state"]["accounts"]["viewer"]).read_text())
    os.chmod(loose, 0o644)
    env = _client_env(
        MLFLOW_TRACKING_URI=team["state"]["urls"]["MLFLOW_TRACKING_URI"],
        OMNIEVAL_MLFLOW_CREDENTIALS=str(loose),
    )
    done = _omnieval("trend", "--suite", "teamcheck", cwd=evaluated["project"], env=env, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"credentials file {loose} has permissions 0644" in done.stderr
    assert "Traceback" not in done.stderr
    assert PLANTED["viewer"] not in done.stdout + done.stderr


def test_no_planted_password_in_files_logs_or_mlflow(team: dict[str, Any], evaluated: dict[str, Any]) -> None:
    import mlflow

    secrets = [*PLANTED.values(), SESSION_KEY]
    assert not any(s in evaluated["output"] for s in secrets)
    folder: Path = team["folder"]
    searched = [
        evaluated["project"],
        folder / "logs",
        folder / "mlflow",
        folder / "prefect",
        folder / "team.json",
    ]
    searched.append(folder / "postgres" / "server.log")
    files = [p for root in searched for p in ([root] if root.is_file() else root.rglob("*")) if p.is_file()]
    run_folder = Path(evaluated["summary"]["run_folder"])
    assert {"lineage.json", "report.html", "config.resolved.yaml"} <= {p.name for p in run_folder.iterdir()}
    assert len(files) > 20
    for path in files:
        data = path.read_bytes()
        for secret in secrets:
            assert secret.encode() not in data, f"{secret[:12]}... in {path}"

    client = mlflow.MlflowClient(team["state"]["urls"]["MLFLOW_TRACKING_URI"])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_USERNAME", "admin")
        mp.setenv("MLFLOW_TRACKING_PASSWORD", PLANTED["admin"])
        experiments = client.search_experiments()
        runs = client.search_runs([e.experiment_id for e in experiments], max_results=1000)
    assert runs
    for run in runs:
        recorded = json.dumps(
            {"params": run.data.params, "tags": run.data.tags, "metrics": list(run.data.metrics)}
        )
        for secret in secrets:
            assert secret not in recorded, (run.info.run_id, secret[:12])


def test_machine_b_compares_with_machine_a_s_run_from_the_server(
    team: dict[str, Any], evaluated: dict[str, Any], machine_b: dict[str, Any]
) -> None:
    run_a, run_b = evaluated["summary"]["run_id"], machine_b["summary"]["run_id"]
    folder_b = Path(machine_b["summary"]["run_folder"])
    regression = json.loads((folder_b / "regression.json").read_text())
    # B has no earlier run of its own: its baseline is A's, looked up on the server.
    assert regression["baseline"]["run_id"] == run_a, regression["baseline"]
    fetched = Path(regression["baseline"]["folder"])
    assert fetched == machine_b["project"] / "runs" / "teamcheck" / run_a
    record = json.loads((fetched / "fetched.json").read_text())
    assert record["run_id"] == run_a and record["run_folder_elsewhere"] == evaluated["summary"]["run_folder"]
    assert "evaluator" not in record["tracking_uri"] and PLANTED["evaluator"] not in json.dumps(record)
    assert regression["verdict"] in ("GO", "INCONCLUSIVE") and regression["run_b"]["run_id"] == run_b
    # `omnieval compare` on B names A's run by its id; A's folder is not on B.
    shutil.rmtree(fetched)
    a_project: Path = evaluated["project"]
    hidden = a_project.with_name("project-elsewhere")
    a_project.rename(hidden)
    try:
        done = _omnieval(
            "compare", run_a, run_b, "--json", cwd=machine_b["project"], env=machine_b["env"], timeout=300
        )
    finally:
        hidden.rename(a_project)
    assert done.returncode in (0, 3), done.stdout[-2000:] + done.stderr[-3000:]
    document = json.loads(done.stdout[done.stdout.index("{") :])
    assert document["run_a"]["run_id"] == run_a and document["run_b"]["run_id"] == run_b
    assert (fetched / "fetched.json").is_file()


def _viewer_client(team: dict[str, Any]) -> Any:
    import mlflow

    os.environ["MLFLOW_TRACKING_USERNAME"] = "viewer"
    os.environ["MLFLOW_TRACKING_PASSWORD"] = PLANTED["viewer"]
    return mlflow.MlflowClient(team["state"]["urls"]["MLFLOW_TRACKING_URI"])


def test_a_run_that_cannot_reach_the_server_is_kept_and_uploaded_later(
    team: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = team["base"] / "offline"
    env = _evaluator_project(team, project, "keptcheck")
    (dead,) = _free_ports(1)
    # Few quick retries: the server stays away, the test need not wait out MLflow's ~4 minutes.
    unreachable = {
        **env,
        "MLFLOW_TRACKING_URI": f"http://127.0.0.1:{dead}",
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
        "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    }
    done = _omnieval("run", "suite.yaml", cwd=project, env=unreachable)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-3000:]
    (folder,) = list((project / "runs" / "keptcheck").iterdir())
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("error: the tracking server") and "could not be reached" in error, error
    assert f"omnieval track {folder}" in error and "Connection refused" in error
    assert "Traceback" not in done.stderr
    assert folder.name.startswith("local-")
    assert {
        "tracking_pending.json",
        "tracking_pending_dataset.parquet",
        "regression.json",
        "report.html",
    } <= {p.name for p in folder.iterdir()}
    assert not (folder / "mlflow.json").exists()
    verdict = json.loads((folder / "regression.json").read_text())["verdict"]
    metrics = json.loads((folder / "tracking_pending.json").read_text())["arguments"]["system_metrics"][
        "oracle"
    ]
    assert metrics
    assert PLANTED["evaluator"] not in (folder / "tracking_pending.json").read_text()

    # Still unreachable: the upload fails clearly and leaves the folder as it was.
    before = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    again = _omnieval("track", str(folder), cwd=project, env=unreachable)
    assert again.returncode == 1 and "still cannot be reached" in again.stderr, again.stderr[-2000:]
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == before

    uploaded = _omnieval("track", folder.name, "--json", cwd=project, env=env)
    assert uploaded.returncode == 0, uploaded.stderr[-3000:]
    (entry,) = json.loads(uploaded.stdout[uploaded.stdout.index('{\n  "uploaded"') :])["uploaded"]
    target = Path(entry["run_folder"])
    assert not folder.exists() and target == project / "runs" / "keptcheck" / entry["run_id"]
    names = {p.name for p in target.iterdir()}
    assert {"mlflow.json", "regression.json", "report.html", "scores.parquet"} <= names
    assert not names & {"tracking_pending.json", "tracking_pending_dataset.parquet"}
    lineage = json.loads((target / "lineage.json").read_text())
    assert lineage["run_id"] == entry["run_id"] and lineage["local_run_id"] == folder.name

    monkeypatch.setattr(os, "environ", dict(os.environ))  # the viewer's account, for this test only
    client = _viewer_client(team)
    run = client.get_run(entry["run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.tags["omnieval.regression"] == verdict and run.data.tags["omnieval.suite"] == "keptcheck"
    (child,) = client.search_runs(
        [run.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{entry['run_id']}' and tags.`omnieval.kind` = 'system'",
    )
    assert child.data.metrics == pytest.approx(metrics)
    # Tracked now: nothing left to upload.
    twice = _omnieval("track", str(target), cwd=project, env=env)
    assert twice.returncode == 2 and "already tracked" in twice.stderr, twice.stderr[-2000:]


def _wait_for(text: str, logs: tuple[Path, Path], process: subprocess.Popen[str], timeout_s: float) -> None:
    """Until ``text`` appears in the run's stdout or stderr (progress lines go to either)."""
    deadline = time.monotonic() + timeout_s

    def seen() -> str:
        return "".join(path.read_text(errors="replace") for path in logs)

    while text not in seen():
        assert process.poll() is None, f"the run ended before {text!r}: {seen()[-3000:]}"
        assert time.monotonic() < deadline, f"no {text!r} within {timeout_s} s: {seen()[-3000:]}"
        time.sleep(0.5)


def test_the_tracking_server_killed_and_restarted_mid_run_loses_no_metric(
    team: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal

    project = team["base"] / "restart"
    env = _evaluator_project(team, project, "restartcheck")
    logs = (project / "run.out", project / "run.err")
    with logs[0].open("w") as out, logs[1].open("w") as err:
        process = subprocess.Popen(
            [OMNIEVAL, "run", "suite.yaml", "--json"], cwd=project, env=env, stdout=out, stderr=err, text=True
        )
    try:
        _wait_for("[metrics]", logs, process, 300)
        server = _descendants({int(team["state"]["services"]["mlflow"]["pid"])})
        assert server
        for pid in server:
            os.kill(pid, signal.SIGKILL)
        _wait_for("[track] started", logs, process, 300)
        time.sleep(3)  # the track stage's requests are failing now, and being retried
        ports = team["ports"]
        restarted = _omnieval(
            "team", "up", "--dir", str(team["folder"]), "--postgres-port", str(ports["postgres"]),
            "--mlflow-port", str(ports["mlflow"]), "--prefect-port", str(ports["prefect"]),
            "--dask-port", str(ports["dask"]), "--no-dask", "--json", cwd=team["base"], env=team["env"],
        )  # fmt: skip
        assert restarted.returncode == 0, restarted.stderr[-3000:]
        team["state"]["services"]["mlflow"] = json.loads(restarted.stdout)["services"]["mlflow"]
        assert process.wait(timeout=600) == 0, logs[1].read_text()[-4000:]
    finally:
        if process.poll() is None:
            process.kill()
    stdout, stderr = (path.read_text() for path in logs)
    assert "Retrying" in stdout + stderr  # the outage did reach the track stage
    summary = json.loads(stdout[stdout.index("{") :])
    assert summary["regression"] in ("GO", "INCONCLUSIVE")
    monkeypatch.setattr(os, "environ", dict(os.environ))
    client = _viewer_client(team)
    parent = client.get_run(summary["run_id"])
    assert (
        parent.info.status == "FINISHED" and parent.data.tags["omnieval.regression"] == summary["regression"]
    )
    runs = [
        parent,
        *client.search_runs(
            [parent.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{summary['run_id']}'"
        ),
    ]
    counted = 0
    for run in runs:
        for key in run.data.metrics:
            history = client.get_metric_history(run.info.run_id, key)
            assert len(history) == 1, (run.info.run_name, key, history)
            counted += 1
    # What the report stage handed to tracking (the suite state_dir's report/leaderboard.json).
    board = json.loads((project / "state" / "report" / "leaderboard.json").read_text())
    (child,) = [r for r in runs if r.data.tags.get("omnieval.kind") == "system"]
    assert child.data.metrics == pytest.approx(board["mlflow_metrics"]["oracle"])
    assert counted > len(board["mlflow_metrics"]["oracle"])
