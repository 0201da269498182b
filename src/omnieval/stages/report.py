"""Stage ``report``: the suite's scores table, leaderboard, analyses and report.html.

The benchmark aggregates (``leaderboard.json`` holds its document and the per-system MLflow
metrics, so the track stage logs exactly these numbers), runs its analyses and renders the page.

python -m omnieval.stages.report --suite pipelines/nightly.yaml
"""

from __future__ import annotations

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
from omnieval.stages._main import stage_main

MLFLOW_METRICS_KEY = "mlflow_metrics"
"""Key of ``leaderboard.json`` holding system -> {MLflow metric key: value}."""


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


def leaderboard_document(board: dict[str, Any]) -> dict[str, Any]:
    """``leaderboard.json`` without the MLflow metrics map (what people read)."""
    return {k: v for k, v in board.items() if k != MLFLOW_METRICS_KEY}


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
    key = content_key(
        stage="report",
        dataset=dataset_digest,
        inputs=inputs,
        analyses=config.analyses.model_dump(),
        code=code_digest(),
    )
    if is_fresh(paths, "report", key, [scores_path, leaderboard_path, report_path]):
        note("[report] unchanged, reusing report")
        print(bench.leaderboard_text(leaderboard_document(read_json(leaderboard_path))))
        return ReportOutcome(scores_path, leaderboard_path, analyses_dir, report_path, True)

    from omnieval.gates import gate_report_scores

    # The scores gate runs before anything aggregates the table; a failure stops the run (exit 2).
    scores = gate_report_scores(config, collect_scores, paths.gates / "scores.json")
    write_scores(scores, scores_path)
    n_instances = int(scores["instance_id"].nunique())
    judge_lineage = paths.judge_dir / "lineage.json"
    panels = read_json(judge_lineage).get("panels", {}) if config.panels and judge_lineage.is_file() else {}
    result = bench.leaderboard(scores, RunFacts(n_instances, panels))
    board = {"suite": config.suite, "dataset_digest": dataset_digest, **result.document}
    write_json(leaderboard_path, {**board, MLFLOW_METRICS_KEY: result.mlflow_metrics})
    outputs: dict[str, Any] = {}
    if config.analyses.enabled:
        note("[report] running analyses")
        outputs = bench.run_analyses(
            scores,
            analyses_dir,
            only=config.analyses.only,
            seed=config.analyses.seed,
            draws=config.analyses.bootstrap_draws,
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
        )
    )
    write_stamp(paths, "report", key, analyses=sorted(outputs))
    print(bench.leaderboard_text(board))
    return ReportOutcome(scores_path, leaderboard_path, analyses_dir, report_path, False)


def main(argv: list[str] | None = None) -> int:
    def body(cfg: SuiteConfig, _args: object) -> None:
        from omnieval.stages.validate import dataset_digest

        run(cfg, dataset_digest(state_paths(cfg)))

    return stage_main("report", body, argv)


if __name__ == "__main__":
    raise SystemExit(main())
