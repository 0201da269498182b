"""One night on several machines: the records of a date that machines sharing a tracking server
logged, combined into one (docs/nightly.md, "One night on several machines").

Each machine writes its own ``night.json`` and logs its own MLflow night run
(``omnieval.tracking.nights``). :func:`team_night` reads this machine's record and the other
machines' night runs of the date on the server, and :func:`combine_nights` makes one record of
them with :func:`~omnieval.night.build_record`: every suite once (a suite on several machines: the
latest record wins), the verdict by the usual rule. The combined record is printed, never written.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from omnieval.errors import DataError, OmnievalError
from omnieval.night._record import (
    NIGHT_FILE,
    NightRecord,
    SuiteNight,
    build_record,
    find_record,
    night_folder,
    read_record,
    record_document,
)

MACHINES_KEY = "machines"
"""The combined document's one key beyond FORMATS.md §11: suite -> the machine it came from
(``NightRecord`` ignores it, so the document still reads as a night record)."""


class ServerUnreachable(OmnievalError):
    """The tracking server could not be asked (down, refused, a bad answer); the message says why."""


@dataclass(frozen=True)
class MachineNight:
    """One machine's record of a night."""

    machine: str
    record: NightRecord
    written: datetime
    """When it was written (the file's time here, the night run's last log on the server), UTC."""
    source: str
    """Where it was read: the local ``night.json`` path, or ``MLflow run <id>``."""
    here: bool = False
    """This machine's own record."""


@dataclass(frozen=True)
class CombinedNight:
    """The night of several machines, as one record."""

    record: NightRecord
    machines: dict[str, str]
    """Suite -> the machine whose record gave its entry."""
    sources: list[MachineNight]
    """Every machine's record, oldest first."""
    superseded: dict[str, list[str]] = field(default_factory=dict)
    """Suite -> the machines whose (older) entry for it was replaced."""
    problems: list[str] = field(default_factory=list)
    """Night runs on the server that could not be read, one line each."""


def combine_nights(nights: Sequence[MachineNight], problems: Sequence[str] = ()) -> CombinedNight:
    """One record from several machines' records of a date: each suite from the latest record that
    has it (its place: where it first appeared, oldest record first); verdict, reasons and usage by
    :func:`~omnieval.night.build_record`.

    >>> from omnieval.night._record import build_record
    >>> go = SuiteNight(run_id="r1", run_folder="/a/r1", verdict="GO")
    >>> bad = SuiteNight(run_id="r2", run_folder="/b/r2", verdict="NO-GO", reasons=("worse: x / y",))
    >>> a = MachineNight("a", build_record("2026-12-03", {"s": go, "t": go}), datetime(2026, 12, 3, 2, tzinfo=UTC), "x")
    >>> b = MachineNight("b", build_record("2026-12-03", {"s": bad}), datetime(2026, 12, 3, 3, tzinfo=UTC), "y")
    >>> night = combine_nights([b, a])
    >>> night.record.verdict, night.machines, night.superseded
    ('NO-GO', {'s': 'b', 't': 'a'}, {'s': ['a']})
    """
    if not nights:
        raise DataError("no night record to combine")
    ordered = sorted(nights, key=lambda n: n.written)
    dates = {n.record.date for n in ordered}
    if len(dates) != 1:
        raise DataError(f"records of different nights cannot be combined: {', '.join(sorted(dates))}")
    suites: dict[str, SuiteNight] = {}
    machines: dict[str, str] = {}
    superseded: dict[str, list[str]] = {}
    for night in ordered:
        for name, entry in night.record.suites.items():
            if name in machines and machines[name] != night.machine:
                superseded.setdefault(name, []).append(machines[name])
            suites[name] = entry
            machines[name] = night.machine
    record = build_record(ordered[0].record.date, suites)
    return CombinedNight(record, machines, ordered, superseded, list(problems))


def combined_document(night: CombinedNight) -> dict[str, Any]:
    """The combined record as ``night.json`` (FORMATS.md §11) plus ``machines``: suite -> machine."""
    return {**record_document(night.record), MACHINES_KEY: dict(night.machines)}


def server_reachable(server: str, *, timeout: float = 5.0) -> str | None:
    """None when the tracking server answers at all (any HTTP status); else why not, in a few words.

    One quick request before MLflow's own (which retry a refused connection for minutes).
    """
    try:
        with urllib.request.urlopen(f"{server.rstrip('/')}/health", timeout=timeout):
            return None
    except urllib.error.HTTPError:
        return None  # it answered (an account may be needed): it is there
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"{type(reason).__name__}: {reason}" if str(reason) else type(reason).__name__


def _local_time(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC)


def team_night(nights_dir: Path, night: str | None, *, server: str) -> CombinedNight:
    """The night ``night`` (default: the latest date here or on the server) combined from this
    machine's ``night.json`` and every other machine's night run of the date on ``server``.

    This machine's own run on the server is read only when its ``night.json`` is not here.

    Raises:
        ServerUnreachable: the server cannot be asked (the caller falls back to the local record).
        DataError: no machine has a record of the date (or none at all), or the local one is bad.
    """
    from omnieval.tracking.nights import latest_night_on_server, night_machine, night_runs_on_server

    why = server_reachable(server)
    if why is not None:
        raise ServerUnreachable(why)
    here = night_machine(Path(nights_dir).parent)
    try:
        if night is None:
            local = _latest_local(nights_dir)
            remote = latest_night_on_server()
            night = max((d for d in (local, remote) if d is not None), default=None)
            if night is None:
                find_record(nights_dir)  # raises the usual "no night record under ..."
                raise DataError(f"no night record under {nights_dir} nor on the tracking server")
        path = night_folder(nights_dir, night) / NIGHT_FILE
        runs = night_runs_on_server(night, leave_out=here if path.is_file() else None)
    except OmnievalError:
        raise
    except Exception as exc:  # refused, an error answer: say so, the local record still stands
        raise ServerUnreachable(
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        ) from None
    nights: list[MachineNight] = []
    if path.is_file():
        nights.append(MachineNight(here, read_record(path), _local_time(path), str(path), here=True))
    problems: list[str] = []
    for run in runs:
        machine = run.machine or f"MLflow run {run.run_id}"
        if nights and run.machine == here:
            continue
        try:
            record = NightRecord.model_validate(run.document)
        except ValidationError as exc:
            problems.append(
                f"{machine}: MLflow run {run.run_id}: night.json is not a night record ({exc.errors()[0]['msg']})"
            )
            continue
        if record.date != night:
            problems.append(
                f"{machine}: MLflow run {run.run_id}: night.json is of {record.date}, not {night}"
            )
            continue
        nights.append(
            MachineNight(machine, record, run.written, f"MLflow run {run.run_id}", here=run.machine == here)
        )
    if not nights:
        raise DataError(
            f"no night record for {night}: {path} does not exist and the tracking server has none"
        )
    return combine_nights(nights, problems)


def _latest_local(nights_dir: Path) -> str | None:
    try:
        return find_record(nights_dir).parent.name
    except DataError:
        return None


def team_lines(night: CombinedNight) -> list[str]:
    """The terminal summary of a combined night: :func:`~omnieval.night.night_lines` with each
    suite's machine, then one line per machine's record (where it was read, when it was written)."""
    from omnieval.night._notify import night_lines

    lines = night_lines(night.record, machines=night.machines)
    lines[0] += f"  (combined from {len(night.sources)} machine{'s' if len(night.sources) != 1 else ''})"
    lines.append("machines:")
    for source in night.sources:
        mine = [name for name, machine in night.machines.items() if machine == source.machine]
        lost = [name for name, older in night.superseded.items() if source.machine in older]
        text = f"  {source.machine}{'  (this machine)' if source.here else ''}  written {source.written:%Y-%m-%d %H:%M:%S} UTC  {source.source}"
        text += f"  suites: {', '.join(mine) if mine else 'none'}"
        if lost:
            text += f"  (replaced by a later record: {', '.join(lost)})"
        lines.append(text)
    lines += [f"problem: {p}" for p in night.problems]
    return lines
