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

import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

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


@dataclass(frozen=True)
class Task:
    """One example as a system sees it.

    Attributes:
        benchmark: The benchmark's registry name.
        index: The dataset row (the candidate layout's ``<index>``).
        id: The instance id.
        condition: The input condition ('' for benchmarks without conditions).
        inputs: The benchmark's visible inputs (a frozen dataclass without target fields): what the
            ``command`` protocol's ``task.json`` holds and what a benchmark's own kinds read.
        modalities: The modalities the benchmark asks for (its ``modalities``), filled in by
            :meth:`GeneratingSystem.generate`. A kind decides what to write from these, the brief
            and the files, never from the benchmark's name. They are not part of :meth:`fields`
            (the ``command`` protocol's ``task.json`` lists them apart) nor of the example key: a
            benchmark always asks for the same ones.
        files: Input media by role (:data:`~omnieval.systems.IMAGE_ROLE`,
            :data:`~omnieval.systems.AUDIO_ROLE`): what a kind attaches to a model's request or hands
            an expert as a reference.
        brief: The example in words (:class:`~omnieval.systems.Brief`): the context, the prompts
            and, where the benchmark asks for one, the plan. Kinds that prompt a model read it;
            None when the benchmark gives none (such kinds then cannot serve it).
    """

    benchmark: str
    index: int
    id: str
    condition: str
    inputs: Any
    modalities: tuple[str, ...] = ()
    files: Mapping[str, Path] = field(default_factory=dict)
    brief: Brief | None = None

    def fields(self) -> dict[str, Any]:
        """The task as JSON-able fields; media files as their paths (see :func:`describe`)."""
        return {
            "benchmark": self.benchmark,
            "index": self.index,
            "id": self.id,
            "condition": self.condition,
            **describe(self.inputs),
        }

    def media(self) -> list[Path]:
        """Every media file the task refers to, in field order."""
        return list(_media(self.inputs))

    def briefed(self, kind: str) -> Brief:
        """The brief, for a kind that prompts a model.

        Raises:
            ConfigError: the benchmark gives no brief, so ``kind`` cannot serve it.
        """
        if self.brief is None:
            from omnieval.errors import ConfigError

            raise ConfigError(
                f"{kind}: benchmark {self.benchmark} gives its tasks no brief to prompt a model with"
            )
        return self.brief

    def plan_request(self, kind: str) -> PlanRequest:
        """The plan the benchmark asks for, for a planning kind.

        Raises:
            ConfigError: the benchmark asks for no plan, so ``kind`` cannot serve it.
        """
        plan = self.briefed(kind).plan
        if plan is None:
            from omnieval.errors import ConfigError

            raise ConfigError(f"{kind}: benchmark {self.benchmark} asks for no plan")
        return plan


def _walk(value: Any, on_path: Callable[[Path], Any]) -> Any:
    """JSON-able data of visible inputs: dataclasses to dicts (``as_dict`` when they have one),
    tuples to lists, each path through ``on_path``."""
    if isinstance(value, Path):
        return on_path(value)
    if hasattr(value, "as_dict") and callable(value.as_dict):
        return _walk(value.as_dict(), on_path)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _walk(getattr(value, f.name), on_path) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _walk(v, on_path) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_walk(v, on_path) for v in value]
    return value


def describe(value: Any) -> Any:
    """Turn visible inputs into JSON-able data: dataclasses to dicts (``as_dict`` when they have
    one), tuples to lists, paths to strings. ``None`` fields stay ``None``.

    >>> from pathlib import Path
    >>> describe({"a": (1, Path("x.png"))})
    {'a': [1, 'x.png']}
    """
    return _walk(value, str)


def _media(value: Any) -> Iterator[Path]:
    if isinstance(value, Path):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _media(getattr(value, f.name))
    elif isinstance(value, tuple | list):
        for v in value:
            yield from _media(v)
