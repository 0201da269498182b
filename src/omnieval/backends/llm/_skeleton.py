"""Fixed-shape JSON schemas as a decoding plan: literal text the decoder writes itself, and the few
values the model must choose (integers from a set, strings, booleans).

A judge verdict is a fixed skeleton (known keys in a known order) with eight values in it. Writing
the skeleton ourselves and letting the model generate only the values is schema-constrained
decoding that costs one forward pass per *value* token, instead of a grammar check over the whole
vocabulary for every token (which made llama.cpp's grammar path several times slower on CPU).

Schemas outside the supported subset (``anyOf``, arrays, optional keys...) return ``None`` from
:func:`plan_schema`; callers then fall back to a general grammar.

Example:
    >>> plan_schema({"type": "object", "properties": {"score": {"type": "integer", "enum": [1, 2]},
    ...     "why": {"type": "string", "maxLength": 40}}, "required": ["score", "why"]})
    [Fixed(text='{"score": '), IntChoice(values=(1, 2), path='score'), Fixed(text=', "why": "'), Text(min_chars=0, max_chars=40), Fixed(text='"}')]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Fixed:
    """Text written as is."""

    text: str


@dataclass(frozen=True)
class IntChoice:
    """An integer the model picks from a small set.

    ``path`` locates the value in the answer: its object keys joined by ``/`` (``""`` at the top),
    e.g. ``alignment_with_metadata/score``; it names the value's probabilities in
    :attr:`~omnieval.backends.llm.Completion.value_probs`.
    """

    values: tuple[int, ...]
    path: str = ""


@dataclass(frozen=True)
class Text:
    """A JSON string the model writes (between quotes the decoder adds)."""

    min_chars: int = 0
    max_chars: int | None = None


Segment = Fixed | IntChoice | Text

_MAX_INT_CHOICES = 1000


def plan_schema(schema: Mapping[str, Any]) -> list[Segment] | None:
    """Decoding plan for a fixed-shape schema, or None when the schema is outside the subset."""
    segments = _plan(schema, ())
    return None if segments is None else _merge(segments)


def _plan(schema: Mapping[str, Any], path: tuple[str, ...]) -> list[Segment] | None:
    kind = schema.get("type")
    if "enum" in schema or "const" in schema:
        values = list(schema["enum"]) if "enum" in schema else [schema["const"]]
        if len(values) == 1:
            return [Fixed(json.dumps(values[0], ensure_ascii=False))]
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
            return (
                [IntChoice(tuple(sorted(set(values))), "/".join(path))]
                if len(values) <= _MAX_INT_CHOICES
                else None
            )
        return None
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        if (
            isinstance(low, int)
            and isinstance(high, int)
            and 0 <= low <= high
            and high - low < _MAX_INT_CHOICES
        ):
            return [IntChoice(tuple(range(low, high + 1)), "/".join(path))]
        return None
    if kind == "string":
        if any(k in schema for k in ("pattern", "format", "enum")):
            return None
        return [Fixed('"'), Text(int(schema.get("minLength", 0)), schema.get("maxLength")), Fixed('"')]
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            return None
        # Optional keys would need the model to decide whether to write them: not a fixed shape.
        if set(schema.get("required", ())) != set(properties):
            return None
        out: list[Segment] = [Fixed("{")]
        for i, (key, sub) in enumerate(properties.items()):
            inner = _plan(sub, (*path, str(key)))
            if inner is None:
                return None
            out.append(Fixed((", " if i else "") + json.dumps(key, ensure_ascii=False) + ": "))
            out.extend(inner)
        out.append(Fixed("}"))
        return out
    return None


def _merge(segments: list[Segment]) -> list[Segment]:
    merged: list[Segment] = []
    for seg in segments:
        if isinstance(seg, Fixed) and merged and isinstance(merged[-1], Fixed):
            merged[-1] = Fixed(merged[-1].text + seg.text)
        else:
            merged.append(seg)
    return merged


def int_continuations(prefix: str, values: tuple[int, ...]) -> tuple[frozenset[str], bool]:
    """Digits that may follow ``prefix`` and whether ``prefix`` is already a complete value.

    Example:
        >>> sorted(int_continuations("1", tuple(range(1, 11)))[0]), int_continuations("1", tuple(range(1, 11)))[1]
        (['0'], True)
    """
    texts = [str(v) for v in values]
    nxt = frozenset(t[len(prefix)] for t in texts if t.startswith(prefix) and len(t) > len(prefix))
    return nxt, prefix in texts
