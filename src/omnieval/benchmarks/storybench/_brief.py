"""How Omni-StoryBench words a page turn for the models of generating kinds (their :class:`Brief`).

The generating kinds (``orchestration``, ``semi-orchestration``, ``openai-omni`` as a backbone) know
no benchmark: they read the brief built here from a transition's visible inputs
(:class:`~omnieval.benchmarks.storybench._records.TaskInputs`, never a target). It holds:

- the **context**: the book, the current page (its narration shortened to the system's limit) and
  what the next page must show;
- the planner's **system prompt** and **plan instructions** (narration, image prompt, spoken line
  with its delivery in :data:`PLAN_LABELS`, as words or as codes);
- the **writer prompt** of a text-only backbone, the **picture** note (the next page's scene) and
  the **delivery** the conditions imply (the first speaking character's emotion);
- the **field notes** and **follow-up** of a two-modality backbone asked for intermediate fields;
- the **requests** of a model that writes and speaks the page itself (``openai-omni``): the next
  page's narration (text, shown the current picture when the system sends pictures), then the line
  a character says on it (speech, quoting that narration). Their templates are
  :data:`NARRATION_PROMPT` and :data:`SPEECH_PROMPT`; a suite may replace them as
  ``prompts.narration`` and ``prompts.speech``.
"""

from __future__ import annotations

import json
from typing import Any

from omnieval.benchmarks.storybench._schema import SPEECH_LABELS
from omnieval.systems import IMAGE_ROLE, Ask, Brief, Part, PlanRequest

#: Delivery vocabularies of the spoken line a plan holds, in plan order: the target speech labels
#: (:data:`~._schema.SPEECH_LABELS`) without their ``speech_`` prefix.
PLAN_LABELS: dict[str, tuple[str, ...]] = {
    name: SPEECH_LABELS[f"speech_{name}"] for name in ("emotion", "gender", "speed", "pitch")
}

#: The orchestration planner's system message.
PLANNER_PROMPT = (
    "You are the story planner of a picture-book generator. From the book details, the current page "
    "and the instructions for the next page, you plan the next page: its narration, a description "
    "for the illustrator, and one line a character says aloud with how it is said. "
    "Answer with a single JSON object and nothing else."
)

#: The system message of a text-only backbone, which writes the narration itself.
WRITER_PROMPT = (
    "You write the next page of an illustrated children's story book. Reply with the next page's "
    "narration only: two or three sentences in the book's tense and voice, including one short line "
    "a character says aloud in double quotes. No title, no notes."
)

#: After a two-modality backbone spoke the page's line: the narration and the intermediate fields
#: as one JSON object.
FOLLOWUP = (
    "The line a character says aloud on the next page: {line}\n\n"
    "Answer with one JSON object and nothing else, with these fields:\n"
    "\"narration\": the next page's text, two or three sentences in the book's tense and voice;\n"
    "{fields}."
)

#: An omni model's first request: the next page's narration (text). Placeholders: ``{metadata}``,
#: ``{current_text}``, ``{condition}``, ``{image_note}`` (says the current picture is attached, when
#: it is).
NARRATION_PROMPT = """You are continuing an illustrated, narrated story book.

Book: {metadata}

Current page narration:
{current_text}

{image_note}What the next page must contain: {condition}

Write the narration of the next page only: a few sentences in the book's tense, perspective and style,
following the description above. Answer with the narration text and nothing else."""

#: An omni model's second request: the line a character speaks on the next page (speech).
#: Placeholders: ``{metadata}``, ``{condition}``, ``{narration}`` (the first request's answer).
SPEECH_PROMPT = """You are voicing a character in an illustrated story book.

Book: {metadata}

What the next page contains: {condition}

Next page narration:
{narration}

Say aloud the one short line a character of the next page speaks, in that character's voice and with
the emotion the page calls for. Answer with that spoken line only, no narration and no quotes."""

#: What the narration request says when the current page's picture is attached.
IMAGE_NOTE = "The current page's picture is attached.\n\n"

_PLAN_HEAD = (
    "Write the JSON plan:",
    "narration: the next page's text, two sentences in the book's tense and voice.",
    "image_prompt: one sentence for the illustrator naming the characters shown, the place, "
    "the time of day and the mood.",
    "speech.text: the words one character on the next page says aloud.",
)


def _codes(name: str) -> str:
    return ", ".join(f"{i} {word}" for i, word in enumerate(PLAN_LABELS[name]))


def _label_lines(style: str) -> tuple[str, ...]:
    if style == "codes":
        return (
            f"speech.emotion: a number ({_codes('emotion')}); for any other feeling the closest "
            "(curious or calm: neutral; excited or proud: happy; scared or worried: sad).",
            f"speech.gender: the speaker's, a number ({_codes('gender')}). speech.speed: a number "
            f"({_codes('speed')}). speech.pitch: a number ({_codes('pitch')}).",
        )
    return (
        "speech.emotion: exactly one of neutral, happy, sad, angry; for any other feeling use the "
        "closest (curious or calm: neutral; excited or proud: happy; scared or worried: sad).",
        "speech.gender: the speaker's, female or male. speech.speed: slow, normal or fast. "
        "speech.pitch: low, normal or high.",
    )


#: Label style -> the plan instructions that follow the context.
PLAN_INSTRUCTIONS: dict[str, str] = {
    style: "\n".join([*_PLAN_HEAD, *_label_lines(style)]) for style in ("words", "codes")
}

#: How a prompt describes each intermediate field a backbone may be asked for.
FIELD_NOTES: dict[str, str] = {
    "image_prompt": (
        '"image_prompt": one sentence for the illustrator of the next page naming the characters '
        "shown, the place, the time of day and the mood"
    ),
    "speech": '"speech": an object with "text" (the words one character says aloud) and '
    + "; ".join(f"{name}: one of {', '.join(values)}" for name, values in PLAN_LABELS.items()),
}

#: What every page turn asks a planner for (the same for every transition).
PLAN = PlanRequest(
    system_prompt=PLANNER_PROMPT,
    instructions=PLAN_INSTRUCTIONS,
    labels=PLAN_LABELS,
    field_notes=FIELD_NOTES,
    followup=FOLLOWUP,
)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rsplit(" ", 1)[0] + "..."


def context(inputs: Any, current_max_chars: int) -> str:
    """The page turn in words: the book, the current page (its narration shortened to
    ``current_max_chars``) and what the next page must show."""
    meta, cond = inputs.metadata, inputs.condition
    cast = "; ".join(f"{c.name}: {_clip(c.description, 120)}" for c in meta.characters) or "none listed"
    on_page = []
    for c in cond.characters:
        extra = ", ".join(f"{k}: {v}" for k, v in c.extra.items() if isinstance(v, str) and v)
        on_page.append(f"- {c.name} ({extra})" if extra else f"- {c.name}")
    return "\n".join(
        [
            f"Book: {meta.genre}; {meta.topic}. Style: {meta.style}. "
            f"Narrated in the {meta.narrative_tense} tense, {meta.narrative_perspective}.",
            f"Characters: {cast}",
            f"Current page: {_clip(inputs.current_text, current_max_chars)}",
            "Next page must show:",
            f"Scene: {cond.scene}",
            f"Narration should: {cond.text_content}",
            "Characters on it:",
            *(on_page or ["- none"]),
            f"Ambient sound: {cond.ambient_sound}",
        ]
    )


def speaker_emotion(inputs: Any) -> str:
    """The emotion of the first condition character who speaks, if it is in the vocabulary."""
    for c in inputs.condition.characters:
        intent = str(c.extra.get("speech_intent", "")).lower()
        if intent and "silent" not in intent:
            emotion = str(c.extra.get("emotion", "")).strip().lower()
            return emotion if emotion in PLAN_LABELS["emotion"] else "neutral"
    return "neutral"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def asks(inputs: Any, pictures: bool) -> tuple[Ask, ...]:
    """The requests of a model that writes and speaks the next page itself: the narration, then
    the spoken line quoting it; ``pictures``: the system attaches the current page's picture."""
    metadata, condition = _json(inputs.metadata.as_dict()), _json(inputs.condition.as_dict())
    narration = Ask(
        name="narration",
        answer="text",
        template=NARRATION_PROMPT,
        values={
            "metadata": metadata,
            "current_text": inputs.current_text,
            "condition": condition,
            "image_note": IMAGE_NOTE if pictures else "",
        },
        parts=(Part(media=IMAGE_ROLE),) if pictures else (),
    )
    speech = Ask(
        name="speech",
        answer="speech",
        template=SPEECH_PROMPT,
        values={"metadata": metadata, "condition": condition},
        earlier={"narration": "narration"},
    )
    return (narration, speech)


def brief(inputs: Any) -> Brief:
    """The brief of one transition's visible inputs."""
    return Brief(
        context=lambda limit: context(inputs, limit),
        writer_prompt=WRITER_PROMPT,
        picture=inputs.condition.scene,
        delivery={"emotion": speaker_emotion(inputs)},
        plan=PLAN,
        asks=lambda pictures: asks(inputs, pictures),
    )


__all__ = [
    "FIELD_NOTES",
    "FOLLOWUP",
    "IMAGE_NOTE",
    "NARRATION_PROMPT",
    "PLAN",
    "PLANNER_PROMPT",
    "PLAN_INSTRUCTIONS",
    "PLAN_LABELS",
    "SPEECH_PROMPT",
    "WRITER_PROMPT",
    "asks",
    "brief",
    "context",
    "speaker_emotion",
]
