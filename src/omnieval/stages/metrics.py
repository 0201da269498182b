"""Stage ``metrics``: automatic metrics of one system's candidates into scores-table rows.

python -m omnieval.stages.metrics --suite pipelines/nightly.yaml --system oracle
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from omnieval.config import SuiteConfig
from omnieval.data import Transition
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
class MetricsOutcome:
    system: str
    scores_path: Path
    computed: int
    cache_hits: int
    skipped: bool


def run(
    config: SuiteConfig, system_id: str, transitions: Sequence[Transition], dataset_digest: str
) -> MetricsOutcome:
    from omnieval.metrics import MetricsConfig, compute_storybench_metrics
    from omnieval.scores import write_scores
    from omnieval.systems import resolve_candidates_root

    paths = state_paths(config)
    candidates = resolve_candidates_root(paths.candidates(system_id))
    out = paths.metrics(system_id)
    key = content_key(
        stage="metrics",
        dataset=dataset_digest,
        rows=[t.id for t in transitions],
        candidates=tree_digest(candidates),
        metrics=config.metrics,
        code=code_digest(),
    )
    stage = f"metrics@{system_id}"
    if is_fresh(paths, stage, key, [out]):
        note(f"[metrics] {system_id}: unchanged, reusing {out}")
        return MetricsOutcome(system_id, out, 0, 0, True)
    with progress_bar(f"metrics {system_id}", len(transitions)) as update:
        result = compute_storybench_metrics(
            transitions,
            system_id,
            candidates,
            cache_dir=paths.cache / "metrics",
            config=MetricsConfig(**config.metrics),
            progress=update,
        )
    write_scores(result.scores, out)
    write_json(
        paths.metrics_lineage(system_id),
        {"lineage": result.lineage, "computed": result.computed, "cache_hits": result.cache_hits},
    )
    note(f"[metrics] {system_id}: {result.computed} computed, {result.cache_hits} from cache")
    write_stamp(paths, stage, key)
    return MetricsOutcome(system_id, out, result.computed, result.cache_hits, False)


def main(argv: list[str] | None = None) -> int:
    def body(cfg: SuiteConfig, args: object) -> None:
        from omnieval.stages.validate import dataset_digest, load_transitions

        run(cfg, args.system, load_transitions(cfg), dataset_digest(state_paths(cfg)))  # type: ignore[attr-defined]

    return stage_main("metrics", body, argv, needs_system=True)


if __name__ == "__main__":
    raise SystemExit(main())
