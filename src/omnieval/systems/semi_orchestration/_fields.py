"""The intermediate fields a two-modality backbone hands the expert of the third modality, as pure
functions: their schema, how an answer is classified (FORMATS.md section 9) and what the expert gets.

The schema is the part of the orchestration plan (:func:`omnieval.systems.orchestration.schema`)
that feeds that expert, so both paradigms ask for the same thing in the same vocabularies:

- the **image** expert needs ``image_prompt`` (one sentence describing the next page's picture);
- the **speech** expert needs ``speech``: ``text`` (the line) with ``emotion``, ``gender``, ``speed``
  and ``pitch`` from the target speech vocabularies (:data:`~omnieval.systems.orchestration.SPEECH_LABELS`).

An answer is unusable, and the third modality missing, when it holds no JSON object
(``unparseable_json``; ``refusal`` when it declines instead), lacks a required field or gives a
label outside its vocabulary (``missing_field``), or its image prompt does not describe a picture
(``unusable_prompt``): the orchestration planner's rules, applied to these fields only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from omnieval.systems._generating import PlanningFailure
from omnieval.systems._planner import _REFUSAL, missing_fields, parse_plan
from omnieval.systems.experts import ImageRequest, SpeechPlan
from omnieval.systems.orchestration import SPEECH_LABELS, image_prompt_problem, schema
from omnieval.systems.orchestration._prompt import label_word, speech_labels

#: What a two-modality backbone writes itself (``produces`` in the config).
Produces = Literal["text+speech", "text+image"]

#: The modality the expert makes, per pair the backbone makes.
THIRD: dict[str, str] = {"text+speech": "image", "text+image": "speech"}

#: The intermediate field (a key of the orchestration plan) that feeds each third modality's expert.
FIELD_FOR: dict[str, str] = {"image": "image_prompt", "speech": "speech"}

#: Length limits of the fields (the orchestration defaults).
IMAGE_PROMPT_MAX_CHARS = 200
LINE_MAX_CHARS = 140


def backbone_modalities(produces: str) -> tuple[str, ...]:
    """The backbone's own modalities.

    >>> backbone_modalities("text+speech")
    ('text', 'speech')
    """
    return tuple(produces.split("+"))


def intermediate_schema(third: str) -> dict[str, Any]:
    """The JSON schema of the intermediate fields for the ``third`` modality's expert.

    >>> intermediate_schema("image")["required"]
    ['image_prompt']
    >>> sorted(intermediate_schema("speech")["properties"]["speech"]["required"])
    ['emotion', 'gender', 'pitch', 'speed', 'text']
    """
    key = FIELD_FOR[third]
    plan = schema(1000, IMAGE_PROMPT_MAX_CHARS, LINE_MAX_CHARS, "words")
    return {"type": "object", "properties": {key: plan["properties"][key]}, "required": [key]}


def describe_fields(third: str) -> str:
    """The fields in words, for a prompt (what each holds and its allowed values)."""
    if third == "image":
        return (
            '"image_prompt": one sentence for the illustrator of the next page naming the characters '
            "shown, the place, the time of day and the mood"
        )
    labels = "; ".join(f"{name}: one of {', '.join(values)}" for name, values in SPEECH_LABELS.items())
    return f'"speech": an object with "text" (the words one character says aloud) and {labels}'


@dataclass(frozen=True)
class FieldsOutcome:
    """The intermediate fields read from a backbone's answer: usable ``fields``, or a ``failure``.

    Attributes:
        fields: The parsed object (also when a field is missing or unusable; None when none parsed).
        failure: Why the expert cannot use them (None: usable).
        error: The failure in words ('' when usable).
    """

    fields: dict[str, Any] | None
    failure: PlanningFailure | None
    error: str = ""


def read_fields(answer: str | Mapping[str, Any] | None, third: str) -> FieldsOutcome:
    """Classify a backbone's intermediate fields (see the module docstring).

    ``answer`` is the JSON text (or an already parsed object); None when the backbone wrote none.

    >>> read_fields('{"image_prompt": "Pip the fox waves from the lighthouse at dawn"}', "image").failure is None
    True
    >>> read_fields('{"image_prompt": ', "image").failure.value
    'unparseable_json'
    >>> read_fields({"speech": {"text": "Hi", "emotion": "joyful", "gender": "male",
    ...              "speed": "fast", "pitch": "low"}}, "speech").error
    "speech.emotion: 'joyful' is not one of neutral, happy, sad, angry"
    """
    if answer is None:
        return FieldsOutcome(None, PlanningFailure.MISSING_FIELD, "no intermediate fields written")
    if isinstance(answer, Mapping):
        fields: dict[str, Any] | None = dict(answer)
        text = json.dumps(answer)
    else:
        text = answer
        fields = parse_plan(answer)
    if fields is None:
        if _REFUSAL.search(text):
            return FieldsOutcome(None, PlanningFailure.REFUSAL, "the backbone declined")
        return FieldsOutcome(
            None, PlanningFailure.UNPARSEABLE_JSON, "no JSON object in the intermediate fields"
        )
    absent = missing_fields(fields, intermediate_schema(third))
    if absent:
        return FieldsOutcome(fields, PlanningFailure.MISSING_FIELD, "missing: " + ", ".join(absent))
    if third == "image":
        problem = image_prompt_problem(str(fields["image_prompt"]))
        if problem:
            return FieldsOutcome(fields, PlanningFailure.UNUSABLE_PROMPT, problem)
        return FieldsOutcome(fields, None)
    speech = fields["speech"]
    for name, values in SPEECH_LABELS.items():
        if label_word(name, speech.get(name)) is None:
            error = f"speech.{name}: {speech.get(name)!r} is not one of {', '.join(values)}"
            return FieldsOutcome(fields, PlanningFailure.MISSING_FIELD, error)
    return FieldsOutcome(fields, None)


def image_request(fields: Mapping[str, Any], inputs: Any, seed: int) -> ImageRequest:
    """What the image expert draws (call after :func:`read_fields` accepted ``fields``)."""
    return ImageRequest(str(fields["image_prompt"]).strip(), getattr(inputs, "current_image", None), seed)


def speech_plan(fields: Mapping[str, Any]) -> SpeechPlan:
    """What the speech expert says (call after :func:`read_fields` accepted ``fields``)."""
    return SpeechPlan(text=str(fields["speech"]["text"]).strip(), **speech_labels(fields))


__all__ = [
    "FIELD_FOR",
    "THIRD",
    "FieldsOutcome",
    "Produces",
    "backbone_modalities",
    "describe_fields",
    "image_request",
    "intermediate_schema",
    "read_fields",
    "speech_plan",
]
