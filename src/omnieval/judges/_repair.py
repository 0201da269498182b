"""The repair half of the validity ledger: what a repair model's answer is allowed to change.

After judging, non-empty answers that local normalization could not read go to a repair model with
schema-constrained decoding (verdict schema or ``{"unrecoverable": true}``). Its answer is accepted
only as a *format* fix:

- ``{"unrecoverable": true}`` or an unreadable repair -> ``unrecoverable``;
- a repaired score that does not appear as a number in the original answer, or a rationale whose
  words are mostly absent from it, means the repair invented content -> the record is excluded
  (``unrecoverable``, with the reason in its repair history), as the paper excluded such records;
- otherwise -> ``repaired``, with the repaired scores, still credited to the original judge.

Example:
    >>> original = 'alignment_with_metadata: 8 - fits; natural_flow_from_current_narration 7 (smooth)'
    >>> invented_scores(original, {"alignment_with_metadata": 8, "natural_flow_from_current_narration": 9})
    ['natural_flow_from_current_narration']
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from omnieval.judges._parse import ParseResult, parse_verdict

REPAIRED = "repaired"
UNRECOVERABLE = "unrecoverable"
# Share of a repaired rationale's words that must occur in the original answer.
RATIONALE_WORD_OVERLAP = 0.5
_WORD = re.compile(r"[a-z0-9]+")


class _Scored(Protocol):
    @property
    def ok(self) -> bool: ...
    @property
    def error(self) -> str: ...
    @property
    def scores(self) -> Mapping[str, int]: ...


R = TypeVar("R", bound=_Scored)


@dataclass(frozen=True)
class RepairOutcome(Generic[R]):
    """The decision on one repair answer: ``repaired`` (with its reading) or ``unrecoverable``."""

    status: str
    reason: str
    reading: R | None = None


def _number_in(text: str, value: int) -> bool:
    return re.search(rf"(?<![0-9.]){value}(?:\.0+)?(?![0-9])", text) is not None


def invented_scores(original: str, scores: Mapping[str, int]) -> list[str]:
    """Criteria whose repaired score is not written anywhere in the original answer."""
    return [key for key, value in scores.items() if not _number_in(original, value)]


def invented_rationales(original: str, rationales: Mapping[str, str]) -> list[str]:
    """Criteria whose repaired rationale is mostly made of words the original answer never used."""
    source_words = set(_WORD.findall(original.lower()))
    out: list[str] = []
    for key, text in rationales.items():
        words = _WORD.findall(text.lower())
        if not words:
            out.append(key)
            continue
        found = sum(w in source_words for w in words) / len(words)
        if found < RATIONALE_WORD_OVERLAP:
            out.append(key)
    return out


def _is_unrecoverable_marker(text: str, *, json_only: bool = False) -> bool:
    try:
        value = json.loads(text.strip())
    except ValueError:
        return not json_only and bool(re.fullmatch(r"\s*\{\s*\"unrecoverable\"\s*:\s*true\s*\}\s*", text))
    return isinstance(value, dict) and value.get("unrecoverable") is True


def decide_repair(
    original: str,
    repair_answer: str,
    read: Callable[[str], R],
    texts: Callable[[R], Mapping[str, str]],
    *,
    texts_name: str = "rationales",
    source: str = "original answer",
    json_marker_only: bool = False,
) -> RepairOutcome[R]:
    """Decide what a repair answer means for the call whose raw answer was ``original``.

    Any benchmark's answer shape: ``read`` reads the repair answer as a verdict would be read and
    ``texts`` gives its reasons (rationales, evidence). ``texts_name`` and ``source`` are how the
    exclusion reasons name them (``"... supplied <texts_name> absent from the <source> (...)"``);
    ``json_marker_only``: only a JSON ``{"unrecoverable": true}`` is the repair model's refusal
    (PRISM's reading; storybench's also takes the marker's text when it fails to load as JSON).
    """
    if _is_unrecoverable_marker(repair_answer, json_only=json_marker_only):
        return RepairOutcome(UNRECOVERABLE, "the repair model found the answer unrecoverable")
    reading = read(repair_answer)
    if not reading.ok:
        return RepairOutcome(UNRECOVERABLE, f"the repair answer is not a valid verdict: {reading.error}")
    missing_scores = invented_scores(original, reading.scores)
    if missing_scores:
        return RepairOutcome(
            UNRECOVERABLE,
            f"excluded: the repair supplied scores absent from the {source} ("
            + ", ".join(missing_scores)
            + ")",
        )
    missing_reasons = invented_rationales(original, texts(reading))
    if missing_reasons:
        return RepairOutcome(
            UNRECOVERABLE,
            f"excluded: the repair supplied {texts_name} absent from the {source} ("
            + ", ".join(missing_reasons)
            + ")",
        )
    return RepairOutcome(REPAIRED, "format repaired", reading)


def judge_repair(original: str, repair_answer: str, track_name: str) -> RepairOutcome[ParseResult]:
    """Decide what a repair answer means for the record whose raw answer was ``original``."""
    return decide_repair(
        original, repair_answer, lambda answer: parse_verdict(answer, track_name), lambda r: r.rationales
    )
