"""Gates on the artifacts the scoring stages produce: the scores table and the judge panels' judgments.

* Scores gate (``expectations/scores_table.json`` plus run-specific expectations): the FORMATS.md
  section 3 contract (columns, types, status vocabulary, a value exactly when the status is ``ok`` or
  ``repaired``, one row per key), the suite's benchmark, every value within its component's native
  range (:attr:`~omnieval.benchmarks.Benchmark.score_range`; a component without a declared range
  fails the gate, since nothing could say whether its values are plausible), no orphan instance (every
  ``instance_id`` is a dataset id and its ``index`` is that instance's) and coverage (every configured
  system has rows; low shares of valid values are reported as warnings, not failures).
* Judgments gate (``expectations/judgments.json`` and ``expectations/judge_rows.json``): the columns of
  ``judgments.parquet`` (raw response, parse/repair status, rationales), the status vocabulary, one
  judgment per record key, a raw response behind every valued judgment, and the link between the two
  tables: every judgment has score rows carrying its status, every judge score row has a judgment.

Failing rows are labelled with a ``row`` column naming system, instance, track, component, criterion
(and judge, panel, condition, pairing and status where set), so a report says which row broke which rule.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.errors import GateFailed
from omnieval.gates._core import (
    GateResult,
    combine_results,
    enforce,
    expectations_dir,
    unreadable_result,
    validate_frame,
    write_result,
)
from omnieval.judgments import REASON_COLUMNS, JudgmentSchema

if TYPE_CHECKING:
    import pandas as pd

SCORES_SUITE = "scores_table.json"
JUDGMENTS_SUITE = "judgments.json"
JUDGE_ROWS_SUITE = "judge_rows.json"

GROUND_TRUTH = "ground_truth"
"""The ``system`` of prism's ground-truth rows (FORMATS.md section 3); not a configured system."""

LOW_COVERAGE = 0.5
"""Below this share of valid values among applicable rows, a (system, component) is warned about."""

VALUED = ("ok", "repaired")
JUDGE_COMPONENT = "judge"
"""The component of a judge's verdict rows; other components of judge rows derive from a verdict."""
JUDGMENT_KEY: tuple[str, ...] = ("panel", "system", "instance_id", "judge")
"""Columns every benchmark's judgments identify a judge record by."""
JUDGMENT_KEY_OPTIONAL: tuple[str, ...] = ("track", "stage", "swapped", "condition", "paired_with")
"""Further key columns, where a benchmark's judgments have them (storybench: ``track``; prism:
``stage`` and ``swapped``)."""
LINK_OPTIONAL: tuple[str, ...] = ("track", "condition", "paired_with")
"""Key columns shared with the scores table: a judgment links to the score rows that agree on these."""
RATIONALE_COLUMNS: tuple[str, ...] = REASON_COLUMNS
"""Where a benchmark's judgments keep the judge's reasons (:class:`~omnieval.judgments.JudgmentSchema`)."""

_LABEL_COLUMNS = ("system", "instance_id", "track", "component", "criterion")
_LABEL_OPTIONAL = ("judge", "panel", "condition", "paired_with", "status")


@dataclass(frozen=True)
class ComponentCoverage:
    """Rows of one (system, component) and how many carry a value.

    Attributes:
        rows: rows in the table.
        valid: rows with status ``ok`` or ``repaired``.
        not_applicable: rows with status ``not_applicable`` (nothing here could compute them).
        share_valid: ``valid / rows``.
        share_valid_applicable: ``valid / (rows - not_applicable)``; None when every row is not applicable.
    """

    rows: int
    valid: int
    not_applicable: int
    share_valid: float
    share_valid_applicable: float | None


@dataclass(frozen=True)
class Coverage:
    """Coverage of a scores table: rows per system and valid shares per system and component."""

    rows_per_system: dict[str, int]
    components: dict[str, dict[str, ComponentCoverage]]
    missing_systems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (saved in the gate result's ``details``)."""
        return {
            "rows_per_system": dict(self.rows_per_system),
            "components": {
                s: {c: asdict(cov) for c, cov in comps.items()} for s, comps in self.components.items()
            },
            "missing_systems": list(self.missing_systems),
            "warnings": list(self.warnings),
        }


def score_coverage(scores: pd.DataFrame, systems: Sequence[str], *, low: float = LOW_COVERAGE) -> Coverage:
    """Rows per system and the share of valid values per (system, component).

    Args:
        scores: a scores table (FORMATS.md section 3).
        systems: the configured systems; one without any row is listed in ``missing_systems``.
        low: a (system, component) whose valid share among applicable rows is below ``low`` gets a warning.
    """
    rows_per_system = {str(s): int(n) for s, n in scores.groupby("system", sort=True).size().items()}
    components: dict[str, dict[str, ComponentCoverage]] = {}
    warnings: list[str] = []
    for (system, component), part in scores.groupby(["system", "component"], sort=True):
        n = len(part)
        valid = int(part["status"].isin(VALUED).sum())
        na = int((part["status"] == "not_applicable").sum())
        applicable = n - na
        share_app = valid / applicable if applicable else None
        components.setdefault(str(system), {})[str(component)] = ComponentCoverage(
            n, valid, na, valid / n if n else 0.0, share_app
        )
        if share_app is not None and share_app < low:
            warnings.append(
                f"low coverage: {system}/{component}: {share_app:.0%} of applicable rows valid "
                f"({valid} of {applicable})"
            )
    missing = [s for s in systems if s not in rows_per_system]
    return Coverage(rows_per_system, components, missing, warnings)


def row_labels(frame: pd.DataFrame) -> pd.Series:
    """A readable label per row: ``system=... instance=... track=... component=... criterion=...``.

    Judge, panel, condition, pairing and status are added where a row has them.
    """
    import pandas as pd

    def text(col: str) -> pd.Series:
        if col not in frame.columns:
            return pd.Series([""] * len(frame), index=frame.index, dtype=object)
        return frame[col].astype(object).where(frame[col].notna(), "").astype(str)

    names = {"instance_id": "instance"}
    label = pd.Series([""] * len(frame), index=frame.index, dtype=object)
    for col in _LABEL_COLUMNS:
        if col in frame.columns:
            label = label + f"{names.get(col, col)}=" + text(col) + " "
    for col in _LABEL_OPTIONAL:
        if col in frame.columns:
            values = text(col)
            label = label + (f"{col}=" + values + " ").where(values != "", "")
    return label.str.rstrip()


def scores_gate_frame(scores: pd.DataFrame, instances: Mapping[str, int]) -> pd.DataFrame:
    """The table the scores gate validates: the scores plus helper columns.

    Helper columns: ``row`` (label of the row), ``index__matches`` (False when the instance is a
    dataset instance whose index differs from the row's) and ``index__problem`` (why).
    """
    frame = scores.copy()
    frame["row"] = row_labels(frame)
    if "instance_id" in frame.columns and "index" in frame.columns:
        expected = frame["instance_id"].map(lambda i: instances.get(str(i)))
        known = expected.notna()
        matches = ~known | (expected == frame["index"])
        frame["index__matches"] = matches.astype(bool)
        frame["index__problem"] = [
            "" if ok else f"instance {iid!r} is row {int(exp)} of the dataset, the score row says {idx}"
            for ok, iid, exp, idx in zip(matches, frame["instance_id"], expected, frame["index"], strict=True)
        ]
    return frame


def scores_expectations(
    *,
    benchmark: str,
    score_range: Mapping[str, tuple[float, float]],
    systems: Sequence[str],
    instance_ids: Sequence[str],
) -> list[dict[str, Any]]:
    """The scores gate's run-specific expectations (suite form), in report order.

    Infinite bounds become open ends, but a value must still be finite (the largest float bounds it).
    """
    systems = list(systems)
    out: list[dict[str, Any]] = [
        _expect(
            "expect_column_values_to_be_in_set",
            {"column": "benchmark", "value_set": [benchmark]},
            f"every row belongs to the suite's benchmark ({benchmark})",
        ),
        _expect(
            "expect_column_values_to_be_in_set",
            {"column": "component", "value_set": sorted(score_range)},
            f"every component has a declared native range ({benchmark} score_range: "
            f"{', '.join(sorted(score_range)) or 'none declared'})",
        ),
    ]
    for component, (lo, hi) in sorted(score_range.items()):
        out.append(
            _expect(
                "expect_column_values_to_be_between",
                {
                    "column": "value",
                    "min_value": lo if math.isfinite(lo) else -sys.float_info.max,
                    "max_value": hi if math.isfinite(hi) else sys.float_info.max,
                    "row_condition": f"component=={json.dumps(component)}",
                    "condition_parser": "pandas",
                },
                f"{component} values within {_fmt(lo)}..{_fmt(hi)}",
            )
        )
    out += [
        _expect(
            "expect_column_values_to_be_in_set",
            {"column": "system", "value_set": sorted({*systems, GROUND_TRUTH})},
            f"every row is of a configured system ({', '.join(systems)}) or a ground-truth row",
        ),
        _expect(
            "expect_column_values_to_be_in_set",
            {
                "column": "paired_with",
                "value_set": sorted(systems),
                "row_condition": f"system=={json.dumps(GROUND_TRUTH)}",
                "condition_parser": "pandas",
            },
            "a ground-truth row names the configured system it was judged beside",
        ),
        _expect(
            "expect_column_distinct_values_to_contain_set",
            {"column": "system", "value_set": sorted(systems)},
            "every configured system has rows",
        ),
        _expect(
            "expect_column_values_to_be_in_set",
            {"column": "instance_id", "value_set": sorted(instance_ids)},
            "no orphan rows: every instance_id is a dataset instance",
        ),
    ]
    return out


def gate_scores(
    scores: pd.DataFrame,
    *,
    benchmark: str,
    score_range: Mapping[str, tuple[float, float]],
    systems: Sequence[str],
    instances: Mapping[str, int],
    out_json: Path | None,
    artifact: str = "scores table",
    suite_file: Path | None = None,
    low_coverage: float = LOW_COVERAGE,
) -> GateResult:
    """Run the scores gate on a collected scores table.

    Args:
        scores: the table (FORMATS.md section 3), as the report stage is about to aggregate it.
        benchmark: the suite's benchmark; every row's ``benchmark`` must equal it.
        score_range: component -> native (lo, hi) (a bound may be infinite); other components fail.
        systems: the configured systems; each must have rows.
        instances: dataset ``instance_id`` -> ``index`` (the whole dataset, not just a suite's prefix).
        out_json: where to save the result (``gates/scores.json``); None to skip.
        artifact: what the table is, for the report.
        suite_file: another static suite instead of ``expectations/scores_table.json``.
        low_coverage: share of valid values (among applicable rows) under which a warning is noted.

    Returns:
        The result; its ``details["coverage"]`` holds :meth:`Coverage.to_dict`, its notes the rows per
        system and the low-coverage warnings.
    """
    frame = scores_gate_frame(scores, instances)
    coverage = (
        score_coverage(scores, systems, low=low_coverage)
        if {"system", "component", "status"} <= set(scores.columns)
        else Coverage({}, {}, list(systems))
    )
    notes = [
        "rows per system: " + (", ".join(f"{s} {n}" for s, n in coverage.rows_per_system.items()) or "none"),
        *coverage.warnings,
    ]
    return validate_frame(
        frame,
        suite_file or expectations_dir() / SCORES_SUITE,
        artifact=artifact,
        out_json=out_json,
        id_column="row",
        notes=notes,
        extra_expectations=scores_expectations(
            benchmark=benchmark,
            score_range=score_range,
            systems=systems,
            instance_ids=list(instances),
        ),
        details={"coverage": coverage.to_dict()},
    )


def gate_report_scores(
    collect: Callable[[], pd.DataFrame],
    out_json: Path,
    *,
    benchmark: str,
    score_range: Mapping[str, tuple[float, float]],
    systems: Sequence[str],
    load_instances: Callable[[], Iterable[Any]],
    artifact: str = "scores table",
) -> pd.DataFrame:
    """The report stage's scores gate: collect the table, gate it, stop the run when it fails.

    The suite's facts come in as values (the gates sit below the suite config and the benchmarks,
    so they name neither); the report stage reads them off its suite and benchmark.

    Args:
        collect: builds the table (the report stage's ``collect_scores`` over its suite); a table
            that does not read as the contract (an unknown status, a missing column) is a gate
            failure too.
        out_json: the gate result (``state/<suite>/gates/scores.json``).
        benchmark: the suite's benchmark name; every row's ``benchmark`` must equal it.
        score_range: the benchmark's component -> native (lo, hi).
        systems: the configured systems; each must have rows.
        load_instances: the dataset's instances (objects with ``id`` and ``index``), called only
            once the table was read (a table that cannot be read never loads the dataset).
        artifact: what the table is, for the report (e.g. ``scores table of suite nightly``).

    Returns:
        The collected table, once it passed.

    Raises:
        GateFailed: the table is unreadable or failed the gate (exit code 2; the result is saved).
    """
    from omnieval.progress import note

    try:
        scores = collect()
    except (ValueError, TypeError, KeyError, OSError) as exc:
        result = unreadable_result(
            "scores_table",
            "collected scores table",
            "table_is_readable",
            f"the scores table does not read as FORMATS.md section 3: {_first_line(exc)}",
        )
        write_result(result, out_json)
        raise GateFailed(result.report()) from None
    result = gate_scores(
        scores,
        benchmark=benchmark,
        score_range=score_range,
        systems=list(systems),
        instances={str(i.id): int(i.index) for i in load_instances()},
        out_json=out_json,
        artifact=artifact,
    )
    for line in result.notes:
        if line.startswith("low coverage"):
            note(f"[gate] warning: {line}")
    enforce(result)
    return scores


def judgments_gate_frame(judgments: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """The judgments plus ``row`` and the link to the score rows (``scores__linked``/``__problem``).

    Judgments link to the judge score rows that agree on :data:`JUDGMENT_KEY` and the
    :data:`LINK_OPTIONAL` columns the judgments have; a ground-truth row (prism) belongs to the record
    of the system in its ``paired_with``. Every judgment needs score rows. Where one record makes its
    own rows (the judgments have ``track``, as storybench's), its ``judge`` verdict rows must also carry
    its status and rows derived from it (e.g. ``judge_expected``) that status or ``not_applicable``.
    """
    frame = judgments.copy()
    frame["row"] = row_labels(frame)
    link = _link_columns(frame)
    rows = _linkable_rows(scores)
    if not (set(link) <= set(frame.columns) and set(link) <= set(rows.columns)):
        # The missing key column is reported by the column expectations; nothing to link by.
        frame["scores__linked"] = True
        frame["scores__problem"] = ""
        return frame
    exact = "track" in frame.columns
    verdicts: dict[tuple[str, ...], set[str]] = {}
    derived: dict[tuple[str, ...], set[str]] = {}
    for values, part in rows.groupby(list(link), sort=False):
        k = tuple(str(v) for v in values)
        primary = part["component"].astype(str) == JUDGE_COMPONENT
        verdicts[k] = set(map(str, part.loc[primary, "status"]))
        derived[k] = set(map(str, part.loc[~primary, "status"]))
    problems: list[str] = []
    for values, status in zip(
        frame[list(link)].astype(str).itertuples(index=False, name=None), frame["status"], strict=True
    ):
        k, status = tuple(values), str(status)
        if k not in verdicts:
            problems.append("no score rows for this judgment")
        elif exact and verdicts[k] and verdicts[k] != {status}:
            problems.append(
                f"judgment status {status!r} but its {JUDGE_COMPONENT} rows say {', '.join(sorted(verdicts[k]))}"
            )
        elif exact and not derived[k] <= {status, "not_applicable"}:
            problems.append(
                f"judgment status {status!r} but rows derived from it say "
                f"{', '.join(sorted(derived[k] - {status, 'not_applicable'}))}"
            )
        else:
            problems.append("")
    frame["scores__linked"] = [not p for p in problems]
    frame["scores__problem"] = problems
    return frame


def judge_rows_gate_frame(scores: pd.DataFrame, judgments: pd.DataFrame) -> pd.DataFrame:
    """The judge rows of a scores table with ``judgment__linked``/``__problem``.

    A judge row is linked when a judgment with its key exists and, for the ``judge`` verdict rows, one
    of those judgments has the row's status (a score row never claims an outcome no judgment had).
    """
    frame = _linkable_rows(scores)
    link = _link_columns(judgments)
    if not (set(link) <= set(judgments.columns) and set(link) <= set(frame.columns)):
        frame["judgment__linked"] = True
        frame["judgment__problem"] = ""
        return frame
    known: dict[tuple[str, ...], set[str]] = {}
    for values, status in zip(
        judgments[list(link)].astype(str).itertuples(index=False, name=None), judgments["status"], strict=True
    ):
        known.setdefault(tuple(values), set()).add(str(status))
    problems: list[str] = []
    for values, status, component in zip(
        frame[list(link)].astype(str).itertuples(index=False, name=None),
        frame["status"].astype(str),
        frame["component"].astype(str),
        strict=True,
    ):
        statuses = known.get(tuple(values))
        if statuses is None:
            problems.append("no judgment record for this judge row")
        elif component == JUDGE_COMPONENT and status not in statuses:
            problems.append(f"status {status!r} but its judgments say {', '.join(sorted(statuses))}")
        else:
            problems.append("")
    frame["judgment__linked"] = [not p for p in problems]
    frame["judgment__problem"] = problems
    return frame


def judgments_expectations(
    judgments: pd.DataFrame, schema: JudgmentSchema | None = None
) -> list[dict[str, Any]]:
    """The judgments gate's expectations that depend on the benchmark's judgment columns."""
    key = _record_key(judgments)
    out = []
    if schema is not None:
        out.append(
            _expect(
                "expect_table_columns_to_match_set",
                {"column_set": list(schema.columns), "exact_match": False},
                "the judgments have every column of the benchmark's judgment schema",
            )
        )
    out += [
        _expect(
            "expect_compound_columns_to_be_unique",
            {"column_list": list(key)},
            f"one judgment per record key ({', '.join(key)})",
        )
    ]
    if "track" in judgments.columns:
        out.append(
            _expect(
                "expect_column_value_lengths_to_be_between",
                {"column": "track", "min_value": 1},
                "every judgment names its track",
            )
        )
    reasons = [c for c in RATIONALE_COLUMNS if c in judgments.columns]
    for column in reasons:
        out.append(
            _expect(
                "expect_column_values_to_be_json_parseable",
                {"column": column},
                f"the judge's reasons ({column}) are JSON",
            )
        )
    if not reasons:
        out.append(
            _expect(
                "expect_table_columns_to_match_set",
                {"column_set": [RATIONALE_COLUMNS[0]], "exact_match": False},
                f"judgments keep the judge's reasons ({' or '.join(RATIONALE_COLUMNS)})",
            )
        )
    return out


def gate_judgments(
    judgments: pd.DataFrame,
    scores: pd.DataFrame,
    *,
    out_json: Path | None,
    artifact: str = "judgments",
    suite_file: Path | None = None,
    rows_suite_file: Path | None = None,
    schema: JudgmentSchema | None = None,
) -> GateResult:
    """Run the judgments gate on one judge stage's output.

    Args:
        judgments: the ``judgments.parquet`` table (one row per judge record or call).
        scores: the judge stage's scores rows (its judge rows are linked to the judgments).
        out_json: where to save the result (``gates/judgments.json``); None to skip.
        artifact: what the tables are, for the report.
        suite_file: another suite instead of ``expectations/judgments.json``.
        rows_suite_file: another suite instead of ``expectations/judge_rows.json``.
        schema: the benchmark's judgments layout; when given, every column it declares must be
            present (a runner that dropped or renamed one fails here, not in a later reader).

    Returns:
        One result over both validations (the judgments and the judge score rows).
    """
    n_judge_rows = len(_judge_rows(scores))
    if len(judgments) == 0 and n_judge_rows == 0:
        result = GateResult("judgments", artifact, True, 0, notes=["no judgments and no judge rows"])
        if out_json is not None:
            write_result(result, out_json)
        return result
    records = validate_frame(
        judgments_gate_frame(judgments, scores),
        suite_file or expectations_dir() / JUDGMENTS_SUITE,
        artifact=artifact,
        id_column="row",
        extra_expectations=judgments_expectations(judgments, schema),
    )
    rows = validate_frame(
        judge_rows_gate_frame(scores, judgments),
        rows_suite_file or expectations_dir() / JUDGE_ROWS_SUITE,
        artifact=artifact,
        id_column="row",
    )
    counts = judgments["status"].astype(str).value_counts().sort_index() if "status" in judgments else None
    statuses = {str(s): int(n) for s, n in counts.items()} if counts is not None else {}
    result = combine_results(
        [records, rows],
        suite="judgments",
        artifact=artifact,
        n_rows=len(judgments),
        notes=[
            f"{len(judgments)} judgments, {n_judge_rows} judge score rows"
            + ("; statuses: " + ", ".join(f"{s} {n}" for s, n in statuses.items()) if statuses else "")
        ],
        details={"statuses": statuses},
    )
    if out_json is not None:
        write_result(result, out_json)
    return result


def _record_key(judgments: pd.DataFrame) -> tuple[str, ...]:
    return (*JUDGMENT_KEY, *(c for c in JUDGMENT_KEY_OPTIONAL if c in judgments.columns))


def _link_columns(judgments: pd.DataFrame) -> tuple[str, ...]:
    return (*JUDGMENT_KEY, *(c for c in LINK_OPTIONAL if c in judgments.columns))


def _linkable_rows(scores: pd.DataFrame) -> pd.DataFrame:
    """Judge rows, labelled (``row``), then with a ground-truth row's ``system`` replaced by its pairing.

    A prism ground-truth row is scored in the call of the system it was judged beside.
    """
    rows = _judge_rows(scores).copy()
    rows["row"] = row_labels(rows)
    if {"system", "paired_with"} <= set(rows.columns):
        truth = rows["system"].astype(str) == GROUND_TRUTH
        rows.loc[truth, "system"] = rows.loc[truth, "paired_with"]
    return rows


def _judge_rows(scores: pd.DataFrame) -> pd.DataFrame:
    """Rows of judges (``judge`` set; automatic metrics have ``""``)."""
    if "judge" not in scores.columns:
        return scores.iloc[0:0]
    judge = scores["judge"].astype(object).where(scores["judge"].notna(), "").astype(str)
    return scores[judge != ""]


def _expect(kind: str, kwargs: dict[str, Any], notes: str) -> dict[str, Any]:
    return {"type": kind, "kwargs": kwargs, "meta": {"notes": notes}}


def _fmt(bound: float) -> str:
    return ("-inf" if bound < 0 else "inf") if not math.isfinite(bound) else f"{bound:g}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
