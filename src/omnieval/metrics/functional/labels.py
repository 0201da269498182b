"""Label normalization and per-field matching for speech metadata (appendix E.1)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

SPEECH_FIELDS: tuple[str, ...] = ("emotion", "speed", "pitch", "gender")
"""The four scored speech-metadata fields, in the paper's order."""


def normalize_label(label: str | None) -> str:
    """Lower-case and strip (the paper's comparison rule); None becomes ''."""
    return (label or "").strip().lower()


def labels_match(predicted: str | None, target: str | None) -> bool:
    """True when both labels are non-empty and equal after normalization.

    Example:
        >>> labels_match(" Happy", "happy"), labels_match(None, "happy")
        (True, False)
    """
    p, t = normalize_label(predicted), normalize_label(target)
    return bool(p) and p == t


def field_accuracy(predicted: Mapping[str, str | None], target: Mapping[str, str | None]) -> dict[str, float]:
    """1.0/0.0 per field present in ``predicted`` (fields predicted as None are left out)."""
    return {
        field: 1.0 if labels_match(predicted[field], target.get(field)) else 0.0
        for field in SPEECH_FIELDS
        if field in predicted and predicted[field] is not None
    }


def sample_accuracy(per_field: Mapping[str, float], fields: Sequence[str] = SPEECH_FIELDS) -> float:
    """Fraction of ``fields`` matched (the paper's per-sample metadata accuracy)."""
    return sum(per_field.get(f, 0.0) for f in fields) / float(len(fields))


def exact_match(per_field: Mapping[str, float], fields: Sequence[str] = SPEECH_FIELDS) -> float:
    """1.0 when every field in ``fields`` matched."""
    return 1.0 if all(per_field.get(f, 0.0) == 1.0 for f in fields) else 0.0
