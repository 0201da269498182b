"""MLflow logging of suite executions.

One suite execution is a parent run (named ``<suite> · <local date time> · <short sha>``, started when
the flow started and ended once everything is logged), a child run per system (``<system> · <date>``)
and a child run per analysis. Whatever the runs table and the compare view should show sits in three
places: tags (``omnieval.*``), a handful of params with short names (``suite``, ``benchmark``,
``system``, ``panels``, ``dataset_version``, ``git_sha``) and metrics; the parent also carries each
system's headline metrics as ``<system>/<metric key>`` so one row per night is enough to compare.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.lineage import DEVIATIONS_TAG, Deviation, deviations_tag
from omnieval.tracking._store import (
    configure_mlflow,
)
from omnieval.tracking.open_runs import clear_open, end_runs, mark_open, signal_name, stopped_reason

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_HEADLINE_PATTERNS: tuple[str, ...] = ("*.total_average",)
"""Metric keys (``fnmatch`` patterns) copied onto the parent run as ``<system>/<key>`` when a caller
names none; the track stage passes the benchmark's own ``headline_metric_patterns``."""

PARAM_FROM_TAG: dict[str, str] = {
    "benchmark": "omnieval.benchmark",
    "dataset_version": "omnieval.dataset.version",
    "git_sha": "omnieval.git_sha",
}
"""Short param names (runs-table columns) filled from the §5 tags of the same meaning."""

METRIC_NOTE_TAG = "omnieval.metric_note."
"""Prefix of the tags saying how a metric key departs from the paper's figure of that name
(``Benchmark.metric_notes``); the parent run's description lists them too."""

_SEP = " · "


@dataclass(frozen=True)
class SuiteRunIds:
    """Run ids of one suite execution and the parent run's name."""

    parent: str
    systems: dict[str, str]
    analyses: dict[str, str] = field(default_factory=dict)
    name: str = ""


@dataclass(frozen=True)
class CandidateTable:
    """The files of one system's candidate folder as an MLflow dataset source.

    ``frame`` has one row per file: ``path`` (relative, POSIX), ``bytes`` and ``sha256``; ``digest``
    is the SHA-256 over each relative path and file hash in path order (the same tree hash as
    ``omnieval.stages._common.tree_digest``).
    """

    frame: pd.DataFrame
    digest: str


def _local(moment: datetime) -> datetime:
    return moment.astimezone() if moment.tzinfo else moment


def short_sha(git_sha: str, *, dirty: bool = False) -> str:
    """First 7 characters of a commit, ``-dirty`` when the tree had changes; ``unknown`` stays as is.

    >>> short_sha("a1b2c3d4e5f6"), short_sha("a1b2c3d4e5f6", dirty=True), short_sha("unknown")
    ('a1b2c3d', 'a1b2c3d-dirty', 'unknown')
    """
    if not git_sha or git_sha == "unknown":
        return "unknown"
    return git_sha[:7] + ("-dirty" if dirty else "")


def suite_run_name(suite: str, started_at: datetime, git_sha: str, *, dirty: bool = False) -> str:
    """Parent run name: suite, local start date and time (minutes), short commit.

    >>> suite_run_name("nightly", datetime(2026, 11, 30, 2, 0), "a1b2c3d4e5")
    'nightly · 2026-11-30 02:00 · a1b2c3d'
    """
    return _SEP.join((suite, f"{_local(started_at):%Y-%m-%d %H:%M}", short_sha(git_sha, dirty=dirty)))


def system_run_name(system: str, started_at: datetime) -> str:
    """Child run name of one system.

    >>> system_run_name("oracle", datetime(2026, 11, 30, 2, 0))
    'oracle · 2026-11-30 02:00'
    """
    return _SEP.join((system, f"{_local(started_at):%Y-%m-%d %H:%M}"))


def headline_metrics(
    system_metrics: Mapping[str, Mapping[str, float]], patterns: Iterable[str] = DEFAULT_HEADLINE_PATTERNS
) -> dict[str, float]:
    """The parent run's compact metric set: ``<system>/<key>`` for each key matching a pattern.

    >>> headline_metrics({"a": {"storybench.valid_only.total_average": 5.0, "storybench.x": 1.0}})
    {'a/storybench.valid_only.total_average': 5.0}
    """
    wanted = tuple(patterns)
    return {
        f"{system}/{key}": float(value)
        for system, metrics in system_metrics.items()
        for key, value in sorted(metrics.items())
        if any(fnmatch.fnmatchcase(key, p) for p in wanted)
    }


def headline_component_patterns(benchmark: str, components: Iterable[str]) -> tuple[str, ...]:
    """Metric-key patterns of a benchmark's headline components (``Benchmark.headline_components``),
    so the parent run repeats each component beside the headline (runs-table columns).

    A component names a key with or without its policy in front: ``<benchmark>.<component>``
    (acbench's ``original.wer``, prism's ``on_screen.final``) or ``<benchmark>.<policy>.<component>``
    (storybench's ``judge.text`` under ``valid_only`` and ``zero_filled``).

    >>> headline_component_patterns("storybench", ["judge.text"])
    ('storybench.judge.text', 'storybench.*.judge.text')
    """
    return tuple(p for c in components for p in (f"{benchmark}.{c}", f"{benchmark}.*.{c}"))


USAGE_METRIC_FIELDS: tuple[str, ...] = (
    "calls",
    "cached_calls",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
    "cost",
)
"""The figures of a ``usage.json`` entry logged as ``usage.<judge|system>.<name>.<field>``."""

_METRIC_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /]")


def usage_metrics(usage: Mapping[str, Any]) -> dict[str, float]:
    """The parent run's usage metrics from a run's ``usage.json``.

    ``usage.judge.<judge>.<field>`` for each entry of ``judges`` and ``usage.system.<system>.<field>``
    for each of ``systems`` (:data:`USAGE_METRIC_FIELDS`; ``cost`` only where the suite priced the
    model). A token count the backend did not report (null) is left out, never logged as 0.

    Example:
        >>> usage_metrics({"judges": {"j": {"calls": 2, "prompt_tokens": None, "seconds": 1.5}}})
        {'usage.judge.j.calls': 2.0, 'usage.judge.j.seconds': 1.5}
    """
    out: dict[str, float] = {}
    for kind, group in (("judge", "judges"), ("system", "systems")):
        for name, entry in (usage.get(group) or {}).items():
            safe = _METRIC_UNSAFE.sub("_", str(name))
            out.update(_entry_metrics(f"usage.{kind}.{safe}", entry))
    out.update(stage_usage_metrics(usage))
    return out


USAGE_STAGE_FIELDS: tuple[str, ...] = (
    "examples_generated",
    "examples_reused",
    "examples_withheld",
)
"""Generation's example counts, logged beside :data:`USAGE_METRIC_FIELDS` for each generation entry."""


def _entry_metrics(
    prefix: str, entry: Mapping[str, Any], fields: Sequence[str] = USAGE_METRIC_FIELDS
) -> dict[str, float]:
    """``<prefix>.<field>`` for the numeric fields of one usage entry (a cost per currency as
    ``<prefix>.cost.<currency>``); null token counts are left out."""
    out: dict[str, float] = {}
    for key in fields:
        value = entry.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[f"{prefix}.{key}"] = float(value)
        elif key == "cost" and isinstance(value, Mapping):
            for currency, amount in value.items():
                out[f"{prefix}.cost.{_METRIC_UNSAFE.sub('_', str(currency))}"] = float(amount)
    return out


def stage_usage_metrics(usage: Mapping[str, Any]) -> dict[str, float]:
    """The cost-by-stage metrics of a run's ``usage.json`` (its ``by_system``, ``generation`` and
    ``judging`` blocks; none for a file without them).

    ``usage.system.<system>.generation.<field>`` and ``usage.system.<system>.judging.<field>`` per
    system, ``usage.generation.<field>`` and ``usage.judging.<field>`` for the run: the fields of
    :data:`USAGE_METRIC_FIELDS`, generation's example counts (:data:`USAGE_STAGE_FIELDS`) and its
    seconds per step as ``generation.seconds.<step>``. A cost summed over models is logged per
    currency (``cost.<currency>``). A system that generates nothing (a reference) gets no generation
    metrics, and a run without judge calls no judging ones.

    Example:
        >>> stage_usage_metrics({"by_system": {"s": {"generation": {"calls": 2, "seconds": 3.0,
        ...     "seconds_by_step": {"plan": 3.0}, "examples_generated": 2}, "judging": {"calls": 4}}}})
        {'usage.system.s.generation.calls': 2.0, 'usage.system.s.generation.seconds': 3.0, 'usage.system.s.generation.examples_generated': 2.0, 'usage.system.s.generation.seconds.plan': 3.0, 'usage.system.s.judging.calls': 4.0}
    """
    out: dict[str, float] = {}

    def stages(prefix: str, generation: Any, judging: Any) -> None:
        # A reference system generates nothing: no row of zeros for it.
        if isinstance(generation, Mapping) and generation.get("generates") is not False:
            out.update(
                _entry_metrics(f"{prefix}generation", generation, USAGE_METRIC_FIELDS + USAGE_STAGE_FIELDS)
            )
            for step, seconds in (generation.get("seconds_by_step") or {}).items():
                out[f"{prefix}generation.seconds.{_METRIC_UNSAFE.sub('_', str(step))}"] = float(seconds)
        if isinstance(judging, Mapping) and (judging.get("calls") or judging.get("cached_calls")):
            out.update(_entry_metrics(f"{prefix}judging", judging))

    for name, entry in (usage.get("by_system") or {}).items():
        if isinstance(entry, Mapping):
            safe = _METRIC_UNSAFE.sub("_", str(name))
            stages(f"usage.system.{safe}.", entry.get("generation"), entry.get("judging"))
    stages("usage.", usage.get("generation"), usage.get("judging"))
    return out


def candidate_table(folder: Path) -> CandidateTable:
    """Table of ``folder``'s files with their size (bytes) and SHA-256, and the folder's tree hash."""
    import pandas as pd

    tree = hashlib.sha256()
    rows: list[dict[str, Any]] = []
    files = sorted(
        (p for p in folder.rglob("*") if p.is_file()), key=lambda p: p.relative_to(folder).as_posix()
    )
    for path in files:
        rel = path.relative_to(folder).as_posix()
        file_hash = hashlib.sha256(path.read_bytes())
        tree.update(rel.encode())
        tree.update(file_hash.digest())
        rows.append({"path": rel, "bytes": path.stat().st_size, "sha256": file_hash.hexdigest()})
    frame = pd.DataFrame(rows, columns=["path", "bytes", "sha256"])
    return CandidateTable(frame, tree.hexdigest())


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for key, sub in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), sub, out)
    elif isinstance(value, list | tuple):
        out[prefix] = json.dumps(value, default=str)[:500]
    else:
        out[prefix] = str(value)[:500]


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _pandas_dataset(frame: Any, *, source: str, name: str, digest: str) -> Any:
    import mlflow

    with warnings.catch_warnings():
        # A local folder matches two equivalent MLflow source types; either is right.
        warnings.simplefilter("ignore", UserWarning)
        return mlflow.data.from_pandas(  # type: ignore[attr-defined]
            frame, source=source, name=name, digest=digest[:36]
        )


def _dataset_input(dataset: Any, context: str) -> Any:
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    with warnings.catch_warnings():
        # Schema inference hints that integer columns cannot hold NaN; ours never miss values.
        warnings.simplefilter("ignore", UserWarning)
        entity = dataset._to_mlflow_entity()
    return DatasetInput(entity, tags=[InputTag(MLFLOW_DATASET_CONTEXT, context)])


def _note(
    suite: str,
    name: str,
    systems: Sequence[str],
    panels: Sequence[str],
    tags: Mapping[str, str],
    deviations: Sequence[Deviation] | None = None,
) -> str:
    lines = [
        f"**{name}**: suite `{suite}`, benchmark `{tags.get('omnieval.benchmark', '?')}`.",
        "",
        f"- systems: {', '.join(systems) or 'none'}",
        f"- judge panels: {', '.join(panels) or 'none'}",
        f"- dataset version: `{tags.get('omnieval.dataset.version', '?')}`",
        f"- git: `{tags.get('omnieval.git_sha', '?')}`",
        *(
            f"- metric `{key[len(METRIC_NOTE_TAG) :]}`: {value}"
            for key, value in tags.items()
            if key.startswith(METRIC_NOTE_TAG)
        ),
        *_deviation_lines(deviations),
        "",
        "Artifacts: `report.html` (the report), `instances.html` (every instance), `leaderboard.json`, `scores.parquet`, `regression.json` "
        "and the report's figures; `run/` holds the"
        " whole run folder (config, lineage, gates, candidates).",
    ]
    return "\n".join(lines)


def _deviation_lines(deviations: Sequence[Deviation] | None) -> list[str]:
    """The description's lines for the deviation ledger (none when the caller has no ledger).

    Example:
        >>> _deviation_lines([Deviation("dataset-limit", "Only 2 instances.", "Means over 2.")])
        ['- deviation `dataset-limit`: Only 2 instances. Effect: Means over 2.']
        >>> _deviation_lines([])
        ["- deviations from the paper's protocol: none"]
    """
    if deviations is None:
        return []
    if not deviations:
        return ["- deviations from the paper's protocol: none"]
    return [f"- deviation `{d.id}`: {d.what} Effect: {d.effect}" for d in deviations]


def log_suite_run(
    *,
    experiment: str,
    suite: str,
    config: Mapping[str, Any],
    tags: Mapping[str, str],
    dataset_frame: Any,
    dataset_name: str,
    dataset_source: str,
    dataset_digest: str,
    system_metrics: Mapping[str, Mapping[str, float]],
    system_params: Mapping[str, Mapping[str, Any]],
    artifacts: list[Path],
    run_folder_for: Callable[[str, dict[str, str]], Path],
    analyses_dir: Path | None = None,
    started_at: datetime | None = None,
    ended_at: datetime | None = None,
    run_name: str | None = None,
    panels: Sequence[str] = (),
    git_dirty: bool = False,
    headline_patterns: Iterable[str] = DEFAULT_HEADLINE_PATTERNS,
    component_patterns: Iterable[str] = (),
    usage: Mapping[str, Any] | None = None,
    open_marker: Path | None = None,
    deviations: Sequence[Deviation] | None = None,
) -> SuiteRunIds:
    """Log one suite execution: parent run, a child run per system, analysis child runs.

    Args:
        tags: §5 tags of every run (``omnieval.benchmark``, ``omnieval.dataset.version``,
            ``omnieval.git_sha``, judge and prompt hashes, ...).
        run_folder_for: ``(parent run id, analysis run ids) -> Path`` builds the run folder once the
            run ids are known; its files are logged as the parent's artifacts (under ``run/``, with
            ``report.html``, ``leaderboard.json`` and ``scores.parquet`` also at the top), and each
            ``candidates/<system>`` folder in it becomes the dataset input ``candidates/<system>``
            of that system's child run.
        started_at: when the suite execution started (timezone-aware; default: now). Child runs
            share the parent's span.
        ended_at: its end (default: now, after everything is logged).
        run_name: parent run name; default :func:`suite_run_name` of the suite, start and git sha.
        panels: judge panels the suite ran (tag ``omnieval.panel``, param ``panels``).
        git_dirty: the working tree had changes (marks the short sha in the run name).
        headline_patterns: which child metric keys the parent repeats as ``<system>/<key>`` and
            lists in the tag ``omnieval.headline_metrics``.
        component_patterns: more child metric keys the parent repeats the same way (the headline's
            components, :func:`headline_component_patterns`), not listed in that tag.
        usage: the run's ``usage.json`` (tokens, seconds, cost per judge and system), logged on the
            parent as :func:`usage_metrics`; None logs none.
        open_marker: while the runs are open, a file naming them (``omnieval.tracking.open_runs``),
            so a process that is killed leaves its runs to be ended ``KILLED``; None writes none.
        deviations: the run's deviation ledger (``lineage.json`` ``deviations``): the parent run
            carries its ids as the tag ``omnieval.deviations`` (``none`` when empty) and its
            description lists them; None (a caller without a ledger) sets neither.

    An interrupt (Ctrl-C, SIGTERM) while logging ends the runs ``KILLED`` with the tag
    ``omnieval.killed_reason``; an error ends them ``FAILED``.
    """
    import mlflow
    from mlflow.entities import Metric, Param

    experiment_id = configure_mlflow(experiment)
    client = mlflow.MlflowClient()
    start = started_at or datetime.now(UTC)
    git_sha = tags.get("omnieval.git_sha", "unknown")
    name = run_name or suite_run_name(suite, start, git_sha, dirty=git_dirty)
    panel_text = ",".join(panels) if panels else "none"
    systems = list(system_metrics)
    common_tags = {
        "omnieval.suite": suite,
        "omnieval.panel": panel_text,
        **{k: str(v) for k, v in tags.items()},
    }
    short_params = {
        "suite": suite,
        "panels": panel_text,
        **{param: str(tags[tag])[:500] for param, tag in PARAM_FROM_TAG.items() if tag in tags},
    }
    dataset = _pandas_dataset(dataset_frame, source=dataset_source, name=dataset_name, digest=dataset_digest)
    evaluation_input = _dataset_input(dataset, "evaluation")

    parent = client.create_run(
        experiment_id,
        start_time=_ms(start),
        run_name=name,
        tags={
            "omnieval.kind": "suite",
            **common_tags,
            **({} if deviations is None else {DEVIATIONS_TAG: deviations_tag(deviations)}),
            "mlflow.note.content": _note(suite, name, systems, panels, tags, deviations),
        },
    )
    parent_id = parent.info.run_id
    run_ids = [parent_id]
    try:
        if open_marker is not None:
            mark_open(open_marker, run_ids)
        params: dict[str, str] = {}
        _flatten("", config, params)
        params = dict(list(params.items())[:400])
        # The short names win over flattened config keys of the same name (same meaning anyway).
        params.update(short_params)
        params["systems"] = ",".join(systems)[:500]
        client.log_batch(parent_id, params=[Param(k, v) for k, v in params.items()])
        client.log_inputs(parent_id, datasets=[evaluation_input])

        system_runs: dict[str, str] = {}
        for system in system_metrics:
            child = client.create_run(
                experiment_id,
                start_time=_ms(start),
                run_name=system_run_name(system, start),
                tags={
                    "mlflow.parentRunId": parent_id,
                    "omnieval.kind": "system",
                    "omnieval.system": system,
                    **common_tags,
                },
            )
            child_id = child.info.run_id
            run_ids.append(child_id)
            if open_marker is not None:
                mark_open(open_marker, run_ids)
            flat: dict[str, str] = {}
            _flatten("system", system_params.get(system, {}), flat)
            flat.update(short_params)
            flat["system"] = system
            client.log_batch(child_id, params=[Param(k, v) for k, v in flat.items()])
            client.log_inputs(child_id, datasets=[evaluation_input])
            system_runs[system] = child_id

        analysis_runs: dict[str, str] = {}
        if analyses_dir is not None and analyses_dir.is_dir() and any(analyses_dir.glob("*.json")):
            from omnieval.tracking.analysis_runs import log_analysis_runs

            analysis_runs = dict(
                log_analysis_runs(
                    analyses_dir,
                    parent_run_id=parent_id,
                    experiment=experiment,
                    tags={"omnieval.suite": suite, **{k: str(v) for k, v in tags.items()}},
                )
            )
        folder = run_folder_for(parent_id, analysis_runs)

        end = ended_at or datetime.now(UTC)
        stamp = _ms(end)
        for system, child_id in system_runs.items():
            candidates = folder / "candidates" / system
            files = "no candidate folder"
            if candidates.is_dir():
                table = candidate_table(candidates)
                files = f"{len(table.frame)} files, tree hash `{table.digest[:12]}`"
                inputs = _pandas_dataset(
                    table.frame,
                    source=str(candidates.resolve()),
                    name=f"candidates/{system}",
                    digest=table.digest,
                )
                client.log_inputs(child_id, datasets=[_dataset_input(inputs, "candidates")])
            client.set_tag(
                child_id,
                "mlflow.note.content",
                f"**{system}** in **{name}**.\n\nInputs: dataset `{dataset_name}` and"
                f" `candidates/{system}` ({files}). Metrics use the FORMATS.md §5 keys.",
            )
            client.log_batch(
                child_id, metrics=[Metric(k, float(v), stamp, 0) for k, v in system_metrics[system].items()]
            )
        headline = headline_metrics(system_metrics, headline_patterns)
        repeated = {**headline_metrics(system_metrics, component_patterns), **headline}
        items = [Metric(k, v, stamp, 0) for k, v in repeated.items()]
        for first in range(0, len(items), 1000):  # MLflow's log_batch limit per call
            client.log_batch(parent_id, metrics=items[first : first + 1000])
        client.set_tag(parent_id, "omnieval.headline_metrics", ",".join(headline)[:5000])
        spent = usage_metrics(usage or {})
        if spent:
            client.log_batch(parent_id, metrics=[Metric(k, v, stamp, 0) for k, v in spent.items()])

        for path in artifacts:
            if path.is_file():
                client.log_artifact(parent_id, str(path))
        for top in (
            "report.html",
            "instances.html",
            "leaderboard.json",
            "scores.parquet",
            "regression.json",
            "usage.json",
        ):
            if (folder / top).is_file():
                client.log_artifact(parent_id, str(folder / top))
        # The instance viewer's detail chunks, when too large to embed, sit beside it.
        if (folder / "instances_data").is_dir():
            client.log_artifacts(parent_id, str(folder / "instances_data"), artifact_path="instances_data")
        # Figures the report draws beside itself (e.g. the prism radar) are worth a glance in the UI.
        for figure in sorted(folder.glob("report_*.png")):
            client.log_artifact(parent_id, str(figure))
        client.log_artifacts(parent_id, str(folder), artifact_path="run")
    except Exception as exc:
        from omnieval.tracking.pending import unreachable

        # With the server gone, ending the runs would wait out the same retries; the open marker
        # stays, so the next run (or serve's shutdown) ends them once the server answers.
        if not unreachable(exc):
            for run_id in reversed(run_ids):
                client.set_terminated(run_id, status="FAILED")
            clear_open(open_marker)
        raise
    except BaseException as stop:  # Ctrl-C, SIGTERM (omnieval.cli.Terminated, Prefect's TerminationSignal)
        try:
            end_runs([parent_id], stopped_reason(signal_name(stop), "track"))
        except Exception:  # the marker stays: serve's shutdown or the next run ends them
            pass
        else:
            clear_open(open_marker)
        raise
    # Without an explicit end, the run ends once its artifacts are uploaded.
    finish = _ms(ended_at) if ended_at is not None else _ms(datetime.now(UTC))
    for run_id in reversed(run_ids):
        client.set_terminated(run_id, status="FINISHED", end_time=finish)
    clear_open(open_marker)
    return SuiteRunIds(parent_id, system_runs, analysis_runs, name)


def log_failed_run(
    *,
    experiment: str,
    suite: str,
    reason: str,
    artifacts: list[Path],
    tags: Mapping[str, str],
    started_at: datetime | None = None,
) -> str:
    """Record a suite execution that stopped at a gate: status FAILED, the gate result attached."""
    import mlflow

    experiment_id = configure_mlflow(experiment)
    client = mlflow.MlflowClient()
    start = started_at or datetime.now(UTC)
    run = client.create_run(
        experiment_id,
        start_time=_ms(start),
        run_name=_SEP.join((suite, f"{_local(start):%Y-%m-%d %H:%M}", "failed")),
        tags={"omnieval.kind": "suite", "omnieval.suite": suite, "omnieval.failed": reason[:250], **tags},
    )
    run_id = run.info.run_id
    for path in artifacts:
        if path.is_file():
            client.log_artifact(run_id, str(path), artifact_path="gates")
    client.set_terminated(run_id, status="FAILED")
    return str(run_id)
