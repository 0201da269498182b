"""Names and facts of Omni-StoryBench aggregation (FORMATS.md section 3, PROTOCOLS.md).

Kept as data so every analysis agrees on component names, scales and which components make up a
modality. The rubric keys repeat :mod:`omnieval.judges._tracks` (a test checks they match) so that
reading a scores table never imports the judging code. The benchmark's *name* is deliberately not
here: it comes from the table's ``benchmark`` column or from the caller, so this module describes a
table shape and never decides which benchmark a table belongs to.
"""

from __future__ import annotations

from typing import Final, Literal

TRACKS: Final[tuple[str, ...]] = ("text", "image", "speech", "integrated")
MODALITIES: Final[tuple[str, ...]] = ("text", "image", "speech")

RUBRICS: Final[dict[str, tuple[str, str, str, str]]] = {
    "text": (
        "alignment_with_metadata",
        "natural_flow_from_current_narration",
        "satisfaction_of_generation_conditions",
        "semantic_consistency_with_ground_truth",
    ),
    "image": (
        "alignment_with_metadata",
        "visual_narrative_continuity_from_current_scene",
        "satisfaction_of_generation_conditions",
        "semantic_consistency_with_ground_truth",
    ),
    "speech": (
        "alignment_with_metadata",
        "naturalness_and_conversational_relevance",
        "satisfaction_of_generation_conditions",
        "semantic_consistency_and_persona_match_with_ground_truth",
    ),
    "integrated": (
        "alignment_with_metadata",
        "natural_multimodal_continuity_from_current_page",
        "satisfaction_of_generation_conditions",
        "multimodal_semantic_consistency_with_ground_truth",
    ),
}

SPEECH_FIELDS: Final[tuple[str, ...]] = ("emotion", "speed", "pitch", "gender")

# Output component name -> (scores-table component, track) for the three automatic metrics.
AUTOMATIC: Final[dict[str, tuple[str, str]]] = {
    "bertscore_f1": ("bertscore_f1", "text"),
    "image_similarity": ("image_similarity", "image"),
    "speech_meta_accuracy": ("speech_meta", "speech"),
}
JUDGE: Final[dict[str, str]] = {f"judge.{t}": t for t in TRACKS}

# Judge id of the placeholder rows a panel writes for a track it has no judge for (``not_applicable``).
UNAVAILABLE_JUDGE: Final = "unavailable"

# The seven Total Average components, in the paper's order.
COMPONENTS: Final[tuple[str, ...]] = (*AUTOMATIC, *JUDGE)

# Automatic metrics live on 0-1 and enter the Total Average multiplied by this.
AUTOMATIC_SCALE: Final = 10.0

# A modality score (appendix E.6) averages the scaled automatic metric and the three-judge mean.
MODALITY_COMPONENTS: Final[dict[str, tuple[str, str]]] = {
    "text": ("bertscore_f1", "judge.text"),
    "image": ("image_similarity", "judge.image"),
    "speech": ("speech_meta_accuracy", "judge.speech"),
}

# The automatic row carrying the generated narration's length (Unicode characters after trimming);
# the narration-length controls (appendix F.8) need it.
NARRATION_LENGTH: Final = "narration_length"

Policy = Literal["valid_only", "zero_filled"]
POLICIES: Final[tuple[Policy, Policy]] = ("valid_only", "zero_filled")


def scale(component: str) -> float:
    """Factor that puts ``component`` on the 0-10 Total Average scale."""
    return AUTOMATIC_SCALE if component in AUTOMATIC else 1.0
