"""Stage ``track``: the run folder (FORMATS.md section 4) and the MLflow runs of one suite execution.

python -m omnieval.stages.track --suite pipelines/nightly.yaml
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

from omnieval.config import SuiteConfig
from omnieval.lineage import Deviation
from omnieval.progress import note
from omnieval.stages._common import StatePaths, code_digest, read_json, state_paths, write_json
from omnieval.stages._deviations import run_deviations
from omnieval.stages._handoff import (
    MLFLOW_METRICS_KEY,
    STARTED_FILE,
    leaderboard_document,
    recorded_start,
)
from omnieval.stages._main import handoff_stage_main
from omnieval.systems import SystemConfig, SystemSpec
from omnieval.tracking.open_runs import KILLED_REASON_TAG, OPEN_RUNS_FILE


@dataclass(frozen=True)
class TrackOutcome:
    run_id: str
    run_folder: Path
    system_runs: dict[str, str]


def _copy_tree(src: Path, dst: Path) -> None:
    """Hard-link files where possible (candidates can be large), copy otherwise.

    A symlink that leads out of ``src`` is never followed: the run folder is logged to MLflow, and
    whatever it points at (a key file, a config) must not travel with it.
    """
    from omnieval.security import inside

    for path in src.rglob("*"):
        if path.is_file():
            if not inside(src, path):
                note(f"[track] not copied: {path.relative_to(src).as_posix()} links outside {src}")
                continue
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, target)
            except OSError:
                shutil.copy2(path, target)


def system_params(spec: SystemSpec) -> dict[str, Any]:
    """MLflow params of one system: a reference's kind, seed and path; a generating kind's typed
    config, nested values as compact JSON (MLflow params are flat strings)."""
    if isinstance(spec, SystemConfig):
        return {"kind": spec.kind, "seed": spec.seed, "path": spec.path}
    out: dict[str, Any] = {}
    for key, value in spec.model_dump(mode="json", exclude_none=True).items():
        out[key] = value if isinstance(value, str | int | float | bool) else json.dumps(value, sort_keys=True)
    return out


def _lineage_parts(
    config: SuiteConfig, paths: StatePaths
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    metrics: dict[str, Any] = {}
    systems: dict[str, Any] = {}
    for sid in config.systems:
        if paths.metrics_lineage(sid).is_file():
            metrics[sid] = read_json(paths.metrics_lineage(sid))["lineage"]
        summary = paths.root / "candidates" / f"{sid}.summary.json"
        systems[sid] = read_json(summary) if summary.is_file() else {"kind": config.systems[sid].kind}
    judges: dict[str, Any] = {}
    judge_lineage = paths.judge_dir / "lineage.json"
    if judge_lineage.is_file():
        judges = read_json(judge_lineage)
    return metrics, judges, systems


def _run_usage(config: SuiteConfig, paths: StatePaths, systems: dict[str, Any]) -> dict[str, Any]:
    """The run's ``usage.json``: the judge stage's per-judge usage and each generating system's
    (from its generation summary), priced with the suite's ``costs:``, and the same split by stage
    per system (``by_system``: ``generation`` and ``judging``) with the run's totals of each."""
    from omnieval.stages._usage import (
        THIS_RUN_SUFFIX,
        USAGE_FILE,
        generation_usage,
        read_usage,
        run_usage,
        system_usage,
    )

    judges = read_usage(paths.judge_dir / USAGE_FILE) if config.panels else None
    reused: dict[str, bool] = {}
    for sid in systems:
        marker = paths.root / "candidates" / f"{sid}{THIS_RUN_SUFFIX}"
        reused[sid] = bool(read_json(marker).get("output_reused")) if marker.is_file() else False
    return run_usage(
        judges, system_usage(systems, config.costs), generation_usage(systems, config.costs, reused)
    )


def _with_usage(document: dict[str, Any], usage: dict[str, Any]) -> dict[str, Any]:
    """``leaderboard.json`` with its optional ``usage`` block, when the run has anything to show:
    a judge, a system that calls a language model, or a system that generates."""
    generates = any(e["generation"]["generates"] for e in (usage.get("by_system") or {}).values())
    if not usage["judges"] and not usage["systems"] and not generates:
        return document
    return {**document, "usage": usage}


def _resolved_config(config: SuiteConfig, metrics: dict[str, Any], judges: dict[str, Any]) -> dict[str, Any]:
    resolved = config.model_dump(mode="json")
    resolved["resolved"] = {
        "metrics_models": next(iter(metrics.values()), {}),
        "judge_panels": judges.get("panels", {}),
        "code_digest": code_digest(),
    }
    return resolved


def run(
    config: SuiteConfig, dataset_digest: str, started_at: datetime | None = None, *, notify: bool = True
) -> TrackOutcome:
    """Write the run folder, log the MLflow runs, compare with the previous run and send its verdict.

    ``notify``: send the verdict through ``regression.notify``; off inside a night of several
    suites, which sends one notification for all of them (docs/nightly.md, "The night record").
    """
    import yaml

    from omnieval.benchmarks import ReportJob
    from omnieval.lineage import build_lineage
    from omnieval.tracking import METRIC_NOTE_TAG, headline_component_patterns, log_suite_run

    bench = config.bench
    paths = state_paths(config)
    report = paths.report_dir
    board = read_json(report / "leaderboard.json")
    _sweep_interrupted(config.runs_dir / config.suite, paths.root / OPEN_RUNS_FILE)
    system_metrics: dict[str, dict[str, float]] = board.get(MLFLOW_METRICS_KEY, {})
    metrics_lineage, judge_lineage, systems = _lineage_parts(config, paths)
    deviations = run_deviations(config, metrics_lineage)
    usage = _run_usage(config, paths, systems)
    lineage = build_lineage(
        suite=config.suite,
        dataset_name=config.dataset_name,
        dataset_path=config.dataset_path,
        dataset_digest=dataset_digest,
        code_digest=code_digest(),
        metrics=metrics_lineage,
        judges=judge_lineage.get("panels", {}),
        systems=systems,
        seeds={
            "analyses": config.analyses.seed,
            **{s: seed for s, c in config.systems.items() if (seed := getattr(c, "seed", None)) is not None},
        },
        deviations=deviations,
    )
    if isinstance(board.get("calibration"), dict):
        # Which pairings a ground-truth-calibrated benchmark (prism) took its global mean from.
        lineage["calibration"] = board["calibration"]
    tags = {
        "omnieval.benchmark": bench.name,
        "omnieval.dataset.version": dataset_digest,
        "omnieval.dataset.dvc_md5": lineage["dataset"]["dvc_md5"],
        "omnieval.git_sha": lineage["code"]["git_sha"],
        **{k: str(v) for k, v in judge_lineage.get("mlflow_tags", {}).items()},
        **{f"{METRIC_NOTE_TAG}{key}": note for key, note in bench.metric_notes.items()},
    }
    resolved = _resolved_config(config, metrics_lineage, judge_lineage)
    dataset_frame = bench.dataset_frame(config.dataset_path)
    folder_holder: dict[str, Path] = {}

    def build_run_folder(run_id: str, analysis_runs: dict[str, str]) -> Path:
        folder = config.runs_dir / config.suite / run_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.resolved.yaml").write_text(
            yaml.safe_dump(resolved, sort_keys=False), encoding="utf-8"
        )
        write_json(folder / "lineage.json", {"run_id": run_id, **lineage})
        if paths.gates.is_dir():
            _copy_tree(paths.gates, folder / "gates")
        for sid in config.systems:
            for condition in config.run_conditions:
                source = paths.candidates(sid, condition)
                target = folder / "candidates" / sid / condition if condition else folder / "candidates" / sid
                pointer = source / "IMPORTED.json"
                if pointer.is_file():
                    target.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(pointer, target / "IMPORTED.json")
                else:
                    _copy_tree(source, target)
        shutil.copyfile(report / "scores.parquet", folder / "scores.parquet")
        write_json(folder / "leaderboard.json", _with_usage(leaderboard_document(board), usage))
        write_json(folder / "usage.json", usage)
        judgments = paths.judge_dir / "judgments.parquet"
        if judgments.is_file():
            shutil.copyfile(judgments, folder / "judgments.parquet")
        # The judges' health and tonight's drift check travel with the run, so comparing two run
        # folders later sees them (a drift file of a suite that no longer checks drift is stale).
        for name, wanted in (("health.json", bool(config.panels)), ("drift.json", config.drift.enabled)):
            if wanted and (paths.judge_dir / name).is_file():
                shutil.copyfile(paths.judge_dir / name, folder / name)
        # The page links its analyses' JSON relatively, so they travel with it.
        for analysis_json in sorted((report / "analyses").glob("*.json")):
            (folder / "analyses").mkdir(exist_ok=True)
            shutil.copyfile(analysis_json, folder / "analyses" / analysis_json.name)
        # -- regression verdict against the previous run (omnieval.compare, docs/nightly.md) --
        from omnieval.compare import nightly_regression

        nightly_regression(config, folder, run_id=run_id, dataset_manifest=paths.dataset_manifest)
        # -- end regression verdict --
        regression, health = folder / "regression.json", paths.judge_dir / "health.json"
        # Re-render the report now that the analysis runs exist, so it links each one.
        document = _with_usage(leaderboard_document(board), usage)
        bench.write_report(
            ReportJob(
                folder / "report.html",
                config,
                document,
                report / "analyses",
                analysis_runs,
                run_id,
                regression=read_json(regression) if regression.is_file() else None,
                judge_health=read_json(health) if config.panels and health.is_file() else None,
                judgments_path=folder / "judgments.parquet" if config.panels else None,
                deviations=deviations,
            )
        )
        # -- instance viewer: instances.html beside report.html (docs/viewer.md) --
        from omnieval.stages._instances import write_run_instances

        write_run_instances(
            bench, folder, dataset_path=config.dataset_path, suite=config.suite, run_id=run_id
        )
        # -- end instance viewer --
        folder_holder["folder"] = folder
        return folder

    # What the MLflow runs hold, in plain data: kept in the run folder when the server is unreachable.
    plain: dict[str, Any] = {
        "config": resolved,
        "tags": tags,
        "dataset_name": config.dataset_name,
        "dataset_source": str(config.dataset_path.resolve()),
        "dataset_digest": dataset_digest,
        "system_metrics": {sid: system_metrics.get(sid, {}) for sid in config.systems},
        "system_params": {sid: system_params(c) for sid, c in config.systems.items()},
        "panels": list(config.panels),
        "headline_patterns": list(bench.headline_metric_patterns),
        "component_patterns": list(headline_component_patterns(bench.name, bench.headline_components)),
        "git_dirty": bool(lineage["code"]["git_dirty"]),
        "usage": usage,
    }
    start = started_at or recorded_start(paths) or datetime.now(UTC)
    try:
        ids = log_suite_run(
            experiment=config.experiment,
            suite=config.suite,
            dataset_frame=dataset_frame,
            artifacts=[],
            run_folder_for=build_run_folder,
            analyses_dir=report / "analyses",
            started_at=start,
            open_marker=paths.root / OPEN_RUNS_FILE,
            deviations=deviations,
            **plain,
        )
    except Exception as exc:
        from omnieval.tracking.pending import unreachable

        if not unreachable(exc):
            raise
        _keep_for_upload(
            config,
            exc,
            folder_holder.get("folder"),
            build_run_folder,
            plain,
            dataset_frame,
            start,
            deviations,
        )
    folder = folder_holder["folder"]
    _log_candidates(ids.parent, folder)
    from omnieval.tracking.gates_log import log_gate_results

    log_gate_results(ids.parent, folder / "gates")
    # The judges' known-set check (health.json's meta_eval) beside their checkpoint tags.
    if config.judges.meta_eval.enabled and (folder / "health.json").is_file():
        from omnieval.judges import meta_eval_metrics
        from omnieval.tracking.judge_checks import log_judge_checks

        log_judge_checks(ids.parent, *meta_eval_metrics(read_json(folder / "health.json")))
    write_json(
        folder / "mlflow.json", {"parent": ids.parent, "systems": ids.systems, "analyses": ids.analyses}
    )
    write_json(paths.tracking, {"run_id": ids.parent, "run_folder": str(folder), "systems": ids.systems})
    if (folder / "judgments.parquet").is_file():
        _log_verdict_traces(
            config.experiment, bench, config.suite, folder / "judgments.parquet", ids.parent, ids.systems
        )
    # -- regression notifications (omnieval.compare, docs/nightly.md) --
    if notify:
        from omnieval.compare import notify_regression

        notify_regression(config, folder)
    # -- end regression notifications --
    if config.tracking.wandb:
        import pandas as pd

        from omnieval.tracking.wandb_log import log_to_wandb

        log_to_wandb(
            suite=config.suite,
            run_name=ids.name,
            config=resolved,
            metrics={sid: system_metrics.get(sid, {}) for sid in config.systems},
            folder=folder,
            scores=pd.read_parquet(folder / "scores.parquet"),
            tags=tags,
            mlflow_run_id=ids.parent,
        )
    # Consumed: a later track-only run (dvc repro with validate cached) must not reuse this start.
    (paths.root / STARTED_FILE).unlink(missing_ok=True)
    note(f"[track] MLflow run {ids.parent}; run folder {folder}")
    return TrackOutcome(ids.parent, folder, ids.systems)


def _log_candidates(run_id: str, folder: Path) -> None:
    """With a tracking server, log the run's candidate manifest and its imported systems' files on
    the parent run (``omnieval.tracking.candidates``), so a machine comparing with this run can fetch
    and verify what it re-judges. Nothing with the embedded store (no other machine reads it); a
    failure is noted, never raised (the run is complete; a re-judging elsewhere says what is missing).
    """
    from omnieval.compare import tracking_server

    candidates = folder / "candidates"
    if tracking_server() is None or not candidates.is_dir():
        return
    from omnieval.systems import resolve_candidates_root
    from omnieval.tracking.candidates import log_run_candidates

    try:
        roots = {
            kept.name: resolve_candidates_root(kept) for kept in sorted(candidates.iterdir()) if kept.is_dir()
        }
        missing = sorted(system for system, root in roots.items() if not root.is_dir())
        manifest = log_run_candidates(run_id, folder, {s: r for s, r in roots.items() if s not in missing})
    except Exception as exc:  # the run is complete; the manifest is what a re-judging elsewhere lacks
        from omnieval.security import redact

        note(f"[track] candidates not logged for re-judging on other machines: {redact(str(exc))}")
        return
    imported = sorted(s for s, entry in manifest.systems.items() if entry.imported_from is not None)
    note(
        f"[track] candidate manifest logged ({len(manifest.systems)} systems"
        + (f"; imported {', '.join(imported)} uploaded by content" if imported else "")
        + (f"; imported folder gone: {', '.join(missing)}" if missing else "")
        + ")"
    )


VERDICT_TRACES_TAG = "omnieval.judge_traces"
"""Parent-run tag: how many judge verdicts were logged as MLflow traces into the child runs."""


def prompt_texts(bench: Any) -> dict[str, str]:
    """Prompt template SHA-256 (``judgments.parquet``'s ``prompt_sha256``) -> the template's text:
    the rubric (system message), then the user message with each input section as
    ``<tag>{source}</tag>``. Empty for a benchmark without judge prompts.

    The judge stage keeps only the digest of what it sent; the rendered prompt (the instance's
    text, images and audio filled in) is not stored anywhere, so a trace shows the template.
    """
    try:
        bench.prompt_catalog()  # registers the benchmark's rubrics with the judges
        from omnieval.judges import registered_benchmark, registered_templates

        if registered_benchmark() != bench.name:
            return {}
        templates = registered_templates().values()
    except Exception:  # a benchmark without judge prompts, or one from outside the package
        return {}
    out: dict[str, str] = {}
    for tpl in templates:
        sections = "\n".join(f"<{s.tag}>{{{s.source}}}</{s.tag}>" for s in tpl.sections)
        user = "\n".join(part for part in (tpl.opening, sections, tpl.closing) if part)
        if tpl.rubric_in_user:
            out[tpl.sha256()] = f"[user]\n{tpl.rubric}\n\n{user}"
        else:
            out[tpl.sha256()] = f"[system]\n{tpl.rubric}\n\n[user]\n{user}"
    return out


def _log_verdict_traces(
    experiment: str, bench: Any, suite: str, judgments: Path, parent: str, systems: dict[str, str]
) -> None:
    """Each judge verdict of the run as an MLflow trace in its system's child run, with a feedback
    per criterion (``omnieval.tracking.judgment_traces``); a store that refuses traces is named and
    skipped."""
    import mlflow
    import pandas as pd

    from omnieval.tracking import configure_mlflow, log_judgment_traces

    frame = pd.read_parquet(judgments)
    result = log_judgment_traces(
        frame,
        experiment_id=configure_mlflow(experiment),
        system_runs=systems,
        prompts=prompt_texts(bench),
        suite=suite,
    )
    if result.note:
        note(
            f"[track] judge verdicts not logged as MLflow traces ({result.traces} of"
            f" {result.traces + result.skipped} rows before it failed): this tracking store refused"
            f" them: {result.note}"
        )
        return
    with contextlib.suppress(Exception):  # the traces are logged either way
        mlflow.MlflowClient().set_tag(parent, VERDICT_TRACES_TAG, str(result.traces))
    note(
        f"[track] {result.traces} judge verdicts logged as MLflow traces with {result.assessments}"
        f" assessments ({result.skipped} rows without a judge call) in {result.seconds:.1f} s"
    )


INTERRUPTED_TAG = KILLED_REASON_TAG
INTERRUPTED_REASON = (
    "interrupted: the run was stopped or killed before its run folder was complete; "
    "marked KILLED by the next run of the suite"
)
"""The tag (and its text) on an MLflow run that :func:`_sweep_interrupted` ends as KILLED."""


def _sweep_interrupted(suite_runs: Path, open_marker: Path | None = None) -> None:
    """Remove run folders a killed track stage left half-built, and end their MLflow runs as KILLED.

    ``mlflow.json`` is the last file a run folder gets; a folder without it was interrupted (a
    suite's runs are sequential: they share one state folder). Its MLflow run, still RUNNING, is
    marked KILLED so the UI never shows it as in progress or finished. ``open_marker``: the state
    folder's ``mlflow.open.json``; runs a killed process left open before its run folder existed
    are ended the same way (``omnieval.tracking.open_runs``).
    """
    if open_marker is not None and open_marker.is_file():
        from omnieval.tracking.open_runs import end_open_runs

        for run_id in end_open_runs([open_marker], lambda _stage: INTERRUPTED_REASON):
            note(f"[track] MLflow run {run_id} of an interrupted run marked KILLED")
    if not suite_runs.is_dir():
        return
    from omnieval.tracking.pending import PENDING_FILE

    for folder in sorted(suite_runs.iterdir()):
        # A folder kept for `omnieval track` is complete: only its upload is pending.
        if not folder.is_dir() or (folder / "mlflow.json").is_file() or (folder / PENDING_FILE).is_file():
            continue
        try:
            from mlflow.tracking import MlflowClient

            client = MlflowClient()
            if client.get_run(folder.name).info.status == "RUNNING":
                client.set_tag(folder.name, INTERRUPTED_TAG, INTERRUPTED_REASON)
                client.set_terminated(folder.name, status="KILLED")
        except Exception as exc:  # an unknown id or an unreachable store must not stop tonight's run
            note(f"[track] could not mark interrupted MLflow run {folder.name} KILLED: {type(exc).__name__}")
        shutil.rmtree(folder, ignore_errors=True)
        note(f"[track] removed the half-built run folder {folder} of an interrupted run")


def main(argv: list[str] | None = None) -> int:
    return handoff_stage_main("track", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())


def _keep_for_upload(
    config: SuiteConfig,
    error: Exception,
    built: Path | None,
    build_run_folder: Callable[[str, dict[str, str]], Path],
    plain: dict[str, Any],
    dataset_frame: Any,
    started_at: datetime,
    deviations: list[Deviation],
) -> NoReturn:
    """The tracking server did not answer: finish the run folder without it (under a local id
    unless the server had already numbered the run), record what its MLflow runs would hold, and
    fail naming the folder and the command that uploads it."""
    from omnieval.security import redact
    from omnieval.tracking.pending import (
        PendingUpload,
        TrackingUnreachable,
        local_run_id,
        offline,
        write_pending,
    )

    reason = _short_reason(error)
    partial = built.name if built is not None else None
    with offline():
        folder = built if built is not None else build_run_folder(local_run_id(), {})
    pending = PendingUpload(
        experiment=config.experiment,
        suite=config.suite,
        tracking_uri=redact(os.environ.get("MLFLOW_TRACKING_URI", "")),
        reason=redact(reason),
        started_at=started_at.isoformat(),
        partial_run_id=partial,
        arguments={**plain, "deviations": [d.as_dict() for d in deviations]},
    )
    write_pending(folder, pending, dataset_frame)
    verdict = (
        read_json(folder / "regression.json").get("verdict")
        if (folder / "regression.json").is_file()
        else None
    )
    raise TrackingUnreachable(
        f"the tracking server {pending.tracking_uri or '(MLFLOW_TRACKING_URI)'} could not be reached"
        f" after MLflow's retries ({pending.reason}). The run itself is complete"
        + (f" (regression verdict {verdict})" if verdict else "")
        + f" and kept in {folder}; once the server answers, upload it with: omnieval track {folder}"
    )


def _short_reason(error: BaseException) -> str:
    """``Connection refused`` rather than MLflow's whole retry story (which names the URL again).

    >>> _short_reason(Exception("API request to http://h:1/x failed with exception ... [Errno 111] Connection refused'))"))
    'Connection refused'
    >>> _short_reason(TimeoutError("timed out"))
    'timed out'
    """
    import re

    text = str(error).strip()
    found = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", text)
    if found:
        return found.group(1).strip()
    return (text.splitlines() or [type(error).__name__])[0][:300]


def upload_pending(folder: Path) -> TrackOutcome:
    """Log a run folder kept while the tracking server was unreachable (``omnieval track RUN``).

    The MLflow runs get what the run would have logged (parent, system and analysis runs, metrics,
    dataset inputs, artifacts, the verdict tags, gate results, judge checks and verdict traces); the
    folder moves to ``<runs dir>/<suite>/<new run id>`` (``lineage.json`` keeps the local id as
    ``local_run_id``), gets ``mlflow.json`` and loses the pending files. A parent run the server had
    created before it went away is named by the tag ``omnieval.replaces_run``.

    Raises:
        DataError: ``folder`` is not a kept run (``omnieval.tracking.pending.read_pending``).
        TrackingUnreachable: the server still does not answer; nothing is moved or deleted.
    """
    import pandas as pd

    from omnieval.benchmarks import get_benchmark
    from omnieval.compare import record_verdict
    from omnieval.lineage import Deviation
    from omnieval.tracking import log_suite_run
    from omnieval.tracking.pending import (
        PENDING_DATASET_FILE,
        PENDING_FILES,
        TrackingUnreachable,
        read_pending,
        unreachable,
    )

    folder = folder.resolve()
    pending = read_pending(folder)
    plain = dict(pending.arguments)
    deviations = [Deviation(**entry) for entry in plain.pop("deviations", [])]
    tags = dict(plain.pop("tags", {}))
    if pending.partial_run_id:
        tags["omnieval.replaces_run"] = pending.partial_run_id
    holder: dict[str, Path] = {}

    def moved(run_id: str, _analysis_runs: dict[str, str]) -> Path:
        target = folder.parent / run_id
        if target.exists():
            shutil.rmtree(target)
        _copy_tree(folder, target)
        for name in PENDING_FILES:
            (target / name).unlink()
        lineage = read_json(target / "lineage.json")
        write_json(target / "lineage.json", {**lineage, "run_id": run_id, "local_run_id": folder.name})
        holder["folder"] = target
        return target

    try:
        ids = log_suite_run(
            experiment=pending.experiment,
            suite=pending.suite,
            dataset_frame=pd.read_parquet(folder / PENDING_DATASET_FILE),
            artifacts=[],
            run_folder_for=moved,
            analyses_dir=folder / "analyses",
            started_at=datetime.fromisoformat(pending.started_at),
            deviations=deviations,
            tags=tags,
            **plain,
        )
    except Exception as exc:
        if "folder" in holder:
            shutil.rmtree(holder["folder"], ignore_errors=True)
        if unreachable(exc):
            raise TrackingUnreachable(
                f"the tracking server still cannot be reached ({_short_reason(exc)});"
                f" {folder} is unchanged: try again later"
            ) from None
        raise
    target = holder["folder"]
    _log_candidates(ids.parent, target)
    regression = target / "regression.json"
    if regression.is_file():
        document = read_json(regression)
        baseline = document.get("baseline")
        record_verdict(
            ids.parent, document, target, Path(baseline["folder"]) if isinstance(baseline, dict) else None
        )
    from omnieval.tracking.gates_log import log_gate_results

    log_gate_results(ids.parent, target / "gates")
    health = read_json(target / "health.json") if (target / "health.json").is_file() else {}
    if isinstance(health.get("meta_eval"), dict):
        from omnieval.judges import meta_eval_metrics
        from omnieval.tracking.judge_checks import log_judge_checks

        log_judge_checks(ids.parent, *meta_eval_metrics(health))
    write_json(
        target / "mlflow.json", {"parent": ids.parent, "systems": ids.systems, "analyses": ids.analyses}
    )
    if (target / "judgments.parquet").is_file():
        bench = get_benchmark(str(tags.get("omnieval.benchmark", "")))
        _log_verdict_traces(
            pending.experiment, bench, pending.suite, target / "judgments.parquet", ids.parent, ids.systems
        )
    shutil.rmtree(folder)
    note(f"[track] uploaded {folder.name} as MLflow run {ids.parent}; run folder {target}")
    return TrackOutcome(ids.parent, target, ids.systems)
