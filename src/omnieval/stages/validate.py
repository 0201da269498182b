"""Stage ``validate``: strict dataset validation, the Great Expectations gate, the fingerprint manifest.

Runs before any generation. On bad data it saves the gate result, prints a short report and exits 2.

    python -m omnieval.stages.validate --suite pipelines/nightly.yaml
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnieval.config import SuiteConfig
from omnieval.data import Transition
from omnieval.errors import DataError, GateFailed
from omnieval.stages._common import StatePaths, read_json, state_paths, write_json
from omnieval.stages._main import stage_main


@dataclass(frozen=True)
class DatasetState:
    """The validated dataset as later stages see it."""

    transitions: tuple[Transition, ...]
    digest: str
    manifest_path: Path
    gate_path: Path


def load_transitions(config: SuiteConfig) -> tuple[Transition, ...]:
    from omnieval.data import load_storybench

    dataset = load_storybench(config.dataset.path)
    rows = dataset.transitions
    return rows[: config.dataset.limit] if config.dataset.limit else rows


def run(config: SuiteConfig) -> DatasetState:
    """Validate, gate and fingerprint the suite's dataset; raise DataError/GateFailed (exit 2) on bad data."""
    from omnieval.data import fingerprint_storybench, load_storybench, validate_storybench, write_manifest
    from omnieval.gates import enforce, gate_storybench_dataset

    paths = state_paths(config)
    root = config.dataset.path
    gate_path = paths.gates / "dataset.json"
    report = validate_storybench(root)
    if not report.ok:
        write_json(
            gate_path,
            {
                "suite": "storybench_dataset",
                "artifact": str(root),
                "success": False,
                "problems": report.problems,
            },
        )
        raise DataError(
            f"dataset {root} failed validation ({len(report.problems)} problems)", report.problems
        )
    gate = gate_storybench_dataset(root, gate_path)
    enforce(gate)
    dataset = report.dataset if report.dataset is not None else load_storybench(root)
    manifest = fingerprint_storybench(dataset)
    write_manifest(manifest, paths.dataset_manifest)
    rows = dataset.transitions[: config.dataset.limit] if config.dataset.limit else dataset.transitions
    return DatasetState(rows, manifest.to_dict()["digest"], paths.dataset_manifest, gate_path)


def dataset_digest(paths: StatePaths) -> str:
    """Digest recorded by the last successful validate stage."""
    if not paths.dataset_manifest.is_file():
        raise GateFailed(f"{paths.dataset_manifest} missing: run the validate stage first")
    manifest: dict[str, Any] = read_json(paths.dataset_manifest)
    return str(manifest["digest"])


def main(argv: list[str] | None = None) -> int:
    return stage_main("validate", lambda cfg, _args: run(cfg), argv)


if __name__ == "__main__":
    raise SystemExit(main())
