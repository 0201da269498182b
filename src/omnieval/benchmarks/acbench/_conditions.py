"""The five input conditions of OmniACBench's controlled input decomposition (paper section 5.1).

Each condition decides which form of each context signal a system receives; the script is always
given. A system never sees the instance's target value, except in ``oracle``, where it is stated
explicitly.

==========  =====================  ====================  =========================
condition   instruction            context picture       target stated
==========  =====================  ====================  =========================
original    spoken (audio)         image                 no
s_to_t      text                   image                 no
i_to_t      spoken (audio)         keywords              no
all_to_t    text                   keywords              no
oracle      text                   keywords              yes (``target_statement``)
==========  =====================  ====================  =========================
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omnieval.benchmarks._spec import declaration_error, package_spec
from omnieval.benchmarks.acbench._record import PRONUNCIATION, AcbenchInstance

#: Condition names in the paper's order (the scores table's ``condition`` column), read from
#: ``benchmark.yaml`` (``conditions``), their one home.
CONDITIONS: tuple[str, ...] = package_spec(__file__).conditions

#: Conditions whose instruction is spoken (the others give its text).
_SPOKEN = frozenset({"original", "i_to_t"})
#: Conditions that show the picture (the others give its keywords).
_PICTURED = frozenset({"original", "s_to_t"})
#: The condition that states the target.
_ORACLE = "oracle"

# Which inputs a condition withholds is code; the names it uses must be declared conditions, or a
# renamed condition would silently fall back to text and keywords.
_UNDECLARED = sorted((_SPOKEN | _PICTURED | {_ORACLE}) - set(CONDITIONS))
if _UNDECLARED:
    raise declaration_error(
        __file__, "conditions", f"{__name__} gives inputs to undeclared conditions: {', '.join(_UNDECLARED)}"
    )

#: How each feature is named in an Oracle target statement.
_FEATURE_WORDS: dict[str, str] = {
    "speech_rate": "speech rate",
    "phonation": "phonation",
    "pronunciation": "pronunciation",
    "emotion": "emotion",
    "accent": "accent",
    "timbre": "voice (timbre)",
}


@dataclass(frozen=True)
class TaskInputs:
    """What a system under test receives for one instance under one condition.

    Attributes:
        condition: One of :data:`CONDITIONS`.
        script: The text to read aloud (always given).
        instruction_audio: The spoken instruction; None when the instruction is given as text.
        instruction_text: The instruction as text; None when it is given as audio.
        image: The context picture; None when its keywords are given instead.
        image_keywords: Words describing the picture; None when the picture is given.
        target_statement: The target delivery in words; set only under ``oracle``.
    """

    condition: str
    script: str
    instruction_audio: Path | None
    instruction_text: str | None
    image: Path | None
    image_keywords: tuple[str, ...] | None
    target_statement: str | None


def target_statement(instance: AcbenchInstance) -> str:
    """The explicit target of the Oracle condition, e.g. ``Deliver the script with speech rate = fast.``

    Pronunciation instances name the word, the reading and its phones, since "heteronym" alone
    does not say which reading is wanted.
    """
    what = _FEATURE_WORDS.get(instance.feature, instance.feature.replace("_", " "))
    if instance.feature == PRONUNCIATION and instance.heteronym is not None:
        ref = instance.heteronym
        phones = " ".join(ref.target_phones)
        return (
            f"Deliver the script with {what} = {instance.target_value}: say {ref.word!r} "
            f"in its {ref.reading!r} reading, /{phones}/ in ARPAbet."
        )
    return f"Deliver the script with {what} = {instance.target_value}."


def task_inputs(instance: AcbenchInstance, condition: str) -> TaskInputs:
    """The inputs a system gets for ``instance`` under ``condition``.

    Args:
        instance: One dataset instance.
        condition: One of :data:`CONDITIONS` (case and hyphens are forgiven: ``"S-to-T"``).

    Returns:
        The condition's inputs; fields a condition withholds are None.

    Raises:
        ValueError: ``condition`` is not one of :data:`CONDITIONS`.

    Example:
        >>> from omnieval.benchmarks.acbench._record import AcbenchInstance
        >>> inst = AcbenchInstance(0, "ac-1", "speech_rate", "fast", "The bus is here.", Path("a.wav"),
        ...                        "Read it at a fitting pace.", Path("b.png"), ("falling brick",))
        >>> task_inputs(inst, "i_to_t").image, task_inputs(inst, "i_to_t").image_keywords
        (None, ('falling brick',))
        >>> task_inputs(inst, "oracle").target_statement
        'Deliver the script with speech rate = fast.'
    """
    name = condition.strip().lower().replace("-", "_") if isinstance(condition, str) else condition
    if name not in CONDITIONS:
        raise ValueError(f"unknown acbench condition {condition!r}; known: {', '.join(CONDITIONS)}")
    spoken = name in _SPOKEN
    pictured = name in _PICTURED
    return TaskInputs(
        condition=name,
        script=instance.script,
        instruction_audio=instance.instruction_audio if spoken else None,
        instruction_text=None if spoken else instance.instruction_text,
        image=instance.image if pictured else None,
        image_keywords=None if pictured else instance.image_keywords,
        target_statement=target_statement(instance) if name == _ORACLE else None,
    )
