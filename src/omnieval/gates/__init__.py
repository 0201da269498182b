"""Data-quality gates: Great Expectations suites (``expectations/*.json``) run before a stage continues.

The only package that imports ``great_expectations`` (lazily, inside :func:`validate_frame`).
"""

from omnieval.gates._candidates import CANDIDATE_COLUMNS, candidates_gate_frame, gate_candidates
from omnieval.gates._core import (
    FailedExpectation,
    GateResult,
    enforce,
    load_suite_json,
    validate_frame,
    write_result,
)
from omnieval.gates._storybench import (
    expectations_dir,
    gate_storybench_dataset,
    helper_columns,
    storybench_gate_frame,
)

__all__ = [
    "CANDIDATE_COLUMNS",
    "FailedExpectation",
    "GateResult",
    "candidates_gate_frame",
    "enforce",
    "expectations_dir",
    "gate_candidates",
    "gate_storybench_dataset",
    "helper_columns",
    "load_suite_json",
    "storybench_gate_frame",
    "validate_frame",
    "write_result",
]
