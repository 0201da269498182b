"""Measured facts for the ``cpu`` panel's prompts: what a small judge is told, not asked to find.

The packaged 1.5B judge cannot compare two narrations reliably by itself: on the sample it gave
another book's page 10 on every criterion, like the ground truth. The ``cpu`` prompt variant
(:mod:`._rubrics`) therefore adds a ``facts`` block that this module writes from the judge's own
inputs (the row's reference side and the candidate), with plain counting and no model:

- text: which of the book's characters the reference and the candidate name, capitalised words of
  the candidate found nowhere in the book's metadata, conditions, current page or reference, how
  many of the reference's content words and of its consecutive word pairs the candidate has, how
  many of the candidate's content words merely repeat the current page, and how many content words
  of the next page's requested content (the condition's ``text content``) it has;
- speech (cascade): how many words of the requested line the transcript has, in order, how well
  the requested line fits the audio when the suite's ASR is forced to read it (the describer's
  ``requested_line_logprob``; it decides whether the clip says the line, since the transcript of a
  pitch-shifted synthetic voice misses words of the right line), whether a wrong line is still
  about this book's story (its characters, or two content words of its current page or conditions)
  or from another story, and for each measured delivery attribute whether it matches the requested
  one.

Each line names the criterion, then says in words what the counts mean for it, the score range
they suggest, and last the counts themselves (``criterion: finding (suggested score a to b);
counts: ...``). The finding comes first because the 1.5B judge copies the start of a line into its
rationale and scores what that sentence says: with the counts first it read "11 of 11 (100 %) of
the words repeat the current page" as good news and gave a copy of the page 10 everywhere.

Nothing here names a system or says which side is the reference: a fact reads the same for the
ground truth as for any candidate that says the same.

Example:
    >>> content_words("The fox, the OWL and a lantern!")
    ['fox', 'owl', 'lantern']
    >>> share_text(3, 4)
    '3 of 4 (75 %)'
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

from omnieval.benchmarks.storybench._tracks import TRACKS
from omnieval.judges import LINE_FIT_KEY

if TYPE_CHECKING:
    from omnieval.judges import JudgeInputs

TEXT_FACTS_VERSION: Final = "storybench-cpu-facts/6"
"""Changes with any change of what the text facts say (part of the cpu text prompt's version)."""
SPEECH_FACTS_VERSION: Final = "storybench-cpu-facts/7"
"""Changes with any change of what the speech facts say (part of the cpu speech prompt's version).
Version 7 added the forced line fit; the text facts stayed at 6, so their cached answers stay valid."""

_T = TypeVar("_T")
_Band = tuple[tuple[int, int], str]
"""A suggested score range and the finding that goes with it."""

_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+")

STOPWORDS: Final[frozenset[str]] = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "oh",
        "yes",
        "describe",
        "show",
        "tell",
    ]
)
"""Function words left out of the content-word counts (lower-case)."""


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased (letters and apostrophes; digits and punctuation dropped)."""
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """The distinct non-function words of ``text``, lower-cased, in order of first appearance."""
    seen: dict[str, None] = {}
    for word in words(text):
        stem = word.removesuffix("'s")
        if stem not in STOPWORDS and len(stem) > 1:
            seen.setdefault(stem, None)
    return list(seen)


def share_text(found: int, total: int) -> str:
    """``found of total (pct %)``, the percentage rounded to a whole number."""
    return f"{found} of {total} ({round(100 * found / total) if total else 0} %)"


def pair_share(reference: str, candidate: str) -> tuple[int, int]:
    """How many of the reference's distinct consecutive word pairs occur in the candidate, of how many.

    Word order counts: a candidate with the reference's words in another order keeps its content
    words but loses its pairs.

    Example:
        >>> pair_share("the fox ran home", "home ran the fox")
        (1, 3)
    """
    ref = set(itertools.pairwise(words(reference)))
    cand = set(itertools.pairwise(words(candidate)))
    return len(ref & cand), len(ref)


def _names_in(text: str, names: Iterable[str]) -> list[str]:
    found = set(words(text))
    return [n for n in names if all(part in found for part in words(n))]


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def book_characters(metadata: Mapping[str, Any]) -> list[str]:
    """The names of the book's characters in its metadata, in order."""
    out: list[str] = []
    for entry in metadata.get("characters") or ():
        name = entry.get("name") if isinstance(entry, Mapping) else entry
        if isinstance(name, str) and name.strip() and name.strip() not in out:
            out.append(name.strip())
    return out


OPENERS: Final[frozenset[str]] = frozenset(
    [
        "soon",
        "suddenly",
        "later",
        "finally",
        "meanwhile",
        "together",
        "inside",
        "outside",
        "once",
        "after",
        "before",
        "near",
        "far",
        "every",
        "each",
        "across",
        "along",
        "around",
        "behind",
        "beside",
        "beyond",
        "high",
        "low",
        "deep",
        "there",
        "here",
        "until",
        "while",
    ]
)
"""Words that often open a sentence in a story and are no names (lower-case)."""


def foreign_names(candidate: str, known_texts: Iterable[str]) -> list[str]:
    """Capitalised words of ``candidate`` that none of ``known_texts`` use (in any case), leaving
    out function words and common sentence openers (:data:`OPENERS`): mostly names the book, its
    page and the reference never mention.

    Example:
        >>> foreign_names("Soon Bolt woke. Nia and Bolt's lamp. The sun rose.", ["Pip woke under the sun."])
        ['Bolt', 'Nia']
    """
    known = {w for text in known_texts for w in words(text)}
    out: list[str] = []
    for word in _CAPITALISED.findall(candidate):
        low = word.lower()
        if low not in known and low not in STOPWORDS and low not in OPENERS and word not in out:
            out.append(word)
    return out


def _listing(items: list[str]) -> str:
    return ", ".join(items) if items else "none"


def _grade(value: float, bands: Sequence[tuple[float, _T]], below: _T) -> _T:
    """The entry of the first of ``bands`` (``(threshold, entry)``, thresholds falling) whose
    threshold ``value`` reaches, else ``below``: the facts' score bands as data.

    Example:
        >>> _grade(0.6, ((0.8, "all"), (0.5, "most")), "few")
        'most'
    """
    return next((entry for threshold, entry in bands if value >= threshold), below)


class Finding(NamedTuple):
    """One criterion's measured fact: what the counts mean in words, the score range they suggest,
    and the counts themselves (a facts line, :meth:`line`)."""

    criterion: str
    span: tuple[int, int]
    finding: str
    counts: str

    def line(self) -> str:
        """The facts line: ``criterion: finding (suggested score a to b); counts: ...``.

        The finding comes first and in words: the 1.5B judge copies the start of a line into its
        rationale and scores what that sentence says; copied counts alone ("11 of 11 (100 %)") it
        read as good news, and a range at the end of the line was cut off before the score.
        """
        return f"{self.criterion}: {self.finding} (suggested score {self.span[0]} to {self.span[1]}); counts: {self.counts}"


def _lines(findings: Iterable[Finding]) -> str:
    return "\n".join(f.line() for f in findings)


def text_facts(inputs: JudgeInputs) -> str:
    """The text track's facts about the candidate narration, one line per criterion, in the
    criteria's order (see the module docstring; :func:`text_findings` gives them as data).

    Example:
        >>> from omnieval.judges import JudgeInputs
        >>> print(text_facts(JudgeInputs(
        ...     metadata={"characters": [{"name": "Pip"}, {"name": "Hazel"}]},
        ...     condition={"text content": "Describe Pip finding a lantern."},
        ...     current_text="Pip woke under the oak.",
        ...     reference_text="Pip found a lantern near the oak.",
        ...     reference_speech={},
        ...     candidate_text="Bolt found a lantern near the river.")))
        alignment_with_metadata: it uses names the book never uses and none of its characters (suggested score 1 to 3); counts: book characters named: Pip in the reference, none in the candidate; capitalised words in the candidate that the book, its page and the reference never use: Bolt
        natural_flow_from_current_narration: it moves on from the current page to what the next page tells (suggested score 8 to 10); counts: content words of the candidate already on the current page: 0 of 5 (0 %); word pairs of the reference kept in the same order: 4 of 6 (67 %)
        satisfaction_of_generation_conditions: it covers part of the requested content (suggested score 5 to 7); counts: content words of the requested next-page content: 1 of 3 (33 %) in the candidate, 2 of 3 (67 %) in the reference
        semantic_consistency_with_ground_truth: it keeps most of the reference's events (suggested score 6 to 8); counts: content words of the reference also in the candidate: 3 of 5 (60 %); word pairs of the reference in the same order: 4 of 6 (67 %)
    """
    return _lines(text_findings(inputs))


def text_findings(inputs: JudgeInputs) -> list[Finding]:
    """:func:`text_facts` as one :class:`Finding` per text criterion, in the criteria's order."""
    candidate = inputs.candidate_text or ""
    reference = inputs.reference_text
    characters = book_characters(inputs.metadata)
    known = [*_strings(inputs.metadata), *_strings(inputs.condition), inputs.current_text, reference]
    ref_words = content_words(reference)
    cand_words = content_words(candidate)
    cand_set, ref_set = set(cand_words), set(ref_words)
    current = set(content_words(inputs.current_text))
    pairs_found, pairs_total = pair_share(reference, candidate)
    requested = content_words(str(inputs.condition.get("text content") or ""))
    ref_found = sum(w in cand_set for w in ref_words)
    # Words and their order count alike: a scrambled copy keeps the words but not the pairs.
    kept = (ref_found / len(ref_words) if ref_words else 0.0) / 2 + (
        pairs_found / pairs_total if pairs_total else 0.0
    ) / 2
    ref_names, cand_names = _names_in(reference, characters), _names_in(candidate, characters)
    foreign = foreign_names(candidate, known)
    if foreign and not cand_names:
        align, align_says = (1, 3), "it uses names the book never uses and none of its characters"
    elif ref_names and not set(ref_names) & set(cand_names):
        align, align_says = (2, 4), "it names none of the book's characters the reference names"
    elif foreign:
        align, align_says = (4, 6), "it names the book's characters but also names the book never uses"
    else:
        align, align_says = (8, 10), "it keeps to the book's characters and uses no foreign names"
    repeated = sum(w in current for w in cand_words)
    pair_share_ = pairs_found / pairs_total if pairs_total else 0.0
    if cand_words and repeated / len(cand_words) >= 0.5:
        flow, flow_says = (1, 3), "it mostly repeats the current page instead of moving on"
    elif foreign and not cand_names and kept < 0.25:
        # Another story's page does not follow from this one, however well it reads on its own.
        flow, flow_says = (1, 3), "it tells another story than the current page"
    elif kept >= 0.25 and pair_share_ < 0.25:
        # the reference's words without their order: scrambled sentences
        flow, flow_says = (2, 4), "it has the next page's words but in a scrambled order"
    elif kept < 0.25:
        flow, flow_says = (4, 7), "it moves on, but not to what the next page tells"
    else:
        flow, flow_says = (8, 10), "it moves on from the current page to what the next page tells"
    asked_cand = sum(w in cand_set for w in requested)
    asked_ref = sum(w in ref_set for w in requested)
    ratio = asked_cand / asked_ref if asked_ref else (1.0 if asked_cand or not requested else 0.0)
    conditions, conditions_says = _grade(
        ratio,
        (
            (0.8, ((8, 10), "it covers the requested content as fully as the reference")),
            (0.4, ((5, 7), "it covers part of the requested content")),
        ),
        ((1, 4), "it misses most of the requested content"),
    )
    semantic, semantic_share = _grade(
        kept,
        ((0.8, ((9, 10), "all or nearly all")), (0.5, ((6, 8), "most")), (0.25, ((3, 5), "some"))),
        ((1, 2), "few" if kept > 0 else "none"),
    )
    findings = (
        (
            align,
            align_says,
            f"book characters named: {_listing(ref_names)} in the reference, {_listing(cand_names)} in the "
            "candidate; capitalised words in the candidate that the book, its page and the reference never "
            f"use: {_listing(foreign)}",
        ),
        (
            flow,
            flow_says,
            "content words of the candidate already on the current page: "
            + share_text(repeated, len(cand_words))
            + "; word pairs of the reference kept in the same order: "
            + share_text(pairs_found, pairs_total),
        ),
        (
            conditions,
            conditions_says,
            "content words of the requested next-page content: "
            + share_text(asked_cand, len(requested))
            + " in the candidate, "
            + share_text(asked_ref, len(requested))
            + " in the reference",
        ),
        (
            semantic,
            f"it keeps {semantic_share} of the reference's events",
            "content words of the reference also in the candidate: "
            + share_text(ref_found, len(ref_words))
            + "; word pairs of the reference in the same order: "
            + share_text(pairs_found, pairs_total),
        ),
    )
    return [Finding(c, *f) for c, f in zip(TRACKS["text"].criteria, findings, strict=True)]


_DELIVERY: Final = ("speed", "pitch", "gender", "emotion")


def _measured(value: object) -> bool:
    return isinstance(value, str) and value.strip() != ""


_FIT_SAYS: Final = -2.5
"""Line fit (mean log-probability per token of the requested line, forced) at or above which the
clip says the line. On the bundled sample (Whisper tiny.en) the 20 clips saying the requested line
reach it in 15 cases; the other systems' 60 clips, none of which says it, never pass -3.1."""
_FIT_PARTLY: Final = -3.0
"""Line fit at or above which the clip says the line at least unclearly (17 of those 20)."""


def _fit_text(fit: float) -> str:
    """The fit as the geometric-mean probability per token, in percent (``-1.12`` -> ``"33 % per token"``)."""
    return f"{100 * math.exp(fit):.0f} % per token"


def speech_facts(inputs: JudgeInputs) -> str:
    """The speech cascade's facts, one line per criterion: transcript vs requested line, measured
    vs requested delivery, each with the score range the counts suggest (:func:`speech_findings`
    gives them as data).

    Example:
        >>> from omnieval.judges import JudgeInputs
        >>> print(speech_facts(JudgeInputs(
        ...     metadata={}, condition={}, current_text="", reference_text="",
        ...     reference_speech={"line": "Run, little goat, run!", "speed": "fast", "pitch": "high",
        ...                       "gender": "female", "emotion": "happy"},
        ...     candidate_audio_analysis={"transcript": "Run little goat!", "speed": "fast", "pitch": "normal",
        ...                               "gender": None})))
        alignment_with_metadata: it says the requested line (suggested score 8 to 10); counts: words of the requested line heard in the transcript: 3 of 4 (75 %)
        naturalness_and_conversational_relevance: it says the requested line (suggested score 8 to 10); counts: words recognised: 3; words of the requested line heard: 3 of 4 (75 %); word pairs of the line heard in the same order: 2 of 3 (67 %)
        satisfaction_of_generation_conditions: it gives mostly the requested line and delivery (suggested score 6 to 8); counts: words of the requested line heard: 3 of 4 (75 %); measured delivery attributes that match the request: 1 of 2
        semantic_consistency_and_persona_match_with_ground_truth: some measured attributes match the request (suggested score 4 to 6); counts: speed matches (fast); pitch does not match (normal, requested high); gender not measured; emotion not measured; words of the line heard: 3 of 4 (75 %)
    """
    return _lines(speech_findings(inputs))


def speech_findings(inputs: JudgeInputs) -> list[Finding]:
    """:func:`speech_facts` as one :class:`Finding` per speech criterion, in the criteria's order."""
    analysis = inputs.candidate_audio_analysis or {}
    wanted = inputs.reference_speech
    transcript = str(analysis.get("transcript") or "")
    line = str(wanted.get("line") or "")
    line_words = words(line)
    heard = words(transcript)
    # Each word of the line counts once per occurrence found (a word said twice must be heard twice).
    pool = list(heard)
    found = 0
    for word in line_words:
        if word in pool:
            pool.remove(word)
            found += 1
    share = found / len(line_words) if line_words else 0.0
    pairs_found, pairs_total = pair_share(line, transcript)
    parts: list[str] = []
    matched = measured = 0
    for key in _DELIVERY:
        got, req = analysis.get(key), wanted.get(key)
        if not _measured(got):
            parts.append(f"{key} not measured")
        elif not _measured(req):
            parts.append(f"{key} {got} (nothing requested)")
        else:
            measured += 1
            if str(got).strip().lower() == str(req).strip().lower():
                matched += 1
                parts.append(f"{key} matches ({got})")
            else:
                parts.append(f"{key} does not match ({got}, requested {req})")
    said = share_text(found, len(line_words))
    fit_value = analysis.get(LINE_FIT_KEY)
    fit = float(fit_value) if isinstance(fit_value, int | float) else None
    word_level = _grade(share, ((0.6, 2), (0.25, 1)), 0)
    if fit is None:
        line_level = word_level
    else:
        # The forced reading decides: tiny.en mishears the right line in a pitch-shifted voice, yet
        # finds it far likelier than any other line (docs/judges.md); a transcript holding most of
        # the line's words still counts.
        fit_level = _grade(fit, ((_FIT_SAYS, 2), (_FIT_PARTLY, 1)), 0)
        line_level = max(fit_level, 2 if word_level == 2 else 0)
    fit_counts = "" if fit is None else f"; fit of the requested line to the audio: {_fit_text(fit)}"
    # Measured delivery weighs as much as the words: it is measured, not heard through the ASR.
    delivery = matched / measured if measured else 0.5
    points = line_level + 2 * delivery  # 0 .. 4
    # What a wrong line is about still matters: a line of this book's story (its characters, its
    # current page, its conditions) fits the moment better than another book's.
    characters = book_characters(inputs.metadata)
    story = [*_strings(inputs.condition), inputs.current_text]
    story_words = {w for text in story for w in content_words(text)}
    on_topic = (
        bool(_names_in(transcript, characters)) or len(set(content_words(transcript)) & story_words) >= 2
    )
    other_story = line_level == 0 and not on_topic and bool(heard)
    conditions, conditions_says = _grade(
        points,
        (
            (3.5, ((8, 10), "it gives the requested line, spoken as requested")),
            (2.5, ((6, 8), "it gives mostly the requested line and delivery")),
            (1.5, ((4, 6), "it gives only partly the requested line and delivery")),
        ),
        ((1, 3), "it gives neither the requested line nor its delivery"),
    )
    # Another story's line is not consistent with this character's line whatever the voice: a fully
    # matching delivery earns 2 to 4, a partly matching one nothing, so delivery cannot make up for
    # the words (it did on the full sample, tying a copy of this book's current page with another
    # book's line).
    persona_band = (
        0 if delivery == 1 and line_level == 2 else 1 if delivery == 1 else 2 if delivery >= 0.5 else 3
    )
    persona = (((9, 10), (6, 8), (4, 6), (1, 3)) if not other_story else ((9, 10), (2, 4), (1, 3), (1, 3)))[
        persona_band
    ]
    said_words = (
        "it says another line, about this book's story"
        if on_topic
        else "it says a line from another story, not the requested line",
        "it says part of the requested line, or says it unclearly",
        "it says the requested line",
    )[line_level]
    silent = not heard and line_level == 0
    if silent:
        said_words = "nothing intelligible was recognised"
    fits = ((4, 6) if on_topic else (2, 4), (4, 6), (8, 10))[line_level]
    natural = (1, 2) if silent else ((5, 7) if on_topic else (2, 4), (5, 7), (8, 10))[line_level]
    persona_says = (
        "the line and every measured attribute match the request",
        "every measured attribute matches the request, but the line is not fully said",
        "some measured attributes match the request",
        "the measured attributes do not match the request",
    )[persona_band]
    if not measured:  # band 2: an unmeasured delivery counts as half matching
        persona_says = "no delivery attribute could be measured"
    if other_story:
        persona_says = f"the line is from another story, and {persona_says}"
    findings = (
        (
            fits,
            said_words,
            f"words of the requested line heard in the transcript: {said}{fit_counts}",
        ),
        (
            natural,
            said_words,
            f"words recognised: {len(heard)}; words of the requested line heard: {said}; word pairs of the "
            f"line heard in the same order: {share_text(pairs_found, pairs_total)}{fit_counts}",
        ),
        (
            conditions,
            conditions_says,
            f"words of the requested line heard: {said}{fit_counts}; measured delivery attributes that "
            f"match the request: {matched} of {measured}",
        ),
        (persona, persona_says, "; ".join(parts) + f"; words of the line heard: {said}"),
    )
    return [Finding(c, *f) for c, f in zip(TRACKS["speech"].criteria, findings, strict=True)]


# -- the image cascade -----------------------------------------------------------------------------

IMAGE_FACTS_VERSION: Final = "storybench-cpu-image-facts/1"
"""Changes with any change of what the image facts say (part of the cpu image prompt's version)."""
INTEGRATED_FACTS_VERSION: Final = (
    f"storybench-cpu-integrated-facts/1({TEXT_FACTS_VERSION},{IMAGE_FACTS_VERSION},{SPEECH_FACTS_VERSION})"
)
"""The integrated facts combine the three tracks' findings: their versions are part of its own."""

SAME_PICTURE: Final = 0.97
"""Cosine similarity of image embeddings at or above which two images are the same picture (the
sample's consecutive pages reach 0.90 at most, EfficientNet-Lite0)."""
_REF_LEVELS: Final = (0.95, 0.8, 0.65)
"""Similarity to the reference next-scene image for: the reference scene itself, close, partly like.
On the sample (EfficientNet-Lite0) another book's page reaches 0.43-0.54 on average (at most 0.70),
a page of the same book 0.47-0.77, the current page 0.49-0.90, the next page in shuffled 4 x 4
tiles 0.50-0.84."""
_BOOK_LOOK: Final = (0.8, 0.65)
"""The larger of the similarities to the reference and to the current image for: looks like this
book's pictures, partly like them."""
_CONTINUES: Final = 0.65
"""Similarity to the current scene image at or above which the image follows on from it."""

BLANK_CONTRAST: Final = 0.02
"""Standard deviation of the grey levels (0-1) below which an image is blank (one flat colour)."""
NOISE_CORRELATION: Final = 0.3
"""Correlation of horizontally neighbouring grey levels below which an image is noise (drawn and
photographed pictures: above 0.9)."""


def picture_statistics(path: Path) -> dict[str, object]:
    """Plain statistics of an image file: size, brightness and contrast (mean and standard deviation
    of the grey levels, 0-1), the correlation of neighbouring pixels, and the ``kind`` they say:
    ``blank`` (flat), ``noise`` (neighbours uncorrelated) or ``picture``.

    Example:
        >>> import tempfile
        >>> from PIL import Image
        >>> out = Path(tempfile.mkdtemp()) / "grey.png"
        >>> Image.new("RGB", (32, 16), (128, 128, 128)).save(out)
        >>> picture_statistics(out)["kind"]
        'blank'
    """
    import numpy as np
    from PIL import Image

    with Image.open(path) as img:
        grey = np.asarray(img.convert("L"), dtype=np.float64) / 255.0
        size = [int(img.width), int(img.height)]
    contrast = float(grey.std())
    left, right = grey[:, :-1].ravel(), grey[:, 1:].ravel()
    spread = float(left.std() * right.std())
    correlation = (
        float(((left - left.mean()) * (right - right.mean())).mean() / spread) if spread > 0 else 1.0
    )
    kind = "blank" if contrast < BLANK_CONTRAST else "noise" if correlation < NOISE_CORRELATION else "picture"
    return {
        "size": size,
        "brightness": round(float(grey.mean()), 4),
        "contrast": round(contrast, 4),
        "neighbour_correlation": round(correlation, 4),
        "kind": kind,
    }


def _number(analysis: Mapping[str, object], key: str) -> float | None:
    value = analysis.get(key)
    return float(value) if isinstance(value, int | float) and value == value else None


def image_findings(inputs: JudgeInputs) -> list[Finding]:
    """The image cascade's facts as one :class:`Finding` per image criterion, in the criteria's order.

    From the describer's measurements (``candidate_image_analysis``): the candidate's similarity to
    the reference next-scene image and to the current scene image (and the reference's own
    similarity to the current one, the yardstick of how much a right next scene keeps of the
    current one), and whether it is a picture at all (blank, noise).
    """
    analysis = inputs.candidate_image_analysis or {}
    kind = str(analysis.get("kind") or "picture")
    to_ref = _number(analysis, "similarity_to_reference")
    to_cur = _number(analysis, "similarity_to_current")
    ref_cur = _number(analysis, "reference_similarity_to_current")
    counts = "; ".join(
        f"{name}: {'not measured' if value is None else f'{value:.2f}'}"
        for name, value in (
            ("similarity to the reference next-scene image", to_ref),
            ("to the current scene image", to_cur),
            ("the reference's own similarity to the current scene image", ref_cur),
        )
    )
    criteria = TRACKS["image"].criteria
    if kind in ("blank", "noise") or to_ref is None:
        says = (
            "the image is blank, one flat colour with no scene"
            if kind == "blank"
            else "the image is random noise with no scene"
            if kind == "noise"
            else "the image could not be compared with the reference"
        )
        spans = ((1, 2), (1, 2), (1, 2), (1, 2)) if kind in ("blank", "noise") else ((1, 10),) * 4
        return [Finding(c, span, says, counts) for c, span in zip(criteria, spans, strict=True)]
    cur = to_cur if to_cur is not None else 0.0
    same_as_current = cur >= SAME_PICTURE and to_ref < SAME_PICTURE
    level = sum(to_ref >= t for t in _REF_LEVELS)  # 0 (unlike) .. 3 (the reference scene itself)
    look = max(to_ref, cur)
    align = _grade(
        look,
        (
            (_BOOK_LOOK[0], ((8, 10), "it looks like this book's pictures")),
            (_BOOK_LOOK[1], ((5, 7), "it looks partly like this book's pictures")),
        ),
        ((2, 4), "it looks like another book's pictures, not this one's"),
    )
    follows = cur >= _CONTINUES or (ref_cur is not None and cur >= ref_cur - 0.02 and level >= 2)
    flow: _Band
    cond: _Band
    if same_as_current:
        flow = (2, 4), "it repeats the current scene unchanged instead of moving on"
        cond = (2, 4), "it shows the current scene again, not the requested next one"
    else:
        if follows:
            flow = (8, 10), "it follows on from the current scene in the same look"
        elif cur >= 0.5 and look >= _BOOK_LOOK[1]:
            flow = (4, 6), "it follows the current scene only loosely"
        else:
            flow = (1, 3), "it does not follow from the current scene"
        cond = (
            ((1, 3), "it does not show what the reference next scene shows"),
            ((3, 5), "it shows only part of what the reference next scene shows"),
            ((6, 8), "it shows much of what the reference next scene shows"),
            ((8, 10), "it shows the requested next scene, as the reference does"),
        )[level]
    semantic = (
        ((1, 2), "it is unlike the reference next scene"),
        ((3, 5), "it is only partly like the reference next scene"),
        ((6, 8), "it is close to the reference next scene"),
        ((9, 10), "it depicts the reference next scene"),
    )[level]
    return [
        Finding(criterion, span, says, counts)
        for criterion, (span, says) in zip(criteria, (align, flow, cond, semantic), strict=True)
    ]


def image_facts(inputs: JudgeInputs) -> str:
    """The image cascade's facts, one line per criterion (:func:`image_findings`).

    Example:
        >>> from omnieval.judges import JudgeInputs
        >>> print(image_facts(JudgeInputs(
        ...     metadata={}, condition={}, current_text="", reference_text="", reference_speech={},
        ...     candidate_image_analysis={"kind": "picture", "similarity_to_reference": 0.87,
        ...         "similarity_to_current": 1.0, "reference_similarity_to_current": 0.87})))
        alignment_with_metadata: it looks like this book's pictures (suggested score 8 to 10); counts: similarity to the reference next-scene image: 0.87; to the current scene image: 1.00; the reference's own similarity to the current scene image: 0.87
        visual_narrative_continuity_from_current_scene: it repeats the current scene unchanged instead of moving on (suggested score 2 to 4); counts: similarity to the reference next-scene image: 0.87; to the current scene image: 1.00; the reference's own similarity to the current scene image: 0.87
        satisfaction_of_generation_conditions: it shows the current scene again, not the requested next one (suggested score 2 to 4); counts: similarity to the reference next-scene image: 0.87; to the current scene image: 1.00; the reference's own similarity to the current scene image: 0.87
        semantic_consistency_with_ground_truth: it is close to the reference next scene (suggested score 6 to 8); counts: similarity to the reference next-scene image: 0.87; to the current scene image: 1.00; the reference's own similarity to the current scene image: 0.87
    """
    return _lines(image_findings(inputs))


def integrated_findings(inputs: JudgeInputs) -> list[Finding]:
    """The integrated track's facts: per criterion, the narration's, the image's and the spoken
    line's findings on the matching criterion of their own tracks (the four tracks' criteria
    correspond in order), and the mean of their suggested ranges, rounded."""
    parts = (text_findings(inputs), image_findings(inputs), speech_findings(inputs))
    out: list[Finding] = []
    for i, criterion in enumerate(TRACKS["integrated"].criteria):
        found = [p[i] for p in parts]
        lo = round(sum(f.span[0] for f in found) / 3)
        hi = max(lo, round(sum(f.span[1] for f in found) / 3))
        says = "; ".join(
            f"{name}: {f.finding}" for name, f in zip(("narration", "image", "speech"), found, strict=True)
        )
        out.append(Finding(criterion, (lo, hi), says, ""))
    return out


def integrated_facts(inputs: JudgeInputs) -> str:
    """The integrated track's facts, one line per criterion, without counts (the three tracks'
    counts are theirs; here the findings are what the judge reads), e.g. ``alignment_with_metadata:
    narration: ...; image: ...; speech: ... (suggested score 7 to 9)``."""
    return "\n".join(
        f"{f.criterion}: {f.finding} (suggested score {f.span[0]} to {f.span[1]})"
        for f in integrated_findings(inputs)
    )


class ImageDescriber:
    """The cpu panel's image cascade input: the candidate image measured beside the current and the
    reference next-scene images (:data:`omnieval.judges.DescribeImage`).

    Similarities are cosines of the image embeddings the ``image_similarity`` metric uses (the same
    backbone, loaded once per process by :func:`omnieval.backends.embeddings.load_image_embedder`);
    embeddings are read from, and added to, the metric cache ``embedding_cache`` when given (the
    metrics stage's, so images it embedded are not embedded again). ``version`` keys the judges'
    cache of descriptions: it changes with the facts' version and the backbone settings.

    Args:
        config: the suite's ``metrics:`` settings (``image_backbone``, ``clip_source``).
        embedding_cache: a metric cache folder, or None for none.
    """

    def __init__(self, config: Any, embedding_cache: Path | None = None) -> None:
        self.config = config
        self.embedding_cache = embedding_cache

    @cached_property
    def version(self) -> str:
        from omnieval.backends.embeddings import clip_available
        from omnieval.metrics import IMAGE_SIMILARITY

        backbone = str(self.config.image_backbone)
        if backbone == "auto":
            clip = clip_available(self.config.clip_source)
            backbone = f"clip-vit-b-32:{self.config.clip_source}" if clip else "efficientnet-lite0"
        return f"{IMAGE_FACTS_VERSION}:{IMAGE_SIMILARITY.name}/{IMAGE_SIMILARITY.version}:{backbone}"

    def __call__(self, candidate: Path, current: Path | None, reference: Path | None) -> Mapping[str, object]:
        from omnieval.metrics import ImageSimilarity, MetricCache

        out: dict[str, object] = picture_statistics(candidate)
        others = [p for p in (current, reference) if p is not None and Path(p).is_file()]
        metric = ImageSimilarity(self.config)
        embedded, _, _ = metric.embed_files(
            [Path(candidate), *map(Path, others)], MetricCache(self.embedding_cache)
        )
        cand = embedded[Path(candidate)]

        def sim(a: Path | None, b: Any) -> float | None:
            if a is None or Path(a) not in embedded:
                return None
            return round(metric.similarity(embedded[Path(a)], b), 4)

        out["similarity_to_reference"] = sim(reference, cand)
        out["similarity_to_current"] = sim(current, cand)
        out["reference_similarity_to_current"] = (
            sim(current, embedded[Path(reference)])
            if reference is not None and Path(reference) in embedded
            else None
        )
        out["backbone"] = metric.backbone
        return out
