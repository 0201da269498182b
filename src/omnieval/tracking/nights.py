"""A night of several suites in MLflow: one run per night in the experiment ``omnieval/nights``.

The run is named ``night · <date>`` and tagged ``omnieval.night=<date>``, ``omnieval.kind=night``,
the night's verdict (``omnieval.night.verdict``, and ``omnieval.regression`` like a suite's parent
run, so one column shows both), each suite's verdict and parent run (``omnieval.night.<suite>.verdict``,
``omnieval.night.<suite>.run_id``); its description lists the reasons; ``night.json`` and
``night.html`` are its artifacts; the usage totals and each suite's largest ``mde`` are metrics.
Each suite's own parent run gets the tag ``omnieval.night=<date>`` too, so a filter on it in any
suite's experiment shows the runs of that night. A rerun of the same night updates its run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

NIGHTS_EXPERIMENT = "omnieval/nights"
NIGHT_TAG = "omnieval.night"
NIGHT_VERDICT_TAG = "omnieval.night.verdict"
_NOTE_TAG = "mlflow.note.content"


def _key(text: str) -> str:
    """``text`` with the characters MLflow refuses in a key replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9_\-. /]", "_", text)


def night_tags(
    night: str, verdict: str, suites: Mapping[str, tuple[str, str | None]], reasons: Sequence[str]
) -> dict[str, str]:
    """The night run's tags; ``suites`` maps each suite to ``(verdict, parent run id or None)``.

    >>> tags = night_tags("2026-12-03", "NO-GO", {"a": ("NO-GO", "r1"), "b": ("GO", None)}, ["a: worse"])
    >>> tags["omnieval.night"], tags["omnieval.night.a.verdict"], tags["omnieval.night.a.run_id"]
    ('2026-12-03', 'NO-GO', 'r1')
    >>> "omnieval.night.b.run_id" in tags, tags["omnieval.regression"]
    (False, 'NO-GO')
    """
    tags = {
        "omnieval.kind": "night",
        NIGHT_TAG: night,
        NIGHT_VERDICT_TAG: verdict,
        "omnieval.regression": verdict,
        "omnieval.night.suites": ",".join(suites),
        _NOTE_TAG: "\n".join(f"- {r}" for r in reasons)[:5000] or verdict,
    }
    for suite, (suite_verdict, run_id) in suites.items():
        tags[_key(f"omnieval.night.{suite}.verdict")] = suite_verdict
        if run_id:
            tags[_key(f"omnieval.night.{suite}.run_id")] = run_id
    return tags


def log_night(
    *,
    night: str,
    tags: Mapping[str, str],
    metrics: Mapping[str, float],
    artifacts: Sequence[Path],
    suite_runs: Sequence[str] = (),
    experiment: str = NIGHTS_EXPERIMENT,
) -> str:
    """Create (or, for a night already logged, update) the night's run; return its id.

    Args:
        night: The date, ``YYYY-MM-DD``.
        tags: :func:`night_tags`.
        metrics: Metric key -> value (usage totals, each suite's largest mde).
        artifacts: Files logged at the top of the run's artifacts (``night.json``, ``night.html``).
        suite_runs: The suites' parent run ids, tagged ``omnieval.night=<date>``.
        experiment: The experiment of nights.
    """
    import mlflow
    from mlflow.entities import Metric, RunTag

    from omnieval.tracking._store import configure_mlflow

    experiment_id = configure_mlflow(experiment)
    client = mlflow.MlflowClient()
    found = client.search_runs(
        [experiment_id], filter_string=f"tags.`{NIGHT_TAG}` = '{night}'", max_results=1
    )
    now = int(datetime.now(UTC).timestamp() * 1000)
    if found:
        run_id = str(found[0].info.run_id)
    else:
        run = client.create_run(experiment_id, start_time=now, run_name=f"night · {night}", tags=dict(tags))
        run_id = str(run.info.run_id)
    items = [Metric(_key(k), float(v), now, 0) for k, v in metrics.items()]
    client.log_batch(run_id, metrics=items, tags=[RunTag(k, v) for k, v in tags.items()])
    for path in artifacts:
        if path.is_file():
            client.log_artifact(run_id, str(path))
    client.set_terminated(run_id, status="FINISHED", end_time=int(datetime.now(UTC).timestamp() * 1000))
    for suite_run in suite_runs:
        try:
            client.set_tag(suite_run, NIGHT_TAG, night)
        except Exception:  # a suite run in another store (or deleted) keeps its own record
            continue
    return run_id
