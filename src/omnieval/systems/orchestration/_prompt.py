"""The orchestration planner's prompt, answer schema and plan rules (Omni-StoryBench).

The planner writes the next page's narration itself and hands the picture and the spoken line to
experts, so its answer holds three things: ``narration``, ``image_prompt`` and ``speech`` (the line
and its delivery in the target speech vocabularies of Omni-StoryBench).

A plan is unusable, and the example fails with every modality missing, when:

- a required field is absent or empty, or a delivery label is outside its vocabulary
  (``missing_field``; labels are compared case-insensitively);

Delivery labels travel either as ``words`` (``"happy"``: short strings, checked after decoding) or
as ``codes`` (``1``: integers constrained by the schema's ``enum``, which llama.cpp's skeleton
decoder picks from the model's next-token distribution, so a small planner cannot answer a word
outside the vocabulary; the prompt gives each code's word).
- the image prompt does not describe a picture (``unusable_prompt``): fewer than
  :data:`MIN_PROMPT_WORDS` words, fewer than :data:`MIN_CONTENT_WORDS` distinct content words (three
  letters or more, not a function word), or a placeholder such as "image", "N/A" or "none".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from omnieval.systems._generating import PlanningFailure

#: Delivery vocabularies of Omni-StoryBench's target speech (storybench's SPEECH_LABELS).
SPEECH_LABELS: dict[str, tuple[str, ...]] = {
    "emotion": ("neutral", "happy", "sad", "angry"),
    "gender": ("female", "male"),
    "speed": ("slow", "normal", "fast"),
    "pitch": ("low", "normal", "high"),
}
MIN_PROMPT_WORDS = 4
MIN_CONTENT_WORDS = 3
_PLACEHOLDERS = {
    "image",
    "picture",
    "illustration",
    "prompt",
    "scene",
    "na",
    "n a",
    "none",
    "null",
    "tbd",
    "todo",
}
_FUNCTION_WORDS = frozenset(
    [
        "the",
        "and",
        "but",
        "for",
        "with",
        "from",
        "into",
        "onto",
        "over",
        "under",
        "that",
        "this",
        "these",
        "those",
        "their",
        "there",
        "then",
        "than",
        "his",
        "her",
        "its",
        "our",
        "your",
        "you",
        "they",
        "them",
        "she",
        "him",
        "who",
        "whom",
        "what",
        "when",
        "where",
        "which",
        "while",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "not",
        "nor",
        "all",
        "any",
        "each",
        "some",
        "very",
        "just",
        "also",
    ]
)
_WORD = re.compile(r"[A-Za-z]+")

SYSTEM_PROMPT = (
    "You are the story planner of a picture-book generator. From the book details, the current page "
    "and the instructions for the next page, you plan the next page: its narration, a description "
    "for the illustrator, and one line a character says aloud with how it is said. "
    "Answer with a single JSON object and nothing else."
)


def schema(narration_max: int, prompt_max: int, line_max: int, labels: str = "words") -> dict[str, Any]:
    """The plan's JSON schema (fixed shape, so llama.cpp's skeleton decoder can fill it fast).

    With ``labels="words"`` delivery labels are short strings, not string enums (a string enum
    would force llama.cpp onto its slower grammar path); the allowed values are in the prompt and
    checked by :func:`check_plan`. With ``labels="codes"`` each label is an integer ``enum``.
    """

    def label(name: str) -> dict[str, Any]:
        if labels == "codes":
            return {"type": "integer", "enum": list(range(len(SPEECH_LABELS[name])))}
        return {"type": "string", "minLength": 1, "maxLength": 8}

    def text(limit: int) -> dict[str, Any]:
        return {"type": "string", "minLength": 1, "maxLength": limit}

    speech = {
        "type": "object",
        "properties": {
            "text": text(line_max),
            **{name: label(name) for name in SPEECH_LABELS},
        },
        "required": ["text", *SPEECH_LABELS],
    }
    return {
        "type": "object",
        "properties": {"narration": text(narration_max), "image_prompt": text(prompt_max), "speech": speech},
        "required": ["narration", "image_prompt", "speech"],
    }


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rsplit(" ", 1)[0] + "..."


def user_prompt(
    inputs: Any, *, current_max_chars: int = 600, plan_instructions: bool = True, labels: str = "words"
) -> str:
    """The planner's request for one storybench task (``data.TaskInputs``: no target in it).

    Without ``plan_instructions`` only the task itself (book, current page, next page's conditions).
    """
    meta, cond = inputs.metadata, inputs.condition
    cast = "; ".join(f"{c.name}: {_clip(c.description, 120)}" for c in meta.characters) or "none listed"
    on_page = []
    for c in cond.characters:
        extra = ", ".join(f"{k}: {v}" for k, v in c.extra.items() if isinstance(v, str) and v)
        on_page.append(f"- {c.name} ({extra})" if extra else f"- {c.name}")
    task = [
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
    if not plan_instructions:
        return "\n".join(task)
    return "\n".join(
        [
            *task,
            "",
            "Write the JSON plan:",
            "narration: the next page's text, two sentences in the book's tense and voice.",
            "image_prompt: one sentence for the illustrator naming the characters shown, the place, "
            "the time of day and the mood.",
            "speech.text: the words one character on the next page says aloud.",
            *(_label_instructions(labels)),
        ]
    )


def _label_instructions(labels: str) -> list[str]:
    if labels == "codes":

        def codes(name: str) -> str:
            return ", ".join(f"{i} {word}" for i, word in enumerate(SPEECH_LABELS[name]))

        return [
            f"speech.emotion: a number ({codes('emotion')}); for any other feeling the closest "
            "(curious or calm: neutral; excited or proud: happy; scared or worried: sad).",
            f"speech.gender: the speaker's, a number ({codes('gender')}). speech.speed: a number "
            f"({codes('speed')}). speech.pitch: a number ({codes('pitch')}).",
        ]
    return [
        "speech.emotion: exactly one of neutral, happy, sad, angry; for any other feeling use the "
        "closest (curious or calm: neutral; excited or proud: happy; scared or worried: sad).",
        "speech.gender: the speaker's, female or male. speech.speed: slow, normal or fast. "
        "speech.pitch: low, normal or high.",
    ]


def _normalise(value: Any) -> str:
    return str(value).strip().strip(".").lower() if isinstance(value, str) else ""


def label_word(name: str, value: Any) -> str | None:
    """A delivery label as its vocabulary word: a word (any case) or a code; None when neither.

    >>> label_word("emotion", " Happy"), label_word("emotion", 3), label_word("speed", 7), label_word("pitch", True)
    ('happy', 'angry', None, None)
    """
    values = SPEECH_LABELS[name]
    if isinstance(value, int) and not isinstance(value, bool):
        return values[value] if 0 <= value < len(values) else None
    word = _normalise(value)
    return word if word in values else None


def check_plan(plan: Mapping[str, Any]) -> tuple[PlanningFailure, str] | None:
    """The kind's rules on top of the schema (see the module docstring); None when usable.

    >>> good = {"narration": "x", "image_prompt": "Pip the fox runs through the snowy forest at night",
    ...         "speech": {"text": "Hi", "emotion": "Happy", "gender": "male", "speed": "fast", "pitch": "low"}}
    >>> check_plan(good) is None
    True
    >>> check_plan({**good, "image_prompt": "a picture"})[0].value
    'unusable_prompt'
    >>> check_plan({**good, "speech": {**good["speech"], "emotion": "joyful"}})
    (<PlanningFailure.MISSING_FIELD: 'missing_field'>, "speech.emotion: 'joyful' is not one of neutral, happy, sad, angry")
    """
    speech = plan.get("speech")
    if not isinstance(speech, Mapping):
        return PlanningFailure.MISSING_FIELD, "speech: not an object"
    for name, values in SPEECH_LABELS.items():
        if label_word(name, speech.get(name)) is None:
            return (
                PlanningFailure.MISSING_FIELD,
                f"speech.{name}: {speech.get(name)!r} is not one of {', '.join(values)}",
            )
    problem = image_prompt_problem(str(plan.get("image_prompt") or ""))
    return (PlanningFailure.UNUSABLE_PROMPT, problem) if problem else None


def image_prompt_problem(prompt: str) -> str:
    """Why an image prompt is unusable ('' when it is usable).

    >>> image_prompt_problem("N/A"), image_prompt_problem("the the the the")
    ("image prompt is a placeholder: 'N/A'", 'image prompt has 0 distinct content words (needs 3): the the the the')
    >>> image_prompt_problem("Marta waves from the lighthouse rock at dawn")
    ''
    """
    words = _WORD.findall(prompt)
    flat = " ".join(w.lower() for w in words)
    if flat in _PLACEHOLDERS or not words:
        return f"image prompt is a placeholder: {prompt.strip()!r}"
    if len(words) < MIN_PROMPT_WORDS:
        return f"image prompt has {len(words)} words (needs {MIN_PROMPT_WORDS}): {prompt.strip()!r}"
    content = {w.lower() for w in words if len(w) >= 3 and w.lower() not in _FUNCTION_WORDS}
    if len(content) < MIN_CONTENT_WORDS:
        return f"image prompt has {len(content)} distinct content words (needs {MIN_CONTENT_WORDS}): {prompt.strip()}"
    return ""


def speech_labels(plan: Mapping[str, Any]) -> dict[str, str]:
    """The plan's delivery labels as words (call after :func:`check_plan` accepted the plan)."""
    speech = plan["speech"]
    return {name: label_word(name, speech[name]) or "" for name in SPEECH_LABELS}
