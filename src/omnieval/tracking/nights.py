"""A night of several suites in MLflow: one run per night in the experiment ``omnieval/nights``.

The run is named ``night · <date>`` and tagged ``omnieval.night=<date>``, ``omnieval.kind=night``,
the night's verdict (``omnieval.night.verdict``, and ``omnieval.regression`` like a suite's parent
run, so one column shows both), each suite's verdict and parent run (``omnieval.night.<suite>.verdict``,
``omnieval.night.<suite>.run_id``); its description lists the reasons; ``night.json`` and
``night.html`` are its artifacts; the usage totals and each suite's largest ``mde`` are metrics.
Each suite's own parent run gets the tag ``omnieval.night=<date>`` too, so a filter on it in any
suite's experiment shows the runs of that night.

Each machine logs its own run of a night, tagged ``omnieval.night.machine`` (:func:`night_machine`:
the host name and the absolute runs folder, so two clones on one host are two machines): with a
shared tracking server two machines' nights of one date are two runs, and a rerun of the same night
on the same machine updates its own run. :func:`night_runs_on_server` reads every machine's runs
of a date back (``omnieval night`` combines them, docs/nightly.md "One night on several machines").
"""

from __future__ import annotations

import json
import re
import socket
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from omnieval.tracking._store import no_artifact_progress_bar

NIGHTS_EXPERIMENT = "omnieval/nights"
NIGHT_TAG = "omnieval.night"
NIGHT_VERDICT_TAG = "omnieval.night.verdict"
MACHINE_TAG = "omnieval.night.machine"
"""The machine that logged a night run (:func:`night_machine`)."""
NIGHT_ARTIFACT = "night.json"
_NOTE_TAG = "mlflow.note.content"


def _key(text: str) -> str:
    """``text`` with the characters MLflow refuses in a key replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9_\-. /]", "_", text)


def night_machine(runs_dir: Path | str) -> str:
    """The name of this machine's nights: ``<host name>:<absolute runs folder>``.

    >>> night_machine("/srv/a/runs") == f"{socket.gethostname()}:/srv/a/runs"
    True
    """
    return f"{socket.gethostname()}:{Path(runs_dir).resolve()}"


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
    machine: str | None = None,
) -> str:
    """Create (or, for a night this machine already logged, update) the night's run; return its id.

    Args:
        night: The date, ``YYYY-MM-DD``.
        tags: :func:`night_tags`.
        metrics: Metric key -> value (usage totals, each suite's largest mde).
        artifacts: Files logged at the top of the run's artifacts (``night.json``, ``night.html``).
        suite_runs: The suites' parent run ids, tagged ``omnieval.night=<date>``.
        experiment: The experiment of nights.
        machine: :func:`night_machine`, tagged ``omnieval.night.machine``: only this machine's run
            of the night is updated, another machine's (same date, shared server) is left alone.
            A run of the date without the tag (logged before machines were named) is taken as
            this machine's only in a local store, never on a tracking server. None: the first run
            of the date, whoever logged it (the behaviour before machines were named).
    """
    import mlflow
    from mlflow.entities import Metric, RunTag

    from omnieval.tracking._store import configure_mlflow, tracking_uri

    experiment_id = configure_mlflow(experiment)
    client = mlflow.MlflowClient()
    found = list(
        client.search_runs(
            [experiment_id],
            filter_string=f"tags.`{NIGHT_TAG}` = '{night}'",
            order_by=["attributes.start_time ASC"],
            max_results=1000,
        )
    )
    run_tags = dict(tags)
    if machine is not None:
        run_tags[MACHINE_TAG] = machine
        shared = tracking_uri().startswith(("http://", "https://"))
        mine = [r for r in found if r.data.tags.get(MACHINE_TAG) == machine]
        unnamed = [] if shared else [r for r in found if MACHINE_TAG not in r.data.tags]
        found = mine or unnamed
    now = int(datetime.now(UTC).timestamp() * 1000)
    if found:
        run_id = str(found[0].info.run_id)
    else:
        run = client.create_run(experiment_id, start_time=now, run_name=f"night · {night}", tags=run_tags)
        run_id = str(run.info.run_id)
    items = [Metric(_key(k), float(v), now, 0) for k, v in metrics.items()]
    client.log_batch(run_id, metrics=items, tags=[RunTag(k, v) for k, v in run_tags.items()])
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


@dataclass(frozen=True)
class ServerNight:
    """One machine's night run on the tracking server, with its ``night.json``."""

    run_id: str
    machine: str | None
    """Its ``omnieval.night.machine`` tag; None for a run logged before machines were named."""
    written: datetime
    """When the run was last logged (its end time, else its start time), UTC."""
    document: dict[str, Any]
    """Its ``night.json`` artifact, as JSON (not validated here)."""


def latest_night_on_server(experiment: str = NIGHTS_EXPERIMENT) -> str | None:
    """The latest date of a night run in ``experiment`` on the configured store; None when none.

    Raises whatever MLflow raises when the store cannot be read (callers name the server).
    """
    from mlflow.tracking import MlflowClient

    from omnieval.tracking._store import tracking_uri

    client = MlflowClient(tracking_uri())
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return None
    runs = client.search_runs(
        [found.experiment_id],
        filter_string="tags.`omnieval.kind` = 'night'",
        order_by=["attributes.start_time DESC"],
        max_results=1000,
    )
    dates = [
        str(r.data.tags[NIGHT_TAG])
        for r in runs
        if re.match(r"^\d{4}-\d{2}-\d{2}$", r.data.tags.get(NIGHT_TAG, ""))
    ]
    return max(dates) if dates else None


def night_runs_on_server(
    night: str, experiment: str = NIGHTS_EXPERIMENT, *, leave_out: str | None = None
) -> list[ServerNight]:
    """Every finished night run of ``night`` (a date) in ``experiment``, oldest first, each with its
    ``night.json`` artifact downloaded; runs without that artifact, and the runs of the machine
    ``leave_out`` (this one, whose record is here), are left out.

    Raises whatever MLflow raises when the store cannot be read (callers name the server).
    """
    from mlflow.artifacts import download_artifacts
    from mlflow.tracking import MlflowClient

    from omnieval.tracking._store import tracking_uri

    uri = tracking_uri()
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return []
    runs = client.search_runs(
        [found.experiment_id],
        filter_string=f"tags.`{NIGHT_TAG}` = '{night}'",
        order_by=["attributes.start_time ASC"],
        max_results=1000,
    )
    out: list[ServerNight] = []
    with tempfile.TemporaryDirectory(prefix="omnieval-nights-") as scratch:
        for k, run in enumerate(runs):
            if run.info.status != "FINISHED":
                continue
            if leave_out is not None and run.data.tags.get(MACHINE_TAG) == leave_out:
                continue
            names = {Path(a.path).name for a in client.list_artifacts(run.info.run_id)}
            if NIGHT_ARTIFACT not in names:
                continue
            with no_artifact_progress_bar():
                local = download_artifacts(
                    run_id=run.info.run_id,
                    artifact_path=NIGHT_ARTIFACT,
                    dst_path=str(Path(scratch) / str(k)),
                    tracking_uri=uri,
                )
            document = json.loads(Path(local).read_text(encoding="utf-8"))
            if not isinstance(document, dict):
                continue
            stamp = run.info.end_time or run.info.start_time or 0
            out.append(
                ServerNight(
                    run_id=str(run.info.run_id),
                    machine=run.data.tags.get(MACHINE_TAG),
                    written=datetime.fromtimestamp(stamp / 1000, UTC),
                    document=document,
                )
            )
    return out
