"""Each judge verdict of a run as an MLflow trace with its assessments (MLflow 3's evaluation views).

One trace per judged row of the judge stage's ``judgments.parquet`` (one row per system x instance
x track x judge), logged into the system's child run (trace metadata ``mlflow.sourceRun`` and a
run link), so the child run's **Traces** tab lists the run's verdicts, two runs' verdicts can be
compared instance by instance, and a person can add their own feedback in the UI:

- name ``<track> · <instance id>``; request (inputs): the instance, system, track, judge, panel,
  the prompt template's SHA-256 and, when the caller has it, the prompt template's text; response
  (outputs): the judge's raw answer;
- tags ``omnieval.system``, ``omnieval.instance_id``, ``omnieval.track``, ``omnieval.judge``,
  ``omnieval.panel``, ``omnieval.status`` (the verdict's status, FORMATS.md section 3),
  ``omnieval.suite``; the trace state is ``OK`` for a usable verdict (``ok``, ``repaired``),
  ``ERROR`` otherwise;
- assessments: for a usable verdict, one feedback per criterion (name = criterion, value = the
  score, rationale = the judge's reason for it, source ``LLM_JUDGE`` with the judge id, metadata
  the model, revision, panel and status); for a verdict that could not be read
  (``parse_error``, ``unrecoverable``, ``inference_error``) one feedback ``verdict`` that carries
  the status as an error and no value: never a made-up score.

Rows where no judge was asked (``not_applicable``: no judge for the track here;
``missing_output``: the system wrote nothing to judge) get no trace; they are counted.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

USABLE_STATUSES = frozenset({"ok", "repaired"})
"""Verdict statuses whose scores count (FORMATS.md section 3)."""
FAILED_STATUSES = frozenset({"parse_error", "unrecoverable", "inference_error"})
"""Statuses of a judge call that gave no usable verdict: traced, with the status as an error."""
STATUS_FEEDBACK = "verdict"
"""Name of the feedback that records an unusable verdict's status (no value)."""
_LINK_BATCH = 100  # MlflowClient.link_traces_to_run takes at most 100 trace ids per call


@dataclass(frozen=True)
class VerdictTraces:
    """What :func:`log_judgment_traces` logged.

    Attributes:
        traces: traces logged (one per judged row).
        assessments: feedbacks attached to them.
        skipped: rows without a judge call (``not_applicable``, ``missing_output``, or a system
            with no child run).
        seconds: wall time spent logging.
        note: why nothing was logged, when nothing could be (empty otherwise).
    """

    traces: int
    assessments: int
    skipped: int
    seconds: float
    note: str = ""


def _json_object(text: Any) -> dict[str, Any]:
    """A judgments column holding a JSON object (``scores``, ``rationales``); ``{}`` when unreadable.

    >>> _json_object('{"a": 8}'), _json_object(""), _json_object(None), _json_object("[1]")
    ({'a': 8}, {}, {}, {})
    """
    if not isinstance(text, str) or not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _score(value: Any) -> float | int | None:
    """A criterion score as logged: an int stays an int, a finite float stays; anything else None.

    >>> _score(8), _score(7.5), _score(float("nan")), _score("8"), _score(True)
    (8, 7.5, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _number(value: Any) -> float | None:
    """A finite number from a judgments column (some tables store it as text); None otherwise.

    >>> _number(1.5), _number("8.25"), _number(float("nan")), _number(""), _number(None)
    (1.5, 8.25, None, None, None)
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _text(row: Mapping[str, Any], key: str) -> str:
    value = row.get(key)
    return value if isinstance(value, str) else ""


def verdict_feedbacks(row: Mapping[str, Any]) -> list[Any]:
    """The MLflow ``Feedback`` assessments of one judgments row (module docstring); none for a row
    without a judge call.

    Example:
        >>> fbs = verdict_feedbacks({"status": "ok", "judge": "j", "scores": '{"a": 8}',
        ...     "rationales": '{"a": "fine"}'})
        >>> [(f.name, f.value, f.rationale, f.source.source_type, f.source.source_id) for f in fbs]
        [('a', 8, 'fine', 'LLM_JUDGE', 'j')]
        >>> [(f.name, f.value, f.error.error_code) for f in verdict_feedbacks(
        ...     {"status": "parse_error", "judge": "j", "scores": "{}", "error": "no JSON"})]
        [('verdict', None, 'PARSE_ERROR')]
    """
    from mlflow.entities import AssessmentError, AssessmentSource, AssessmentSourceType, Feedback

    status = _text(row, "status")
    source = AssessmentSource(
        source_type=AssessmentSourceType.LLM_JUDGE, source_id=_text(row, "judge") or "judge"
    )
    metadata = {
        key: _text(row, key) for key in ("model", "revision", "panel", "prompt_sha256") if _text(row, key)
    }
    metadata["status"] = status
    if status in USABLE_STATUSES:
        # prism's pairwise rows keep their reasons as ``evidence``
        rationales = _json_object(row.get("rationales")) or _json_object(row.get("evidence"))
        out = []
        for criterion, raw in _json_object(row.get("scores")).items():
            value = _score(raw)
            if value is None:  # a criterion without a number is left out, never filled in
                continue
            reason = rationales.get(criterion)
            out.append(
                Feedback(
                    name=str(criterion),
                    value=value,
                    source=source,
                    rationale=reason if isinstance(reason, str) and reason else None,
                    metadata=metadata,
                )
            )
        return out
    if status in FAILED_STATUSES:
        message = _text(row, "error") or _text(row, "note") or status
        return [
            Feedback(
                name=STATUS_FEEDBACK,
                source=source,
                error=AssessmentError(error_code=status.upper(), error_message=message[:1000]),
                metadata=metadata,
            )
        ]
    return []


def _inputs(row: Mapping[str, Any], prompts: Mapping[str, str]) -> dict[str, Any]:
    digest = _text(row, "prompt_sha256")
    inputs: dict[str, Any] = {
        "instance_id": _text(row, "instance_id"),
        "system": _text(row, "system"),
        "track": _text(row, "track") or _text(row, "subset"),
        "judge": _text(row, "judge"),
        "panel": _text(row, "panel"),
        "prompt_sha256": digest,
    }
    if digest in prompts:
        inputs["prompt_template"] = prompts[digest]
    return inputs


def log_judgment_traces(
    judgments: pd.DataFrame,
    *,
    experiment_id: str,
    system_runs: Mapping[str, str],
    prompts: Mapping[str, str] | None = None,
    suite: str = "",
) -> VerdictTraces:
    """Log one trace per judged row of ``judgments`` into its system's child run (module docstring).

    Args:
        judgments: the judge stage's ``judgments.parquet`` (columns ``system``, ``instance_id``,
            ``track``, ``judge``, ``model``, ``revision``, ``prompt_sha256``, ``status``,
            ``raw_response``, ``scores``, ``rationales``, ``error``, ``panel``, ...).
        experiment_id: the suite's experiment.
        system_runs: system id -> its child run id; rows of other systems are skipped.
        prompts: prompt template SHA-256 -> its text, put into each trace's inputs
            (``prompt_template``); the rendered prompt itself is not kept by the judge stage.
        suite: the suite name, tagged ``omnieval.suite`` on every trace.

    Returns:
        The counts and the seconds spent. A store that cannot hold traces logs none and says why
        in ``note`` (the run's other records are unaffected).
    """
    import mlflow
    from mlflow.entities import SpanType

    started = time.monotonic()
    prompts = prompts or {}
    records = judgments.to_dict("records") if len(judgments) else []
    logged: dict[str, list[str]] = {}
    traces = assessments = skipped = 0
    try:
        mlflow.set_experiment(experiment_id=experiment_id)
        for row in records:
            status = _text(row, "status")
            run_id = system_runs.get(_text(row, "system"))
            if run_id is None or (status not in USABLE_STATUSES and status not in FAILED_STATUSES):
                skipped += 1
                continue
            feedbacks = verdict_feedbacks(row)
            name = f"{_text(row, 'track') or _text(row, 'subset') or 'verdict'} · {_text(row, 'instance_id')}"
            attributes: dict[str, Any] = {
                key: _text(row, key) for key in ("model", "revision", "cache_key") if _text(row, key)
            }
            latency = _number(row.get("latency_s"))
            if latency is not None:
                attributes["omnieval.latency_s"] = latency
            with mlflow.start_span(
                name, span_type=SpanType.LLM, attributes=attributes, run_id=run_id
            ) as span:
                span.set_inputs(_inputs(row, prompts))
                for feedback in feedbacks:
                    # The trace is the active one: its assessments travel with it in one export.
                    mlflow.log_assessment(trace_id=span.trace_id, assessment=feedback)
                mlflow.update_current_trace(
                    tags={
                        "omnieval.suite": suite,
                        "omnieval.system": _text(row, "system"),
                        "omnieval.instance_id": _text(row, "instance_id")[:250],
                        "omnieval.track": _text(row, "track") or _text(row, "subset"),
                        "omnieval.judge": _text(row, "judge"),
                        "omnieval.panel": _text(row, "panel"),
                        "omnieval.status": status,
                    },
                )
                if status not in USABLE_STATUSES:
                    span.set_status("ERROR")
                span.set_outputs(_text(row, "raw_response") or None)
            logged.setdefault(run_id, []).append(span.trace_id)
            traces += 1
            assessments += len(feedbacks)
        mlflow.flush_trace_async_logging()
        client = mlflow.MlflowClient()
        for run_id, ids in logged.items():
            for start in range(0, len(ids), _LINK_BATCH):
                client.link_traces_to_run(ids[start : start + _LINK_BATCH], run_id)
    except (
        Exception
    ) as exc:  # a store without traces (or one that refuses them) keeps the run's other records
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
        return VerdictTraces(traces, assessments, len(records) - traces, time.monotonic() - started, reason)
    return VerdictTraces(traces, assessments, skipped, time.monotonic() - started)
