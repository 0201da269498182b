"""caption_f1's hooks: the record model and the metric; every other hook is a DeclaredBenchmark default."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from omnieval.benchmarks import DeclaredBenchmark, NoOptions, Outputs, Record, benchmark


class Caption(Record):
    """One line of captions.jsonl."""

    subject: str = Field(min_length=1)
    """What to caption; the system sees it."""
    reference: str = Field(min_length=1)
    """The reference caption; a target, never shown to a system."""


def token_f1(candidate: str, reference: str) -> float:
    """Harmonic mean of token precision and recall over the two bags of case-folded words.

    >>> round(token_f1("a red fox", "The red fox jumps"), 3)
    0.571
    """
    cand, ref = Counter(candidate.casefold().split()), Counter(reference.casefold().split())
    common = sum((cand & ref).values())
    return 0.0 if common == 0 else 2 * common / (sum(cand.values()) + sum(ref.values()))


@benchmark()
class CaptionF1(DeclaredBenchmark[Caption, NoOptions]):
    """Token F1 of a caption against its reference; a missing caption counts 0 when zero-filled."""

    record = Caption
    targets = ("reference",)
    score_range: ClassVar[Mapping[str, tuple[float, float]]] = {"token_f1": (0.0, 1.0)}

    def score(self, record: Caption, outputs: Outputs, config: NoOptions) -> dict[str, float]:
        return {"token_f1": token_f1(outputs.text(), record.reference)}
