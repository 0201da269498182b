"""The judgments table: one schema for every benchmark's judge records (``judgments.parquet``).

Every benchmark's judge runner writes one row per judge call (or per judged record) with the same
layout; a benchmark declares only what its records add, through a :class:`JudgmentSchema`:

    system, instance_id, index,      which candidate was judged
    <keys>                           the benchmark's further record key (storybench: track)
    judge, model, revision           which judge, identified by model and revision
    <call>                           facts of the call (PRISM: panel, blind order, cells asked)
    prompt_sha256, status, raw_response, scores
    <reasons>                        the judge's reasons as JSON (rationales or evidence)
    error ... note                   the call ledger (:data:`LEDGER_TAIL`): repairs, cache, timing
    <extra>                          derived values (storybench: expected_scores)

The judgments gate checks a table against the schema its benchmark declares, and readers (the
report, the instance viewer, audits) find the same columns in the same places for any benchmark.

Example:
    >>> schema = JudgmentSchema(keys=("track",), reasons="rationales")
    >>> schema.columns[:5], schema.columns[-1]
    (('system', 'instance_id', 'index', 'track', 'judge'), 'note')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

RECORD_HEAD: Final[tuple[str, ...]] = ("system", "instance_id", "index")
"""Which candidate a judgment is about: the scores table's identification of an instance."""
JUDGE_IDENTITY: Final[tuple[str, ...]] = ("judge", "model", "revision")
"""Which judge answered: its panel name, the model it ran and the model's revision."""
CALL_RECORD: Final[tuple[str, ...]] = ("prompt_sha256", "status", "raw_response", "scores")
"""What was asked (by digest) and what came back: the outcome, the answer text, the parsed scores."""
LEDGER_TAIL: Final[tuple[str, ...]] = (
    "error",
    "normalizations",
    "repair_history",
    "cache_key",
    "cache_hit",
    "latency_s",
    "finish_reason",
    "note",
)
"""The call ledger every judgments table carries after the reasons, in this order."""
REASON_COLUMNS: Final[tuple[str, ...]] = ("rationales", "evidence")
"""Names a benchmark may give its reasons column (per-criterion rationales, or cited evidence)."""


@dataclass(frozen=True)
class JudgmentSchema:
    """A benchmark's judgments layout: the shared columns plus what its records add.

    Attributes:
        keys: Record-key columns after ``index`` (with the head they identify one judgment).
        call: Facts of the call after the judge's identity.
        reasons: The JSON column holding the judge's reasons (one of :data:`REASON_COLUMNS`).
        extra: Derived columns after the ledger.
    """

    keys: tuple[str, ...] = ()
    call: tuple[str, ...] = ()
    reasons: str = "rationales"
    extra: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.reasons not in REASON_COLUMNS:
            raise ValueError(f"reasons column {self.reasons!r} is not one of {', '.join(REASON_COLUMNS)}")
        own = (*self.keys, *self.call, *self.extra)
        shared = set(self.shared_columns)
        clashes = sorted({c for c in own if c in shared or own.count(c) > 1})
        if clashes:
            raise ValueError(f"judgment columns declared twice: {', '.join(clashes)}")

    @property
    def shared_columns(self) -> tuple[str, ...]:
        """The columns every benchmark's judgments have, whatever it declares."""
        return (*RECORD_HEAD, *JUDGE_IDENTITY, *CALL_RECORD, *LEDGER_TAIL)

    @property
    def columns(self) -> tuple[str, ...]:
        """All columns, in the order the table is written."""
        return (
            *RECORD_HEAD,
            *self.keys,
            *JUDGE_IDENTITY,
            *self.call,
            *CALL_RECORD,
            self.reasons,
            *LEDGER_TAIL,
            *self.extra,
        )


__all__ = [
    "CALL_RECORD",
    "JUDGE_IDENTITY",
    "LEDGER_TAIL",
    "REASON_COLUMNS",
    "RECORD_HEAD",
    "JudgmentSchema",
]
