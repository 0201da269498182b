"""Stage ``generate``: one system under test writes its candidate layout, then the candidates gate.

For benchmarks with input conditions the system runs once per condition the suite chooses, each
into its own folder (``candidates/<system>/<condition>/``).

python -m omnieval.stages.generate --suite pipelines/nightly.yaml --system oracle
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnieval.config import SuiteConfig
from omnieval.errors import ConfigError
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
from omnieval.stages._usage import THIS_RUN_SUFFIX
from omnieval.systems import GenerationLimit, System


@dataclass(frozen=True)
class GenerateOutcome:
    system: str
    candidates_root: Path
    skipped: bool
    roots: dict[str, Path] = field(default_factory=dict)
    """Condition -> candidate root (``""`` for benchmarks without conditions)."""


def _build_system(config: SuiteConfig, system_id: str, condition: str) -> System:
    """The system of ``systems.<system_id>``, for one input condition (its kind says how it is built)."""
    from omnieval.systems import system_kind

    try:
        spec = config.systems[system_id]
    except KeyError:
        raise ConfigError(f"system {system_id!r} is not in suite {config.suite!r}") from None
    return system_kind(spec.kind).from_spec(
        spec,
        system_id=system_id,
        condition=condition,
        modalities=tuple(config.bench.modalities),
        cache_dir=state_paths(config).cache / "generate",
    )


def _runs_models(kind: str) -> bool:
    from omnieval.systems import SYSTEMS, system_kind

    return kind in SYSTEMS and system_kind(kind).runs_models


def candidate_roots(config: SuiteConfig, system_id: str) -> dict[str, Path]:
    """Condition -> resolved candidate root of one system (follows an import's pointer)."""
    from omnieval.systems import resolve_candidates_root

    paths = state_paths(config)
    return {c: resolve_candidates_root(paths.candidates(system_id, c)) for c in config.run_conditions}


def run(
    config: SuiteConfig, system_id: str, instances: Sequence[Any], dataset_digest: str
) -> GenerateOutcome:
    paths = state_paths(config)
    out = paths.candidates(system_id)
    spec = config.systems.get(system_id)
    imported = spec.imported_from() if spec is not None else None
    extra = tree_digest(imported) if imported is not None else ""
    # What a generating system's config does not show (a command's script, model weights):
    # editing it must regenerate, as the per-example keys already do.
    # A system that runs models is built once, for every condition; the others per condition.
    built = _build_system(config, system_id, "") if spec is not None and _runs_models(spec.kind) else None
    identity = {"identity": built.identity()} if built is not None else {}
    key = content_key(
        stage="generate",
        dataset=dataset_digest,
        rows=[i.id for i in instances],
        # `diagnostic` only changes how the report aggregates, never what a system generates.
        system=spec.model_dump(exclude={"diagnostic"}) if spec else None,
        **identity,
        conditions=list(config.run_conditions),
        imported=extra,
        code=code_digest(),
    )
    stage = f"generate@{system_id}"
    if is_fresh(paths, stage, key, [out]):
        note(f"[generate] {system_id}: unchanged, reusing {out}")
        _write_this_run(out.parent / f"{system_id}{THIS_RUN_SUFFIX}", reused=True)
        roots = candidate_roots(config, system_id)
        return GenerateOutcome(system_id, next(iter(roots.values())), True, roots)
    if out.exists():
        shutil.rmtree(out)
    summaries: dict[str, Any] = {}
    # One budget per system, shared by its input conditions; reference systems generate nothing.
    budget = config.generation.budget
    limit = GenerationLimit(budget) if budget is not None and built is not None else None
    # A generating system loads its models once for every condition and releases them at the end.
    try:
        _generate_conditions(config, system_id, instances, built, summaries, limit)
    finally:
        if built is not None:
            built.shutdown()
    only = summaries.get("")
    write_json(
        out.parent / f"{system_id}.summary.json",
        {"system": system_id, **only} if only is not None else {"system": system_id, "conditions": summaries},
    )
    if limit is not None and limit.withheld:
        # Not stamped: the next run generates again, and only the withheld examples cost anything.
        note(
            f"[generate] {system_id}: {limit.withheld} examples not generated: {limit.reason}; "
            "their outputs are missing (not scored)"
        )
    else:
        write_stamp(paths, stage, key)
    _write_this_run(out.parent / f"{system_id}{THIS_RUN_SUFFIX}", reused=False)
    roots = candidate_roots(config, system_id)
    return GenerateOutcome(system_id, next(iter(roots.values())), False, roots)


def _write_this_run(path: Path, *, reused: bool) -> None:
    """:data:`~omnieval.stages._usage.THIS_RUN_SUFFIX`: whether this run reused the candidates whole."""
    if path.parent.is_dir():
        write_json(path, {"output_reused": reused})


def _generate_conditions(
    config: SuiteConfig,
    system_id: str,
    instances: Sequence[Any],
    built: System | None,
    summaries: dict[str, Any],
    limit: GenerationLimit | None = None,
) -> None:
    from omnieval.benchmarks import GenerateJob
    from omnieval.gates import SpeechCheck, enforce, gate_candidates
    from omnieval.metrics import MetricsConfig

    bench = config.bench
    paths = state_paths(config)
    # Valid index folders are those of the whole dataset, even when the suite evaluates a prefix.
    n_rows = int(read_json(paths.dataset_manifest).get("n_rows", len(instances)))
    # Names, not Modality members: the gate knows each modality's file (prism's video too).
    modalities = tuple(bench.modalities)
    for condition in config.run_conditions:
        target = paths.candidates(system_id, condition)
        target.mkdir(parents=True)
        system = built if built is not None else _build_system(config, system_id, condition)
        label = f"generate {system_id}" + (f" [{condition}]" if condition else "")
        with progress_bar(label, len(instances)) as update:
            job = GenerateJob(system, instances, target, condition, update, keep_open=True, limit=limit)
            summary = bench.generate(job)
        summaries[condition] = {
            "kind": summary.kind,
            "written": summary.written,
            "missing": summary.missing,
            "lineage": summary.lineage,
        }
        gate_name = f"candidates-{system_id}" + (f"-{condition}" if condition else "")
        gate = gate_candidates(
            candidate_roots(config, system_id)[condition],
            n_rows,
            paths.gates / f"{gate_name}.json",
            modalities=modalities,
            # Storybench's speech clips are analysed here, into the metrics cache the metrics stage
            # reads, so clips without speech are noted at the gate at no extra cost.
            speech_check=(
                SpeechCheck(config.metrics, paths.cache / "metrics")
                if isinstance(config.metrics, MetricsConfig)
                else None
            ),
        )
        enforce(gate)


def main(argv: list[str] | None = None) -> int:
    from omnieval.stages.validate import load_instances

    return handoff_stage_main("generate", run, argv, per_system=True, load_instances=load_instances)


if __name__ == "__main__":
    raise SystemExit(main())
