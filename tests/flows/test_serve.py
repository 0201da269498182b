"""``omnieval serve`` without a server: catch-up decisions, fire times, the server record (fast)."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from omnieval.cli import main
from omnieval.errors import OmnievalError
from omnieval.flows._server import ServerRecord, free_port, read_record, server_folder
from omnieval.flows._serving import (
    SHUTDOWN_MESSAGE,
    RunView,
    WaitingRun,
    deployment_name,
    next_fire_times,
    plan_catch_up,
    plan_other_parameters,
)
from omnieval.processes import pid_alive

ROOT = Path(__file__).resolve().parents[2]
NIGHT = dt.datetime(2026, 12, 1, 2, 0, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)
LATER = NIGHT + dt.timedelta(minutes=30)


def _run(run_id: str, slot: dt.datetime, state: str, message: str = "", alive: bool = False) -> RunView:
    return RunView(run_id, slot, state, message, alive)


def test_a_completed_or_failed_night_is_not_run_again() -> None:
    for state in ("COMPLETED", "FAILED"):
        plan = plan_catch_up([_run("a", NIGHT, state)], LATER)
        assert plan.rerun_slot is None and plan.crashed == () and plan.superseded == (), state


def test_a_run_left_running_by_a_dead_serve_is_crashed_and_its_night_runs_again() -> None:
    plan = plan_catch_up([_run("a", NIGHT, "RUNNING"), _run("b", NIGHT + DAY, "SCHEDULED")], LATER)
    assert plan.crashed == ("a",)
    assert plan.rerun_slot == NIGHT
    assert plan.superseded == ()  # the next night is in the future: the scheduler's business


def test_a_run_whose_process_still_lives_is_left_alone() -> None:
    plan = plan_catch_up([_run("a", NIGHT, "RUNNING", alive=True)], LATER)
    assert plan == (((), (), None))


def test_a_crashed_night_or_one_cancelled_by_the_runner_stopping_runs_again() -> None:
    assert plan_catch_up([_run("a", NIGHT, "CRASHED")], LATER).rerun_slot == NIGHT
    assert plan_catch_up([_run("a", NIGHT, "CANCELLED", SHUTDOWN_MESSAGE)], LATER).rerun_slot == NIGHT


def test_a_night_cancelled_by_a_person_is_not_run_again() -> None:
    assert plan_catch_up([_run("a", NIGHT, "CANCELLED", "cancelled from the UI")], LATER).rerun_slot is None


def test_a_catch_up_that_completed_or_is_waiting_prevents_another() -> None:
    crashed = _run("a", NIGHT, "CRASHED")
    assert plan_catch_up([crashed, _run("c", NIGHT, "COMPLETED")], LATER).rerun_slot is None
    assert plan_catch_up([crashed, _run("c", NIGHT, "SCHEDULED")], LATER).rerun_slot is None
    # ... and a catch-up that crashed too is retried.
    assert plan_catch_up([crashed, _run("c", NIGHT, "CRASHED")], LATER).rerun_slot == NIGHT


def test_only_the_latest_missed_night_runs_older_waiting_ones_are_superseded() -> None:
    runs = [
        _run("old", NIGHT - 2 * DAY, "SCHEDULED"),
        _run("older-done", NIGHT - 3 * DAY, "COMPLETED"),
        _run("prev", NIGHT - DAY, "SCHEDULED"),
        _run("last", NIGHT, "SCHEDULED"),
    ]
    plan = plan_catch_up(runs, LATER)
    assert set(plan.superseded) == {"old", "prev"}
    assert plan.rerun_slot is None  # "last" is still scheduled: the runner picks it up
    assert plan.crashed == ()


def test_future_slots_are_ignored() -> None:
    plan = plan_catch_up([_run("a", NIGHT, "CRASHED")], NIGHT - dt.timedelta(minutes=1))
    assert plan == ((), (), None)


def test_a_restart_with_other_suites_cancels_what_waits_with_the_old_ones() -> None:
    """Issue 47: ``serve --night`` restarted with other suite files ran a leftover slot of the old ones."""
    old = {"suite_paths": ["/tmp/clone/a.yaml", "/tmp/clone/b.yaml"], "timezone": "UTC"}
    new = {"suite_paths": ["/work/c.yaml"], "timezone": "UTC"}
    runs = [
        WaitingRun("missed", old, True, NIGHT),  # came due while no serve ran
        WaitingRun("catch-up", old, False, LATER),  # the previous serve's catch-up, not run yet
        WaitingRun("tomorrow", old, True, NIGHT + DAY),  # made by the scheduler for later
        WaitingRun("current", dict(new), True, NIGHT + 2 * DAY),
        WaitingRun("reordered", {"timezone": "UTC", "suite_paths": ["/work/c.yaml"]}, True, NIGHT),
    ]
    cancel, delete = plan_other_parameters(runs, new, LATER + dt.timedelta(minutes=1))
    assert cancel == ("missed", "catch-up")
    assert delete == ("tomorrow",)  # the scheduler makes that time again with the new suites
    assert plan_other_parameters(runs[3:], new, LATER) == ((), ())


def test_next_fire_times_follow_the_cron_in_its_timezone() -> None:
    times = asyncio.run(next_fire_times("0 2 * * *", "UTC", n=3))
    assert len(times) == 3
    assert all(t.hour == 2 and t.minute == 0 and t.utcoffset() == dt.timedelta(0) for t in times)
    assert [b - a for a, b in itertools.pairwise(times)] == [DAY, DAY]
    assert times[0] > dt.datetime.now(dt.UTC)
    berlin = asyncio.run(next_fire_times("0 2 * * *", "Europe/Berlin", n=1))[0]
    assert berlin.hour == 2 and berlin.utcoffset() in (dt.timedelta(hours=1), dt.timedelta(hours=2))


def test_deployment_name_is_stable_per_suite() -> None:
    assert deployment_name("nightly") == deployment_name("nightly") == "omnieval-nightly"
    assert deployment_name("acbench") != deployment_name("nightly")


def test_server_record_round_trips_and_a_broken_one_names_its_file(tmp_path: Path) -> None:
    record = ServerRecord(
        123, 4567, "http://127.0.0.1:4567/api", "sqlite+aiosqlite:///x.db", {99: ("nightly",)}
    )
    (tmp_path / "server.json").write_text(record.to_json())
    assert read_record(tmp_path) == record
    (tmp_path / "server.json").write_text('{"pid": "not a pid"}')
    with pytest.raises(OmnievalError, match=r"server\.json: unreadable server record"):
        read_record(tmp_path)
    assert read_record(tmp_path / "missing") is None


def test_server_folder_lives_under_prefect_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "home"))
    assert server_folder() == (tmp_path / "home" / "server").resolve()


def test_pid_alive_tells_a_finished_child_and_a_zombie_from_a_live_process() -> None:
    assert pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    while True:  # a zombie until reaped: exited, not yet waited for
        state = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            break
    assert not pid_alive(child.pid)
    child.wait()
    assert not pid_alive(child.pid)


def test_free_port_is_a_loopback_port_nothing_listens_on() -> None:
    import socket

    port = free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))  # raises if taken
        assert probe.getsockname() == ("127.0.0.1", port)


def test_serving_the_same_suite_twice_in_one_command_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    suite = str(ROOT / "pipelines" / "nightly.yaml")
    assert main(["serve", suite, suite]) == 2
    assert "suite name(s) given twice: nightly" in capsys.readouterr().err
