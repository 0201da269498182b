"""Stage ``judge``: every configured panel over every system, model-major, through the response cache.

Only benchmarks with judge tracks have panels (the suite check refuses panels elsewhere).

python -m omnieval.stages.judge --suite pipelines/nightly.yaml
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnieval.config import SuiteConfig
from omnieval.progress import note, progress_bar
from omnieval.stages._common import (
    code_digest,
    content_key,
    is_fresh,
    state_paths,
    tree_digest,
    write_json,
    write_stamp,
)
from omnieval.stages._main import stage_main


@dataclass(frozen=True)
class JudgeOutcome:
    scores_path: Path
    judgments_path: Path
    model_calls: int
    cache_hits: int
    skipped: bool


def run(config: SuiteConfig, instances: Sequence[Any], dataset_digest: str) -> JudgeOutcome:
    import pandas as pd

    from omnieval.benchmarks import JudgeJob
    from omnieval.judges import merge_panel_tags
    from omnieval.scores import SCORE_COLUMNS, write_scores
    from omnieval.systems import resolve_candidates_root

    paths = state_paths(config)
    out_dir = paths.judge_dir
    scores_path, judgments_path = out_dir / "scores.parquet", out_dir / "judgments.parquet"
    candidates = {sid: resolve_candidates_root(paths.candidates(sid)) for sid in config.systems}
    key = content_key(
        stage="judge",
        dataset=dataset_digest,
        rows=[i.id for i in instances],
        candidates={sid: tree_digest(root) for sid, root in candidates.items()},
        panels=list(config.panels),
        metrics=config.metrics.model_dump(mode="json"),
        code=code_digest(),
    )
    if is_fresh(paths, "judge", key, [scores_path, judgments_path]):
        note("[judge] unchanged, reusing judge outputs (0 model calls)")
        if not (out_dir / "health.json").is_file():
            _write_health(out_dir, pd.read_parquet(scores_path), pd.read_parquet(judgments_path))
        # The judges' outputs are reused, but the drift check re-judges its anchors once a day.
        _drift(config, instances)
        return JudgeOutcome(scores_path, judgments_path, 0, 0, True)

    score_frames: list[pd.DataFrame] = []
    judgment_frames: list[pd.DataFrame] = []
    lineage: dict[str, Any] = {}
    panel_tags: dict[str, dict[str, str]] = {}
    calls = hits = 0

    for panel in config.panels:
        with progress_bar(f"judge {panel}", len(instances) * len(candidates)) as update:

            def report(_label: str, done: int, total: int, _update: Any = update) -> None:
                _update(done, total)

            job = JudgeJob(instances, candidates, panel, config.metrics, paths.cache / "judges", report)
            result = config.bench.judge(job)
        score_frames.append(result.scores)
        judgment_frames.append(result.judgments)
        lineage[panel] = result.lineage
        panel_tags[panel] = result.mlflow_tags
        calls += result.model_calls
        hits += result.cache_hits
        note(f"[judge] panel {panel}: {result.model_calls} model calls, {result.cache_hits} cache hits")

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
    write_json(
        out_dir / "lineage.json",
        {
            "panels": lineage,
            "mlflow_tags": merge_panel_tags(panel_tags),
            "model_calls": calls,
            "cache_hits": hits,
        },
    )
    from omnieval.gates import enforce, gate_judgments

    # Before the stamp: a failed gate leaves the stage incomplete, so a retry gates again.
    enforce(gate_judgments(judgments, scores, out_json=paths.gates / "judgments.json"))
    _write_health(out_dir, scores, judgments)
    _drift(config, instances)
    write_stamp(paths, "judge", key, model_calls=calls, cache_hits=hits)
    return JudgeOutcome(scores_path, judgments_path, calls, hits, False)


def _write_health(out_dir: Path, scores: Any, judgments: Any) -> None:
    """``health.json``: per (panel, judge) scale use, criteria spread, rationale cuts (docs/judges.md)."""
    from omnieval.judges._health import judge_health

    health = judge_health(judgments, scores)
    write_json(out_dir / "health.json", health)
    for name in health["degenerate"]:
        reasons = "; ".join(health["judges"][name]["reasons"])
        note(f"[judge] {name} looks degenerate: {reasons}")


def _drift(config: SuiteConfig, instances: Sequence[Any]) -> None:
    if not config.drift.enabled:
        return
    from omnieval.judges._drift import run_drift_check

    document = run_drift_check(config, instances)
    note(
        f"[judge] drift check: {document['status']} (mean shift {document.get('mean_shift')}, "
        f"{document.get('model_calls', 0)} model calls)"
    )


def main(argv: list[str] | None = None) -> int:
    def body(cfg: SuiteConfig, _args: object) -> None:
        from omnieval.stages.validate import dataset_digest, load_instances

        run(cfg, load_instances(cfg), dataset_digest(state_paths(cfg)))

    return stage_main("judge", body, argv)


if __name__ == "__main__":
    raise SystemExit(main())
