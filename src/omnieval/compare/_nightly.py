"""The nightly self-comparison: each run against the previous successful run of its suite.

The track stage calls :func:`nightly_regression` while it builds the run folder (after
``lineage.json`` and ``scores.parquet``, before ``report.html``, so the report can show the verdict)
and :func:`notify_regression` once ``mlflow.json`` is written.

``regression.json`` (in the run folder) is the :func:`~omnieval.compare.compare_runs` document plus::

    "suite": str, "run_id": str, "created": ISO-8601 UTC time,
    "baseline": {"run_id", "folder"} | null,     # null: first run of the suite
    "error": str                                 # only when the comparison itself failed
    "rejudge": {...}                             # only with regression.rejudge (compare._rejudge)
    "judge_checks": [str]                        # only when a judge failed its known-set check

A first run has ``verdict: "GO"``, ``baseline: null`` and ``reasons: ["no previous run to compare
with"]``: there is nothing it can have regressed against, and a scheduler gating on NO-GO must not
stop on it. A comparison that fails on bad input (an unreadable baseline) gives ``INCONCLUSIVE`` with
the error among the reasons; the run itself is not failed. A judge below its floor on the
benchmark's known set (``health.json``'s ``meta_eval``, written by the judge stage with
``judges.meta_eval.enabled``) makes a GO, a first run's included, ``INCONCLUSIVE`` with a reason
naming the judge, the track and the accuracy (:func:`~omnieval.compare._verdict.with_judge_checks`).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.compare._load import (
    DATASET_MANIFEST,
    DRIFT_FILE,
    REGRESSION_FILE,
    read_run,
    resolve_run,
    suite_runs,
)
from omnieval.compare._verdict import (
    INCONCLUSIVE,
    compare_runs,
    first_run_document,
    uncompared_document,
    with_judge_checks,
)
from omnieval.errors import OmnievalError
from omnieval.jsonio import write_json_atomic

if TYPE_CHECKING:
    from omnieval.config import SuiteConfig

HEALTH_FILE = "health.json"
"""The judge stage's health file (copied into the run folder); its ``meta_eval`` holds the known-set check."""


def _drift(folder: Path, state: Path | None) -> dict[str, Any] | None:
    """The run's judge drift check: the run folder's ``drift.json``, else the state folder's."""
    places = [folder / DRIFT_FILE]
    if state is not None:
        places += [state / DRIFT_FILE, state / "judge" / DRIFT_FILE, state / "report" / DRIFT_FILE]
    for path in places:
        if path.is_file():
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return {"status": "unavailable", "reasons": [f"{path} is unreadable"]}
            return (
                doc
                if isinstance(doc, dict)
                else {"status": "unavailable", "reasons": [f"{path}: not an object"]}
            )
    return None


def _judge_checks(folder: Path, state: Path | None) -> list[str]:
    """The run's failed judge checks (known-set floors) from its ``health.json`` (the run folder's
    copy, else the judge stage's); an unreadable file is itself a reason."""
    from omnieval.judges import meta_eval_failures

    places = [folder / HEALTH_FILE] + ([state / "judge" / HEALTH_FILE] if state is not None else [])
    for path in places:
        if path.is_file():
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return [f"judge health {path} is unreadable: the known-set check cannot be read"]
            return meta_eval_failures(doc if isinstance(doc, dict) else None)
    return []


def find_baseline(config: SuiteConfig, folder: Path, run_id: str | None = None) -> Path | None:
    """The run folder this run is compared with (``regression.baseline``), or None for a first run.

    ``previous`` with a tracking server configured (``MLFLOW_TRACKING_URI=http(s)://...``, team
    mode) is the suite's previous run on the server, whichever machine ran it (its folder fetched
    from the server's artifacts when it is not here); without one, or when the server has no earlier
    run of the suite, the previous successful folder under the suite's ``runs_dir``.
    """
    spec = config.regression.baseline
    if spec == "previous":
        from omnieval.compare._mlflow import previous_run_on_server

        remote = previous_run_on_server(config.experiment, config.suite, run_id, config.runs_dir)
        if remote is not None and remote.resolve() != folder.resolve():
            return remote
        runs = suite_runs(config.runs_dir, config.suite, exclude=folder)
        return runs[-1] if runs else None
    return resolve_run(spec, runs_dir=config.runs_dir, suite=config.suite)


def nightly_regression(
    config: SuiteConfig, folder: Path, *, run_id: str, dataset_manifest: Path | None = None
) -> dict[str, Any]:
    """Compare the run being written in ``folder`` with its baseline; write ``regression.json``.

    Also copies the dataset's fingerprint manifest into the folder (so a later comparison can name
    the instances whose content changed) and tags the MLflow parent run ``omnieval.regression=<verdict>``
    and ``omnieval.run_folder=<absolute folder>``.

    Args:
        config: The suite.
        folder: The run folder (holding at least ``lineage.json`` and ``scores.parquet``).
        run_id: The MLflow parent run id.
        dataset_manifest: The validate stage's manifest (``state/<suite>/dataset/manifest.json``).

    Returns:
        The ``regression.json`` document (module docstring).
    """
    from omnieval.progress import note

    if dataset_manifest is not None and dataset_manifest.is_file():
        shutil.copyfile(dataset_manifest, folder / DATASET_MANIFEST)
    document: dict[str, Any]
    baseline: Path | None = None
    try:
        run_b = read_run(folder)
        baseline = find_baseline(config, folder, run_id)
        drift = _drift(folder, config.state)
        checks = _judge_checks(folder, config.state)
        if baseline is None:
            document = first_run_document(run_b)
        else:
            run_a = read_run(baseline)
            document = compare_runs(run_a, run_b, config.regression, drift=drift, judge_checks=checks)
            if config.regression.rejudge:
                # A judge change makes judge-based tests unsafe; judging A's candidates with
                # tonight's panels turns them into a verdict on the systems (a failure is recorded).
                from omnieval.compare._rejudge import rejudge_document

                document = rejudge_document(document, run_a, run_b, config, config.regression, drift=drift)
        document = with_judge_checks(document, checks)
    except OmnievalError as exc:
        reasons = [f"the comparison failed: {str(exc).splitlines()[0]}"]
        document = {
            **uncompared_document(INCONCLUSIVE, reasons, error=str(exc)),
            "run_b": {
                "run_id": run_id,
                "folder": str(folder),
                "suite": config.suite,
                "benchmark": config.benchmark,
            },
        }
    document["suite"] = config.suite
    document["run_id"] = run_id
    document["created"] = datetime.now(UTC).isoformat(timespec="seconds")
    document["baseline"] = (
        None if baseline is None else {"run_id": read_baseline_id(baseline), "folder": str(baseline)}
    )
    # Slow drift over the suite's MLflow history (docs/nightly.md): trend.json, a reason when worse.
    from omnieval.compare._trend import nightly_trend

    nightly_trend(config, folder, run_id=run_id, document=document)
    write_json_atomic(folder / REGRESSION_FILE, document)
    from omnieval.tracking.pending import is_offline

    if not is_offline():  # a kept run gets its tags when `omnieval track` uploads it
        record_verdict(run_id, document, folder, baseline)
    note(
        f"[track] regression verdict {document['verdict']}"
        + (f" vs {baseline.name}" if baseline else " (first run)")
    )
    return document


def record_verdict(run_id: str, document: Mapping[str, Any], folder: Path, baseline: Path | None) -> None:
    """Tag the MLflow parent run with the verdict and its run folder and log the regression metrics;
    a failure is noted, never raised (the verdict is in ``regression.json`` either way)."""
    from omnieval.progress import note

    try:
        from omnieval.compare._mlflow import (
            REGRESSION_TAG,
            RUN_FOLDER_TAG,
            log_regression_metrics,
            set_run_tags,
        )

        tags = {REGRESSION_TAG: document["verdict"], RUN_FOLDER_TAG: str(folder.resolve())}
        if baseline is not None and isinstance(document.get("baseline"), Mapping):
            tags["omnieval.regression.baseline"] = document["baseline"]["run_id"]
        set_run_tags(run_id, tags)
        log_regression_metrics(run_id, document)  # regression.<system>.<component>.mde
    except Exception as exc:  # the verdict is in regression.json either way
        note(f"[track] could not record the regression verdict on MLflow run {run_id}: {exc}")


def read_baseline_id(folder: Path) -> str:
    """The run id recorded in a run folder's lineage (its folder name when unreadable)."""
    try:
        lineage = json.loads((folder / "lineage.json").read_text(encoding="utf-8"))
        return str(lineage.get("run_id") or folder.name)
    except (OSError, ValueError, AttributeError):
        return folder.name


def regression_verdict(folder: Path | str) -> str | None:
    """The verdict in a run folder's ``regression.json``; None when it has none."""
    path = Path(folder) / REGRESSION_FILE
    if not path.is_file():
        return None
    try:
        verdict = json.loads(path.read_text(encoding="utf-8")).get("verdict")
    except (OSError, ValueError, AttributeError):
        return None
    return str(verdict) if verdict else None


def notify_regression(config: SuiteConfig, folder: Path) -> list[Any]:
    """Send the run's verdict through ``regression.notify``; return one outcome per notifier.

    Failures are reported on the console and in the outcomes, never raised.
    """
    from omnieval.compare._notify import send_notifications, verdict_message
    from omnieval.progress import note

    if not config.regression.notify:
        return []
    path = folder / REGRESSION_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        note(f"[track] no verdict to notify ({path}: {exc})")
        return []
    report = folder / "report.html"
    subject, message = verdict_message(
        document, suite=config.suite, report=report if report.is_file() else None
    )
    outcomes = send_notifications(config.regression.notify, subject, message)
    for outcome in outcomes:
        if not outcome.ok:
            note(f"[track] notification via {outcome.kind} {outcome.target} failed: {outcome.error}")
    return outcomes
