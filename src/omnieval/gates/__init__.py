"""Data-quality gates: Great Expectations suites (``expectations/*.json``) run before a stage continues.

The only package that imports ``great_expectations`` (lazily, inside :func:`validate_frame`). Gated
artifacts: the dataset (each benchmark's own gate), the candidate folders (:func:`gate_candidates`),
the judgments (:func:`gate_judgments`) and the scores table (:func:`gate_scores`). Each result is
saved as ``gates/<stage>.json`` in the suite's state folder (copied into the run folder).
"""

from omnieval.gates._artifacts import (
    GROUND_TRUTH,
    JUDGMENT_KEY,
    LOW_COVERAGE,
    ComponentCoverage,
    Coverage,
    gate_judgments,
    gate_report_scores,
    gate_scores,
    judge_rows_gate_frame,
    judgments_expectations,
    judgments_gate_frame,
    row_labels,
    score_coverage,
    scores_expectations,
    scores_gate_frame,
)
from omnieval.gates._candidates import (
    BASE_MODALITIES,
    CANDIDATE_COLUMNS,
    SpeechCheck,
    candidates_gate_frame,
    gate_candidates,
    output_file,
)
from omnieval.gates._core import (
    FailedExpectation,
    GateResult,
    combine_results,
    enforce,
    expectations_dir,
    load_suite_json,
    unreadable_result,
    validate_frame,
    write_result,
)

__all__ = [
    "BASE_MODALITIES",
    "CANDIDATE_COLUMNS",
    "GROUND_TRUTH",
    "JUDGMENT_KEY",
    "LOW_COVERAGE",
    "ComponentCoverage",
    "Coverage",
    "FailedExpectation",
    "GateResult",
    "SpeechCheck",
    "candidates_gate_frame",
    "combine_results",
    "enforce",
    "expectations_dir",
    "gate_candidates",
    "gate_judgments",
    "gate_report_scores",
    "gate_scores",
    "judge_rows_gate_frame",
    "judgments_expectations",
    "judgments_gate_frame",
    "load_suite_json",
    "output_file",
    "row_labels",
    "score_coverage",
    "scores_expectations",
    "scores_gate_frame",
    "unreadable_result",
    "validate_frame",
    "write_result",
]
