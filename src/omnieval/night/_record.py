"""The night record (FORMATS.md §11): what one night of several suites decided, as one document.

``runs/nights/<YYYY-MM-DD>/night.json``::

    {"date": "YYYY-MM-DD",
     "suites": {SUITE: {"run_id", "run_folder", "verdict", "reasons", "mde_max", "usage"}},
     "verdict": "GO" | "NO-GO" | "INCONCLUSIVE", "reasons": [...],
     "usage": {"generation": {...}, "judging": {...}}}

Every record written for a date is also kept, ``<date>/records/<UTC time>.json``; ``night.json``
is the latest of them (:func:`write_record`).

Each suite's entry is read from its run folder (``regression.json``, ``usage.json``); a suite that
failed to run has no run folder, verdict INCONCLUSIVE and the reason ``failed to run: ...``. The
night's verdict is :func:`night_verdict`'s rule. Nothing here runs a suite, renders a page or talks
to MLflow: the night flow (``omnieval.flows.night``) does, with these pieces.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from datetime import date as Date
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnieval.backends.llm import Usage
from omnieval.errors import DataError, OmnievalError
from omnieval.jsonio import read_json_object, write_json_atomic

NIGHT_FILE = "night.json"
NIGHT_PAGE = "night.html"
NIGHTS_FOLDER = "nights"
"""``<runs_dir>/nights/<date>/``: where a night's record and page live."""
RECORDS_FOLDER = "records"
"""``<runs_dir>/nights/<date>/records/``: every record written for the date, kept (``night.json``
is a copy of the latest one)."""

REGRESSION_FILE = "regression.json"
USAGE_FILE = "usage.json"
FAILED = "failed to run"
"""How a suite that raised before writing its run folder is named among the reasons."""

Verdict = Literal["GO", "NO-GO", "INCONCLUSIVE"]
"""The verdicts of ``regression.json`` (``omnieval.compare.VERDICTS``), a suite's and the night's."""
GO: Final = "GO"
NO_GO: Final = "NO-GO"
INCONCLUSIVE: Final = "INCONCLUSIVE"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class _Record(BaseModel):
    # Written by this package and read back by it and by outside tools: keys unknown to this
    # version (a newer writer) are ignored rather than refused.
    model_config = ConfigDict(frozen=True, extra="ignore")


class UsageTotal(_Record):
    """Model calls summed over suites and components (the figures of a ``usage.json`` entry)."""

    calls: int = 0
    """Requests sent to a model (resends and failures included)."""
    cached_calls: int = 0
    """Requests answered from a response cache."""
    prompt_tokens: int | None = 0
    """Prompt tokens reported over ``calls_with_tokens`` calls; None when no call reported any."""
    completion_tokens: int | None = 0
    """Generated tokens over the same calls; None when no call reported any."""
    calls_with_tokens: int = 0
    seconds: float = 0.0
    """Wall time spent waiting for models, in seconds."""
    cost: dict[str, float] = Field(default_factory=dict)
    """Priced cost per currency (only models the suites' ``costs:`` price); empty when none."""


class NightUsage(_Record):
    """What a suite (or the whole night) spent generating candidates and judging them."""

    generation: UsageTotal = UsageTotal()
    """The generating systems' model calls (``usage.json``'s ``systems``)."""
    judging: UsageTotal = UsageTotal()
    """The judges' model calls (``usage.json``'s ``judges``)."""


class SuiteNight(_Record):
    """One suite's part of the night."""

    run_id: str | None
    """The suite's MLflow parent run (its run folder's name); None when it failed to run."""
    run_folder: str | None
    """Absolute path of the run folder; None when it failed to run."""
    verdict: Verdict
    """The suite's own verdict against its previous run (``regression.json``); INCONCLUSIVE when it
    failed to run or left no verdict."""
    reasons: tuple[str, ...] = ()
    mde_max: float | None = None
    """The largest minimum detectable effect over the suite's paired tests (in each test's own
    component units); None when nothing was compared."""
    usage: NightUsage = NightUsage()

    @property
    def failed(self) -> bool:
        """The suite raised before it wrote a run folder."""
        return self.run_folder is None and any(r.startswith(FAILED) for r in self.reasons)


class NightRecord(_Record):
    """``night.json``."""

    date: str = Field(pattern=_DATE.pattern)
    suites: dict[str, SuiteNight]
    """Suite name -> its entry, in the order the suites ran."""
    verdict: Verdict
    reasons: tuple[str, ...] = ()
    usage: NightUsage = NightUsage()


class NightVerdict(NamedTuple):
    """The night's verdict and the reasons behind it, each naming its suite."""

    verdict: Verdict
    reasons: list[str]


class Decider(NamedTuple):
    """A suite that decided the night's verdict, and the component (or stage) that decided it."""

    suite: str
    verdict: Verdict
    component: str


# -- the rule ---------------------------------------------------------------------------------------


def night_verdict(suites: Mapping[str, SuiteNight]) -> NightVerdict:
    """NO-GO when any suite is NO-GO; else INCONCLUSIVE when any is INCONCLUSIVE or failed to run;
    else GO (FORMATS.md §11; a night of no suites says nothing, so it is INCONCLUSIVE).

    Reasons are the suites' own, prefixed ``<suite>: ``: first the NO-GO suites', then those of
    suites that failed to run, then the INCONCLUSIVE ones'; a GO night lists each GO suite's.

    >>> go = SuiteNight(run_id="a", run_folder="/r/a", verdict="GO", reasons=("no previous run to compare with",))
    >>> failed = SuiteNight(run_id=None, run_folder=None, verdict="INCONCLUSIVE", reasons=("failed to run: boom",))
    >>> night_verdict({"x": go, "y": failed})
    NightVerdict(verdict='INCONCLUSIVE', reasons=['y: failed to run: boom'])
    >>> night_verdict({"x": go}).verdict
    'GO'
    """
    if not suites:
        return NightVerdict(INCONCLUSIVE, ["no suite ran tonight"])
    no_go = [name for name, s in suites.items() if s.verdict == NO_GO]
    failed = [name for name, s in suites.items() if s.verdict != NO_GO and s.failed]
    unsure = [name for name, s in suites.items() if s.verdict == INCONCLUSIVE and not s.failed]
    if no_go:
        verdict: Verdict = NO_GO
    elif failed or unsure:
        verdict = INCONCLUSIVE
    else:
        verdict = GO
    named = [*no_go, *failed, *unsure] if verdict != GO else list(suites)
    reasons = [f"{name}: {reason}" for name in named for reason in _reasons_of(name, suites[name])]
    return NightVerdict(verdict, reasons)


def _reasons_of(name: str, suite: SuiteNight) -> Sequence[str]:
    if suite.reasons:
        return suite.reasons
    return [f"{suite.verdict} (no reason recorded)"]


def deciders(record: NightRecord) -> list[Decider]:
    """The suites whose verdict made the night's, each with what decided it.

    A NO-GO suite names its regressed ``system / component`` (the ``worse:`` reasons); a suite that
    failed to run names the stage it failed in (``run`` when not known); an INCONCLUSIVE one names
    the first reason's subject (``judge prompt changed``, ``judge drift``, ...). A GO night has none.
    """
    out: list[Decider] = []
    if record.verdict == GO:
        return out
    for name, suite in record.suites.items():
        if suite.verdict != record.verdict:
            continue
        out.append(Decider(name, suite.verdict, _component(suite)))
    return out


def _component(suite: SuiteNight) -> str:
    if suite.verdict == NO_GO:
        worse = [
            r.removeprefix("worse: ").split(": ", 1)[0] for r in suite.reasons if r.startswith("worse: ")
        ]
        if worse:
            return ", ".join(dict.fromkeys(worse))
    if suite.failed:
        reason = next(r for r in suite.reasons if r.startswith(FAILED))
        stage = re.match(rf"{FAILED} in the (\S+) stage", reason)
        return f"{stage.group(1)} stage" if stage else "run"
    first = suite.reasons[0] if suite.reasons else suite.verdict
    return first.split(": ", 1)[0].split(" (", 1)[0]


# -- one suite from its run folder -------------------------------------------------------------------


def _read_object(path: Path) -> dict[str, Any] | None:
    """A JSON object file; None when absent. Raises DataError when it is not a readable object."""
    return read_json_object(path) if path.is_file() else None


def mde_max(regression: Mapping[str, Any]) -> float | None:
    """The largest finite ``mde`` over ``regression.json``'s tests (else its ``systems`` cells).

    >>> mde_max({"tests": [{"mde": 0.5}, {"mde": 2.0}, {"mde": None}]})
    2.0
    >>> mde_max({"systems": {}}) is None
    True
    """
    values: list[Any] = [t.get("mde") for t in regression.get("tests") or [] if isinstance(t, Mapping)]
    if not values:
        values = [
            cell.get("mde")
            for per in (regression.get("systems") or {}).values()
            if isinstance(per, Mapping)
            for cell in per.values()
            if isinstance(cell, Mapping)
        ]
    finite = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(float(v))]
    return max(finite) if finite else None


def _entries(table: Any) -> list[Mapping[str, Any]]:
    """The usage entries in ``table``: one entry (it has ``calls``) or ``{name: entry}``."""
    if not isinstance(table, Mapping):
        return []
    if "calls" in table and not isinstance(table["calls"], Mapping):
        return [table]
    return [entry for entry in table.values() if isinstance(entry, Mapping)]


def sum_usage(entries: Sequence[Mapping[str, Any]]) -> UsageTotal:
    """Usage entries (``usage.json`` entries or :class:`UsageTotal` dumps) added up.

    Token counts stay None when none of the calls reported any; costs add up per currency.

    >>> sum_usage([{"calls": 2, "prompt_tokens": 10, "completion_tokens": 4, "calls_with_tokens": 2,
    ...             "seconds": 1.5, "cost": 0.01, "currency": "USD"},
    ...            {"calls": 1, "prompt_tokens": None, "completion_tokens": None, "seconds": 0.5}]).model_dump()
    {'calls': 3, 'cached_calls': 0, 'prompt_tokens': 10, 'completion_tokens': 4, 'calls_with_tokens': 2, 'seconds': 2.0, 'cost': {'USD': 0.01}}
    """
    total = Usage()
    cost: dict[str, float] = {}
    for entry in entries:
        total.merge(Usage.from_json(entry))
        priced = entry.get("cost")
        if isinstance(priced, Mapping):
            for currency, amount in priced.items():
                cost[str(currency)] = cost.get(str(currency), 0.0) + float(amount)
        elif isinstance(priced, int | float):
            currency = str(entry.get("currency") or "USD")
            cost[currency] = cost.get(currency, 0.0) + float(priced)
    figures = total.to_json()
    return UsageTotal(
        calls=figures["calls"],
        cached_calls=figures["cached_calls"],
        prompt_tokens=figures["prompt_tokens"],
        completion_tokens=figures["completion_tokens"],
        calls_with_tokens=figures["calls_with_tokens"],
        seconds=figures["seconds"],
        cost={currency: round(amount, 6) for currency, amount in sorted(cost.items())},
    )


def suite_usage(usage: Mapping[str, Any] | None) -> NightUsage:
    """A run folder's ``usage.json`` split into generation and judging.

    Its ``generation`` / ``judging`` blocks when it has them; otherwise its ``systems`` (the
    generating systems that call a model) count as generation and its ``judges`` as judging.
    """
    if not usage:
        return NightUsage()
    generation = usage["generation"] if "generation" in usage else usage.get("systems")
    judging = usage["judging"] if "judging" in usage else usage.get("judges")
    return NightUsage(generation=sum_usage(_entries(generation)), judging=sum_usage(_entries(judging)))


def night_usage(suites: Mapping[str, SuiteNight]) -> NightUsage:
    """The night's usage: each suite's generation and judging added up."""
    return NightUsage(
        generation=sum_usage([s.usage.generation.model_dump() for s in suites.values()]),
        judging=sum_usage([s.usage.judging.model_dump() for s in suites.values()]),
    )


def suite_night(run_folder: Path | str, *, run_id: str | None = None) -> SuiteNight:
    """A suite that ran, read from its run folder: ``regression.json``'s verdict, reasons and
    largest ``mde``, and ``usage.json`` split into generation and judging.

    A folder without a readable ``regression.json`` gives INCONCLUSIVE with the reason why.
    """
    folder = Path(run_folder).resolve()
    verdict: Verdict = INCONCLUSIVE
    reasons: list[str] = []
    largest: float | None = None
    problem: str | None = None
    try:
        regression = _read_object(folder / REGRESSION_FILE)
    except DataError as exc:
        regression, problem = None, str(exc)
    if regression is None:
        problem = problem or f"{folder / REGRESSION_FILE} is missing"
    else:
        found = regression.get("verdict")
        if found in (GO, NO_GO, INCONCLUSIVE):
            verdict = found
            reasons = [str(r) for r in regression.get("reasons") or []]
        else:
            problem = f"{folder / REGRESSION_FILE} has verdict {found!r}"
        largest = mde_max(regression)
        run_id = run_id or (str(regression["run_id"]) if regression.get("run_id") else None)
    if problem is not None:
        reasons = [f"no verdict: {problem}"]
    try:
        usage = suite_usage(_read_object(folder / USAGE_FILE))
    except DataError as exc:
        usage = NightUsage()
        reasons.append(f"usage not counted: {exc}")
    return SuiteNight(
        run_id=run_id or folder.name,
        run_folder=str(folder),
        verdict=verdict,
        reasons=tuple(reasons),
        mde_max=largest,
        usage=usage,
    )


def failed_suite(error: BaseException | str, *, stage: str | None = None) -> SuiteNight:
    """A suite that raised before it wrote a run folder: INCONCLUSIVE, ``failed to run ...: <error>``.

    >>> failed_suite(ValueError("bad input\\n  - row 3: no id\\n  - row 4: no id"), stage="validate").reasons
    ('failed to run in the validate stage: ValueError: bad input: row 3: no id',)
    """
    if isinstance(error, BaseException):
        # The first line, and the first listed problem of a multi-line error (a gate's report).
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        message = lines[0] if lines else ""
        if len(lines) > 1:
            message += f": {lines[1].removeprefix('- ')}"
        # omnieval's own errors are worded for users; anything else is named by its type.
        if isinstance(error, OmnievalError):
            text = message or type(error).__name__
        else:
            text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    else:
        text = error.strip().splitlines()[0] if error.strip() else "unknown error"
    where = f"{FAILED} in the {stage} stage" if stage else FAILED
    return SuiteNight(run_id=None, run_folder=None, verdict=INCONCLUSIVE, reasons=(f"{where}: {text}",))


def build_record(night: str, suites: Mapping[str, SuiteNight]) -> NightRecord:
    """The record of a night from its suites' entries (verdict, reasons and usage follow)."""
    decided = night_verdict(suites)
    return NightRecord(
        date=check_date(night),
        suites=dict(suites),
        verdict=decided.verdict,
        reasons=tuple(decided.reasons),
        usage=night_usage(suites),
    )


# -- files ------------------------------------------------------------------------------------------


def check_date(text: str) -> str:
    """``text`` when it is a calendar date written ``YYYY-MM-DD``; DataError otherwise.

    >>> check_date("2026-12-03")
    '2026-12-03'
    """
    if not _DATE.match(text):
        raise DataError(f"night {text!r}: expected a date written YYYY-MM-DD")
    try:
        Date.fromisoformat(text)
    except ValueError:
        raise DataError(f"night {text!r}: not a calendar date") from None
    return text


def night_folder(nights_dir: Path | str, night: str) -> Path:
    """``<nights_dir>/<date>``: the folder of one night's record and page."""
    return Path(nights_dir) / check_date(night)


def record_document(record: NightRecord) -> dict[str, Any]:
    """``night.json``'s content (the §11 keys, in the contract's order)."""
    return record.model_dump(mode="json")


def write_record(record: NightRecord, nights_dir: Path | str) -> Path:
    """Write ``<nights_dir>/<date>/night.json`` atomically, and keep a copy in ``records/``.

    A date may get more than one record (a night stopped and run again, ``omnieval night --run``
    after the served one, a restart with other suites): each is kept as
    ``<date>/records/<UTC time written>.json`` and ``night.json`` is the latest of them, the date's
    answer. A ``night.json`` that has no kept copy (written before records were kept) is kept first,
    under the time it was last written, so no record of a date replaces another.
    """
    folder = night_folder(nights_dir, record.date)
    document = record_document(record)
    answer = folder / NIGHT_FILE
    if answer.is_file():
        _keep_unkept(answer)
    write_json_atomic(_kept_path(folder, datetime.now(UTC)), document)
    return write_json_atomic(answer, document)


def _kept_path(folder: Path, written: datetime) -> Path:
    """``<folder>/records/<YYYYMMDDTHHMMSS.ffffffZ>.json`` (names sort in the order written), not taken."""
    stem = written.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    candidate, k = folder / RECORDS_FOLDER / f"{stem}.json", 1
    while candidate.exists():
        k += 1
        candidate = folder / RECORDS_FOLDER / f"{stem}-{k}.json"
    return candidate


def _keep_unkept(answer: Path) -> None:
    """Copy ``answer`` into ``records/`` unless a kept record has the same content already."""
    content = answer.read_bytes()
    if any(p.read_bytes() == content for p in kept_records(answer.parent)):
        return
    written = datetime.fromtimestamp(answer.stat().st_mtime, UTC)
    kept = _kept_path(answer.parent, written)
    kept.parent.mkdir(parents=True, exist_ok=True)
    scratch = kept.with_name(kept.name + ".tmp")
    scratch.write_bytes(content)
    scratch.replace(kept)


def kept_records(folder: Path | str) -> list[Path]:
    """Every record kept for one night (``<nights_dir>/<date>``), oldest first; the last is ``night.json``'s."""
    return sorted(p for p in (Path(folder) / RECORDS_FOLDER).glob("*.json") if p.is_file())


def read_record(path: Path | str) -> NightRecord:
    """A ``night.json``; DataError naming the file when it cannot be read."""
    doc = _read_object(Path(path))
    if doc is None:
        raise DataError(f"{path}: no night record")
    try:
        return NightRecord.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise DataError(f"{path}: not a night record ({where}: {first['msg']})") from None


def find_record(nights_dir: Path | str, night: str | None = None) -> Path:
    """The ``night.json`` of ``night`` (a date), or of the latest night under ``nights_dir``.

    Raises:
        DataError: ``night`` is not a date, or there is no such record (exit code 2).
    """
    root = Path(nights_dir)
    if night is not None:
        path = night_folder(root, night) / NIGHT_FILE
        if not path.is_file():
            raise DataError(f"no night record for {night}: {path} does not exist")
        return path
    found = sorted(p for p in root.glob(f"*/{NIGHT_FILE}") if _DATE.match(p.parent.name) and p.is_file())
    if not found:
        raise DataError(
            f"no night record under {root} (omnieval serve --night or omnieval night --run writes one)"
        )
    return found[-1]
