"""Leave a night behind: ``night.json``, ``night.html``, the MLflow run and the one notification.

The night flow calls :func:`finish_night` once every suite has run (or failed to). The record is
written first: the page, MLflow and the notifiers each may fail (reported on the console, kept in
the outcome), and none of them takes the record with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from omnieval.compare import SendOutcome
from omnieval.config import NotifierConfig
from omnieval.night._notify import notify_night
from omnieval.night._page import write_night_page
from omnieval.night._record import NightRecord, SuiteNight, build_record, write_record


@dataclass(frozen=True)
class NightOutcome:
    """What :func:`finish_night` wrote and sent."""

    record: NightRecord
    record_path: Path
    page_path: Path | None
    mlflow_run_id: str | None
    notifications: list[SendOutcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """What could not be done (page, MLflow), one line each; the record is written regardless."""


def night_metrics(record: NightRecord) -> dict[str, float]:
    """The night run's metrics: ``usage.<generation|judging>.<figure>`` and ``mde_max.<suite>``.

    >>> from omnieval.night._record import SuiteNight
    >>> ok = SuiteNight(run_id="r", run_folder="/r", verdict="GO", mde_max=0.4)
    >>> sorted(night_metrics(build_record("2026-12-03", {"a": ok})))[:3]
    ['mde_max.a', 'usage.generation.cached_calls', 'usage.generation.calls']
    """
    out: dict[str, float] = {}
    for part in ("generation", "judging"):
        total = getattr(record.usage, part)
        for figure in ("calls", "cached_calls", "prompt_tokens", "completion_tokens", "seconds"):
            value = getattr(total, figure)
            if value is not None:
                out[f"usage.{part}.{figure}"] = float(value)
        for currency, amount in total.cost.items():
            out[f"usage.{part}.cost.{currency}"] = float(amount)
    for name, suite in record.suites.items():
        if suite.mde_max is not None:
            out[f"mde_max.{name}"] = suite.mde_max
    return out


def finish_night(
    night: str,
    suites: Mapping[str, SuiteNight],
    *,
    nights_dir: Path,
    notifiers: Sequence[NotifierConfig] = (),
    track: bool = True,
) -> NightOutcome:
    """Write the night's record and page, log its MLflow run, send its one notification.

    Args:
        night: The date, ``YYYY-MM-DD``.
        suites: Each suite's entry, in the order they ran.
        nights_dir: ``<runs_dir>/nights``.
        notifiers: Where the notification goes (:func:`~omnieval.night.union_notifiers`).
        track: Log the MLflow run (off for tests and callers without a store).
    """
    from omnieval.progress import note

    record = build_record(night, suites)
    record_path = write_record(record, nights_dir)
    problems: list[str] = []
    page_path: Path | None = None
    try:
        page_path = write_night_page(record, nights_dir)
    except Exception as exc:  # the record is the contract; the page is its view
        problems.append(f"night.html not written: {type(exc).__name__}: {exc}")
    run_id: str | None = None
    if track:
        from omnieval.tracking.nights import log_night, night_machine, night_tags

        try:
            run_id = log_night(
                night=night,
                tags=night_tags(
                    night,
                    record.verdict,
                    {name: (s.verdict, s.run_id if s.run_folder else None) for name, s in suites.items()},
                    record.reasons,
                ),
                metrics=night_metrics(record),
                artifacts=[p for p in (record_path, page_path) if p is not None],
                suite_runs=[s.run_id for s in suites.values() if s.run_id and s.run_folder],
                machine=night_machine(Path(nights_dir).parent),
            )
        except Exception as exc:  # the record on disk stands without its MLflow copy
            problems.append(f"MLflow night run not logged: {type(exc).__name__}: {exc}")
    sent = notify_night(record, notifiers, record_path=record_path, page_path=page_path)
    for outcome in sent:
        if not outcome.ok:
            problems.append(f"notification via {outcome.kind} {outcome.target} failed: {outcome.error}")
    for line in problems:
        note(f"[night] {line}")
    return NightOutcome(record, record_path, page_path, run_id, sent, problems)
