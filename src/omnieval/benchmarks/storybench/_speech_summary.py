"""Speech-metadata accuracy of one system, both policies: a view of :mod:`omnieval.analysis`.

Per field: share of matches. Per sample: share of the *covered* fields matched (the paper's four
when every model is present; here the fields with a model, listed in ``fields``). Exact match: every
covered field matched. Valid-only averages over instances with a usable prediction; zero-filled
divides by all instances, counting missing or unusable audio as 0. The numbers come from
:func:`omnieval.analysis.aggregate`, the one implementation of both policies.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from omnieval.metrics.functional.labels import SPEECH_FIELDS

if TYPE_CHECKING:
    import pandas as pd

    from omnieval.benchmarks.storybench._names import Policy


@dataclass(frozen=True)
class SpeechMetaPolicy:
    """Accuracies (0-1) under one policy; None when nothing could be averaged."""

    per_field: dict[str, float | None]
    sample_accuracy: float | None
    exact_match: float | None
    denominator: int


@dataclass(frozen=True)
class SpeechMetaSummary:
    """Both policies of one system's speech-metadata accuracy.

    Attributes:
        fields: the covered fields (some recognizer predicted them), in the protocol's order.
        instances: instances with speech rows (the zero-filled denominator).
        valid: instances with at least one usable prediction (the valid-only denominator).
    """

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

    Raises:
        ValueError: the table holds several systems and ``system`` is None.
    """
    from omnieval.benchmarks.storybench._aggregate import aggregate

    rows = scores[scores["component"] == "speech_meta"]
    if system is not None:
        rows = rows[rows["system"] == system]
    if rows["system"].nunique() > 1:
        raise ValueError("the table holds several systems; pass system=")

    def empty(denominator: int) -> SpeechMetaPolicy:
        return SpeechMetaPolicy({f: None for f in SPEECH_FIELDS}, None, None, denominator)

    if rows.empty:
        return SpeechMetaSummary((), 0, 0, empty(0), empty(0))
    agg = aggregate(rows)
    sp = agg.table.speech
    n = agg.table.n_instances
    valid = 0 if sp is None else int(sp.counts.valid[0])
    if sp is None or valid == 0:
        # Nothing usable: no field counts as covered and neither policy has a value.
        return SpeechMetaSummary((), n, 0, empty(valid), empty(n))
    fields = tuple(f for f in SPEECH_FIELDS if f in sp.fields)

    def policy(name: Policy, denominator: int) -> SpeechMetaPolicy:
        entry = agg.policy_dict(agg.systems[0], name)
        per_field = entry["speech_meta_per_field"]
        return SpeechMetaPolicy(
            {f: per_field.get(f) for f in SPEECH_FIELDS},
            entry["speech_meta_accuracy"],
            entry["speech_meta_exact_match"],
            denominator,
        )

    return SpeechMetaSummary(fields, n, valid, policy("valid_only", valid), policy("zero_filled", n))
