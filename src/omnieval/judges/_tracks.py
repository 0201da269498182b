"""The four Omni-StoryBench judge tracks and their criterion keys (PROTOCOLS.md, appendix E.3-E.4).

Facts only: which keys a verdict must hold, which candidate modalities a track needs, and the
JSON schema of a verdict. The wording shown to judges is the benchmark's, registered through
:func:`omnieval.judges.register_templates`.

Example:
    >>> TRACKS["text"].criteria[1]
    'natural_flow_from_current_narration'
    >>> [m.value for m in TRACKS["integrated"].needs]
    ['text', 'image', 'speech']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omnieval.candidates import Modality

SCORE_MIN = 1
SCORE_MAX = 10


@dataclass(frozen=True)
class TrackSpec:
    """One judge track: its name, its four criterion keys (in schema order) and the outputs it judges."""

    name: str
    criteria: tuple[str, str, str, str]
    needs: tuple[Modality, ...]


TRACKS: dict[str, TrackSpec] = {
    "text": TrackSpec(
        "text",
        (
            "alignment_with_metadata",
            "natural_flow_from_current_narration",
            "satisfaction_of_generation_conditions",
            "semantic_consistency_with_ground_truth",
        ),
        (Modality.TEXT,),
    ),
    "image": TrackSpec(
        "image",
        (
            "alignment_with_metadata",
            "visual_narrative_continuity_from_current_scene",
            "satisfaction_of_generation_conditions",
            "semantic_consistency_with_ground_truth",
        ),
        (Modality.IMAGE,),
    ),
    "speech": TrackSpec(
        "speech",
        (
            "alignment_with_metadata",
            "naturalness_and_conversational_relevance",
            "satisfaction_of_generation_conditions",
            "semantic_consistency_and_persona_match_with_ground_truth",
        ),
        (Modality.SPEECH,),
    ),
    "integrated": TrackSpec(
        "integrated",
        (
            "alignment_with_metadata",
            "natural_multimodal_continuity_from_current_page",
            "satisfaction_of_generation_conditions",
            "multimodal_semantic_consistency_with_ground_truth",
        ),
        (Modality.TEXT, Modality.IMAGE, Modality.SPEECH),
    ),
}

TRACK_NAMES: tuple[str, ...] = tuple(TRACKS)


def track(name: str) -> TrackSpec:
    """Return the track called ``name`` or raise ``ValueError`` listing the known tracks."""
    try:
        return TRACKS[name]
    except KeyError:
        raise ValueError(f"unknown judge track {name!r}; known: {', '.join(TRACK_NAMES)}") from None


def verdict_schema(
    track_name: str, *, rationale_max_chars: int | None = None, rationale_first: bool = False
) -> dict[str, Any]:
    """JSON schema of one verdict: every criterion maps to ``{"score": 1..10, "rationale": str}``.

    ``rationale_max_chars`` and ``rationale_first`` only shape what constrained decoding generates
    (the CPU judge bounds its output length, and writes its reason before its score so the score can
    follow from it); the ledger validates the same keys regardless of order or length.
    """
    rationale: dict[str, Any] = {"type": "string", "minLength": 1}
    if rationale_max_chars is not None:
        rationale["maxLength"] = rationale_max_chars
    score = {"type": "integer", "enum": list(range(SCORE_MIN, SCORE_MAX + 1))}
    fields = (
        {"rationale": rationale, "score": score}
        if rationale_first
        else {"score": score, "rationale": rationale}
    )
    criterion = {
        "type": "object",
        "properties": fields,
        "required": list(fields),
        "additionalProperties": False,
    }
    keys = track(track_name).criteria
    return {
        "type": "object",
        "properties": {key: criterion for key in keys},
        "required": list(keys),
        "additionalProperties": False,
    }


UNRECOVERABLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"unrecoverable": {"type": "boolean", "enum": [True]}},
    "required": ["unrecoverable"],
    "additionalProperties": False,
}


def repair_schema(track_name: str) -> dict[str, Any]:
    """What the repair model may answer: the track's verdict or ``{"unrecoverable": true}``."""
    return {"anyOf": [verdict_schema(track_name), UNRECOVERABLE_SCHEMA]}
