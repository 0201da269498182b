"""Run a Great Expectations suite stored as JSON over a pandas table; turn the outcome into a report.

This module (with the rest of :mod:`omnieval.gates`) is the only place that imports
``great_expectations``, and only inside :func:`validate_frame`, so importing omnieval stays cheap.

Helper columns: a gate may add derived columns to the table before validating (for example
``current_image__decodable``). When a failed expectation is about a column named ``<base>__<check>``
and the table also has ``<base>__problem``, the report shows that column's text for the failing rows,
so a reader sees *why* a file did not decode, not just ``False``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.data import clip
from omnieval.errors import ConfigError, GateFailed
from omnieval.jsonio import write_json_atomic

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger("omnieval.gates")

#: How many failing values / rows each failed expectation keeps.
MAX_EXAMPLES = 5
#: How many failed expectations :meth:`GateResult.report` prints before summarising the rest.
MAX_REPORT_LINES = 15

_MISSING_COLUMN = re.compile(r'The column "([^"]+)" in BatchData does not exist')


@dataclass(frozen=True)
class FailedExpectation:
    """One expectation that did not hold, with a few examples of what broke it."""

    expectation_type: str
    column: str = ""
    unexpected_count: int | None = None
    unexpected_values: list[str] = field(default_factory=list)
    unexpected_rows: list[int] = field(default_factory=list)
    row_labels: list[str] = field(default_factory=list)
    detail: str = ""
    values_in_labels: bool = False
    meaning: str = ""
    """What the expectation stands for (the suite's ``meta.notes``), shown in brackets."""

    def describe(self) -> str:
        """One line: the expectation, its column, what it means, how many rows failed, a few examples."""
        head = self.expectation_type + (f"({self.column})" if self.column else "")
        if self.meaning:
            head += f" [{clip(self.meaning, 140)}]"
        parts: list[str] = []
        if self.unexpected_count is not None:
            parts.append(f"{self.unexpected_count} unexpected")
        values = list(dict.fromkeys(self.unexpected_values))
        # Booleans of helper columns say nothing the row reasons do not; ids are in the row labels.
        if values and not all(v in ("False", "None") for v in values) and not self.values_in_labels:
            parts.append("e.g. " + ", ".join(values))
        if self.row_labels:
            parts.append("rows: " + "; ".join(self.row_labels))
        elif self.unexpected_rows:
            parts.append("rows " + ", ".join(str(r) for r in self.unexpected_rows))
        if self.detail:
            parts.append(self.detail)
        return head + (": " + "; ".join(parts) if parts else "")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "expectation_type": self.expectation_type,
            "column": self.column,
            "unexpected_count": self.unexpected_count,
            "unexpected_values": list(self.unexpected_values),
            "unexpected_rows": list(self.unexpected_rows),
            "row_labels": list(self.row_labels),
            "detail": self.detail,
            "meaning": self.meaning,
        }


@dataclass(frozen=True)
class GateResult:
    """Outcome of one gate: the suite, the artifact it judged, and what failed."""

    suite: str
    artifact: str
    success: bool
    evaluated: int
    failed: list[FailedExpectation] = field(default_factory=list)
    n_rows: int = 0
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    """Structured facts beyond pass/fail (e.g. the scores gate's coverage), saved with the result."""

    def report(self) -> str:
        """A short readable report (a headline plus one line per failed expectation)."""
        if self.success:
            head = (
                f"gate {self.suite} passed on {self.artifact} "
                f"({self.evaluated} expectations, {self.n_rows} rows)"
            )
            return "\n".join([head, *(f"  note: {n}" for n in self.notes)])
        head = (
            f"gate {self.suite} failed on {self.artifact}: {len(self.failed)} of {self.evaluated} "
            f"expectations failed ({self.n_rows} rows)"
        )
        lines = [head, *(f"  - {f.describe()}" for f in self.failed[:MAX_REPORT_LINES])]
        if len(self.failed) > MAX_REPORT_LINES:
            lines.append(f"  ... and {len(self.failed) - MAX_REPORT_LINES} more (see the saved gate result)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (what ``out_json`` holds)."""
        return {
            "suite": self.suite,
            "artifact": self.artifact,
            "success": self.success,
            "evaluated": self.evaluated,
            "n_failed": len(self.failed),
            "n_rows": self.n_rows,
            "failed": [f.to_dict() for f in self.failed],
            "notes": list(self.notes),
            "details": dict(self.details),
            "report": self.report(),
        }


def load_suite_json(suite_file: Path) -> dict[str, Any]:
    """Read a suite file: ``{"name": ..., "expectations": [{"type": ..., "kwargs": {...}}], "meta": ...}``."""
    try:
        obj = json.loads(Path(suite_file).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"expectation suite {suite_file} not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"expectation suite {suite_file} is not readable JSON: {exc}") from None
    if (
        not isinstance(obj, dict)
        or not isinstance(obj.get("name"), str)
        or not isinstance(obj.get("expectations"), list)
    ):
        raise ConfigError(f"expectation suite {suite_file} needs a string 'name' and a list 'expectations'")
    return obj


def validate_frame(
    frame: pd.DataFrame,
    suite_file: Path,
    *,
    artifact: str,
    out_json: Path | None = None,
    id_column: str | None = None,
    notes: list[str] | None = None,
    extra_expectations: Sequence[Mapping[str, Any]] = (),
    details: Mapping[str, Any] | None = None,
) -> GateResult:
    """Validate ``frame`` against the GX suite stored as JSON in ``suite_file``.

    Uses an ephemeral GX context (nothing written to disk by GX), progress bars off.

    Args:
        frame: the table to check; its index labels are reported as row numbers.
        suite_file: JSON suite (``expectations/<name>.json``).
        artifact: what the table is (a path or name), for the report.
        out_json: where to save :meth:`GateResult.to_dict` (atomically); None to skip.
        id_column: a column whose values label failing rows in the report (e.g. ``id``).
        notes: lines added to the result (e.g. non-failing observations such as missing outputs).
        extra_expectations: expectations appended to the suite's own for this run only, in the
            suite file's form (``{"type", "kwargs", "meta"}``), for checks that depend on the run
            (e.g. the configured systems or a benchmark's score ranges).
        details: structured facts saved with the result (:attr:`GateResult.details`).

    Returns:
        The gate result; call :func:`enforce` to stop on failure.

    Raises:
        ConfigError: the suite file is missing, not JSON, or GX rejects it.
    """
    suite_obj = load_suite_json(suite_file)
    suite_obj = {**suite_obj, "expectations": [*suite_obj["expectations"], *map(dict, extra_expectations)]}
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # GX sets this logger to INFO and logs the temporary docs folder of every ephemeral context;
    # under Prefect's root console handler that printed a line per gate in every run.
    logging.getLogger("great_expectations.data_context.types.base").setLevel(logging.WARNING)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    try:
        suite = gx.ExpectationSuite(
            name=suite_obj["name"],
            expectations=suite_obj["expectations"],
            meta=suite_obj.get("meta") or {},
        )
    except Exception as exc:
        raise ConfigError(f"expectation suite {suite_file}: {type(exc).__name__}: {exc}") from None
    suite = context.suites.add(suite)
    batch = (
        context.data_sources.add_pandas("omnieval")
        .add_dataframe_asset("table")
        .add_batch_definition_whole_dataframe("whole")
        .get_batch(batch_parameters={"dataframe": frame})
    )
    outcome = batch.validate(
        suite,
        result_format={"result_format": "SUMMARY", "partial_unexpected_count": MAX_EXAMPLES},
    )

    # GX returns results grouped by metric, not in suite order; report them in the suite's order.
    order = {_key(e): i for i, e in enumerate(suite_obj["expectations"])}
    results: list[Any] = sorted(outcome.results, key=lambda r: order.get(_result_key(r), 10**6))
    failed = [_failure(r, frame, id_column) for r in results if not r.success]
    result = GateResult(
        suite=suite_obj["name"],
        artifact=artifact,
        success=bool(outcome.success),
        evaluated=len(outcome.results),
        failed=failed,
        n_rows=len(frame),
        notes=list(notes or []),
        details=dict(details or {}),
    )
    if out_json is not None:
        write_result(result, out_json)
    # INFO, not WARNING: callers print the report themselves; a WARNING would reach stderr twice.
    log.info("%s", result.report())
    return result


def enforce(result: GateResult) -> None:
    """Stop the run when a gate failed: raise :class:`~omnieval.errors.GateFailed` (exit code 2)."""
    if not result.success:
        raise GateFailed(result.report())


def write_result(result: GateResult, path: Path) -> Path:
    """Save ``result.to_dict()`` as indented JSON, atomically (temporary file, then rename)."""
    return write_json_atomic(path, result.to_dict())


def combine_results(
    parts: Sequence[GateResult],
    *,
    suite: str,
    artifact: str,
    n_rows: int,
    notes: Sequence[str] = (),
    details: Mapping[str, Any] | None = None,
) -> GateResult:
    """One gate result from several validations of the same artifact (e.g. a table and its links)."""
    return GateResult(
        suite=suite,
        artifact=artifact,
        success=all(p.success for p in parts),
        evaluated=sum(p.evaluated for p in parts),
        failed=[f for p in parts for f in p.failed],
        n_rows=n_rows,
        notes=[*notes, *(n for p in parts for n in p.notes)],
        details=dict(details or {}),
    )


def unreadable_result(suite: str, artifact: str, check: str, detail: str) -> GateResult:
    """A failed result for an artifact that could not even be turned into a table (GX never ran)."""
    return GateResult(
        suite=suite,
        artifact=artifact,
        success=False,
        evaluated=0,
        failed=[FailedExpectation(check, detail=detail)],
    )


def _key(expectation: dict[str, Any]) -> str:
    kwargs = {k: v for k, v in (expectation.get("kwargs") or {}).items() if k != "batch_id"}
    condition = kwargs.get("row_condition")
    # GX hands a string row_condition back wrapped as {"type": "pass_through", "pass_through_filter": ...}.
    if isinstance(condition, Mapping) and "pass_through_filter" in condition:
        kwargs["row_condition"] = condition["pass_through_filter"]
    return json.dumps([expectation.get("type"), kwargs], sort_keys=True, default=str)


def _result_key(r: Any) -> str:
    config = r.expectation_config
    return _key({"type": config.type, "kwargs": config.kwargs})


def _failure(r: Any, frame: pd.DataFrame, id_column: str | None) -> FailedExpectation:
    kwargs = dict(r.expectation_config.kwargs)
    column = (
        kwargs.get("column")
        or ", ".join(str(kwargs[k]) for k in ("column_A", "column_B") if k in kwargs)
        or ", ".join(str(c) for c in kwargs.get("column_list", []) or [])
    )
    res: dict[str, Any] = dict(r.result or {})
    detail = _exception_message(r)
    if detail:
        missing = _MISSING_COLUMN.search(detail)
        detail = f"column {missing.group(1)!r} is missing" if missing else detail
    elif res.get("partial_missing_list"):
        # expect_column_distinct_values_to_contain_set and kin: the values that should be there.
        missing_values = res["partial_missing_list"][:MAX_EXAMPLES]
        detail = "missing: " + ", ".join(clip(repr(v), 60) for v in missing_values)
    elif "observed_value" in res and "unexpected_count" not in res:
        detail = f"observed {clip(repr(res['observed_value']), 160)}"
        mismatch = (res.get("details") or {}).get("mismatched")
        if isinstance(mismatch, dict) and (mismatch.get("missing") or mismatch.get("unexpected")):
            detail = "; ".join(
                f"{kind} columns: {', '.join(map(str, mismatch[kind]))}"
                for kind in ("missing", "unexpected")
                if mismatch.get(kind)
            )
    values = [clip(repr(v), 60) for v in (res.get("partial_unexpected_list") or [])[:MAX_EXAMPLES]]
    rows = [int(i) for i in (res.get("partial_unexpected_index_list") or [])[:MAX_EXAMPLES] if _is_int(i)]
    labels = _row_labels(frame, rows, str(column), id_column)
    count = res.get("unexpected_count")
    return FailedExpectation(
        expectation_type=str(r.expectation_config.type),
        column=str(column),
        unexpected_count=int(count) if isinstance(count, int | float) else None,
        unexpected_values=values,
        unexpected_rows=rows,
        row_labels=labels,
        detail=detail,
        values_in_labels=bool(labels) and id_column is not None and id_column in str(column).split(", "),
        meaning=_meaning(r),
    )


def _meaning(r: Any) -> str:
    meta = getattr(r.expectation_config, "meta", None) or {}
    notes = meta.get("notes") if isinstance(meta, Mapping) else None
    return str(notes) if isinstance(notes, str) else ""


def _row_labels(frame: pd.DataFrame, rows: list[int], column: str, id_column: str | None) -> list[str]:
    """Labels for failing rows: number, id and the reason from ``<base>__problem`` or ``problem``."""
    if not rows:
        return []
    base = column.split("__", 1)[0] if "__" in column else ""
    problem_col = next((c for c in (f"{base}__problem", "problem") if c in frame.columns), None)
    has_id = id_column is not None and id_column in frame.columns
    if not has_id and problem_col is None:
        return []
    labels = []
    for i in rows:
        if i not in frame.index:
            continue
        label = f"{i}"
        if has_id:
            label += f" ({id_column} {frame.at[i, id_column]!r})"
        if problem_col is not None and frame.at[i, problem_col]:
            label += f" {frame.at[i, problem_col]}"
        labels.append(label)
    return labels


def _exception_message(r: Any) -> str:
    info = getattr(r, "exception_info", None) or {}
    if isinstance(info, dict) and info.get("raised_exception"):
        return clip(str(info.get("exception_message") or "raised an exception"), 200)
    if isinstance(info, dict):
        for value in info.values():
            if isinstance(value, dict) and value.get("raised_exception"):
                return clip(str(value.get("exception_message") or "raised an exception"), 200)
    return ""


def _is_int(value: object) -> bool:
    try:
        int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return False
    return True


def expectations_dir() -> Path:
    """The ``expectations/`` folder: ``$OMNIEVAL_EXPECTATIONS``, else the source checkout's, else ``./``."""
    import os

    override = os.environ.get("OMNIEVAL_EXPECTATIONS")
    if override:
        return Path(override)
    checkout = Path(__file__).resolve().parents[3] / "expectations"
    return checkout if checkout.is_dir() else Path.cwd() / "expectations"
