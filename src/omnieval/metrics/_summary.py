"""Speech-metadata accuracy from scores-table rows (appendix E.1 and F.4).

Per field: share of matches. Per sample: share of the *covered* fields matched (the paper's four
when every model is present; here the fields with a model, listed in ``fields``). Exact match: every
covered field matched. Valid-only averages over instances with a usable prediction; zero-filled
divides by all instances, counting missing or unusable audio as 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from omnieval.metrics.functional.labels import SPEECH_FIELDS
from omnieval.scores import VALUED_STATUSES

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class SpeechMetaPolicy:
    """Accuracies (0-1) under one policy; None when nothing could be averaged."""

    per_field: dict[str, float | None]
    sample_accuracy: float | None
    exact_match: float | None
    denominator: int


@dataclass(frozen=True)
class SpeechMetaSummary:
    fields: tuple[str, ...]
    instances: int
    valid: int
    valid_only: SpeechMetaPolicy
    zero_filled: SpeechMetaPolicy

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize_speech_meta(scores: pd.DataFrame, *, system: str | None = None) -> SpeechMetaSummary:
    """Per-field accuracy, sample accuracy and exact match, valid-only and zero-filled.

    Args:
        scores: Scores table holding ``speech_meta`` rows (other rows are ignored).
        system: Restrict to one system (required when the table holds several).
    """
    rows = scores[scores["component"] == "speech_meta"]
    if system is not None:
        rows = rows[rows["system"] == system]
    if rows["system"].nunique() > 1:
        raise ValueError("the table holds several systems; pass system=")
    fields = tuple(
        f for f in SPEECH_FIELDS if ((rows["criterion"] == f) & rows["status"].isin(VALUED_STATUSES)).any()
    )
    instances = sorted(set(rows["index"]))
    by_instance: dict[int, dict[str, float]] = {}
    for index, criterion, value, status in zip(
        rows["index"], rows["criterion"], rows["value"], rows["status"], strict=True
    ):
        if status in VALUED_STATUSES and criterion in fields:
            by_instance.setdefault(int(index), {})[criterion] = float(value)
    valid = [i for i in instances if i in by_instance]

    def policy(denominator: int) -> SpeechMetaPolicy:
        if denominator == 0 or not fields:
            return SpeechMetaPolicy({f: None for f in SPEECH_FIELDS}, None, None, denominator)
        per_field: dict[str, float | None] = {
            f: sum(by_instance[i].get(f, 0.0) for i in valid) / denominator if f in fields else None
            for f in SPEECH_FIELDS
        }
        sample = (
            sum(sum(by_instance[i].get(f, 0.0) for f in fields) / len(fields) for i in valid) / denominator
        )
        exact = (
            sum(1.0 for i in valid if all(by_instance[i].get(f, 0.0) == 1.0 for f in fields)) / denominator
        )
        return SpeechMetaPolicy(per_field, sample, exact, denominator)

    return SpeechMetaSummary(fields, len(instances), len(valid), policy(len(valid)), policy(len(instances)))
