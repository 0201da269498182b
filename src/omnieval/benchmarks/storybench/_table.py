"""Read the long scores table once into dense per-(system, instance) arrays.

Every aggregate and analysis works on :class:`StoryTable`: for each system and instance, the value
of each automatic metric, the per-field speech predictions and every judge's four criterion scores,
with ``NaN`` wherever a record is missing or invalid. Building it validates the table and names the
offending rows, so bad input fails here with a readable message rather than deep inside a statistic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace

import numpy as np
import numpy.typing as npt
import pandas as pd

from omnieval.analysis import select_benchmark as generic_select_benchmark
from omnieval.benchmarks.storybench._names import AUTOMATIC, RUBRICS, SPEECH_FIELDS, TRACKS, UNAVAILABLE_JUDGE
from omnieval.errors import DataError
from omnieval.scores import (
    ALL_STATUSES,
    OPTIONAL_COLUMNS,
    ROW_KEY,
    SCORE_COLUMNS,
    VALUED_STATUSES,
    Status,
    coerce_scores,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_MAX_PROBLEMS = 20


VALID, MISSING, INVALID, ABSENT = 0, 1, 2, 3
"""Record states: valid records carry a value; missing records lack the candidate output; invalid
records exist but failed (inference, parse, unrecoverable, incomplete); absent records have no row
at all. Missing, invalid and absent records all count as 0 in the zero-filled policy."""


@dataclass(frozen=True)
class RecordCounts:
    """How the records of one component fared, per system: ``(S,)`` or ``(S, J)`` integer arrays."""

    valid: IntArray
    missing_output: IntArray
    invalid: IntArray
    absent: IntArray

    @classmethod
    def from_state(cls, state: npt.NDArray[np.int8]) -> RecordCounts:
        """Count the record states of a ``(S, n[, J])`` array over its instance axis."""
        return cls(
            *((state == code).sum(axis=1).astype(np.int64) for code in (VALID, MISSING, INVALID, ABSENT))
        )

    def for_system(self, s: int, j: int | None = None) -> dict[str, int]:
        """Counts of system ``s`` (and judge ``j`` for judge tracks) as plain ints."""
        pick = (s,) if j is None else (s, j)
        return {f.name: int(getattr(self, f.name)[pick]) for f in fields(self)}


@dataclass(frozen=True)
class AutoMetric:
    """One automatic metric on its native scale: ``values`` is ``(S, n)``, NaN where not valid."""

    name: str
    values: FloatArray
    state: npt.NDArray[np.int8]

    @property
    def counts(self) -> RecordCounts:
        return RecordCounts.from_state(self.state)


@dataclass(frozen=True)
class SpeechMeta:
    """Speech-metadata predictions for the covered fields.

    ``fields`` lists the fields some recognizer predicted here (at least one ``ok``/``repaired`` row);
    the others are excluded from numerator and denominator. ``correct`` is ``(S, n, F)`` with 0/1
    and NaN where that field has no valid prediction. A sample is valid when at least one covered
    field carries a value; its accuracy is the mean over those fields.
    """

    fields: tuple[str, ...]
    correct: FloatArray
    state: npt.NDArray[np.int8]

    @property
    def counts(self) -> RecordCounts:
        return RecordCounts.from_state(self.state)

    @property
    def accuracy(self) -> FloatArray:
        """Per-sample accuracy ``(S, n)``: mean over the sample's valued fields, NaN if none."""
        return _nanmean(self.correct, axis=2)

    @property
    def exact(self) -> FloatArray:
        """Per-sample exact match ``(S, n)``: 1 when all covered fields are right; NaN if invalid."""
        valid = np.isfinite(self.correct).any(axis=2)
        all_right = (self.correct == 1.0).all(axis=2)
        return np.where(valid, all_right.astype(np.float64), np.nan)


@dataclass(frozen=True)
class JudgeTrack:
    """Scores of one judge track: ``scores`` is ``(S, n, J, C)`` on 1-10.

    A record (system, instance, judge) is valid only when all ``C`` = 4 criteria carry a value; every
    criterion of an invalid or absent record is NaN, so means over any axis respect record validity.
    """

    track: str
    judges: tuple[str, ...]
    criteria: tuple[str, ...]
    scores: FloatArray
    state: npt.NDArray[np.int8]

    @property
    def counts(self) -> RecordCounts:
        """Per system and judge: ``(S, J)`` arrays."""
        return RecordCounts.from_state(self.state)

    @property
    def example(self) -> FloatArray:
        """Example scores ``(S, n, J)``: the mean of the four criteria of each valid record."""
        example: FloatArray = self.scores.mean(axis=3)
        return example


@dataclass(frozen=True)
class JudgeCoverage:
    """Which judges one track was configured with, and which of them produced no valid record.

    A judge is identified by its *key*: the judge id, or ``"<panel>/<judge id>"`` when the table holds
    judge rows of more than one panel (so two panels using the same judge id stay apart).

    Attributes:
        track: the judge track.
        configured: keys of the judges with rows on this track, sorted (placeholder rows of a panel
            that has no judge for the track are not a judge and are not listed).
        missing: key -> why, for every configured judge without a single valid record in the whole
            table (the model was absent, every call failed, ...) and for the placeholder rows
            (``"unavailable: <why>"``). These judges are left out of the track under both policies,
            as a judge that never ran; the track's other judges carry it.
        by_system: system -> key -> why, for every judge (missing ones included) that has no valid
            record for that system. A judge that is valid for other systems still counts under the
            zero-filled policy for this one (its records there count 0).
    """

    track: str
    configured: tuple[str, ...]
    missing: Mapping[str, str]
    by_system: Mapping[str, Mapping[str, str]]


@dataclass(frozen=True)
class StoryTable:
    """The storybench part of a scores table as dense arrays over systems x instances.

    ``instances`` has the fixed zero-filled denominator's length: the distinct instance ids in the
    table, plus placeholders when an explicit ``n_instances`` asks for more (instances nobody
    scored, which count as missing for every system).
    """

    benchmark: str
    systems: tuple[str, ...]
    instances: tuple[str, ...]
    n_present: int
    auto: dict[str, AutoMetric]
    speech: SpeechMeta | None
    judges: dict[str, JudgeTrack]
    extras: dict[str, FloatArray]
    missing: dict[str, BoolArray]
    not_computed: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())
    not_computed_reasons: tuple[str, ...] = field(default=())
    """``"<component>: <why>"`` for every component not computed, and
    ``"judge.<track>/<judge key>: <why>"`` for every configured judge without a valid record."""
    judge_coverage: Mapping[str, JudgeCoverage] = field(default_factory=dict)
    """Per judge track that has rows: configured judges and the ones that produced nothing valid."""

    @property
    def n_systems(self) -> int:
        return len(self.systems)

    @property
    def n_instances(self) -> int:
        return len(self.instances)

    @property
    def automatic(self) -> dict[str, FloatArray]:
        """Per-example values ``(S, n)`` of the computed automatic components on their native scale,
        in the paper's order (speech metadata: the per-sample accuracy)."""
        out = {name: self.auto[name].values for name in AUTOMATIC if name in self.auto}
        if self.speech is not None:
            out["speech_meta_accuracy"] = self.speech.accuracy
        return out

    def subset_instances(self, keep: BoolArray) -> StoryTable:
        """The same table restricted to the instances where ``keep`` (``(n,)`` bool) is true."""
        ii = np.flatnonzero(keep)
        grid = np.ix_(np.arange(self.n_systems), ii)
        return replace(
            self,
            instances=tuple(self.instances[k] for k in ii),
            n_present=int((ii < self.n_present).sum()),
            auto={k: replace(a, values=a.values[grid], state=a.state[grid]) for k, a in self.auto.items()},
            speech=None
            if self.speech is None
            else replace(self.speech, correct=self.speech.correct[grid], state=self.speech.state[grid]),
            judges={
                t: replace(j, scores=j.scores[grid], state=j.state[grid]) for t, j in self.judges.items()
            },
            extras={k: v[grid] for k, v in self.extras.items()},
            missing={k: v[grid] for k, v in self.missing.items()},
        )


def _nanmean(a: FloatArray, axis: int) -> FloatArray:
    """Mean over ``axis`` ignoring NaN; NaN (without a warning) where nothing is finite."""
    finite = np.isfinite(a)
    count = finite.sum(axis=axis)
    total = np.where(finite, a, 0.0).sum(axis=axis)
    out: FloatArray = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return out


def _ensure_frame(scores: pd.DataFrame) -> pd.DataFrame:
    # Tables written before the newer columns existed read as if those held "" (FORMATS.md section 3).
    missing = [c for c in SCORE_COLUMNS if c not in scores.columns and c not in OPTIONAL_COLUMNS]
    if missing:
        raise DataError(f"scores table lacks columns: {', '.join(missing)}")
    try:
        return coerce_scores(scores)
    except (ValueError, TypeError) as exc:
        raise DataError(f"scores table has badly typed columns: {exc}") from None


def _describe(frame: pd.DataFrame, rows: npt.NDArray[np.intp], why: str) -> list[str]:
    out = []
    for r in rows[:_MAX_PROBLEMS]:
        rec = frame.iloc[int(r)]
        # The newer key columns are shown only when set, so storybench messages stay short.
        extra = "".join(f", {c}={rec[c]!r}" for c in ("condition", "paired_with") if rec[c])
        out.append(
            f"row {int(r)} (system={rec['system']!r}, instance_id={rec['instance_id']!r}, "
            f"track={rec['track']!r}, component={rec['component']!r}, panel={rec['panel']!r}, "
            f"judge={rec['judge']!r}, criterion={rec['criterion']!r}{extra}, status={rec['status']!r}, "
            f"value={float(rec['value'])}): {why}"
        )
    if rows.size > _MAX_PROBLEMS:
        out.append(f"... {rows.size - _MAX_PROBLEMS} more rows: {why}")
    return out


@dataclass(frozen=True)
class _Col:
    """A string column as integer codes into its distinct values (fast masks on millions of rows)."""

    codes: IntArray
    uniques: tuple[str, ...]

    @classmethod
    def of(cls, series: pd.Series) -> _Col:
        codes, uniques = pd.factorize(series, sort=False)
        return cls(codes.astype(np.int64), tuple(str(u) for u in uniques))

    def isin(self, values: Sequence[str] | frozenset[str]) -> BoolArray:
        wanted = [k for k, u in enumerate(self.uniques) if u in set(values)]
        return np.isin(self.codes, wanted)

    def eq(self, value: str) -> BoolArray:
        return self.isin((value,))

    def lut(self, mapping: dict[str, int]) -> IntArray:
        """Lookup table code -> ``mapping[value]`` (-1 when unmapped); index it with ``codes[rows]``."""
        return np.array([mapping.get(u, -1) for u in self.uniques], dtype=np.int64)

    def at(self, rows: npt.NDArray[np.intp]) -> set[str]:
        """Distinct values on ``rows``."""
        return {self.uniques[k] for k in np.unique(self.codes[rows])}


def select_benchmark(scores: pd.DataFrame, benchmark: str | None = None) -> tuple[str, pd.DataFrame]:
    """:func:`omnieval.analysis.select_benchmark` after checking the table's columns and types."""
    return generic_select_benchmark(_ensure_frame(scores), benchmark)


def judge_key(panel: str, judge: str, *, several_panels: bool) -> str:
    """The identity of a judge in aggregates: the judge id, panel-qualified when panels could collide.

    Example:
        >>> judge_key("paper-a", "qwen3-30b", several_panels=True)
        'paper-a/qwen3-30b'
        >>> judge_key("paper-a", "qwen3-30b", several_panels=False)
        'qwen3-30b'
    """
    # A single panel keeps the plain judge id, so its MLflow keys stay as FORMATS.md section 5 names them.
    return f"{panel}/{judge}" if several_panels and panel else judge


def build_table(
    scores: pd.DataFrame,
    *,
    n_instances: int | None = None,
    benchmark: str | None = None,
    unavailable: Mapping[str, str] | None = None,
) -> StoryTable:
    """Validate a storybench-shaped scores table and return its dense form.

    Judges are identified by (panel, judge id): with judge rows from more than one panel each judge
    is keyed ``"<panel>/<judge id>"`` (see :func:`judge_key`).

    Args:
        scores: the long table (FORMATS.md section 3), one benchmark only.
        n_instances: the zero-filled denominator; default the number of distinct instance ids.
        benchmark: the benchmark the caller aggregates (a table of another one is an error); default
            the one the table holds.
        unavailable: track -> why no judge could score it here (a panel's ``unavailable`` reason,
            from the judge stage's lineage); used in :attr:`StoryTable.not_computed_reasons`.

    Raises:
        DataError: unknown status/track/criterion, duplicate rows (same system, instance_id, track,
            component, panel, judge, criterion, condition and paired_with), values out of range, a
            valued status without a value, another benchmark than ``benchmark``, or a table with none
            of the components this aggregation reads.
    """
    name, frame = select_benchmark(scores, benchmark)
    problems: list[str] = []

    def flag(rows: npt.NDArray[np.intp], why: str) -> None:
        problems.extend(_describe(frame, rows, why))

    status = _Col.of(frame["status"])
    flag(np.flatnonzero(~status.isin(ALL_STATUSES)), f"unknown status; known: {sorted(ALL_STATUSES)}")
    valued = status.isin(VALUED_STATUSES)
    missing_output = status.eq(Status.MISSING_OUTPUT.value)
    not_applicable = status.eq(Status.NOT_APPLICABLE.value)
    value = frame["value"].to_numpy(dtype=np.float64)
    flag(np.flatnonzero(valued & ~np.isfinite(value)), "status ok/repaired needs a finite value")
    flag(np.flatnonzero(~valued & np.isfinite(value)), "only ok/repaired rows may carry a value")

    # Instances in canonical order: by the dataset index, then id.
    inst_col = _Col.of(frame["instance_id"])
    index = frame["index"].to_numpy(dtype=np.int64)
    n_ids = len(inst_col.uniques)
    lo = np.full(n_ids, np.iinfo(np.int64).max)
    hi = np.full(n_ids, np.iinfo(np.int64).min)
    np.minimum.at(lo, inst_col.codes, index)
    np.maximum.at(hi, inst_col.codes, index)
    clash = np.flatnonzero(lo != hi)
    if clash.size:
        problems += [
            f"instance_id {inst_col.uniques[k]!r} appears with several index values ({lo[k]} .. {hi[k]})"
            for k in clash[:_MAX_PROBLEMS]
        ]
    order = np.lexsort((np.array(inst_col.uniques, dtype=object), lo))
    rank = np.empty(n_ids, dtype=np.int64)
    rank[order] = np.arange(n_ids)
    inst = rank[inst_col.codes]
    instances = [inst_col.uniques[k] for k in order]
    n_present = len(instances)
    if n_instances is not None:
        if n_instances < n_present:
            raise DataError(
                f"n_instances={n_instances} is smaller than the {n_present} distinct instance ids "
                "in the scores table"
            )
        instances += [f"<unscored-{k}>" for k in range(n_instances - n_present)]
    n = len(instances)

    sys_codes, sys_ids = pd.factorize(frame["system"], sort=True)
    systems = tuple(str(s) for s in sys_ids)
    n_sys = len(systems)
    sys = sys_codes.astype(np.int64)

    component = _Col.of(frame["component"])
    track = _Col.of(frame["track"])
    judge = _Col.of(frame["judge"])
    panel = _Col.of(frame["panel"])
    criterion = _Col.of(frame["criterion"])

    known = frozenset({c for c, _ in AUTOMATIC.values()} | {"judge"})
    if not component.isin(known).any():
        raise DataError(
            f"the {name!r} scores table holds none of the components this aggregation reads "
            f"({', '.join(sorted(known))}); it is not a table of this benchmark"
        )

    is_judge = component.eq("judge")
    flag(np.flatnonzero(is_judge & ~track.isin(TRACKS)), f"unknown judge track; known: {list(TRACKS)}")
    flag(np.flatnonzero(is_judge & judge.eq("")), "judge rows need a judge id")
    # judge_expected rows (the judges' probability-weighted companions) are carried, never aggregated.
    flag(
        np.flatnonzero(~is_judge & ~component.eq("judge_expected") & ~(judge.eq("") & panel.eq(""))),
        'automatic rows must have judge "" and panel ""',
    )

    if problems:
        raise DataError("scores table failed validation", problems)

    several_panels = len(panel.at(np.flatnonzero(is_judge))) > 1
    key_col = _judge_keys(panel, judge, several_panels)
    ctx = _Ctx(frame, sys, inst, n_sys, n, valued, missing_output, not_applicable, value, problems)
    not_computed: list[str] = []
    reasons: dict[str, list[str]] = {}
    notes: list[str] = []

    auto: dict[str, AutoMetric] = {}
    for comp_name, (comp, want_track) in AUTOMATIC.items():
        if comp == "speech_meta":
            continue
        mask = component.eq(comp)
        rows = np.flatnonzero(mask)
        flag(np.flatnonzero(mask & ~track.eq(want_track)), f"{comp} rows belong to track {want_track!r}")
        flag(np.flatnonzero(mask & ~criterion.eq("value")), f'{comp} rows use criterion "value"')
        flag(
            rows[valued[rows] & ((value[rows] < -1.0) | (value[rows] > 1.0))],
            f"{comp} must lie in [-1, 1] (native scale)",
        )
        if rows.size == 0 or not_applicable[rows].all():
            not_computed.append(comp_name)
            why = (
                "no rows in the scores table"
                if rows.size == 0
                else "not applicable here (every row is not_applicable)"
            )
            reasons[comp_name] = [f"{comp_name}: {why}"]
            continue
        values, state = ctx.single(rows, comp)
        auto[comp_name] = AutoMetric(comp_name, values, state)

    speech_mask = component.eq("speech_meta")
    flag(np.flatnonzero(speech_mask & ~track.eq("speech")), "speech_meta rows belong to track 'speech'")
    speech_rows = np.flatnonzero(speech_mask)
    speech = _speech(ctx, speech_rows, criterion)
    if speech is None:
        not_computed.append("speech_meta_accuracy")
        if speech_rows.size == 0:
            why = "no rows in the scores table"
        elif not_applicable[speech_rows].all():
            why = "not applicable here (no recognizer for any speech field)"
        else:
            why = "no valid prediction of any speech field"
        reasons["speech_meta_accuracy"] = [f"speech_meta_accuracy: {why}"]

    judges: dict[str, JudgeTrack] = {}
    coverage: dict[str, JudgeCoverage] = {}
    for t in TRACKS:
        rows = np.flatnonzero(is_judge & track.eq(t))
        why_unavailable = (unavailable or {}).get(t) or _NO_JUDGE_HERE
        jt, cov, lines = _judge_track(
            ctx, t, rows, _JudgeCols(key_col, judge, criterion, status), systems, why_unavailable
        )
        if cov is not None:
            coverage[t] = cov
        if jt is None:
            not_computed.append(f"judge.{t}")
        else:
            judges[t] = jt
        if lines:
            reasons[f"judge.{t}"] = lines

    extras: dict[str, FloatArray] = {}
    for comp in sorted(set(component.uniques) - known - {"judge_expected"}):
        rows = np.flatnonzero(component.eq(comp))
        key = sys[rows] * n + inst[rows]
        if np.unique(key).size != rows.size:
            notes.append(f"component {comp!r} has several rows per (system, instance); not used")
            continue
        arr = np.full((n_sys, n), np.nan)
        ok = rows[valued[rows]]
        arr[sys[ok], inst[ok]] = value[ok]
        extras[comp] = arr

    # The row key (FORMATS.md section 3) over the columns already factorized above, plus the two
    # that only other benchmarks fill.
    have = {"track": track, "component": component, "panel": panel, "judge": judge, "criterion": criterion}
    key_cols = [
        have[c] if c in have else _Col.of(frame[c]) for c in ROW_KEY if c not in ("system", "instance_id")
    ]
    flag(_duplicate_rows(sys, inst, n, key_cols), f"duplicate row: ({', '.join(ROW_KEY)}) must be unique")

    if problems:
        raise DataError("scores table failed validation", problems)

    missing = _missing_by_modality(ctx, track)

    component_order = (*AUTOMATIC, *(f"judge.{t}" for t in TRACKS))
    return StoryTable(
        benchmark=name,
        systems=systems,
        instances=tuple(instances),
        n_present=n_present,
        auto=auto,
        speech=speech,
        judges=judges,
        extras=extras,
        missing=missing,
        not_computed=tuple(c for c in component_order if c in not_computed),
        notes=tuple(notes),
        not_computed_reasons=tuple(line for c in component_order for line in reasons.get(c, ())),
        judge_coverage=coverage,
    )


def _judge_keys(panel: _Col, judge: _Col, several_panels: bool) -> _Col:
    """The judge-key column (see :func:`judge_key`), built from codes rather than per-row strings."""
    if not several_panels:
        return judge
    width = max(len(judge.uniques), 1)
    pair = panel.codes * width + judge.codes
    uniq, inverse = np.unique(pair, return_inverse=True)
    labels = tuple(
        judge_key(panel.uniques[int(u) // width], judge.uniques[int(u) % width], several_panels=True)
        for u in uniq
    )
    # Two (panel, judge) pairs can only share a label when one panel is "" and the judge id holds a
    # slash; factorize the labels again so equal labels share a code either way.
    codes, label_uniques = pd.factorize(pd.Series(labels, dtype=object), sort=False)
    return _Col(codes.astype(np.int64)[inverse.ravel()], tuple(str(u) for u in label_uniques))


def _duplicate_rows(sys: IntArray, inst: IntArray, n: int, cols: Sequence[_Col]) -> npt.NDArray[np.intp]:
    """Rows whose (system, instance, *cols) occurs more than once (cols: the rest of the row key)."""
    key = sys * n + inst
    size = (int(sys.max()) + 1 if sys.size else 1) * n
    for col in cols:
        width = max(len(col.uniques), 1)
        if size * width >= 2**62:  # would overflow int64: fall back to sorting rows
            stacked = np.stack([sys, inst, *(c.codes for c in cols)], axis=1)
            _, inverse, counts = np.unique(stacked, axis=0, return_inverse=True, return_counts=True)
            return np.flatnonzero(counts[inverse.ravel()] > 1)
        key = key * width + col.codes
        size *= width
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    return np.flatnonzero(counts[inverse] > 1)


@dataclass
class _Ctx:
    frame: pd.DataFrame
    sys: IntArray
    inst: IntArray
    n_sys: int
    n: int
    valued: BoolArray
    missing_output: BoolArray
    not_applicable: BoolArray
    value: FloatArray
    problems: list[str]

    def flag(self, rows: npt.NDArray[np.intp], why: str) -> None:
        """Name ``rows`` (none: nothing) as failing validation, with why."""
        self.problems += _describe(self.frame, rows, why)

    def duplicates(self, rows: npt.NDArray[np.intp], key: IntArray, what: str) -> bool:
        _, first, counts = np.unique(key, return_index=True, return_counts=True)
        if (counts > 1).any():
            dup_keys = key[first[counts > 1]]
            dup_rows = rows[np.isin(key, dup_keys)]
            self.flag(dup_rows, f"duplicate {what} row")
            return True
        return False

    def single(self, rows: npt.NDArray[np.intp], what: str) -> tuple[FloatArray, npt.NDArray[np.int8]]:
        """Values ``(S, n)`` and record states for a component with one row per (system, instance)."""
        key = self.sys[rows] * self.n + self.inst[rows]
        self.duplicates(rows, key, what)
        values = np.full((self.n_sys, self.n), np.nan)
        ok = rows[self.valued[rows]]
        values[self.sys[ok], self.inst[ok]] = self.value[ok]
        present, miss = self.marks(rows)
        return values, _state(np.isfinite(values), miss, present)

    def marks(
        self, rows: npt.NDArray[np.intp], judges: IntArray | None = None, n_judges: int = 0
    ) -> tuple[BoolArray, BoolArray]:
        """Flags ``(S, n)``, or ``(S, n, n_judges)`` with ``judges`` (each row's judge): the cells
        ``rows`` reach, and those where one of them says missing_output."""
        shape = (self.n_sys, self.n) if judges is None else (self.n_sys, self.n, n_judges)
        at = (
            (self.sys[rows], self.inst[rows]) if judges is None else (self.sys[rows], self.inst[rows], judges)
        )
        present, miss = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
        present[at] = True
        m = self.missing_output[rows]
        miss[tuple(i[m] for i in at)] = True
        return present, miss


def _state(valid: BoolArray, missing: BoolArray, present: BoolArray) -> npt.NDArray[np.int8]:
    """Per-record state codes from validity, missing-output and presence flags (same shapes)."""
    state = np.full(valid.shape, INVALID, dtype=np.int8)
    state[~present] = ABSENT
    state[present & missing & ~valid] = MISSING
    state[valid] = VALID
    return state


def _speech(ctx: _Ctx, rows: npt.NDArray[np.intp], criterion: _Col) -> SpeechMeta | None:
    if rows.size == 0:
        return None
    field_lut = criterion.lut({f: k for k, f in enumerate(SPEECH_FIELDS)})
    fc_all = field_lut[criterion.codes[rows]]
    if (fc_all < 0).any():
        ctx.flag(rows[fc_all < 0], f"speech_meta criterion must be one of {list(SPEECH_FIELDS)}")
        return None
    ctx.flag(rows[ctx.valued[rows] & ~np.isin(ctx.value[rows], [0.0, 1.0])], "speech_meta values are 0 or 1")
    # A field is covered when some recognizer predicted it somewhere. Rows of other statuses do not
    # count: a missing clip writes missing_output for all four fields, recognizer or not.
    covered = np.zeros(len(SPEECH_FIELDS), dtype=bool)
    covered[np.unique(fc_all[ctx.valued[rows]])] = True
    fields = tuple(f for k, f in enumerate(SPEECH_FIELDS) if covered[k])
    if not fields:
        return None
    remap = np.full(len(SPEECH_FIELDS), -1, dtype=np.int64)
    remap[covered] = np.arange(len(fields))
    fc_all = remap[fc_all]
    keep = rows[fc_all >= 0]
    fc = fc_all[fc_all >= 0]
    nf = len(fields)
    s_, i_ = ctx.sys[keep], ctx.inst[keep]
    key = (s_ * ctx.n + i_) * nf + fc
    ctx.duplicates(keep, key, "speech_meta")
    correct = np.full((ctx.n_sys, ctx.n, nf), np.nan)
    ok = ctx.valued[keep]
    correct[s_[ok], i_[ok], fc[ok]] = ctx.value[keep][ok]
    present, miss = ctx.marks(keep)
    valid = np.isfinite(correct).any(axis=2)
    return SpeechMeta(fields, correct, _state(valid, miss, present))


@dataclass(frozen=True)
class _JudgeCols:
    key: _Col
    judge: _Col
    criterion: _Col
    status: _Col


# Why a track's placeholder rows exist when the caller does not say (the panel's reason is in the
# judge stage's lineage, not in the scores table).
_NO_JUDGE_HERE = "no judge could score this track here (every row is not_applicable)"

# Record outcomes beyond the table's own statuses, for "no valid record (...)" explanations.
_INCOMPLETE, _ABSENT_RECORD = -1, -2


def _why_counts(codes: IntArray, status: _Col) -> str:
    """``"12 inference_error, 3 missing_output"`` from per-record outcome codes (most frequent first)."""
    names = {_INCOMPLETE: "incomplete", _ABSENT_RECORD: "absent"}
    counts = Counter(names.get(int(c), status.uniques[int(c)] if c >= 0 else "?") for c in codes)
    parts = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return "no valid record (" + ", ".join(f"{count} {name}" for name, count in parts) + ")"


def _judge_track(
    ctx: _Ctx,
    t: str,
    rows: npt.NDArray[np.intp],
    cols: _JudgeCols,
    systems: tuple[str, ...],
    why_unavailable: str,
) -> tuple[JudgeTrack | None, JudgeCoverage | None, list[str]]:
    """The track's valid judges, its coverage, and its ``not_computed`` lines (empty when complete)."""
    if rows.size == 0:
        return None, None, [f"judge.{t}: no rows in the scores table"]
    criteria = RUBRICS[t]
    cc = cols.criterion.lut({c: k for k, c in enumerate(criteria)})[cols.criterion.codes[rows]]
    if (cc < 0).any():
        ctx.flag(rows[cc < 0], f"unknown criterion for track {t!r}; known: {list(criteria)}")
        return None, None, []
    ctx.flag(
        rows[ctx.valued[rows] & ((ctx.value[rows] < 1.0) | (ctx.value[rows] > 10.0))],
        "judge scores lie in 1-10",
    )
    placeholder = cols.judge.eq(UNAVAILABLE_JUDGE)[rows]
    placeholder_keys = sorted(cols.key.at(rows[placeholder]))
    configured = tuple(sorted(cols.key.at(rows[~placeholder])))
    unavailable_why = f"unavailable: {why_unavailable}"

    jt: JudgeTrack | None = None
    missing: dict[str, str] = {}
    by_system: dict[str, dict[str, str]] = {}
    if configured:
        jc_all = cols.key.lut({j: k for k, j in enumerate(configured)})[cols.key.codes[rows]]
        sel = jc_all >= 0
        keep, jc, cc = rows[sel], jc_all[sel], cc[sel]
        nj, nc = len(configured), len(criteria)
        s_, i_ = ctx.sys[keep], ctx.inst[keep]
        key = ((s_ * ctx.n + i_) * nj + jc) * nc + cc
        ctx.duplicates(keep, key, f"judge {t}")
        scores = np.full((ctx.n_sys, ctx.n, nj, nc), np.nan)
        ok = ctx.valued[keep]
        scores[s_[ok], i_[ok], jc[ok], cc[ok]] = ctx.value[keep][ok]
        valid = np.isfinite(scores).all(axis=3)
        scores[~valid] = np.nan
        present, miss = ctx.marks(keep, jc, nj)
        state = _state(valid, miss, present)

        valid_any = valid.any(axis=(0, 1))  # (J,)
        gaps = ~valid.any(axis=1)  # (S, J): no valid record for that system
        if gaps.any():
            # One outcome per record: the failed row's status (any, when a record mixes several),
            # "incomplete" when every row is valued but a criterion is missing, "absent" with no row.
            outcome = np.full((ctx.n_sys, ctx.n, nj), _INCOMPLETE, dtype=np.int64)
            outcome[~present] = _ABSENT_RECORD
            failed = ~ok
            outcome[s_[failed], i_[failed], jc[failed]] = cols.status.codes[keep[failed]]
            for s, j in zip(*np.nonzero(gaps), strict=True):
                by_system.setdefault(systems[s], {})[configured[j]] = _why_counts(
                    outcome[s, :, j], cols.status
                )
            for j in np.flatnonzero(~valid_any):
                missing[configured[j]] = _why_counts(outcome[:, :, j].ravel(), cols.status)
        kept = np.flatnonzero(valid_any)
        if kept.size:
            jt = JudgeTrack(
                t,
                tuple(configured[j] for j in kept),
                criteria,
                scores[:, :, kept],
                state[:, :, kept],
            )
    for p in placeholder_keys:
        missing[p] = unavailable_why
        for name in systems:
            by_system.setdefault(name, {})[p] = unavailable_why
    coverage = JudgeCoverage(t, configured, missing, by_system)

    lines: list[str] = []
    if jt is None:
        if not configured:
            return None, coverage, [f"judge.{t}: {unavailable_why}"]
        lines.append(f"judge.{t}: no judge produced a valid record")
    lines += [f"judge.{t}/{k}: {why}" for k, why in missing.items()]
    return jt, coverage, lines


def _missing_by_modality(ctx: _Ctx, track: _Col) -> dict[str, BoolArray]:
    """``(S, n)`` flags: the candidate output of that modality is missing.

    A modality's output counts as missing for an instance when any row of its track says
    ``missing_output``, or when the system has no row of that track for the instance at all while
    other systems do (and always for placeholder instances beyond the table's own ids).
    """
    out: dict[str, BoolArray] = {}
    for m in ("text", "image", "speech"):
        rows = np.flatnonzero(track.eq(m) & ~ctx.not_applicable)
        present, miss = ctx.marks(rows)
        out[m] = miss | ~present if rows.size else miss
    return out
