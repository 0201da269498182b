"""Data-quality gates: Great Expectations suites (``expectations/*.json``) run before a stage continues.

The only package that imports ``great_expectations`` (lazily, inside :func:`validate_frame`).
"""

from omnieval.gates._candidates import CANDIDATE_COLUMNS, candidates_gate_frame, gate_candidates
from omnieval.gates._core import (
    FailedExpectation,
    GateResult,
    enforce,
    expectations_dir,
    load_suite_json,
    validate_frame,
    write_result,
)

__all__ = [
    "CANDIDATE_COLUMNS",
    "FailedExpectation",
    "GateResult",
    "candidates_gate_frame",
    "enforce",
    "expectations_dir",
    "gate_candidates",
    "load_suite_json",
    "validate_frame",
    "write_result",
]
