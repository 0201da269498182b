"""Stage ``report``: the suite's scores table, leaderboard (both policies), analyses and report.html.

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
    if config.judges.panels and judge_scores.is_file():
        frames.append(read_scores(judge_scores))
    table = pd.concat(frames, ignore_index=True)
    return coerce_scores(
        table.sort_values(["system", "index", "component", "judge", "criterion"], kind="stable")
    )


def run(config: SuiteConfig, dataset_digest: str) -> ReportOutcome:
    from omnieval.analysis import AnalysisConfig, aggregate, run_analyses
    from omnieval.report import leaderboard_table, write_report_html
    from omnieval.scores import write_scores

    paths = state_paths(config)
    out = paths.report_dir
    scores_path, leaderboard_path = out / "scores.parquet", out / "leaderboard.json"
    analyses_dir, report_path = out / "analyses", out / "report.html"
    inputs = {sid: file_digest(paths.metrics(sid)) for sid in config.systems}
    inputs["judge"] = file_digest(paths.judge_dir / "scores.parquet") if config.judges.panels else "none"
    key = content_key(
        stage="report",
        dataset=dataset_digest,
        inputs=inputs,
        analyses=config.analyses.model_dump(),
        code=code_digest(),
    )
    if is_fresh(paths, "report", key, [scores_path, leaderboard_path, report_path]):
        note("[report] unchanged, reusing report")
        print(leaderboard_table(read_json(leaderboard_path)))
        return ReportOutcome(scores_path, leaderboard_path, analyses_dir, report_path, True)

    scores = collect_scores(config)
    write_scores(scores, scores_path)
    n_instances = int(scores["instance_id"].nunique())
    agg = aggregate(scores, n_instances=n_instances)
    board = {"suite": config.suite, "dataset_digest": dataset_digest, **agg.to_dict()}
    write_json(leaderboard_path, board)
    outputs: dict[str, Any] = {}
    if config.analyses.enabled:
        note("[report] running analyses")
        analysis_config = AnalysisConfig(
            seed=config.analyses.seed, bootstrap_draws=config.analyses.bootstrap_draws
        )
        outputs = run_analyses(scores, analyses_dir, only=config.analyses.only, config=analysis_config)
    write_report_html(report_path, config=config, leaderboard=board, analyses_dir=analyses_dir, state=paths)
    write_stamp(paths, "report", key, analyses=sorted(outputs))
    print(leaderboard_table(board))
    return ReportOutcome(scores_path, leaderboard_path, analyses_dir, report_path, False)


def main(argv: list[str] | None = None) -> int:
    def body(cfg: SuiteConfig, _args: object) -> None:
        from omnieval.stages.validate import dataset_digest

        run(cfg, dataset_digest(state_paths(cfg)))

    return stage_main("report", body, argv)


if __name__ == "__main__":
    raise SystemExit(main())
