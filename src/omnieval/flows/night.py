"""Night flow: several suites one after another on one schedule, one record for the night.

Each suite runs as the nightly flow (a subflow, in this process), with its own notifications held
back; a suite that raises is recorded as failed to run and the next one still runs. Then the
night's record, page, MLflow run and single notification are written by
:func:`omnieval.night.finish_night`. Run it with ``omnieval night --run SUITE ...`` or serve it
with ``omnieval serve --night SUITE ...`` (docs/nightly.md, "The night record").
"""

from __future__ import annotations

import traceback
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from prefect import flow

from omnieval.config import NotifierConfig, load_suite
from omnieval.flows._env import quiet_user_errors
from omnieval.flows.nightly import nightly
from omnieval.night import (
    NIGHTS_FOLDER,
    SuiteNight,
    check_date,
    failed_suite,
    finish_night,
    suite_night,
    union_notifiers,
)
from omnieval.progress import note

STAGES = ("validate", "generate", "metrics", "judge", "report", "track")
"""The nightly flow's stages, as ``omnieval.stages`` names their modules."""


def failed_stage(error: BaseException) -> str | None:
    """The stage a suite's exception came from: the outermost ``omnieval/stages/<stage>.py`` frame
    of its traceback (None when it did not come from a stage, e.g. a config that does not load)."""
    for frame in traceback.extract_tb(error.__traceback__):
        parts = Path(frame.filename).parts
        if len(parts) >= 3 and parts[-3:-1] == ("omnieval", "stages") and Path(parts[-1]).stem in STAGES:
            return Path(parts[-1]).stem
    return None


def tonight(timezone: str) -> str:
    """Today's date in ``timezone`` (the night a run started in belongs to that day's date)."""
    return datetime.now(ZoneInfo(timezone)).date().isoformat()


@flow(name="omnieval-night", log_prints=False)
def night(
    suite_paths: list[str],
    date: str | None = None,
    timezone: str = "UTC",
    nights_dir: str | None = None,
    track: bool = True,
) -> dict[str, Any]:
    """Run ``suite_paths`` one after another, then write the night's record and send one notification.

    Args:
        suite_paths: Suite YAML files, run in this order.
        date: The night (``YYYY-MM-DD``); None: today in ``timezone`` when the night starts.
        timezone: The schedule's time zone (names the night's date).
        nights_dir: Where ``<date>/night.json`` goes; None: ``<first suite's runs_dir>/nights``.
        track: Log the night's MLflow run.

    Returns:
        ``night, verdict, reasons, record, page, mlflow_run_id, suites`` ({suite: verdict, run_id,
        run_folder}), ``notifications`` and ``problems`` (what could not be written or sent).
    """
    # A served night runs in a fresh flow-run process: a suite rejected by its gate is reported in
    # one line there too, not under Prefect's traceback.
    quiet_user_errors()
    night_date = check_date(date) if date else tonight(timezone)
    entries: dict[str, SuiteNight] = {}
    notifiers: list[tuple[NotifierConfig, ...]] = []
    runs_dirs: list[Path] = []
    for index, path in enumerate(suite_paths):
        name = Path(path).stem
        try:
            config = load_suite(Path(path))
        except Exception as exc:  # a suite that cannot even load fails alone, like any other
            entries[_unique(name, entries)] = failed_suite(exc)
            note(f"[night] {name}: failed to run: {str(exc).splitlines()[0] if str(exc) else exc!r}")
            continue
        name = config.suite
        if name in entries:
            entries[_unique(name, entries)] = failed_suite(f"suite {name} ran already tonight ({path})")
            continue
        notifiers.append(config.regression.notify)
        runs_dirs.append(config.runs_dir)
        note(f"[night] {name}: started ({path})")
        try:
            summary = nightly(suite_path=str(path), notify=False)
        except Exception as exc:  # the night records it and goes on with the next suite
            entries[name] = failed_suite(exc, stage=failed_stage(exc))
            note(f"[night] {name}: {entries[name].reasons[0]}")
            continue
        except BaseException as stop:  # Ctrl-C, SIGTERM (serve stopping): record the night, then stop
            entries[name] = failed_suite(interrupted_reason(stop), stage=failed_stage(stop))
            for later in suite_paths[index + 1 :]:
                entries[_unique(Path(later).stem, entries)] = failed_suite(NOT_REACHED)
            note(f"[night] {name}: {entries[name].reasons[0]}")
            where = (
                Path(nights_dir)
                if nights_dir
                else (runs_dirs[0] if runs_dirs else Path("runs")) / NIGHTS_FOLDER
            )
            _record_interrupted(night_date, entries, where, track=track)
            raise
        entries[name] = suite_night(summary["run_folder"], run_id=summary["run_id"])
        note(f"[night] {name}: {entries[name].verdict}")
    where = Path(nights_dir) if nights_dir else (runs_dirs[0] if runs_dirs else Path("runs")) / NIGHTS_FOLDER
    outcome = finish_night(
        night_date, entries, nights_dir=where, notifiers=union_notifiers(notifiers), track=track
    )
    note(f"[night] {night_date}: {outcome.record.verdict} ({outcome.record_path})")
    return {
        "night": night_date,
        "verdict": outcome.record.verdict,
        "reasons": list(outcome.record.reasons),
        "record": str(outcome.record_path),
        "page": None if outcome.page_path is None else str(outcome.page_path),
        "mlflow_run_id": outcome.mlflow_run_id,
        "suites": {
            name: {"verdict": s.verdict, "run_id": s.run_id, "run_folder": s.run_folder}
            for name, s in outcome.record.suites.items()
        },
        "notifications": [
            {"kind": o.kind, "target": o.target, "ok": o.ok, "error": o.error} for o in outcome.notifications
        ],
        "problems": list(outcome.problems),
    }


NOT_REACHED = "the night was interrupted before this suite ran"
"""Why a suite after the one a stopped night was running has no result."""


def interrupted_reason(stop: BaseException) -> str:
    """``interrupted: omnieval serve stopped (SIGTERM)``: why a suite's run ended with the night."""
    from omnieval.tracking.open_runs import signal_name, stopped_reason

    return f"interrupted: {stopped_reason(signal_name(stop), None)}"


def _record_interrupted(night_date: str, entries: dict[str, SuiteNight], where: Path, *, track: bool) -> None:
    """Write the record of a night stopped mid-suite (INCONCLUSIVE; no notification: the catch-up
    run that ``serve`` starts on its next start writes the date's answer and notifies; this record
    stays kept beside it, ``<date>/records/``)."""
    try:
        outcome = finish_night(night_date, entries, nights_dir=where, notifiers=(), track=track)
    except Exception as exc:  # the interrupt must still stop the night
        note(
            f"[night] {night_date}: interrupted; its record could not be written: {type(exc).__name__}: {exc}"
        )
        return
    note(f"[night] {night_date}: interrupted, {outcome.record.verdict} ({outcome.record_path})")


def _unique(name: str, taken: dict[str, SuiteNight]) -> str:
    """``name``, or ``name#2``, ``name#3`` ... when a suite of that name is already in the night."""
    candidate, k = name, 1
    while candidate in taken:
        k += 1
        candidate = f"{name}#{k}"
    return candidate
