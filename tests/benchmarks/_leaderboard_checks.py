"""Checks shared by the three leaderboard-model tests: validating and dumping changes no byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from omnieval.benchmarks._leaderboard import dump_document
from omnieval.stages._common import write_json

M = TypeVar("M", bound=BaseModel)


def written(path: Path, document: Any) -> bytes:
    """The bytes the report stage writes for ``document`` (its own writer, its own options)."""
    write_json(path, document)
    return path.read_bytes()


def assert_round_trips(model_type: type[M], document: dict[str, Any], tmp: Path) -> M:
    """Validate ``document``, dump it, and check the dump is the same document.

    Compared as JSON text without sorting, so a changed key order, a key gained or lost, an int
    turned float (``1`` -> ``1.0``) or a float's digits all show; then as the report stage's file.
    """
    model = model_type.model_validate(document)
    dumped = dump_document(model)
    assert json.dumps(dumped) == json.dumps(document)
    assert written(tmp / "dumped.json", dumped) == written(tmp / "built.json", document)
    return model


def assert_file_round_trips(model_type: type[BaseModel], path: Path, tmp: Path) -> None:
    """A real ``leaderboard.json`` read, validated, dumped and written again is the same file."""
    original = path.read_bytes()
    model = model_type.model_validate(json.loads(original))
    assert written(tmp / "again.json", dump_document(model)) == original


def with_report_facts(document: dict[str, Any], generation: dict[str, Any]) -> dict[str, Any]:
    """``document`` as the report stage completes it: run facts in front, one system's generation
    block, MLflow metrics last (stages/report.py)."""
    systems = {sid: dict(entry) for sid, entry in document["systems"].items()}
    first = next(iter(systems))
    systems[first]["generation"] = generation
    board = {"suite": "test-suite", "dataset_digest": "0" * 64, **document, "systems": systems}
    return {**board, "mlflow_metrics": {sid: {"x.y": 1.5} for sid in systems}}


GENERATION: dict[str, Any] = {
    "planning_failures": {"refusal": 1},
    "seconds": {"image": 1.204, "plan": 43.433},
    "completeness": {"examples": 2, "missing": {"speech": 1}},
    "examples_generated": 1,
    "examples_reused": 1,
}
"""A ``systems.<id>.generation`` block as ``generation_facts`` builds it (no conditions)."""
