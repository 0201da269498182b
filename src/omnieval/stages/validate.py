"""Stage ``validate``: strict dataset validation, the Great Expectations gate, the fingerprint manifest.

Runs before any generation. On bad data it saves the gate result, prints a short report and exits 2.
The suite's benchmark decides what "valid" means (its loader and expectation suite).

    python -m omnieval.stages.validate --suite pipelines/nightly.yaml
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from omnieval.config import SuiteConfig
from omnieval.errors import DataError
from omnieval.progress import note
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
from omnieval.stages._handoff import record_start
from omnieval.stages._main import stage_main


@dataclass(frozen=True)
class DatasetState:
    """The validated dataset as later stages see it: its instances (a suite's prefix) and digest."""

    instances: tuple[Any, ...]
    digest: str
    manifest_path: Path
    gate_path: Path
    n_rows: int
    started_at: datetime | None = None
    """When this suite execution started (the validate stage is its first step)."""


def _prefix(config: SuiteConfig, instances: tuple[Any, ...]) -> tuple[Any, ...]:
    return instances[: config.dataset.limit] if config.dataset.limit else instances


def load_instances(config: SuiteConfig) -> tuple[Any, ...]:
    """The suite's evaluation instances (strictly validated; DataError on bad data)."""
    bench = config.bench
    return _prefix(config, bench.instances(bench.load(config.dataset_path)))


def run(config: SuiteConfig) -> DatasetState:
    """Validate, gate and fingerprint the suite's dataset; raise DataError/GateFailed (exit 2) on bad data."""
    from omnieval.data import write_manifest
    from omnieval.gates import enforce, expectations_dir

    bench = config.bench
    paths = state_paths(config)
    # The first stage of every execution: its start is the MLflow run's start (see track).
    started_at = record_start(paths)
    root = config.dataset_path
    gate_path = paths.gates / "dataset.json"
    report = bench.validate(root)
    if not report.ok:
        write_json(
            gate_path,
            {
                "suite": f"{bench.name}_dataset",
                "artifact": str(root),
                "success": False,
                "problems": report.problems,
            },
        )
        raise DataError(
            f"dataset {root} failed validation ({len(report.problems)} problems)", report.problems
        )
    manifest = bench.fingerprint(report.dataset)
    # The Great Expectations gate is the slow part of this stage (~8 s on 2 cores): rerun it only when
    # the dataset's content, the expectation suites or the code changed since it last passed.
    gate_key = content_key(
        stage="dataset-gate",
        benchmark=bench.name,
        dataset=manifest.digest,
        root=str(root.resolve()),
        expectations=tree_digest(expectations_dir()),
        code=code_digest(),
    )
    if is_fresh(paths, "dataset-gate", gate_key, [gate_path]) and read_json(gate_path).get("success"):
        note(f"[validate] dataset unchanged since its gate passed, reusing {gate_path}")
    else:
        enforce(bench.gate(root, gate_path))
        write_stamp(paths, "dataset-gate", gate_key)
    write_manifest(manifest, paths.dataset_manifest)
    instances = bench.instances(report.dataset)
    return DatasetState(
        _prefix(config, instances),
        manifest.digest,
        paths.dataset_manifest,
        gate_path,
        len(instances),
        started_at,
    )


def main(argv: list[str] | None = None) -> int:
    return stage_main("validate", lambda cfg, _args: run(cfg), argv)


if __name__ == "__main__":
    raise SystemExit(main())
