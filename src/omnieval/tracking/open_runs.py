"""MLflow runs a suite execution has open, and ending them KILLED when their process was stopped.

While the track stage logs a suite execution, ``<state>/mlflow.open.json`` names its open MLflow runs
(the parent and each child created so far), the stage and the writing process; it is removed once
the runs are ended. A process that unwinds from an interrupt (Ctrl-C, SIGTERM) ends them itself, as
``KILLED`` with the tag ``omnieval.killed_reason``; a marker left behind by a process that is gone
(SIGKILL, or a stop that outlasted the grace period) is read by ``omnieval serve`` when it shuts
down (:func:`end_open_runs`). The next run of the suite sweeps whatever is still left
(``omnieval.stages.track``).
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from omnieval.processes import pid_alive as _alive

OPEN_RUNS_FILE = "mlflow.open.json"
"""The marker, in the suite's state folder, while the track stage has MLflow runs open."""

KILLED_REASON_TAG = "omnieval.killed_reason"
"""The tag saying why a run was ended ``KILLED``."""

STOPPED_BY_ENV = "OMNIEVAL_STOPPED_BY"
"""Set by ``omnieval serve`` for its flow-run processes: who stops them (``omnieval serve``)."""


def mark_open(marker: Path, run_ids: Iterable[str], *, stage: str = "track") -> None:
    """Write (or rewrite) ``marker``: these runs are open in this process, during ``stage``."""
    from omnieval.tracking._store import tracking_uri

    marker.parent.mkdir(parents=True, exist_ok=True)
    from omnieval.tracking._credentials import without_password

    # Never a password on disk: a URI's user part keeps its name only, the account comes from the
    # environment (or the credentials file) of whoever reads the marker.
    uri = without_password(tracking_uri())
    document = {"runs": list(run_ids), "stage": stage, "pid": os.getpid(), "tracking_uri": uri}
    tmp = marker.with_name(f".{marker.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(document), encoding="utf-8")
    os.replace(tmp, marker)


def clear_open(marker: Path | None) -> None:
    if marker is not None:
        marker.unlink(missing_ok=True)


def read_open(marker: Path) -> dict[str, Any] | None:
    try:
        document = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) and isinstance(document.get("runs"), list) else None


def signal_name(error: BaseException | None) -> str:
    """How an interrupt reached the process: ``SIGTERM``, ``Ctrl-C``, or the exception's type."""
    if error is None:
        return "SIGTERM"
    number = getattr(error, "signal", None)
    if isinstance(number, int):
        try:
            return signal.Signals(number).name
        except ValueError:
            return f"signal {number}"
    if type(error).__name__ in {"Terminated", "TerminationSignal"}:
        return "SIGTERM"
    if isinstance(error, KeyboardInterrupt):
        return "Ctrl-C"
    return type(error).__name__


def stopped_reason(how: str, stage: str | None, *, by: str | None = None) -> str:
    """``omnieval serve stopped (SIGTERM) during the track stage``.

    >>> stopped_reason("SIGTERM", "judge", by="omnieval serve")
    'omnieval serve stopped (SIGTERM) during the judge stage'
    >>> stopped_reason("Ctrl-C", None, by="")
    'the run was stopped (Ctrl-C)'
    """
    who = by if by is not None else os.environ.get(STOPPED_BY_ENV, "")
    text = f"{who} stopped ({how})" if who else f"the run was stopped ({how})"
    return f"{text} during the {stage} stage" if stage else text


def end_runs(run_ids: Iterable[str], reason: str, *, tracking_uri: str | None = None) -> list[str]:
    """End each of ``run_ids`` still RUNNING, and any RUNNING child of theirs, as KILLED with
    ``reason``; return the ids ended. A run the store does not know is skipped. ``tracking_uri``:
    the store (default: the current one)."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    ended: list[str] = []
    seen: set[str] = set()

    def end(run_id: str, status: str) -> None:
        if run_id in seen or status != "RUNNING":
            return
        seen.add(run_id)
        client.set_tag(run_id, KILLED_REASON_TAG, reason[:5000])
        client.set_terminated(run_id, status="KILLED")
        ended.append(run_id)

    for run_id in run_ids:
        try:
            info = client.get_run(run_id).info
        except Exception:  # deleted, or never reached the store
            continue
        children = client.search_runs(
            [info.experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'", max_results=1000
        )
        for child in children:
            end(str(child.info.run_id), child.info.status)
        end(run_id, info.status)
    return ended


def end_open_runs(markers: Iterable[Path], reason_for: Any) -> list[str]:
    """End the runs of each marker whose process is gone (KILLED, ``reason_for(stage)``); remove
    the marker. A marker of a live process (a run still unwinding, another command's run) is left.

    ``reason_for``: ``stage -> reason``, e.g. ``lambda stage: stopped_reason("SIGTERM", stage)``.
    """
    ended: list[str] = []
    for marker in markers:
        document = read_open(marker)
        if document is None:
            continue
        pid = document.get("pid")
        if isinstance(pid, int) and pid != os.getpid() and _alive(pid):
            continue
        uri = document.get("tracking_uri")
        try:
            runs = [str(run) for run in document["runs"]]
            reason = reason_for(document.get("stage"))
            ended += end_runs(runs, reason, tracking_uri=uri if isinstance(uri, str) and uri else None)
        except Exception as exc:  # an unreachable store: the next run's sweep ends them
            from omnieval.progress import note

            note(f"[track] could not end the open MLflow runs of {marker}: {type(exc).__name__}: {exc}")
            continue
        marker.unlink(missing_ok=True)
    return ended
