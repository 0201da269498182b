"""The intermediate fields a two-modality backbone hands the expert of the third modality, as pure
functions: their schema, how an answer is classified (FORMATS.md section 9) and what the expert gets.

The schema is the part of the orchestration plan (:mod:`omnieval.systems._plan`)
that feeds that expert, so both paradigms ask for the same thing in the same vocabularies:

- the **image** expert needs ``image_prompt`` (one sentence describing the next page's picture);
- the **speech** expert needs ``speech``: ``text`` (the line) with the delivery labels (``emotion``,
  ``gender``, ``speed``, ``pitch``) from the vocabularies the benchmark's plan names
  (:attr:`~omnieval.systems.PlanRequest.labels`); how a prompt describes each field is the
  benchmark's too (:attr:`~omnieval.systems.PlanRequest.field_notes`).

An answer is unusable, and the whole example failed (:mod:`._two`), when it holds no JSON object
(``unparseable_json``; ``refusal`` when it declines instead), lacks a required field or gives a
label outside its vocabulary (``missing_field``), or its image prompt does not describe a picture
(``unusable_prompt``): the orchestration planner's rules, applied to these fields only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from omnieval.systems._generating import PlanningFailure
from omnieval.systems._plan import Labels, image_prompt_problem, label_problem, schema, speech_labels
from omnieval.systems._planner import _REFUSAL, missing_fields, parse_plan
from omnieval.systems._task import PlanRequest
from omnieval.systems.experts import ImageRequest, SpeechPlan

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


def intermediate_schema(third: str, labels: Labels) -> dict[str, Any]:
    """The JSON schema of the intermediate fields for the ``third`` modality's expert.

    >>> labels = {"emotion": ("calm", "glad"), "pitch": ("low", "high")}
    >>> intermediate_schema("image", labels)["required"]
    ['image_prompt']
    >>> sorted(intermediate_schema("speech", labels)["properties"]["speech"]["required"])
    ['emotion', 'pitch', 'text']
    """
    key = FIELD_FOR[third]
    plan = schema(labels, 1000, IMAGE_PROMPT_MAX_CHARS, LINE_MAX_CHARS, "words")
    return {"type": "object", "properties": {key: plan["properties"][key]}, "required": [key]}


def describe_fields(third: str, plan: PlanRequest) -> str:
    """The fields in words, for a prompt (the benchmark's note on the field that feeds ``third``)."""
    return plan.field_notes[FIELD_FOR[third]]


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


def read_fields(answer: str | Mapping[str, Any] | None, third: str, labels: Labels) -> FieldsOutcome:
    """Classify a backbone's intermediate fields (see the module docstring); ``labels`` are the
    plan's delivery vocabularies.

    ``answer`` is the JSON text (or an already parsed object); None when the backbone wrote none.

    >>> moods = {"emotion": ("neutral", "happy", "sad", "angry"), "gender": ("female", "male")}
    >>> read_fields('{"image_prompt": "Pip the fox waves from the lighthouse at dawn"}', "image", moods).failure is None
    True
    >>> read_fields('{"image_prompt": ', "image", moods).failure.value
    'unparseable_json'
    >>> read_fields({"speech": {"text": "Hi", "emotion": "joyful", "gender": "male"}}, "speech", moods).error
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
    absent = missing_fields(fields, intermediate_schema(third, labels))
    if absent:
        return FieldsOutcome(fields, PlanningFailure.MISSING_FIELD, "missing: " + ", ".join(absent))
    if third == "image":
        problem = image_prompt_problem(str(fields["image_prompt"]))
        if problem:
            return FieldsOutcome(fields, PlanningFailure.UNUSABLE_PROMPT, problem)
        return FieldsOutcome(fields, None)
    error = label_problem(fields["speech"], labels)
    if error:
        return FieldsOutcome(fields, PlanningFailure.MISSING_FIELD, error)
    return FieldsOutcome(fields, None)


def image_request(fields: Mapping[str, Any], reference: Path | None, seed: int) -> ImageRequest:
    """What the image expert draws (call after :func:`read_fields` accepted ``fields``);
    ``reference`` is the task's input picture, if it has one."""
    return ImageRequest(str(fields["image_prompt"]).strip(), reference, seed)


def speech_plan(fields: Mapping[str, Any], labels: Labels) -> SpeechPlan:
    """What the speech expert says (call after :func:`read_fields` accepted ``fields``)."""
    return SpeechPlan(text=str(fields["speech"]["text"]).strip(), **speech_labels(fields, labels))


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
