"""Serving suites on their cron schedules: deployments, next fire times and missed-night catch-up.

``omnieval serve`` registers one deployment per suite, named ``omnieval-<suite>`` (stable, so a
restarted ``serve`` updates the same deployment instead of adding one), and runs a Prefect runner
that executes the scheduled flow runs the server's scheduler creates. Prefect keys each scheduled
run by deployment, schedule and time, so a slot gets one auto-scheduled run however often the
deployment is re-applied. ``omnieval serve --night`` registers one deployment instead,
``omnieval-night``, whose flow runs the suites one after another (:func:`serve_night`).

What Prefect does not do by itself, and :func:`plan_catch_up` decides at start-up:

- a run left ``Pending``/``Running`` by a ``serve`` that died (its process gone) is marked
  ``Crashed``;
- the most recent slot that has passed is run again now when its run was interrupted (crashed,
  or cancelled because its runner shut down) and no run of that slot completed, failed or is
  still live; the catch-up run carries the slot in a tag, so it is never made twice;
- older slots still waiting (``Scheduled``, late) are cancelled as superseded: a nightly
  evaluates the project as it is now, so one catch-up run stands for every missed night;
- before all that, runs still waiting that were scheduled with other parameters than this
  ``serve`` gives (a ``serve --night`` restarted with other suite files) are cancelled, or, for a
  later time the scheduler made, deleted so that it schedules that time again
  (:func:`plan_other_parameters`): a restart runs only what it is given.

The runner executes one flow run at a time (two nightlies would compete for two cores and share
state folders) and does not pause the schedules when it stops, so the server keeps the next
nights scheduled across a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from omnieval.processes import pid_alive

if TYPE_CHECKING:
    from uuid import UUID

    from prefect.client.orchestration import PrefectClient
    from prefect.client.schemas.objects import FlowRun

    from omnieval.config import SuiteConfig

SLOT_TAG = "omnieval-slot:"
"""Tag prefix of a catch-up run: the ISO time of the slot it stands for."""

SHUTDOWN_MESSAGE = "Runner is shutting down."
"""The message Prefect's runner gives the runs it cancels when it stops (SIGTERM)."""

LIVE_STATES = frozenset({"SCHEDULED", "PENDING", "RUNNING", "PAUSED", "CANCELLING"})
SETTLED_STATES = frozenset({"COMPLETED", "FAILED"})


def deployment_name(suite: str) -> str:
    """The deployment of ``suite``: one per suite, the same across restarts."""
    return f"omnieval-{suite}"


class RunView(NamedTuple):
    """What the catch-up decision needs to know about one flow run of a deployment."""

    id: str
    slot: dt.datetime
    """The scheduled time this run belongs to (for a catch-up run: the slot it replaces)."""
    state: str
    """Prefect state type: SCHEDULED, PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, CRASHED, ..."""
    message: str
    process_alive: bool
    """A process on this machine still runs it (meaningful for PENDING/RUNNING)."""


class CatchUpPlan(NamedTuple):
    """What :func:`plan_catch_up` decided for one deployment."""

    crashed: tuple[str, ...]
    """Runs left PENDING/RUNNING by a dead ``serve``: mark them CRASHED."""
    superseded: tuple[str, ...]
    """Late SCHEDULED runs of slots older than the latest past one: cancel them."""
    rerun_slot: dt.datetime | None
    """The latest past slot, when it must run again now; None otherwise."""


def plan_catch_up(runs: Sequence[RunView], now: dt.datetime) -> CatchUpPlan:
    """Decide, at ``serve`` start-up, which runs crashed, which are superseded, what runs again.

    Only slots at or before ``now`` are considered; future slots belong to the scheduler.

    >>> t = dt.datetime(2026, 12, 1, 2, 0, tzinfo=dt.UTC)
    >>> runs = [
    ...     RunView("a", t - dt.timedelta(days=1), "SCHEDULED", "", False),
    ...     RunView("b", t, "RUNNING", "", False),
    ... ]
    >>> plan = plan_catch_up(runs, t + dt.timedelta(minutes=5))
    >>> plan.crashed, plan.superseded, plan.rerun_slot == t
    (('b',), ('a',), True)
    """
    past = [run for run in runs if run.slot <= now]
    if not past:
        return CatchUpPlan((), (), None)
    latest = max(run.slot for run in past)
    crashed = tuple(run.id for run in past if run.state in {"PENDING", "RUNNING"} and not run.process_alive)
    superseded = tuple(run.id for run in past if run.slot < latest and run.state == "SCHEDULED")
    of_latest = [run for run in past if run.slot == latest]
    settled = any(run.state in SETTLED_STATES for run in of_latest)
    live = any(run.state in LIVE_STATES and run.id not in crashed for run in of_latest)
    interrupted = any(
        run.id in crashed
        or run.state == "CRASHED"
        or (run.state == "CANCELLED" and run.message.strip() == SHUTDOWN_MESSAGE)
        for run in of_latest
    )
    rerun = latest if interrupted and not settled and not live else None
    return CatchUpPlan(crashed, superseded, rerun)


class WaitingRun(NamedTuple):
    """A flow run of a deployment still waiting to run (``Scheduled``), as :func:`plan_other_parameters`
    sees it."""

    id: str
    parameters: dict[str, Any]
    auto_scheduled: bool
    """Created by the server's scheduler (not a catch-up run or one started by hand)."""
    start: dt.datetime
    """When it is due."""


OTHER_PARAMETERS = "scheduled with other parameters; omnieval serve restarted with"
"""How a waiting run of a previous ``serve``'s suites is named when it is cancelled."""


def plan_other_parameters(
    runs: Sequence[WaitingRun], parameters: dict[str, Any], now: dt.datetime
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Which waiting runs were scheduled with other parameters than ``serve`` now gives: (cancel, delete).

    A ``serve`` restarted with other suite files updates its deployment, but the runs already
    scheduled keep the parameters they were made with, and the runner would run them: the
    previous suites (their files perhaps deleted), and a night record for the date. Those due
    already, and catch-up runs, are cancelled (a restart runs only what it is given); those the
    scheduler made for a later time are deleted, as Prefect deletes them itself when a deployment's
    schedule changes, so that it schedules that time again with the current parameters.

    >>> now = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)
    >>> old = {"suite_paths": ["/gone/a.yaml"]}
    >>> runs = [WaitingRun("due", old, True, now - dt.timedelta(hours=7)),
    ...         WaitingRun("later", old, True, now + dt.timedelta(hours=17)),
    ...         WaitingRun("same", {"suite_paths": ["/b.yaml"]}, True, now - dt.timedelta(hours=7))]
    >>> plan_other_parameters(runs, {"suite_paths": ["/b.yaml"]}, now)
    (('due',), ('later',))
    """
    wanted = _canonical(parameters)
    other = [run for run in runs if _canonical(run.parameters) != wanted]
    cancel = tuple(run.id for run in other if not (run.auto_scheduled and run.start > now))
    delete = tuple(run.id for run in other if run.auto_scheduled and run.start > now)
    return cancel, delete


def _canonical(parameters: Any) -> str:
    import json

    return json.dumps(parameters, sort_keys=True, default=str)


async def drop_other_parameters(
    client: PrefectClient, deployment_id: UUID, label: str, parameters: dict[str, Any]
) -> list[str]:
    """Apply :func:`plan_other_parameters` to a deployment's waiting runs; say what was done."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.states import Cancelled

    now = dt.datetime.now(dt.UTC)
    found = await client.read_flow_runs(
        flow_run_filter=FlowRunFilter(
            deployment_id=FlowRunFilterDeploymentId(any_=[deployment_id]),
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED])),
        ),
        limit=200,
    )
    waiting = [
        WaitingRun(str(run.id), dict(run.parameters or {}), bool(run.auto_scheduled), run.expected_start_time)
        for run in found
        if run.expected_start_time is not None
    ]
    cancel, delete = plan_other_parameters(waiting, parameters, now)
    by_id = {run.id: run for run in waiting}
    done: list[str] = []
    for run_id in cancel:
        await client.set_flow_run_state(
            run_id, Cancelled(message=f"{OTHER_PARAMETERS} {_canonical(parameters)}"), force=True
        )
        done.append(
            f"  {label}: run {run_id} of {by_id[run_id].start:%Y-%m-%d %H:%M %Z} was scheduled with "
            f"other parameters ({_canonical(by_id[run_id].parameters)}): cancelled, not run"
        )
    for run_id in delete:
        await client.delete_flow_run(run_id)  # type: ignore[arg-type]  # a UUID's text is accepted
    if delete:
        done.append(f"  {label}: {len(delete)} later run(s) scheduled with other parameters: scheduled again")
    return done


# --- which flow-run processes are alive: a pid file per run, written when the runner starts it ---


def _pid_folder() -> Path:
    from omnieval.flows._server import server_folder

    return server_folder() / "flow-runs"


def track_flow_run_processes() -> None:
    """Record the pid of each flow-run process this runner starts (``<server>/flow-runs/<id>.pid``).

    Prefect's direct starter looks ``run_flow_in_subprocess`` up in its module at call time (its
    documented override point); wrapping it lets a restarted ``serve`` tell a run whose process
    outlived a killed ``serve`` (still running, left alone) from one that died with it.
    """
    import prefect.runner._starter_direct as direct

    original = getattr(direct, "run_flow_in_subprocess")  # noqa: B009 (not re-exported: mypy)
    if getattr(original, "_omnieval_tracked", False):
        return
    folder = _pid_folder()
    folder.mkdir(parents=True, exist_ok=True)

    def tracked(flow: Any, flow_run: Any = None, **kwargs: Any) -> Any:
        process = original(flow, flow_run=flow_run, **kwargs)
        if flow_run is not None and process.pid is not None:
            (folder / f"{flow_run.id}.pid").write_text(f"{process.pid}\n")
        return process

    tracked._omnieval_tracked = True  # type: ignore[attr-defined]
    setattr(direct, "run_flow_in_subprocess", tracked)  # noqa: B010 (not re-exported: mypy)


def _run_pid(run_id: str) -> int | None:
    """The live process running flow run ``run_id`` on this machine, from its pid file."""
    path = _pid_folder() / f"{run_id}.pid"
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if pid_alive(pid) else None


def claimed_but_not_started(runs: Sequence[RunView], now: dt.datetime) -> tuple[str, ...]:
    """Runs of slots still to come that a dead ``serve``'s runner had claimed (``PENDING``): delete them.

    Prefect's runner claims a run a few seconds before its time; a ``serve`` killed in between
    leaves it ``PENDING`` with no process, and no runner ever takes it (runners take ``SCHEDULED``
    runs). The restarted ``serve`` re-applies its deployment's schedule, whose scheduler makes its
    own run of that minute, so the claimed run is deleted rather than scheduled again (which would
    run the minute twice). Nothing of it had started.

    >>> t = dt.datetime(2026, 12, 1, 2, 0, tzinfo=dt.UTC)
    >>> claimed_but_not_started(
    ...     [RunView("a", t, "PENDING", "", False), RunView("b", t, "PENDING", "", True)], t - dt.timedelta(seconds=5)
    ... )
    ('a',)
    """
    return tuple(
        run.id for run in runs if run.slot > now and run.state == "PENDING" and not run.process_alive
    )


# --- the Prefect side ---


def _view(run: FlowRun) -> RunView | None:
    """A flow run as the catch-up decision sees it; None for runs outside the schedule (manual)."""
    slot: dt.datetime | None = None
    for tag in run.tags:
        if tag.startswith(SLOT_TAG):
            with contextlib.suppress(ValueError):
                slot = dt.datetime.fromisoformat(tag[len(SLOT_TAG) :])
    if slot is None and run.auto_scheduled:
        slot = run.expected_start_time
    if slot is None or run.state is None:
        return None
    state = run.state.type.value
    alive = state in {"PENDING", "RUNNING"} and _run_pid(str(run.id)) is not None
    return RunView(str(run.id), slot, state, run.state.message or "", alive)


class CatchUpDone(NamedTuple):
    """What :func:`catch_up` did, and which processes of a previous ``serve`` still run a flow."""

    lines: list[str]
    running: dict[str, int]
    """flow run id -> pid of runs a killed ``serve`` left running (they finish by themselves)."""


async def catch_up(client: PrefectClient, deployment_id: UUID, suite: str) -> CatchUpDone:
    """Apply :func:`plan_catch_up` to a deployment's recent runs; say what was done."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterExpectedStartTime,
    )
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.states import Cancelled, Crashed, Scheduled

    now = dt.datetime.now(dt.UTC)
    runs = await client.read_flow_runs(
        flow_run_filter=FlowRunFilter(
            deployment_id=FlowRunFilterDeploymentId(any_=[deployment_id]),
            expected_start_time=FlowRunFilterExpectedStartTime.model_validate({"before_": now}),
        ),
        sort=FlowRunSort.EXPECTED_START_TIME_DESC,
        limit=200,
    )
    views = [view for view in (_view(run) for run in runs) if view is not None]
    plan = plan_catch_up(views, now)
    done: list[str] = []
    for run_id in plan.crashed:
        await client.set_flow_run_state(
            run_id, Crashed(message="its omnieval serve process died; marked crashed at restart"), force=True
        )
        done.append(f"  {suite}: run {run_id} was left running by a serve that died: marked crashed")
    for run_id in plan.superseded:
        await client.set_flow_run_state(
            run_id,
            Cancelled(message="superseded: a later scheduled time has passed too; only the latest one runs"),
            force=True,
        )
        done.append(f"  {suite}: missed run {run_id} superseded by a later slot: cancelled")
    if plan.rerun_slot is not None:
        slot = plan.rerun_slot.astimezone(dt.UTC).isoformat()
        attempts = sum(1 for view in views if view.slot == plan.rerun_slot)
        created = await client.create_flow_run_from_deployment(
            deployment_id,
            state=Scheduled(scheduled_time=now),
            tags=[f"{SLOT_TAG}{slot}"],
            idempotency_key=f"omnieval catch-up {deployment_id} {slot} {attempts}",
        )
        done.append(
            f"  {suite}: the run of {slot} was interrupted: running it again now (flow run {created.id})"
        )
    upcoming = await client.read_flow_runs(
        flow_run_filter=FlowRunFilter(
            deployment_id=FlowRunFilterDeploymentId(any_=[deployment_id]),
            expected_start_time=FlowRunFilterExpectedStartTime.model_validate({"after_": now}),
        ),
        sort=FlowRunSort.EXPECTED_START_TIME_ASC,
        limit=50,
    )
    upcoming_views = {view.id: view for view in (_view(run) for run in upcoming) if view is not None}
    for run_id in claimed_but_not_started(list(upcoming_views.values()), now):
        await client.delete_flow_run(run_id)  # type: ignore[arg-type]  # a UUID's text is accepted
        done.append(
            f"  {suite}: run {run_id} of {upcoming_views[run_id].slot.isoformat()} was claimed by a serve "
            "that died before it started: deleted (the schedule runs that minute)"
        )
    for pid_file in _pid_folder().glob("*.pid"):
        # Only runs still PENDING/RUNNING need their pid; drop the rest.
        run_id = pid_file.stem
        if not any(view.id == run_id and view.state in {"PENDING", "RUNNING"} for view in views):
            pid_file.unlink(missing_ok=True)
    running = {
        view.id: pid for view in views if view.process_alive and (pid := _run_pid(view.id)) is not None
    }
    return CatchUpDone(done, running)


async def next_fire_times(cron: str, timezone: str, n: int = 3) -> list[dt.datetime]:
    """The next ``n`` times ``cron`` fires in ``timezone`` (Prefect's own cron arithmetic)."""
    from prefect.server.schemas.schedules import CronSchedule

    dates = await CronSchedule(cron=cron, timezone=timezone).get_dates(n=n)
    return [dt.datetime.fromisoformat(date.isoformat()) for date in dates]


class Served(NamedTuple):
    """One deployment ``serve`` registers: a suite's nightly flow, or the night flow of several."""

    label: str
    """How the announcements name it (the suite, or ``night``)."""
    deployment: str
    flow: Any
    cron: str
    timezone: str
    parameters: dict[str, Any]
    tags: list[str]
    open_markers: tuple[Path, ...] = ()
    """The suites' ``mlflow.open.json`` (``omnieval.tracking.open_runs``), read when ``serve`` stops."""


NIGHT_DEPLOYMENT = "omnieval-night"
"""The deployment of ``omnieval serve --night``: one night per project, the same name on every start."""


async def serve_suites(suites: Sequence[tuple[SuiteConfig, Path]], *, announce: Any = print) -> None:
    """Register a deployment per suite, catch up, print the next runs, and run until stopped.

    ``PREFECT_API_URL`` must point at a server with its scheduler running (``omnieval serve``
    sets it to the persistent local server).
    """
    from omnieval.flows.nightly import nightly

    served = [
        Served(
            config.suite,
            deployment_name(config.suite),
            nightly,
            config.schedule.cron,
            config.schedule.timezone,
            {"suite_path": str(path)},
            ["omnieval", f"suite:{config.suite}"],
            (_open_marker(config),),
        )
        for config, path in suites
    ]
    await _serve(served, announce=announce)


async def serve_night(
    suites: Sequence[tuple[SuiteConfig, Path]], *, cron: str, timezone: str, announce: Any = print
) -> None:
    """Register one deployment that runs ``suites`` one after another as a night on ``cron``
    (``omnieval.flows.night``), catch up, print the next runs, and run until stopped."""
    from omnieval.flows.night import night

    served = Served(
        "night",
        NIGHT_DEPLOYMENT,
        night,
        cron,
        timezone,
        {"suite_paths": [str(path) for _, path in suites], "timezone": timezone},
        ["omnieval", "night", *(f"suite:{config.suite}" for config, _ in suites)],
        tuple(_open_marker(config) for config, _ in suites),
    )
    announce(f"  night: {', '.join(config.suite for config, _ in suites)}, one after another")
    await _serve([served], announce=announce)


async def _serve(served: Sequence[Served], *, announce: Any) -> None:
    from prefect.client.orchestration import get_client
    from prefect.runner import Runner
    from prefect.schedules import Cron
    from prefect.types.entrypoint import EntrypointType

    from omnieval.tracking.open_runs import STOPPED_BY_ENV

    track_flow_run_processes()
    # The flow-run processes inherit it: a run stopped with serve says so on its MLflow runs.
    os.environ[STOPPED_BY_ENV] = "omnieval serve"
    runner = Runner(name=f"omnieval-serve-{os.getpid()}", pause_on_shutdown=False, limit=1)
    deployments: dict[str, UUID] = {}
    for one in served:
        deployments[one.label] = await runner.aadd_flow(
            one.flow,
            name=one.deployment,
            schedule=Cron(one.cron, timezone=one.timezone),
            parameters=one.parameters,
            tags=one.tags,
            entrypoint_type=EntrypointType.MODULE_PATH,
        )
    running: dict[str, int] = {}
    async with get_client() as client:
        for one in served:
            # Before the catch-up: a run left waiting with other suites is cancelled, not caught up.
            for line in await drop_other_parameters(
                client, deployments[one.label], one.label, one.parameters
            ):
                announce(line)
            result = await catch_up(client, deployments[one.label], one.label)
            for line in result.lines:
                announce(line)
            running.update(result.running)
    for one in served:
        times = await next_fire_times(one.cron, one.timezone)
        shown = ", ".join(t.strftime("%Y-%m-%d %H:%M %Z") for t in times)
        announce(f"  {one.label}: deployment {one.deployment}; next runs {shown}")
    if running:
        # A killed serve's flow run still works on the suite's state folders: let it finish before
        # this runner starts another run of the same suite.
        shown = ", ".join(f"{run_id} (pid {pid})" for run_id, pid in running.items())
        announce(f"  waiting for run(s) left running by the previous serve: {shown}")
        while any(pid_alive(pid) for pid in running.values()):
            await asyncio.sleep(1.0)
    stop: dict[str, str] = {}
    handle_sigterm = runner.handle_sigterm

    def on_sigterm(*args: Any, **kwargs: Any) -> None:
        stop.setdefault("how", "SIGTERM")
        handle_sigterm(*args, **kwargs)

    runner.handle_sigterm = on_sigterm  # type: ignore[method-assign]  # Runner.start installs it
    try:
        await runner.start()
    except (KeyboardInterrupt, asyncio.CancelledError):
        stop.setdefault("how", "Ctrl-C")
        raise
    finally:
        markers = [marker for one in served for marker in one.open_markers]
        for line in end_interrupted_runs(markers, stop.get("how", "SIGTERM")):
            announce(line)


# --- MLflow runs a stopped flow run left open ---


def _open_marker(config: SuiteConfig) -> Path:
    from omnieval.stages import state_paths
    from omnieval.tracking.open_runs import OPEN_RUNS_FILE

    return state_paths(config).root / OPEN_RUNS_FILE


def end_interrupted_runs(markers: Sequence[Path], how: str, *, wait_s: float = 35.0) -> list[str]:
    """At ``serve``'s shutdown: end the MLflow runs its stopped flow runs left open, ``KILLED``.

    A flow-run process that unwinds from the runner's SIGTERM ends its own runs; one killed after
    Prefect's grace period (30 s), or by SIGKILL, leaves its ``mlflow.open.json`` behind. Waits up
    to ``wait_s`` for the processes named in the markers to exit, then ends what they left with
    ``omnieval serve stopped (<how>) during the <stage> stage``. Returns what to announce.
    """
    import time

    from omnieval.tracking.open_runs import end_open_runs, read_open, stopped_reason

    present = [marker for marker in markers if marker.is_file()]
    if not present:
        return []
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        pids = [doc.get("pid") for doc in (read_open(m) for m in present if m.is_file()) if doc]
        if not any(isinstance(pid, int) and pid != os.getpid() and pid_alive(pid) for pid in pids):
            break
        time.sleep(0.2)

    def reason(stage: Any) -> str:
        return stopped_reason(how, stage if isinstance(stage, str) else None, by="omnieval serve")

    try:
        ended = end_open_runs(present, reason)
    except Exception as exc:  # the next run's sweep ends them
        return [f"  could not end the MLflow runs left open: {type(exc).__name__}: {exc}"]
    return [f"  MLflow run {run_id} of the stopped flow run marked KILLED" for run_id in ended]
