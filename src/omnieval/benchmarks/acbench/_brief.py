"""How OmniACBench words one delivery for the models of generating kinds (their :class:`Brief`).

The generating kinds know no benchmark: a model that speaks its answer itself (``openai-omni``)
reads the one request built here from a condition's visible inputs
(:class:`~omnieval.benchmarks.acbench._conditions.TaskInputs`, never the target except the
``oracle`` condition's statement): read the script aloud with the delivery the context implies.
Its message shows, before the prompt, the instruction (spoken, as the task's audio file, or its
text), the picture (the task's image file when the system sends pictures, else its keywords where
the condition gives them) and, under ``oracle``, the target statement.

The template is :data:`DELIVERY_PROMPT`; a suite may replace it as ``prompts.delivery``.
"""

from __future__ import annotations

from typing import Any

from omnieval.systems import AUDIO_ROLE, IMAGE_ROLE, Ask, Brief, Part

#: The delivery request (speech). Placeholders: ``{script}``, ``{context}`` (names the context the
#: message shows, e.g. `` (with the picture)``; '' when it shows none).
DELIVERY_PROMPT = """Read the script below aloud. The instruction{context} tells you how it should sound:
choose the pace, the voice, whispering or not, the emotion, the accent and the reading of any word
with two pronunciations accordingly. Say the script exactly, word for word, and nothing else.

Script: {script}"""


def asks(inputs: Any, pictures: bool) -> tuple[Ask, ...]:
    """The one request of a condition's inputs; ``pictures``: the system attaches the picture.

    >>> from omnieval.benchmarks.acbench._conditions import TaskInputs
    >>> inputs = TaskInputs("all_to_t", "Hi.", None, "Say it fast.", None, ("bus",), None)
    >>> [p.text for p in asks(inputs, True)[0].parts]
    ['Instruction: Say it fast.', 'The picture shows: bus']
    """
    parts: list[Part] = []
    shown: list[str] = []
    if inputs.instruction_audio is not None:
        parts += [Part("Instruction (spoken):"), Part(media=AUDIO_ROLE)]
    elif inputs.instruction_text is not None:
        parts.append(Part(f"Instruction: {inputs.instruction_text}"))
    if inputs.image is not None and pictures:
        parts += [Part("Picture:"), Part(media=IMAGE_ROLE)]
        shown.append("picture")
    elif inputs.image is not None:
        shown.append("picture (not sent: sends_images is off)")
    elif inputs.image_keywords is not None:
        parts.append(Part(f"The picture shows: {', '.join(inputs.image_keywords)}"))
        shown.append("picture description")
    if inputs.target_statement is not None:
        parts.append(Part(f"Target: {inputs.target_statement}"))
    note = f" (with the {' and '.join(shown)})" if shown else ""
    delivery = Ask(
        name="delivery",
        answer="speech",
        template=DELIVERY_PROMPT,
        values={"script": inputs.script, "context": note},
        parts=tuple(parts),
    )
    return (delivery,)


def brief(inputs: Any) -> Brief:
    """The brief of one instance's inputs under one condition (requests only: no plan)."""
    return Brief(asks=lambda pictures: asks(inputs, pictures))


__all__ = ["DELIVERY_PROMPT", "asks", "brief"]
