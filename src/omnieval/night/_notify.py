"""The night's one notification and its terminal summary.

Inside a night the suites do not notify one by one; the night sends one message through the
union of the suites' ``regression.notify`` notifiers (the same notifier named by two suites is
used once), naming the suite and component that decided the verdict. The message keeps the keys of
a suite's message (docs/nightly.md, "Notifications") where they apply, so one webhook reads both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from omnieval.compare import SendOutcome, send_notifications
from omnieval.config import FileNotifierConfig, NotifierConfig
from omnieval.night._record import NightRecord, UsageTotal, deciders


def _identity(notifier: NotifierConfig) -> tuple[Any, ...]:
    """What makes two notifier entries the same target (secrets compared, never shown)."""
    if isinstance(notifier, FileNotifierConfig):
        return ("file", str(Path(notifier.path).resolve()))
    headers = tuple(sorted((k, v.get_secret_value()) for k, v in notifier.headers.items()))
    return ("webhook", notifier.url, notifier.url_env, headers)


def union_notifiers(blocks: Iterable[Sequence[NotifierConfig]]) -> list[NotifierConfig]:
    """Every suite's notifiers, in order, each target once."""
    seen: set[tuple[Any, ...]] = set()
    out: list[NotifierConfig] = []
    for block in blocks:
        for notifier in block:
            key = _identity(notifier)
            if key not in seen:
                seen.add(key)
                out.append(notifier)
    return out


def subject_line(record: NightRecord) -> str:
    """``omnieval night <date>: <verdict>``, then who decided it.

    >>> from omnieval.night._record import SuiteNight, build_record
    >>> bad = SuiteNight(run_id="r", run_folder="/r", verdict="NO-GO", reasons=("worse: s / wer: 1 -> 2",))
    >>> subject_line(build_record("2026-12-03", {"acbench": bad}))
    'omnieval night 2026-12-03: NO-GO (acbench: s / wer)'
    """
    decided = deciders(record)
    who = "; ".join(f"{d.suite}: {d.component}" for d in decided)
    return f"omnieval night {record.date}: {record.verdict}" + (f" ({who})" if who else "")


def night_message(
    record: NightRecord, *, record_path: Path, page_path: Path | None
) -> tuple[str, dict[str, Any]]:
    """``(subject, message)`` of the night's notification.

    The message holds ``night, verdict, reasons, suite, component, decided_by, suites, record,
    report, text``: ``suite``/``component`` are the first deciding suite and what decided it (null
    on a GO night), ``decided_by`` all of them, ``suites`` each suite's verdict and run id.
    """
    decided = deciders(record)
    subject = subject_line(record)
    text = "\n".join(
        [subject]
        + [f"- {r}" for r in record.reasons[:12]]
        + [
            f"{name}: {s.verdict}" + (f" (run {s.run_id})" if s.run_id else "")
            for name, s in record.suites.items()
        ]
        + ([f"page: {page_path}"] if page_path is not None else [])
    )
    message = {
        "night": record.date,
        "verdict": record.verdict,
        "reasons": list(record.reasons),
        "suite": decided[0].suite if decided else None,
        "component": decided[0].component if decided else None,
        "decided_by": [d._asdict() for d in decided],
        "suites": {
            name: {"verdict": s.verdict, "run_id": s.run_id, "run_folder": s.run_folder}
            for name, s in record.suites.items()
        },
        "record": str(record_path),
        "report": None if page_path is None else str(page_path),
        "text": text,
    }
    return subject, message


def notify_night(
    record: NightRecord,
    notifiers: Sequence[NotifierConfig],
    *,
    record_path: Path,
    page_path: Path | None,
) -> list[SendOutcome]:
    """Send the night's one message through ``notifiers``; a failing notifier never raises."""
    if not notifiers:
        return []
    subject, message = night_message(record, record_path=record_path, page_path=page_path)
    return send_notifications(notifiers, subject, message)


def _usage_line(what: str, total: UsageTotal) -> str:
    tokens = (
        "tokens not reported"
        if total.prompt_tokens is None
        else f"{total.prompt_tokens + (total.completion_tokens or 0)} tokens"
    )
    cost = "".join(f", {amount:g} {currency}" for currency, amount in total.cost.items())
    return f"{what} {total.calls} calls ({total.cached_calls} cached), {tokens}, {total.seconds:.1f} s{cost}"


def night_lines(
    record: NightRecord, *, record_path: Path | None = None, machines: Mapping[str, str] | None = None
) -> list[str]:
    """The terminal summary of a night: verdict, reasons, one line per suite, usage.

    ``machines`` (suite -> the machine whose record it came from) adds ``on <machine>`` to each
    suite's line (a night combined from several machines, :func:`~omnieval.night.combine_nights`).

    >>> from omnieval.night._record import SuiteNight, build_record, failed_suite
    >>> ok = SuiteNight(run_id="r1", run_folder="/runs/a/r1", verdict="GO", reasons=("fine",))
    >>> for line in night_lines(build_record("2026-12-03", {"a": ok, "b": failed_suite("boom")})):
    ...     print(line)
    night 2026-12-03: INCONCLUSIVE
      - b: failed to run: boom
    suites:
      a  GO            run r1  /runs/a/r1
      b  INCONCLUSIVE  failed to run
    usage: generation 0 calls (0 cached), 0 tokens, 0.0 s; judging 0 calls (0 cached), 0 tokens, 0.0 s
    """
    head = f"night {record.date}: {record.verdict}"
    lines = [head + (f"  ({record_path})" if record_path is not None else "")]
    lines += [f"  - {r}" for r in record.reasons]
    lines.append("suites:")
    width = max((len(name) for name in record.suites), default=0)
    for name, suite in record.suites.items():
        where = (
            "failed to run"
            if suite.run_folder is None
            else f"run {suite.run_id}"
            + (f"  mde_max {suite.mde_max:.3g}" if suite.mde_max is not None else "")
            + f"  {suite.run_folder}"
        )
        if machines is not None and name in machines:
            where += f"  on {machines[name]}"
        lines.append(f"  {name.ljust(width)}  {suite.verdict.ljust(12)}  {where}")
    usage = record.usage
    lines.append(
        f"usage: {_usage_line('generation', usage.generation)}; {_usage_line('judging', usage.judging)}"
    )
    return lines
