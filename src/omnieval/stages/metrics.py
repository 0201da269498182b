"""Stage ``metrics``: automatic metrics of one system's candidates into scores-table rows.

The suite's benchmark decides which metrics run; its typed ``metrics:`` block (resolved, with every
default filled in) is part of the stage's content key.

python -m omnieval.stages.metrics --suite pipelines/nightly.yaml --system oracle
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
from omnieval.stages._main import handoff_stage_main


@dataclass(frozen=True)
class MetricsOutcome:
    system: str
    scores_path: Path
    computed: int
    cache_hits: int
    skipped: bool


def run(config: SuiteConfig, system_id: str, instances: Sequence[Any], dataset_digest: str) -> MetricsOutcome:
    from omnieval.benchmarks import MetricsJob
    from omnieval.scores import write_scores
    from omnieval.stages.generate import candidate_roots

    paths = state_paths(config)
    candidates = candidate_roots(config, system_id)
    out = paths.metrics(system_id)
    key = content_key(
        stage="metrics",
        dataset=dataset_digest,
        rows=[i.id for i in instances],
        candidates={c: tree_digest(root) for c, root in candidates.items()},
        metrics=config.metrics.model_dump(mode="json"),
        code=code_digest(),
    )
    stage = f"metrics@{system_id}"
    if is_fresh(paths, stage, key, [out]):
        note(f"[metrics] {system_id}: unchanged, reusing {out}")
        return MetricsOutcome(system_id, out, 0, 0, True)
    total = len(instances) * len(candidates)
    with progress_bar(f"metrics {system_id}", total) as update:
        job = MetricsJob(instances, system_id, candidates, config.metrics, paths.cache / "metrics", update)
        result = config.bench.compute_metrics(job)
    write_scores(result.scores, out)
    write_json(
        paths.metrics_lineage(system_id),
        {"lineage": result.lineage, "computed": result.computed, "cache_hits": result.cache_hits},
    )
    note(f"[metrics] {system_id}: {result.computed} computed, {result.cache_hits} from cache")
    write_stamp(paths, stage, key)
    return MetricsOutcome(system_id, out, result.computed, result.cache_hits, False)


def main(argv: list[str] | None = None) -> int:
    from omnieval.stages.validate import load_instances

    return handoff_stage_main("metrics", run, argv, per_system=True, load_instances=load_instances)


if __name__ == "__main__":
    raise SystemExit(main())
