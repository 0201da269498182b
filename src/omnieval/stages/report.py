"""Stage ``report``: the suite's scores table, leaderboard, analyses and report.html.

The benchmark aggregates (``leaderboard.json`` holds its document and the per-system MLflow
metrics, so the track stage logs exactly these numbers), runs its analyses and renders the page.

python -m omnieval.stages.report --suite pipelines/nightly.yaml
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnieval.config import SuiteConfig
from omnieval.progress import note
from omnieval.stages._common import (
    code_digest,
    content_key,
    file_digest,
    is_fresh,
    read_json,
    state_paths,
    write_json,
    write_stamp,
)
from omnieval.stages._deviations import recorded_metrics, run_deviations
from omnieval.stages._handoff import MLFLOW_METRICS_KEY, leaderboard_document
from omnieval.stages._main import handoff_stage_main


@dataclass(frozen=True)
class ReportOutcome:
    scores_path: Path
    leaderboard_path: Path
    analyses_dir: Path
    report_path: Path
    skipped: bool


def collect_scores(config: SuiteConfig) -> Any:
    """Concatenate the metric rows of every system and the judge rows into one table."""
    import pandas as pd

    from omnieval.scores import coerce_scores, read_scores

    paths = state_paths(config)
    frames = [read_scores(paths.metrics(sid)) for sid in config.systems]
    judge_scores = paths.judge_dir / "scores.parquet"
    if config.panels and judge_scores.is_file():
        frames.append(read_scores(judge_scores))
    table = pd.concat(frames, ignore_index=True)
    return coerce_scores(
        table.sort_values(
            ["system", "condition", "index", "component", "panel", "judge", "criterion"], kind="stable"
        )
    )


def generation_facts(config: SuiteConfig) -> dict[str, dict[str, Any]]:
    """``systems.<id>.generation`` of ``leaderboard.json`` for every generating system (FORMATS.md §9).

    Read from each system's ``candidates/<id>.summary.json``; a benchmark with input conditions gets
    the totals over its conditions and the same block per condition under ``by_condition``.
    """
    paths = state_paths(config)
    facts: dict[str, dict[str, Any]] = {}
    for sid in config.systems:
        summary_path = paths.root / "candidates" / f"{sid}.summary.json"
        if not summary_path.is_file():
            continue
        summary = read_json(summary_path)
        per_condition = summary.get("conditions") or {"": summary}
        blocks = {
            c: part.get("lineage", {}).get("generation")
            for c, part in per_condition.items()
            if isinstance(part, dict) and part.get("lineage", {}).get("generation")
        }
        if not blocks:
            continue
        total: dict[str, Any] = {
            "planning_failures": {},
            "seconds": {},
            "completeness": {"examples": 0, "missing": {}},
            "examples_generated": 0,
            "examples_reused": 0,
            "seconds_generated": {},
            "examples_withheld": 0,
        }
        reasons: list[str] = []
        for block in blocks.values():
            for cause, n in block.get("planning_failures", {}).items():
                total["planning_failures"][cause] = total["planning_failures"].get(cause, 0) + int(n)
            for step, sec in block.get("seconds", {}).items():
                total["seconds"][step] = round(total["seconds"].get(step, 0.0) + float(sec), 3)
            done = block.get("completeness", {})
            total["completeness"]["examples"] += int(done.get("examples", 0))
            for modality, n in done.get("missing", {}).items():
                missing = total["completeness"]["missing"]
                missing[modality] = missing.get(modality, 0) + int(n)
            total["examples_generated"] += int(block.get("examples_generated", 0))
            total["examples_reused"] += int(block.get("examples_reused", 0))
            for step, sec in (block.get("seconds_generated") or {}).items():
                made = total["seconds_generated"]
                made[step] = round(made.get(step, 0.0) + float(sec), 3)
            total["examples_withheld"] += int(block.get("examples_withheld") or 0)
            if block.get("withheld_reason"):
                reasons.append(str(block["withheld_reason"]))
        if reasons:  # one budget per system: its conditions give the same message
            total["withheld_reason"] = reasons[-1]
        if set(blocks) != {""}:
            total["by_condition"] = blocks
        facts[sid] = total
    return facts


def generation_metrics(generation: dict[str, Any]) -> dict[str, float]:
    """MLflow keys of one system's generation block: seconds per step and failures per cause."""
    out: dict[str, float] = {
        f"generation.seconds.{step}": float(sec) for step, sec in generation.get("seconds", {}).items()
    }
    failures = generation.get("planning_failures", {})
    out.update({f"generation.planning_failures.{c}": float(n) for c, n in failures.items()})
    out["generation.planning_failures.total"] = float(sum(failures.values()))
    for modality, n in generation.get("completeness", {}).get("missing", {}).items():
        out[f"generation.missing.{modality}"] = float(n)
    if "examples_withheld" in generation:
        out["generation.examples_withheld"] = float(generation["examples_withheld"])
    return out


def run(config: SuiteConfig, dataset_digest: str) -> ReportOutcome:
    from omnieval.benchmarks import ReportJob, RunFacts
    from omnieval.scores import write_scores

    bench = config.bench
    paths = state_paths(config)
    out = paths.report_dir
    scores_path, leaderboard_path = out / "scores.parquet", out / "leaderboard.json"
    analyses_dir, report_path = out / "analyses", out / "report.html"
    inputs = {sid: file_digest(paths.metrics(sid)) for sid in config.systems}
    inputs["judge"] = file_digest(paths.judge_dir / "scores.parquet") if config.panels else "none"
    inputs.update(
        {
            f"summary:{sid}": file_digest(paths.root / "candidates" / f"{sid}.summary.json")
            for sid in config.systems
        }
    )
    diagnostic = bench.diagnostic_systems(config.systems)
    reference = bench.reference_systems(config.systems)
    key = content_key(
        stage="report",
        dataset=dataset_digest,
        inputs=inputs,
        analyses=config.analyses.model_dump(),
        diagnostic=sorted(diagnostic),
        reference=sorted(reference),
        code=code_digest(),
    )
    if is_fresh(paths, "report", key, [scores_path, leaderboard_path, report_path]):
        note("[report] unchanged, reusing report")
        print(bench.leaderboard_text(leaderboard_document(read_json(leaderboard_path))))
        return ReportOutcome(scores_path, leaderboard_path, analyses_dir, report_path, True)

    # Before anything is written: a benchmark whose declarations clash stops here (exit 2).
    deviations = run_deviations(config, recorded_metrics(config))
    from omnieval.gates import gate_report_scores

    # The scores gate runs before anything aggregates the table; a failure stops the run (exit 2).
    scores = gate_report_scores(
        lambda: collect_scores(config),
        paths.gates / "scores.json",
        benchmark=bench.name,
        score_range=bench.score_range,
        systems=list(config.systems),
        load_instances=lambda: bench.instances(bench.load(config.dataset_path)),
        artifact=f"scores table of suite {config.suite}",
    )
    write_scores(scores, scores_path)
    n_instances = int(scores["instance_id"].nunique())
    judge_lineage = paths.judge_dir / "lineage.json"
    panels = read_json(judge_lineage).get("panels", {}) if config.panels and judge_lineage.is_file() else {}
    facts = RunFacts(n_instances, panels, diagnostic, reference)
    result = bench.leaderboard(scores, facts)
    generation = generation_facts(config)
    for sid, block in generation.items():
        system_doc = result.document.setdefault("systems", {}).setdefault(sid, {})
        system_doc["generation"] = block
        result.mlflow_metrics.setdefault(sid, {}).update(generation_metrics(block))
    board = {"suite": config.suite, "dataset_digest": dataset_digest, **result.document}
    write_json(leaderboard_path, {**board, MLFLOW_METRICS_KEY: result.mlflow_metrics})
    outputs: Mapping[str, object] = {}
    if config.analyses.enabled:
        note("[report] running analyses")
        outputs = bench.run_analyses(
            scores,
            analyses_dir,
            only=config.analyses.only,
            seed=config.analyses.seed,
            draws=config.analyses.bootstrap_draws,
            facts=facts,
        )
    health = paths.judge_dir / "health.json"
    bench.write_report(
        ReportJob(
            report_path,
            config,
            board,
            analyses_dir,
            judge_health=read_json(health) if config.panels and health.is_file() else None,
            judgments_path=paths.judge_dir / "judgments.parquet" if config.panels else None,
            deviations=deviations,
        )
    )
    write_stamp(paths, "report", key, analyses=sorted(outputs))
    print(bench.leaderboard_text(board))
    return ReportOutcome(scores_path, leaderboard_path, analyses_dir, report_path, False)


def main(argv: list[str] | None = None) -> int:
    return handoff_stage_main("report", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
