"""Data-quality gates: Great Expectations suites (``expectations/*.json``) run before a stage continues.

The only package that imports ``great_expectations`` (lazily, inside :func:`validate_frame`).
"""

from omnieval.gates._core import (
    FailedExpectation,
    GateResult,
    enforce,
    load_suite_json,
    validate_frame,
    write_result,
)

__all__ = [
    "FailedExpectation",
    "GateResult",
    "enforce",
    "load_suite_json",
    "validate_frame",
    "write_result",
]
