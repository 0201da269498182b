"""Names and facts of Omni-StoryBench aggregation (FORMATS.md section 3, PROTOCOLS.md).

Kept as data so every analysis agrees on component names, scales and which components make up a
modality. The judge tracks and their rubric keys are read from ``benchmark.yaml`` (``judge.tracks``,
``judge.criteria``), where the judge tracks (:mod:`._tracks`) read them too, so reading a scores
table never imports the judging code and the keys are written once. The benchmark's *name* is deliberately not
here: it comes from the table's ``benchmark`` column or from the caller, so this module describes a
table shape and never decides which benchmark a table belongs to.
"""

from __future__ import annotations

from typing import Final, Literal

from omnieval.benchmarks._spec import JudgeSpec, declaration_error, package_spec


def _judge() -> JudgeSpec:
    """The declared judge block; every track must have its criterion keys (the table reads them)."""
    judge = package_spec(__file__).judge
    if judge is None:
        raise declaration_error(__file__, "judge", f"{__name__} needs the judge tracks declared")
    bare = [track for track in judge.tracks if track not in judge.criteria]
    if bare:
        raise declaration_error(__file__, "judge.criteria", f"no criterion keys for {', '.join(bare)}")
    return judge


_JUDGE: Final = _judge()

TRACKS: Final[tuple[str, ...]] = _JUDGE.tracks
"""The judge tracks in display order (``benchmark.yaml``: ``judge.tracks``)."""
MODALITIES: Final[tuple[str, ...]] = ("text", "image", "speech")

RUBRICS: Final[dict[str, tuple[str, ...]]] = {track: _JUDGE.criteria[track] for track in TRACKS}
"""Track -> its criterion keys in verdict-schema order (``benchmark.yaml``: ``judge.criteria``)."""

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

# The automatic metrics and modality scores above are code; the judge tracks they name must be declared.
_NEEDED: Final = (
    {track for _, track in AUTOMATIC.values()}
    | set(MODALITIES)
    | {judged.removeprefix("judge.") for _, judged in MODALITY_COMPONENTS.values()}
)
_UNDECLARED: Final = sorted(_NEEDED - set(TRACKS))
if _UNDECLARED:
    raise declaration_error(__file__, "judge.tracks", f"{__name__} needs the tracks {', '.join(_UNDECLARED)}")

# The automatic row carrying the generated narration's length (Unicode characters after trimming);
# the narration-length controls (appendix F.8) need it.
NARRATION_LENGTH: Final = "narration_length"

Policy = Literal["valid_only", "zero_filled"]
POLICIES: Final[tuple[Policy, Policy]] = ("valid_only", "zero_filled")


def scale(component: str) -> float:
    """Factor that puts ``component`` on the 0-10 Total Average scale."""
    return AUTOMATIC_SCALE if component in AUTOMATIC else 1.0
