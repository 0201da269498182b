"""What the ``cascade`` planner is asked, and how its answer becomes an espeak-ng delivery.

The planner answers one JSON object of small integer codes (one per delivery choice the TTS can
render), so a llama.cpp ``skeleton`` decoder writes the object itself and the model picks only the
digits. The codes and what they render:

=========  =====================================  =============================================
field      codes                                  rendered as (espeak-ng, acbench's settings)
=========  =====================================  =============================================
rate       1 slow, 2 normal, 3 fast               100 / 150 / 230 words per minute
whisper    0 voiced, 1 whispered                  noise-excited resynthesis (``whisperize``)
gender     1 female, 2 male                       voice variant f1 / m2
age        1 adult, 2 elderly                     grandma / grandpa variants, 125 wpm at "normal"
pitch      1 low, 2 normal, 3 high                espeak-ng pitch
accent     1 American, 2 British                  en-us / en-gb
reading    1..k, only when the script holds a     the reading's espeak-ng phonemes for that word
           word with two readings
=========  =====================================  =============================================

Emotion is not asked: espeak-ng has no emotional voices, so a planned emotion could not be heard.
The Indian and Australian accents are not offered for the same reason (no such espeak-ng voice).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omnieval.backends.tts import SpeechRequest
from omnieval.benchmarks.acbench._heteronyms import Heteronym, espeak_markup
from omnieval.benchmarks.acbench._systems import ACBENCH_PROSODY, ACCENT_VOICES, Delivery

#: Code -> label per field (labels are the acbench/espeak-ng vocabularies).
RATES: dict[int, str] = {1: "slow", 2: "normal", 3: "fast"}
GENDERS: dict[int, str] = {1: "female", 2: "male"}
AGES: dict[int, str] = {1: "adult", 2: "elderly"}
PITCHES: dict[int, str] = {1: "low", 2: "normal", 3: "high"}
ACCENTS: dict[int, str] = {1: "American", 2: "British"}

#: What the TTS cannot render, so the planner is not asked for it (lineage and docs say so).
NOT_PLANNED: dict[str, str] = {
    "emotion": "not asked: espeak-ng has no emotional voices",
    "accent": "only American and British English are offered (espeak-ng has no Indian or Australian English voice)",
}

SYSTEM_PROMPT = """You are the voice director of a text-to-speech engine. Someone wants a short script read aloud.
Besides the script you get context: an instruction about how to read it, a picture description
(or nothing, when no picture could be looked at), and sometimes a sentence that states the wanted
delivery outright. Work out from the context how the script should sound and answer with one JSON
object of numeric codes, nothing else.

Codes:
- "rate": 1 = slow (a calm, gentle or tired scene, a listener who needs time), 2 = normal, 3 = fast (urgency, danger, hurry, excitement).
- "whisper": 1 = whisper (a place or moment where one must be quiet), 0 = normal voice.
- "gender": 1 = female voice, 2 = male voice (the speaker the context shows; 1 when nothing says).
- "age": 1 = adult, 2 = elderly voice (an old speaker).
- "pitch": 1 = low, 2 = normal, 3 = high.
- "accent": 1 = American English, 2 = British English (a speaker from the United Kingdom).
- "reading": present only when the script holds a word with two pronunciations; the number of the reading whose meaning fits the context.
A stated delivery overrides everything else. Without a cue for a field, choose its ordinary value
(rate 2, whisper 0, age 1, pitch 2, accent 1)."""


@dataclass(frozen=True)
class Context:
    """What the planner is shown for one example (each field None when the condition withholds it).

    Attributes:
        script: The text to speak.
        instruction: The instruction as heard (ASR transcript) or read (text).
        instruction_source: ``speech`` (transcribed) or ``text``.
        keywords: The picture's keywords, when the condition gives them as text.
        picture_attached: The picture itself is attached to the request (a vision planner).
        target_statement: The stated delivery (``oracle`` only).
        heteronym: The listed word with two readings found in the script, if any.
    """

    script: str
    instruction: str | None
    instruction_source: str | None
    keywords: tuple[str, ...] | None
    picture_attached: bool
    target_statement: str | None
    heteronym: Heteronym | None


def user_prompt(ctx: Context) -> str:
    """The per-example request: only what :class:`Context` holds, in a fixed order."""
    lines = [f"Script: {ctx.script}"]
    if ctx.instruction is not None:
        how = "spoken, as transcribed" if ctx.instruction_source == "speech" else "written"
        lines.append(f"Instruction ({how}): {ctx.instruction}")
    if ctx.picture_attached:
        lines.append("Picture: attached.")
    elif ctx.keywords is not None:
        lines.append("Picture, described in words: " + "; ".join(ctx.keywords))
    else:
        lines.append("Picture: none available (it could not be looked at).")
    if ctx.target_statement is not None:
        lines.append(f"Stated delivery: {ctx.target_statement}")
    if ctx.heteronym is not None:
        word = ctx.heteronym.word
        options = "; ".join(
            f"{code} = {word!r} meaning {r.gloss} (/{' '.join(r.arpabet)}/)"
            for code, r in enumerate(ctx.heteronym.readings.values(), start=1)
        )
        lines.append(f"The word {word!r} has two readings: {options}.")
    return "\n".join(lines)


def plan_schema(ctx: Context) -> dict[str, Any]:
    """The JSON schema of the plan (a fixed shape of integer codes; ``reading`` only with a heteronym)."""

    def codes(table: Mapping[int, str]) -> dict[str, Any]:
        return {"type": "integer", "enum": sorted(table)}

    properties: dict[str, Any] = {
        "rate": codes(RATES),
        "whisper": {"type": "integer", "enum": [0, 1]},
        "gender": codes(GENDERS),
        "age": codes(AGES),
        "pitch": codes(PITCHES),
        "accent": codes(ACCENTS),
    }
    if ctx.heteronym is not None:
        properties["reading"] = {"type": "integer", "enum": list(range(1, len(ctx.heteronym.readings) + 1))}
    return {"type": "object", "properties": properties, "required": list(properties)}


def plan_labels(plan: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    """The plan's codes as labels (``{"rate": "fast", ..., "reading": "metal"}``)."""
    labels: dict[str, Any] = {
        "rate": RATES[int(plan["rate"])],
        "whisper": bool(int(plan["whisper"])),
        "gender": GENDERS[int(plan["gender"])],
        "age": AGES[int(plan["age"])],
        "pitch": PITCHES[int(plan["pitch"])],
        "accent": ACCENTS[int(plan["accent"])],
    }
    if ctx.heteronym is not None:
        labels["reading"] = list(ctx.heteronym.readings)[int(plan["reading"]) - 1]  # code 1 = the first
    return labels


def delivery_from_plan(labels: Mapping[str, Any], ctx: Context) -> Delivery:
    """The espeak-ng delivery that realises the planned labels, with acbench's settings.

    The mapping is the one ``oracle-control`` uses for each value (rates, whisper resynthesis, the
    aged variants with a low pitch, the British voice, heteronym phonemes), applied to what the
    planner chose instead of to the target.
    """
    prosody = ACBENCH_PROSODY
    notes: list[str] = []
    text = ctx.script
    if ctx.heteronym is not None and "reading" in labels:
        reading = ctx.heteronym.readings[labels["reading"]]
        text = espeak_markup(ctx.script, ctx.heteronym.word, reading)
        notes.append(f"{ctx.heteronym.word!r} as [[{reading.espeak_phonemes}]] ({reading.key})")
    speed = labels["rate"]
    if labels["age"] == "elderly":
        prosody = dataclasses.replace(prosody, female_variant="grandma", male_variant="grandpa")
        if speed == "normal":
            speed = "elderly"
    if labels["accent"] == "British":
        prosody = dataclasses.replace(prosody, language=ACCENT_VOICES["UK"])
    request = SpeechRequest(text, gender=labels["gender"], speed=speed, pitch=labels["pitch"])
    notes.insert(0, f"voice {prosody.voice(request)}, {prosody.rate(speed)} wpm, pitch {labels['pitch']}")
    if labels["whisper"]:
        notes.append("whispered (noise-excited resynthesis)")
    return Delivery(request, prosody, True, "; ".join(notes), unvoice=bool(labels["whisper"]))


__all__ = [
    "ACCENTS",
    "AGES",
    "GENDERS",
    "NOT_PLANNED",
    "PITCHES",
    "RATES",
    "SYSTEM_PROMPT",
    "Context",
    "delivery_from_plan",
    "plan_labels",
    "plan_schema",
    "user_prompt",
]
