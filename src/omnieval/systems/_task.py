"""The typed brief of one example: how a benchmark words its task for the models of a generating kind.

A benchmark renders it (``Benchmark.visible_task``); the generating kinds read only it and never a
benchmark's own fields, so the prompts, plan instructions and label vocabularies of a benchmark live
in that benchmark's package, and adding a benchmark never means editing a system kind.

What a brief holds:

- the **context**: the task in words for a model (what the example gives, what the output must
  show), with the part that may be long shortened to a limit the system's config chooses;
- the **writer prompt**: the system message of a model that writes the text output itself;
- a **picture note** and default **delivery** labels, for kinds that derive an image prompt and a
  spoken line's delivery by fixed rules instead of asking a model;
- where a plan can be asked for, a :class:`PlanRequest`: the planner's system message, the plan
  instructions per :data:`LabelStyle`, the spoken line's label vocabularies, how a prompt describes
  each plan field, and the follow-up that asks for the plan after a spoken line;
- for a model that answers in the output modalities itself (an omni model that speaks), the
  **requests** (:class:`Ask`): one per answer, in order, each a prompt template with its values, the
  input media it shows (:class:`Part`) and the earlier answers it quotes.

Input media travel beside the brief in :attr:`omnieval.systems.Task.files`, by role
(:data:`IMAGE_ROLE`, :data:`AUDIO_ROLE`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

#: The modality a model's answer to an :class:`Ask` is taken as: its text or its speech.
Answer = Literal["text", "speech"]

#: How a plan states its delivery labels: ``words`` (``"happy"``) or ``codes`` (``1``, the word's
#: position in its vocabulary).
LabelStyle = Literal["words", "codes"]

#: Role of the picture an example's output continues from or is told by (planners that see images
#: get it; image experts that take a reference draw from it).
IMAGE_ROLE = "image"

#: Role of a spoken input of the example.
AUDIO_ROLE = "audio"

#: The length :meth:`Brief.digest` renders the context at (long enough for every sample).
_DIGEST_CHARS = 1_000_000


@dataclass(frozen=True)
class PlanRequest:
    """What a planning kind asks a model for, in the benchmark's words.

    Attributes:
        system_prompt: The planner's system message.
        instructions: Label style -> the plan instructions that follow the context (after a blank line).
        labels: Delivery label name -> its vocabulary, in code order (the spoken line of a plan; the
            names are those of :class:`~omnieval.systems.experts.SpeechPlan`).
        field_notes: Plan field (``image_prompt``, ``speech``) -> how a prompt describes it, for a
            backbone asked for that field only.
        followup: A second request after a spoken line was made: ``{line}`` is the line, ``{fields}``
            the :attr:`field_notes` of the field asked for.
    """

    system_prompt: str
    instructions: Mapping[str, str]
    labels: Mapping[str, tuple[str, ...]]
    field_notes: Mapping[str, str] = field(default_factory=dict)
    followup: str = ""


@dataclass(frozen=True)
class Part:
    """One piece of a request's user message, before its prompt: a line of text, or an input file
    of the task by role (``media``: a key of :attr:`omnieval.systems.Task.files`)."""

    text: str = ""
    media: str = ""


@dataclass(frozen=True)
class Ask:
    """One request to a model that answers in an output modality itself (e.g. an omni model).

    The user message is :attr:`parts` then the prompt (:attr:`template` filled with :attr:`values`
    and the earlier answers), adjacent text joined line by line.

    Attributes:
        name: The request's name; a system may replace its template under that name (e.g. an
            ``openai-omni`` entry's ``prompts.<name>``).
        answer: The output modality the answer is taken as (``text``: its text; ``speech``: its audio).
        template: The prompt, with ``{name}`` placeholders.
        values: Placeholder -> its value for this example.
        parts: What precedes the prompt in the message (text lines, input media by role).
        earlier: Placeholder -> the name of an earlier request whose text answer fills it.
        unanswered: What fills an :attr:`earlier` placeholder whose request gave no text.
    """

    name: str
    answer: Answer
    template: str
    values: Mapping[str, str] = field(default_factory=dict)
    parts: tuple[Part, ...] = ()
    earlier: Mapping[str, str] = field(default_factory=dict)
    unanswered: str = "(not available)"

    def placeholders(self) -> frozenset[str]:
        """The placeholders a template of this request may use."""
        return frozenset(self.values) | frozenset(self.earlier)


def _no_context(max_chars: int) -> str:
    del max_chars
    return ""


def _no_asks(pictures: bool) -> tuple[Ask, ...]:
    del pictures
    return ()


@dataclass(frozen=True)
class Brief:
    """One example in words (see the module docstring).

    Attributes:
        context: ``context(max_chars)``: the task for a model, its longest input shortened to
            ``max_chars`` characters.
        writer_prompt: System message of a model that writes the text output itself.
        picture: What the output's picture must show, for image prompts made by rule ('' if none).
        delivery: Delivery labels the visible inputs imply for a spoken line (e.g. ``emotion``).
        plan: The plan a planner may be asked for (None: the benchmark asks for none).
        asks: ``asks(pictures)``: the requests of a model that answers in the output modalities
            itself, in order, worded for a system that attaches the task's pictures (``pictures``
            True) or does not; ``()`` when the benchmark words none.
    """

    context: Callable[[int], str] = _no_context
    writer_prompt: str = ""
    picture: str = ""
    delivery: Mapping[str, str] = field(default_factory=dict)
    plan: PlanRequest | None = None
    asks: Callable[[bool], tuple[Ask, ...]] = _no_asks

    def digest(self) -> str:
        """SHA-256 of everything the brief says (part of an example's key: a reworded prompt in a
        benchmark package regenerates the examples that used it)."""
        plan = self.plan
        blob = {
            "context": self.context(_DIGEST_CHARS),
            "writer_prompt": self.writer_prompt,
            "picture": self.picture,
            "delivery": dict(self.delivery),
            "plan": None
            if plan is None
            else {
                "system_prompt": plan.system_prompt,
                "instructions": dict(plan.instructions),
                "labels": {k: list(v) for k, v in plan.labels.items()},
                "field_notes": dict(plan.field_notes),
                "followup": plan.followup,
            },
            "asks": {
                str(pictures): [_ask_blob(a) for a in self.asks(pictures)] for pictures in (True, False)
            },
        }
        return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()


def _ask_blob(ask: Ask) -> dict[str, object]:
    return {
        "name": ask.name,
        "answer": ask.answer,
        "template": ask.template,
        "values": dict(ask.values),
        "parts": [[p.text, p.media] for p in ask.parts],
        "earlier": dict(ask.earlier),
        "unanswered": ask.unanswered,
    }


__all__ = ["AUDIO_ROLE", "IMAGE_ROLE", "Answer", "Ask", "Brief", "LabelStyle", "Part", "PlanRequest"]
