"""Stage ``judge``: every configured panel over every system, model-major, through the response cache.

Only benchmarks with judge tracks have panels (the suite check refuses panels elsewhere).

python -m omnieval.stages.judge --suite pipelines/nightly.yaml
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.config import SuiteConfig
from omnieval.progress import note, progress_bar
from omnieval.stages._common import (
    code_digest,
    content_key,
    is_fresh,
    read_json,
    state_paths,
    tree_digest,
    write_json,
    write_stamp,
)
from omnieval.stages._main import handoff_stage_main

if TYPE_CHECKING:
    from omnieval.judges import JudgedPanel, PanelJudge


@dataclass(frozen=True)
class JudgeOutcome:
    """What the judge stage did in this run.

    Attributes:
        model_calls: judge model calls this run made: the panels' (0 when their output was reused)
            plus the drift check's anchors.
        cache_hits: the panels' answers read from the response cache.
        skipped: the panels' output was reused whole (nothing to judge).
        drift_model_calls: the drift check's share of ``model_calls``.
        meta_eval_model_calls: the known-set check's share of ``model_calls`` (0 once the judges'
            checkpoint was checked: the result is cached).
    """

    scores_path: Path
    judgments_path: Path
    model_calls: int
    cache_hits: int
    skipped: bool
    drift_model_calls: int = 0
    meta_eval_model_calls: int = 0


@dataclass(frozen=True)
class JudgeShard:
    """One shard's judge outputs on disk: every configured panel over ``systems``.

    A shard's folder is named by its content key (dataset, rows, those systems' candidate trees,
    panels, metrics config, code) and appears whole or not at all (written beside, then renamed),
    so a rerun after a lost worker or a kill redoes only the shards that never finished.
    """

    systems: tuple[str, ...]
    folder: Path
    model_calls: int
    cache_hits: int
    reused: bool


def order_dependent_judges(config: SuiteConfig) -> list[str]:
    """Ids of the suite's judges (repair models included) whose answers can depend on the calls
    before them in the process (:func:`~omnieval.backends.llm.answers_depend_on_call_order`:
    llama.cpp lockstep decoding, transformers; a fault-injecting wrapper counts as what it wraps)."""
    from omnieval.backends.llm import answers_depend_on_call_order
    from omnieval.errors import ConfigError
    from omnieval.judges import load_panel

    found: list[str] = []
    for name in config.panels:
        try:
            panel = load_panel(name)
        except ConfigError:
            continue  # a benchmark's own panel (prism's cpu-cascade), not one of the judges package
        judges = [j for _, j in panel.judges()] + ([panel.repair] if panel.repair is not None else [])
        for judge_config in judges:
            if answers_depend_on_call_order(judge_config.backend) and judge_config.id not in found:
                found.append(judge_config.id)
    return found


def shard_plan(config: SuiteConfig, *, by_system: bool) -> list[tuple[str, ...]]:
    """The judge stage's shards: one per system when asked and the benchmark allows it, else one.

    Judges whose answers depend on the calls before them (:func:`order_dependent_judges`) keep one
    shard, so a distributed run answers exactly as the default runner does. A llama.cpp judge
    decoding one request at a time does not: its systems are judged in separate shards.
    """
    systems = tuple(config.systems)
    if (
        by_system
        and config.bench.judge_shards_by_system
        and len(systems) > 1
        and not order_dependent_judges(config)
    ):
        return [(system,) for system in systems]
    return [systems]


def _candidates(config: SuiteConfig, systems: Sequence[str]) -> dict[str, Path]:
    from omnieval.systems import resolve_candidates_root

    paths = state_paths(config)
    return {sid: resolve_candidates_root(paths.candidates(sid)) for sid in systems}


def _panel_identity(panel: str) -> str | dict[str, str]:
    """A panel as the judge key sees it: a shipped panel by name (its YAML is package code, in the
    code digest), a panel file by its path and bytes, so editing the file re-judges."""
    import hashlib

    path = Path(panel)
    if path.suffix in {".yaml", ".yml"} and path.is_file():
        return {"path": panel, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    return panel


def _judge_key(
    stage: str,
    config: SuiteConfig,
    instances: Sequence[Any],
    dataset_digest: str,
    candidates: dict[str, Path],
) -> str:
    """What the judges' outputs depend on: data, rows, candidate trees, panels, metrics config, code."""
    return content_key(
        stage=stage,
        dataset=dataset_digest,
        rows=[i.id for i in instances],
        candidates={sid: tree_digest(root) for sid, root in candidates.items()},
        panels=[_panel_identity(panel) for panel in config.panels],
        metrics=config.metrics.model_dump(mode="json"),
        code=code_digest(),
    )


def run_shard(
    config: SuiteConfig, systems: Sequence[str], instances: Sequence[Any], dataset_digest: str
) -> JudgeShard:
    """Judge ``systems`` with every configured panel into the shard's folder (reused when complete)."""
    import shutil
    import tempfile

    from omnieval.benchmarks import JudgeJob
    from omnieval.judges import spending_limit
    from omnieval.scores import write_scores

    paths = state_paths(config)
    candidates = _candidates(config, systems)
    key = _judge_key("judge-shard", config, instances, dataset_digest, candidates)
    folder = paths.judge_dir / "shards" / key[:24]
    done = folder / "shard.json"
    if done.is_file():
        info = read_json(done)
        # A shard the budget cut short is judged again; its answered calls come from the cache.
        if info.get("key") == key and not info.get("over_budget"):
            note(f"[judge] shard {'+'.join(systems)}: complete, reusing it (0 model calls)")
            return JudgeShard(tuple(systems), folder, 0, 0, True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=folder.parent))
    try:
        calls = hits = 0
        panels: dict[str, Any] = {}
        with spending_limit(config.judges.budget) as limit:
            for number, panel in enumerate(config.panels):
                label = f"judge {panel}" + (f" {'+'.join(systems)}" if len(systems) == 1 else "")
                # The runner counts model calls (the work that costs time), known once the cache is read.
                with progress_bar(f"{label}: model calls", 0) as update:

                    def report(_label: str, done: int, total: int, _update: Any = update) -> None:
                        _update(done, total)

                    job = JudgeJob(
                        instances, candidates, panel, config.metrics, paths.cache / "judges", report
                    )
                    result = config.bench.judge(job)
                # Canonical values (omnieval.scores.PRECISION), as in the merged table.
                write_scores(result.scores, building / f"scores.{number}.parquet")
                result.judgments.to_parquet(building / f"judgments.{number}.parquet", index=False)
                panels[panel] = {
                    "lineage": result.lineage,
                    "mlflow_tags": result.mlflow_tags,
                    "model_calls": result.model_calls,
                    "cache_hits": result.cache_hits,
                }
                calls += result.model_calls
                hits += result.cache_hits
                note(
                    f"[judge] panel {panel}: {result.model_calls} model calls, {result.cache_hits} cache hits"
                )
        write_json(
            building / "shard.json",
            {
                "key": key,
                "systems": list(systems),
                "panels": panels,
                "model_calls": calls,
                "cache_hits": hits,
                "over_budget": limit.withheld if limit is not None else 0,
            },
        )
        if limit is not None and limit.withheld:
            note(f"[judge] shard {'+'.join(systems)}: {limit.withheld} judge calls not made: {limit.reason}")
        if folder.exists():  # an incomplete or stale shard of the same name
            shutil.rmtree(folder)
        building.replace(folder)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return JudgeShard(tuple(systems), folder, calls, hits, False)


def _merge_lineage(into: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    """One panel's lineage over several shards: identities from the first, counts summed."""
    if not into:
        copied: dict[str, Any] = json.loads(json.dumps(more))
        return copied
    for counter in ("model_calls", "cache_hits", "audio_descriptions_computed"):
        if counter in more:
            into[counter] = into.get(counter, 0) + more[counter]
    if "usage" in more:  # per judge, summed over the shards
        from omnieval.backends.llm import merge_usage_json, usage_table

        into["usage"] = usage_table(merge_usage_json(into.get("usage") or {}, more["usage"]))
    if "usage_by_system" in more:  # per system and judge, summed over the shards
        from omnieval.backends.llm import merge_usage_json, usage_table

        by_system = dict(into.get("usage_by_system") or {})
        for system, table in (more["usage_by_system"] or {}).items():
            by_system[system] = usage_table(merge_usage_json(by_system.get(system) or {}, table))
        into["usage_by_system"] = {system: by_system[system] for system in sorted(by_system)}
    statuses = into.setdefault("statuses", {})
    for group, counts in (more.get("statuses") or {}).items():
        merged = statuses.setdefault(group, {})
        for status, count in counts.items():
            merged[status] = merged.get(status, 0) + count
    return into


SERVER_LOG_DIR_ENV = "OMNIEVAL_SERVER_LOG_DIR"


def run(
    config: SuiteConfig,
    instances: Sequence[Any],
    dataset_digest: str,
    *,
    shards: Sequence[JudgeShard] | None = None,
) -> JudgeOutcome:
    """:func:`_run`, with the logs of any model server the judges start (llama.cpp's, vLLM's) in
    ``state/<suite>/judge/servers/`` beside the judgments it served, unless ``$OMNIEVAL_SERVER_LOG_DIR``
    names a folder."""
    chosen = os.environ.get(SERVER_LOG_DIR_ENV)
    if not chosen:
        os.environ[SERVER_LOG_DIR_ENV] = str(state_paths(config).judge_dir / "servers")
    try:
        return _run(config, instances, dataset_digest, shards=shards)
    finally:
        if not chosen:
            os.environ.pop(SERVER_LOG_DIR_ENV, None)


def _run(
    config: SuiteConfig,
    instances: Sequence[Any],
    dataset_digest: str,
    *,
    shards: Sequence[JudgeShard] | None = None,
) -> JudgeOutcome:
    """Judge every system (running any shard not given), merge the shards, gate and stamp.

    ``shards``: shards already judged (the Dask runner judges them in parallel tasks first); None
    judges the default plan here, one shard holding every system (the judges then run model-major
    over all systems, which lets consecutive prompts share the longest prefix).
    """
    import pandas as pd

    from omnieval.judges import merge_panel_tags
    from omnieval.scores import SCORE_COLUMNS, write_scores

    paths = state_paths(config)
    out_dir = paths.judge_dir
    scores_path, judgments_path = out_dir / "scores.parquet", out_dir / "judgments.parquet"
    coverage = _coverage(config, instances)
    if coverage["limit"] is not None:
        note(
            f"[judge] judging {coverage['judged']} of the dataset's {coverage['dataset_rows']} rows "
            f"(dataset.limit: {coverage['limit']}, the first rows in dataset order)"
        )
    candidates = _candidates(config, list(config.systems))
    key = _judge_key("judge", config, instances, dataset_digest, candidates)
    if is_fresh(paths, "judge", key, [scores_path, judgments_path]):
        note("[judge] unchanged, reusing judge outputs (0 model calls)")
        if not (out_dir / "health.json").is_file():
            _write_health(config, out_dir, pd.read_parquet(scores_path), pd.read_parquet(judgments_path))
        _write_usage(config, out_dir, reused=True)
        # The judges' outputs are reused, but the drift check re-judges its anchors once a day.
        drift_calls = _drift(config, instances)
        meta_calls = _meta_eval(config, instances)
        _record_this_run(
            out_dir,
            reused=True,
            panel_calls=0,
            panel_hits=0,
            drift_calls=drift_calls,
            drift_panel=_drift_panel(config),
            meta_calls=meta_calls if config.judges.meta_eval.enabled else None,
        )
        return JudgeOutcome(
            scores_path, judgments_path, drift_calls + meta_calls, 0, True, drift_calls, meta_calls
        )

    if shards is None:
        shards = [
            run_shard(config, plan, instances, dataset_digest) for plan in shard_plan(config, by_system=False)
        ]
    covered = sorted(s for shard in shards for s in shard.systems)
    if covered != sorted(config.systems):
        raise RuntimeError(f"judge shards cover {covered}, the suite has {sorted(config.systems)}")

    score_frames: list[pd.DataFrame] = []
    judgment_frames: list[pd.DataFrame] = []
    lineage: dict[str, Any] = {}
    panel_tags: dict[str, dict[str, str]] = {}
    made_by_panel: dict[str, int] = {}
    calls = sum(s.model_calls for s in shards)
    hits = sum(s.cache_hits for s in shards)
    over_budget = sum(int(read_json(s.folder / "shard.json").get("over_budget", 0)) for s in shards)
    for number, panel in enumerate(config.panels):
        for shard in shards:
            info = read_json(shard.folder / "shard.json")["panels"][panel]
            score_frames.append(pd.read_parquet(shard.folder / f"scores.{number}.parquet"))
            judgment_frames.append(pd.read_parquet(shard.folder / f"judgments.{number}.parquet"))
            lineage[panel] = _merge_lineage(lineage.get(panel, {}), info["lineage"])
            if not shard.reused:
                made_by_panel[panel] = made_by_panel.get(panel, 0) + int(info["model_calls"])
            panel_tags.setdefault(panel, info["mlflow_tags"])

    scores = (
        pd.concat(score_frames, ignore_index=True)
        if score_frames
        else pd.DataFrame(columns=list(SCORE_COLUMNS))
    )
    write_scores(scores, scores_path)
    judgments = pd.concat(judgment_frames, ignore_index=True) if judgment_frames else pd.DataFrame()
    tmp = judgments_path.with_suffix(".tmp")
    judgments.to_parquet(tmp, index=False)
    tmp.replace(judgments_path)
    for entry in lineage.values():
        entry["instances"] = coverage
    write_json(
        out_dir / "lineage.json",
        {
            "panels": lineage,
            "mlflow_tags": merge_panel_tags(panel_tags),
            "model_calls": calls,
            "cache_hits": hits,
            "shards": [list(s.systems) for s in shards],
            "over_budget": over_budget,
        },
    )
    from omnieval.gates import enforce, gate_judgments

    # Before the stamp: a failed gate leaves the stage incomplete, so a retry gates again.
    schema = config.bench.judgment_schema()
    enforce(gate_judgments(judgments, scores, out_json=paths.gates / "judgments.json", schema=schema))
    _write_health(config, out_dir, scores, judgments)
    _write_usage(config, out_dir, reused=False)
    drift_calls = _drift(config, instances)
    meta_calls = _meta_eval(config, instances)
    # Shards reused from a killed run made none of their calls in this one.
    made = sum(s.model_calls for s in shards if not s.reused)
    _record_this_run(
        out_dir,
        reused=False,
        panel_calls=made,
        panel_hits=hits,
        drift_calls=drift_calls,
        drift_panel=_drift_panel(config),
        by_panel=made_by_panel,
        meta_calls=meta_calls if config.judges.meta_eval.enabled else None,
    )
    if over_budget:
        # Not stamped: the next run judges again, paying only for the calls withheld here.
        note(
            f"[judge] judge budget used: {over_budget} judge calls not made; their judgments are "
            "missing (not scored). Rerun with a larger judges.budget to finish from the cache."
        )
    else:
        write_stamp(paths, "judge", key, model_calls=calls, cache_hits=hits)
    _prune_shards(out_dir / "shards", keep={s.folder.name for s in shards})
    return JudgeOutcome(
        scores_path, judgments_path, made + drift_calls + meta_calls, hits, False, drift_calls, meta_calls
    )


def _coverage(config: SuiteConfig, instances: Sequence[Any]) -> dict[str, Any]:
    """Which rows the judges see: all of the dataset, or its first ``dataset.limit`` rows."""
    paths = state_paths(config)
    rows = len(instances)
    if paths.dataset_manifest.is_file():
        rows = int(read_json(paths.dataset_manifest).get("n_rows", rows))
    return {
        "judged": len(instances),
        "dataset_rows": rows,
        "limit": config.dataset.limit,
        "ids": [str(i.id) for i in instances],
    }


def _record_this_run(
    out_dir: Path,
    *,
    reused: bool,
    panel_calls: int,
    panel_hits: int,
    drift_calls: int,
    drift_panel: str | None,
    by_panel: dict[str, int] | None = None,
    meta_calls: int | None = None,
) -> None:
    """Add ``this_run`` to ``lineage.json``: the calls this run made, apart from the output's own.

    Each panel's ``model_calls`` counts the calls that produced the judge output; when a later run
    reuses that output it made none of them, and lineage must not suggest otherwise.
    """
    target = out_dir / "lineage.json"
    if not target.is_file():
        return
    document = read_json(target)
    this_run = {
        "output_reused": reused,
        "panel_model_calls": panel_calls,
        "panel_cache_hits": panel_hits,
        "drift_model_calls": drift_calls,
        "model_calls": panel_calls + drift_calls + (meta_calls or 0),
    }
    if meta_calls is not None:  # the suite checks its judges on the known set
        this_run["meta_eval_model_calls"] = meta_calls
    document["this_run"] = this_run
    for name, info in (document.get("panels") or {}).items():
        # Per panel (the run lineage keeps only the panels): what this run did with its output.
        made = 0 if reused else (by_panel or {}).get(name, 0)
        info["this_run"] = {"output_reused": reused, "model_calls": made}
        if name == drift_panel:
            info["this_run"]["drift_anchor_model_calls"] = drift_calls
    write_json(target, document)


def _prune_shards(folder: Path, keep: set[str]) -> None:
    """Remove shard folders of earlier inputs (and leftovers of killed writes) once merged."""
    import shutil

    if not folder.is_dir():
        return
    for child in folder.iterdir():
        if child.name not in keep:
            shutil.rmtree(child, ignore_errors=True)


EXPECTED_CAVEAT = (
    "{judges}: scores, and judge_expected (the probability-weighted score) most of all, depend on "
    "which requests llama.cpp decoded together (parallel_sequences > 1: a lockstep batch's shape "
    "changes the CPU kernels' rounding), so a run resumed after a crash, or the same requests in "
    "other batches, may get different judge_expected values (tenths of a point where the scores' "
    "distribution is flat) and a greedy score that moves where two scores are nearly tied. With "
    "parallel_sequences: 1 every verdict is decoded from the same state whatever came before it. "
    "See docs/judges.md, 'Reproducibility after a crash'."
)
"""The report's caveat for judges whose answers depend on the calls around them
(:func:`order_dependent_judges`) and that report ``judge_expected``."""


def _write_health(config: SuiteConfig, out_dir: Path, scores: Any, judgments: Any) -> None:
    """``health.json``: per (panel, judge) scale use, criteria spread, rationale cuts (docs/judges.md)."""
    from omnieval.judges import judge_health

    health = judge_health(judgments, scores)
    held = order_dependent_judges(config) if config.panels else []
    expected = set(scores.loc[scores["component"] == "judge_expected", "judge"]) if len(scores) else set()
    affected = [j for j in held if j in expected]
    if affected:
        health["caveats"] = [EXPECTED_CAVEAT.format(judges=", ".join(affected))]
    write_json(out_dir / "health.json", health)
    for name in health["degenerate"]:
        reasons = "; ".join(health["judges"][name]["reasons"])
        note(f"[judge] {name} looks degenerate: {reasons}")


def _write_usage(config: SuiteConfig, out_dir: Path, *, reused: bool) -> None:
    """``usage.json``: calls, cache hits, tokens, seconds (and cost, with ``costs:``) per judge.

    Read from the panels' lineage, so it describes the calls that produced the judge output; when
    this run reused that output whole (``output_reused``), it made none of them.
    """
    from omnieval.stages._usage import USAGE_FILE, judge_usage

    lineage = out_dir / "lineage.json"
    panels = read_json(lineage).get("panels", {}) if lineage.is_file() else {}
    document = judge_usage(panels, config.costs, output_reused=reused)
    write_json(out_dir / USAGE_FILE, document)
    total = document["total"]
    if total["calls"] or total["cached_calls"]:
        tokens = (
            f"{total['prompt_tokens']} prompt + {total['completion_tokens']} completion tokens"
            if total["prompt_tokens"] is not None
            else "tokens not reported"
        )
        note(
            f"[judge] usage: {total['calls']} model calls, {total['cached_calls']} cached, {tokens}, "
            f"{total['seconds']:.1f} s" + (" (output reused: none of it spent now)" if reused else "")
        )


def _drift_panel(config: SuiteConfig) -> str | None:
    """The ``lineage.json`` panel entry (a suite ``panels`` item) that re-judges the drift anchors."""
    return config.drift.panel if config.drift.enabled else None


def anchor_instances(config: SuiteConfig, instances: Sequence[Any]) -> Sequence[Any]:
    """The instances the drift anchors may name: the whole dataset, also when ``dataset.limit``
    evaluates only a prefix (the anchors are pinned on rows anywhere in the sample)."""
    if config.dataset.limit is None:
        return instances
    bench = config.bench
    return tuple(bench.instances(bench.load(config.dataset_path)))


def panel_judge(config: SuiteConfig) -> PanelJudge:
    """The suite's benchmark judging a set of candidates as its judge stage does (its judge inputs
    and, for a speech cascade, its audio describer): what the drift anchors are judged with."""
    from omnieval.benchmarks import JudgeJob

    bench = config.bench

    def judge(
        instances: Sequence[Any],
        candidates: Mapping[str, Path],
        panel: str,
        cache_dir: Path,
        progress: Callable[[str, int, int], None] | None,
    ) -> JudgedPanel:
        return bench.judge_anchors(
            JudgeJob(instances, candidates, panel, config.metrics, cache_dir, progress)
        )

    return judge


def _drift(config: SuiteConfig, instances: Sequence[Any]) -> int:
    """Run the drift check when the suite asks for it; the model calls it made."""
    if not config.drift.enabled:
        return 0
    from omnieval.judges import run_drift_check

    with progress_bar("judge drift anchors: model calls", 0) as update:

        def report(_label: str, done: int, total: int) -> None:
            update(done, total)

        document = run_drift_check(
            config,
            anchor_instances(config, instances),
            progress=report,
            judge=panel_judge(config),
            anchor_tracks=config.bench.anchor_tracks(),
        )
    calls = int(document.get("model_calls", 0))
    note(
        f"[judge] drift check: {document['status']} (mean shift {document.get('mean_shift')}, "
        f"{calls} model calls)"
    )
    return calls


def _meta_eval(config: SuiteConfig, instances: Sequence[Any]) -> int:
    """The judges' check on the benchmark's known set (``judges.meta_eval``), merged into
    ``health.json`` under ``meta_eval``; returns the model calls it made.

    Once per judge checkpoint: the result is cached by the judges' identity and the set's hash
    (:func:`omnieval.judges.check_known_set`), so a rerun with the same judges makes no call. A check
    that cannot run (the dataset lacks the set's instances, a broken manifest) is recorded as an
    ``error`` of its panel, which the nightly verdict reads as a reason, and the stage goes on.
    """
    settings = config.judges.meta_eval
    if not settings.enabled or not config.panels:
        return 0
    from omnieval.errors import ConfigError, OmnievalError
    from omnieval.judges import Floors, KnownSetRunner, check_known_set, merge_meta_eval

    paths = state_paths(config)
    documents: dict[str, Any] = {}
    calls = 0
    runner: KnownSetRunner | None = None
    try:
        # The set names rows anywhere in the sample, also when dataset.limit judges a prefix.
        runner = config.bench.known_set(anchor_instances(config, instances), config.metrics)
        if runner is None:
            raise ConfigError(f"benchmark {config.benchmark} has no known set to check its judges on")
    except OmnievalError as exc:
        documents = {panel: {"error": str(exc)} for panel in config.panels}
        runner = None
    for panel in config.panels:
        if runner is None:
            break
        try:
            with progress_bar(f"judge known set {panel}: model calls", 0) as update:

                def report(_label: str, done: int, total: int, _update: Any = update) -> None:
                    _update(done, total)

                document = check_known_set(
                    runner, panel, cache_dir=paths.cache, floors=Floors.of(settings), progress=report
                )
        except OmnievalError as exc:
            documents[panel] = {"error": str(exc)}
            continue
        documents[panel] = document
        calls += int(document["model_calls"])
        state = "result reused" if document["reused"] else f"{document['model_calls']} model calls"
        note(
            f"[judge] known-set check of panel {panel}: {document['checked']} judge/track figures, "
            f"{len(document['below_floor'])} below their floor ({state})"
        )
    for panel, document in documents.items():
        if "error" in document:
            note(f"[judge] known-set check of panel {panel} could not run: {document['error']}")
        for entry in document.get("below_floor") or []:
            note(
                f"[judge] {panel}/{entry['judge']} is below its floor on the known set: track "
                f"{entry['track']} accuracy {entry['accuracy']:.2f} < {entry['floor']:.2f}"
            )
    target = paths.judge_dir / "health.json"
    health = read_json(target) if target.is_file() else {}
    write_json(target, merge_meta_eval(health, documents))
    return calls


def main(argv: list[str] | None = None) -> int:
    from omnieval.stages.validate import load_instances

    return handoff_stage_main("judge", run, argv, load_instances=load_instances)


if __name__ == "__main__":
    raise SystemExit(main())
