"""What every benchmark's ``leaderboard.json`` document shares, as pydantic models.

Each benchmark types its own document in ``benchmarks/<name>/_leaderboard.py`` on top of these. The
models exist to catch drift: an aggregate that grows, loses or renames a key fails validation in
its own tests instead of silently changing ``leaderboard.json`` under readers and reports. They are
frozen and forbid extra keys, and their fields are declared in the order the aggregates build the
dicts, so :func:`dump_document` gives back exactly the dict that was validated (same keys, same
order, same values) and the bytes written to ``leaderboard.json`` are unchanged.

Keys that are sometimes absent (``speech_meta_per_field``, ``swap_check``, ``generation``, the run
facts the report stage adds) are optional fields; :func:`dump_document` leaves out every field the
input did not set, so an absent key stays absent rather than coming back as ``null``.

Floats are not range-checked and NaN/infinity pass through as floats: the report stage writes the
document with ``allow_nan=True`` (:func:`omnieval.jsonio.write_json_atomic`), and keeping that is
the aggregates' business, not the schema's. (The aggregates map non-finite values to ``null``.)
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

MlflowMetrics = dict[str, dict[str, float]]
"""System -> MLflow metric key -> value (FORMATS.md section 5), the ``mlflow_metrics`` key."""


class DocumentModel(BaseModel):
    """Base of every leaderboard model: immutable, and an unexpected key is an error."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


def dump_document(model: BaseModel) -> dict[str, Any]:
    """The JSON-ready dict of a validated document: aliases as keys, unset optional keys left out.

    Example:
        >>> class Doc(DocumentModel):
        ...     a: float | None
        ...     b: int | None = None
        >>> dump_document(Doc.model_validate({"a": None}))
        {'a': None}
    """
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


class GenerationCompleteness(DocumentModel):
    """How many examples a generating system wrote and which modalities it left missing."""

    examples: int
    """Examples the system was asked for."""
    missing: dict[str, int]
    """Modality -> examples without that output."""


class GenerationBlock(DocumentModel):
    """One generating system's totals for one ``generate`` call (``lineage.generation``)."""

    planning_failures: dict[str, int]
    """Cause -> planning steps that failed for it."""
    seconds: dict[str, float]
    """Step (plan, image, speech, asr, ...) -> wall seconds, rounded to milliseconds."""
    completeness: GenerationCompleteness
    examples_generated: int
    """Examples produced by this call."""
    examples_reused: int
    """Examples taken over from an earlier call's candidates."""


class GenerationFacts(GenerationBlock):
    """``systems.<id>.generation``, added by the report stage (FORMATS.md section 9).

    The totals over every input condition; a benchmark with conditions also gets each condition's
    block under ``by_condition``.
    """

    by_condition: dict[str, GenerationBlock] | None = None
    """Condition -> that condition's block; absent for a benchmark without conditions."""


class LeaderboardDocument(DocumentModel):
    """Fields the report stage puts in front of every benchmark's document in ``leaderboard.json``.

    A benchmark's ``leaderboard()`` does not set them; the stage adds ``suite`` and
    ``dataset_digest`` (and ``mlflow_metrics``, declared last by each benchmark's model so the field
    order follows the file's). They are optional so one model reads both the benchmark's document and
    the file.
    """

    suite: str | None = None
    """The suite's name (set by the report stage)."""
    dataset_digest: str | None = None
    """SHA-256 of the dataset manifest the run scored (set by the report stage)."""


class UsageCounts(DocumentModel):
    """The figures every usage entry and the run's total carry (docs/judges.md)."""

    calls: int
    """Requests sent to a model (resends and failures included)."""
    cached_calls: int
    """Requests answered from a response cache (no tokens, no time)."""
    prompt_tokens: int | None
    """Prompt tokens the backend reported; null when it reported none."""
    completion_tokens: int | None
    """Generated tokens the backend reported; null when it reported none."""
    calls_with_tokens: int
    """How many of ``calls`` reported token counts."""
    seconds: float
    """Wall time waiting for the model."""


class UsageEntry(UsageCounts):
    """What one judge or generating system spent (``usage.json`` entry, docs/judges.md)."""

    cost: float | None = None
    """Price of the tokens, when the suite's ``costs:`` lists the judge, system or model."""
    currency: str | None = None
    """Currency of ``cost``."""
    model: str | None = None
    """The model behind the judge or system, when known."""


class UsageTotal(UsageCounts):
    """Sums over every judge and system of a run; ``cost`` per currency."""

    cost: dict[str, float] | None = None


class RunUsage(DocumentModel):
    """``leaderboard.json``'s optional ``usage`` block (set by the track stage in the run folder):
    tokens, seconds and cost per judge and per generating system."""

    judges: dict[str, UsageEntry]
    """Judge id -> usage, summed over the panels the judge sits on."""
    systems: dict[str, UsageEntry]
    """Generating system id -> usage (systems that call a language model)."""
    judge_output_reused: bool
    """The run reused the judge output whole: the judges' figures are what producing it cost."""
    total: UsageTotal


__all__ = [
    "DocumentModel",
    "GenerationBlock",
    "GenerationCompleteness",
    "GenerationFacts",
    "LeaderboardDocument",
    "MlflowMetrics",
    "RunUsage",
    "UsageEntry",
    "UsageTotal",
    "dump_document",
]
