"""The plan of the planning kinds: its JSON schema, the planner's request and the plan rules.

Shared by ``orchestration`` (the whole plan) and ``semi-orchestration`` (the part of it a
two-modality backbone hands the third modality's expert); no system kind imports another.

The planner writes the output's narration itself and hands the picture and the spoken line to
experts, so its answer holds three things: ``narration``, ``image_prompt`` and ``speech`` (the line
and its delivery labels). What the planner is told, and the label vocabularies, are the benchmark's:
they come with the task (:class:`~omnieval.systems.PlanRequest` in its
:class:`~omnieval.systems.Brief`), so this module names no benchmark.

A plan is unusable, and the example fails with every modality missing, when:

- a required field is absent or empty, or a delivery label is outside its vocabulary
  (``missing_field``; labels are compared case-insensitively);

Delivery labels travel either as ``words`` (``"happy"``: short strings, checked after decoding) or
as ``codes`` (``1``: integers constrained by the schema's ``enum``, which llama.cpp's skeleton
decoder picks from the model's next-token distribution, so a small planner cannot answer a word
outside the vocabulary; the benchmark's instructions give each code's word).
- the image prompt does not describe a picture (``unusable_prompt``): fewer than
  :data:`MIN_PROMPT_WORDS` words, fewer than :data:`MIN_CONTENT_WORDS` distinct content words (three
  letters or more, not a function word), or a placeholder such as "image", "N/A" or "none".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from omnieval.systems._generating import PlanningFailure
from omnieval.systems._planner import PlanCheck
from omnieval.systems._task import Brief, PlanRequest

#: Label name -> vocabulary, in code order (a :attr:`PlanRequest.labels`).
Labels = Mapping[str, tuple[str, ...]]

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


def schema(
    labels: Labels, narration_max: int, prompt_max: int, line_max: int, style: str = "words"
) -> dict[str, Any]:
    """The plan's JSON schema (fixed shape, so llama.cpp's skeleton decoder can fill it fast).

    With ``style="words"`` delivery labels are short strings, not string enums (a string enum
    would force llama.cpp onto its slower grammar path); the allowed values are in the prompt and
    checked by :func:`check_plan`. With ``style="codes"`` each label is an integer ``enum``.

    >>> s = schema({"emotion": ("calm", "glad")}, 300, 200, 100, "codes")
    >>> s["properties"]["speech"]["properties"]["emotion"], s["properties"]["speech"]["required"]
    ({'type': 'integer', 'enum': [0, 1]}, ['text', 'emotion'])
    """

    def label(name: str) -> dict[str, Any]:
        if style == "codes":
            return {"type": "integer", "enum": list(range(len(labels[name])))}
        return {"type": "string", "minLength": 1, "maxLength": 8}

    def text(limit: int) -> dict[str, Any]:
        return {"type": "string", "minLength": 1, "maxLength": limit}

    speech = {
        "type": "object",
        "properties": {
            "text": text(line_max),
            **{name: label(name) for name in labels},
        },
        "required": ["text", *labels],
    }
    return {
        "type": "object",
        "properties": {"narration": text(narration_max), "image_prompt": text(prompt_max), "speech": speech},
        "required": ["narration", "image_prompt", "speech"],
    }


def user_prompt(brief: Brief, *, context_max_chars: int = 600, style: str = "words") -> str:
    """The planner's request: the benchmark's context (its longest input shortened to
    ``context_max_chars``), a blank line and the benchmark's plan instructions for ``style``.

    Raises:
        ValueError: the brief asks for no plan.
    """
    if brief.plan is None:
        raise ValueError("the task's brief asks for no plan")
    return f"{brief.context(context_max_chars)}\n\n{brief.plan.instructions[style]}"


def _normalise(value: Any) -> str:
    return str(value).strip().strip(".").lower() if isinstance(value, str) else ""


def label_word(values: tuple[str, ...], value: Any) -> str | None:
    """A delivery label as its vocabulary word: a word (any case) or a code; None when neither.

    >>> moods = ("neutral", "happy", "sad", "angry")
    >>> label_word(moods, " Happy"), label_word(moods, 3), label_word(moods, 7), label_word(moods, True)
    ('happy', 'angry', None, None)
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return values[value] if 0 <= value < len(values) else None
    word = _normalise(value)
    return word if word in values else None


def label_problem(speech: Mapping[str, Any], labels: Labels) -> str:
    """Why the spoken line's delivery labels are unusable ('' when every one is in its vocabulary)."""
    for name, values in labels.items():
        if label_word(values, speech.get(name)) is None:
            return f"speech.{name}: {speech.get(name)!r} is not one of {', '.join(values)}"
    return ""


def check_plan(plan: Mapping[str, Any], labels: Labels) -> tuple[PlanningFailure, str] | None:
    """The kind's rules on top of the schema (see the module docstring); None when usable.

    >>> labels = {"emotion": ("neutral", "happy", "sad", "angry"), "gender": ("female", "male")}
    >>> good = {"narration": "x", "image_prompt": "Pip the fox runs through the snowy forest at night",
    ...         "speech": {"text": "Hi", "emotion": "Happy", "gender": "male"}}
    >>> check_plan(good, labels) is None
    True
    >>> check_plan({**good, "image_prompt": "a picture"}, labels)[0].value
    'unusable_prompt'
    >>> check_plan({**good, "speech": {**good["speech"], "emotion": "joyful"}}, labels)
    (<PlanningFailure.MISSING_FIELD: 'missing_field'>, "speech.emotion: 'joyful' is not one of neutral, happy, sad, angry")
    """
    speech = plan.get("speech")
    if not isinstance(speech, Mapping):
        return PlanningFailure.MISSING_FIELD, "speech: not an object"
    for name, values in labels.items():
        if label_word(values, speech.get(name)) is None:
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


def speech_labels(plan: Mapping[str, Any], labels: Labels) -> dict[str, str]:
    """The plan's delivery labels as words (call after :func:`check_plan` accepted the plan)."""
    speech = plan["speech"]
    return {name: label_word(values, speech[name]) or "" for name, values in labels.items()}


def plan_check(plan: PlanRequest) -> PlanCheck:
    """:func:`check_plan` bound to the vocabularies of ``plan`` (a planner's ``check``)."""
    return lambda fields: check_plan(fields, plan.labels)


__all__ = [
    "Labels",
    "check_plan",
    "image_prompt_problem",
    "label_problem",
    "label_word",
    "plan_check",
    "schema",
    "speech_labels",
    "user_prompt",
]
