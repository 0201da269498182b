"""What Omni-StoryBench's dataset audit reads: its pages and the condition fields a model is given.

The paper's audit (appendix, "String-overlap audit") checks the descriptive condition fields
(scene, narration instruction, topic, ambient sound, each character's action and speech intent)
for contiguous eight-word spans shared with the pages outside the instance's own transition, and
clusters republished or adapted content by text n-grams and perceptual image hashes. A page here is
one ``source/book/key`` (the current page of one transition is the next page of the one before it,
and is listed once); its group is its book, whose pages share a setting and are not compared with
each other by default.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from omnieval.audit import AuditInputs, AuditInstance, AuditPage
from omnieval.benchmarks.storybench._records import Transition

FIELDS = (
    "topic",
    "scene",
    "text_instruction",
    "ambient_sound",
    "character_action",
    "character_speech_intent",
)
"""The audited condition fields, named as the dataset's columns (characters' keys prefixed)."""

_CHARACTER_KEYS = {"action": "character_action", "speech_intent": "character_speech_intent"}


def page_id(t: Transition, key: str) -> str:
    """The page ``key`` of ``t``'s book as ``source/book/key``."""
    return f"{t.source}/{t.book}/{key}"


def _conditions(t: Transition) -> tuple[tuple[str, str], ...]:
    c = t.condition
    out = [
        ("topic", t.metadata.topic),
        ("scene", c.scene),
        ("text_instruction", c.text_content),
        ("ambient_sound", c.ambient_sound),
    ]
    for character in c.characters:
        for key, field in _CHARACTER_KEYS.items():
            value = character.extra.get(key)
            if isinstance(value, str) and value.strip():
                out.append((field, value))
    return tuple(out)


def storybench_audit_inputs(
    transitions: Sequence[Transition], root: Path, digest: str, benchmark: str
) -> AuditInputs:
    """The dataset's pages (text and illustration, each once) and per transition its two pages,
    its target (the next page) and its condition texts."""
    pages: dict[str, AuditPage] = {}
    instances = []
    for t in transitions:
        current, target = page_id(t, t.from_key), page_id(t, t.to_key)
        book = f"{t.source}/{t.book}"
        pages.setdefault(current, AuditPage(current, t.current_text, t.current_image, book))
        pages.setdefault(target, AuditPage(target, t.next_text, t.next_image, book))
        instances.append(AuditInstance(t.id, (current, target), target, _conditions(t)))
    return AuditInputs(
        benchmark=benchmark,
        dataset=root,
        digest=digest,
        fields=FIELDS,
        pages=tuple(pages.values()),
        instances=tuple(instances),
    )
