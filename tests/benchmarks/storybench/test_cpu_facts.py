"""The cpu panel's measured facts and its own prompt variants (no model: the values are hand-checked).

The packaged 1.5B judge is told what plain counting finds (:mod:`omnieval.benchmarks.storybench._facts`);
these tests pin what it is told for small hand-made inputs, that the facts reach the prompt under
the cpu variants only, and that the paper panels keep the paper's prompts.
"""

from __future__ import annotations

import dataclasses
import doctest
from pathlib import Path

import pytest

from omnieval.benchmarks.storybench import _facts
from omnieval.benchmarks.storybench._facts import (
    content_words,
    foreign_names,
    pair_share,
    speech_facts,
    text_facts,
    words,
)
from omnieval.benchmarks.storybench._record import load_storybench
from omnieval.benchmarks.storybench._rubrics import CPU_TEXT_PROMPT_VERSION, PROMPT_VERSION
from omnieval.benchmarks.storybench._tracks import page_turn_inputs
from omnieval.judges import LINE_FIT_KEY, Framing, JudgeInputs, load_panel, render_messages, template
from omnieval.judges._rubrics import template_facts

_BOOK = {
    "genre": "fairy tale",
    "characters": [{"name": "Pip", "description": "a fox"}, {"name": "Hazel", "description": "an owl"}],
}
_COND = {"text content": "Describe Pip finding a brass lantern by the mushrooms."}
_CURRENT = "Pip woke under the old oak tree."
_REFERENCE = "Near the red mushrooms, Pip found a brass lantern."


def _text(candidate: str) -> str:
    return text_facts(JudgeInputs(_BOOK, _COND, _CURRENT, _REFERENCE, {}, candidate_text=candidate))


def _lines(facts: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in facts.splitlines())


def test_words_and_content_words() -> None:
    assert words("Pip's lantern—it’s OK!") == ["pip's", "lantern", "it's", "ok"]
    # "near" is no function word here; "the", "a" and "describe" are; possessives fold onto the name.
    assert content_words(_REFERENCE) == ["near", "red", "mushrooms", "pip", "found", "brass", "lantern"]
    assert content_words(_COND["text content"]) == ["pip", "finding", "brass", "lantern", "mushrooms"]
    assert content_words("Pip's lamp and Pip") == ["pip", "lamp"]


def test_pair_share_counts_order() -> None:
    # Reference pairs: near-the, the-red, red-mushrooms, mushrooms-pip, pip-found, found-a, a-brass,
    # brass-lantern (8); the scrambled copy keeps only "a brass".
    assert pair_share(_REFERENCE, _REFERENCE) == (8, 8)
    assert pair_share(_REFERENCE, "lantern found mushrooms red the near a brass Pip") == (1, 8)


def test_foreign_names_leave_out_openers_and_known_words() -> None:
    known = [_CURRENT, _REFERENCE, "Pip Hazel fox owl"]
    assert foreign_names("Soon Bolt met Hazel. Then Nia came.", known) == ["Bolt", "Nia"]
    assert foreign_names("Near the red mushrooms, Pip found a brass lantern.", known) == []


def _split(line: str) -> tuple[str, str, str]:
    """``finding (suggested score a to b); counts: ...`` -> (finding, "a to b", counts)."""
    head, counts = line.split("; counts: ", 1)
    finding, span = head.rsplit(" (suggested score ", 1)
    return finding, span.removesuffix(")"), counts


def test_every_line_gives_finding_range_then_counts() -> None:
    # The finding in words comes first: the 1.5B judge copies a line's start into its rationale.
    for line in _lines(_text(_CURRENT)).values():
        finding, span, counts = _split(line)
        assert finding.startswith("it ") and " to " in span and counts


def test_text_facts_for_the_ground_truth_itself() -> None:
    facts = {k: _split(v) for k, v in _lines(_text(_REFERENCE)).items()}
    assert facts["alignment_with_metadata"] == (
        "it keeps to the book's characters and uses no foreign names",
        "8 to 10",
        "book characters named: Pip in the reference, Pip in the candidate; capitalised words in the "
        "candidate that the book, its page and the reference never use: none",
    )
    # Candidate content words (7): only "pip" is on the current page.
    assert facts["natural_flow_from_current_narration"] == (
        "it moves on from the current page to what the next page tells",
        "8 to 10",
        "content words of the candidate already on the current page: 1 of 7 (14 %); word pairs of the "
        "reference kept in the same order: 8 of 8 (100 %)",
    )
    # Requested: pip, finding, brass, lantern, mushrooms; the reference has all but "finding".
    assert facts["satisfaction_of_generation_conditions"] == (
        "it covers the requested content as fully as the reference",
        "8 to 10",
        "content words of the requested next-page content: 4 of 5 (80 %) in the candidate, 4 of 5 (80 %) "
        "in the reference",
    )
    assert facts["semantic_consistency_with_ground_truth"] == (
        "it keeps all or nearly all of the reference's events",
        "9 to 10",
        "content words of the reference also in the candidate: 7 of 7 (100 %); word pairs of the reference "
        "in the same order: 8 of 8 (100 %)",
    )


def test_text_facts_for_damaged_copies() -> None:
    # Another book's page: no shared words, a foreign name, no book character.
    other = {k: _split(v) for k, v in _lines(_text("Bolt swept the wet street with his broom.")).items()}
    assert other["alignment_with_metadata"][1:] == (
        "1 to 3",
        "book characters named: Pip in the reference, none in the candidate; capitalised words in the "
        "candidate that the book, its page and the reference never use: Bolt",
    )
    # It does not follow the current page: another story, not merely "not what the next page tells".
    assert other["natural_flow_from_current_narration"][:2] == (
        "it tells another story than the current page",
        "1 to 3",
    )
    assert "0 of 8 (0 %)" in other["natural_flow_from_current_narration"][2]  # no pair kept
    assert other["satisfaction_of_generation_conditions"][1] == "1 to 4"
    assert other["satisfaction_of_generation_conditions"][2].startswith(
        "content words of the requested next-page content: 0 of 5"
    )
    assert other["semantic_consistency_with_ground_truth"][:2] == (
        "it keeps none of the reference's events",
        "1 to 2",
    )
    # The current page again: every content word (pip, woke, old, oak, tree) repeats it.
    copy = _split(_lines(_text(_CURRENT))["natural_flow_from_current_narration"])
    assert copy[:2] == ("it mostly repeats the current page instead of moving on", "1 to 3")
    assert copy[2].startswith("content words of the candidate already on the current page: 5 of 5 (100 %)")
    # Scrambled words: all content words kept, 1 of 8 pairs: (7/7 + 1/8) / 2 = 0.5625 -> "most".
    scrambled = {
        k: _split(v) for k, v in _lines(_text("lantern found mushrooms red the near a brass Pip")).items()
    }
    assert scrambled["semantic_consistency_with_ground_truth"] == (
        "it keeps most of the reference's events",
        "6 to 8",
        "content words of the reference also in the candidate: 7 of 7 (100 %); word pairs of the reference "
        "in the same order: 1 of 8 (12 %)",
    )
    assert scrambled["natural_flow_from_current_narration"][:2] == (
        "it has the next page's words but in a scrambled order",
        "2 to 4",
    )
    # A renamed character: Pip missing, Bolt foreign; the story itself is kept, so it still flows
    # (6 of 7 content words, 6 of 8 pairs: (6/7 + 6/8) / 2 = 0.80 -> "all or nearly all").
    renamed = {k: _split(v) for k, v in _lines(_text(_REFERENCE.replace("Pip", "Bolt"))).items()}
    assert renamed["alignment_with_metadata"][:2] == (
        "it uses names the book never uses and none of its characters",
        "1 to 3",
    )
    assert renamed["natural_flow_from_current_narration"][1] == "8 to 10"
    assert renamed["semantic_consistency_with_ground_truth"][1] == "9 to 10"


def test_speech_facts_compare_transcript_and_delivery_with_the_request() -> None:
    request = {"name": "Pip", "line": "Oh! A lantern, all by itself?", "speed": "normal", "pitch": "high"}

    def facts(analysis: dict[str, object]) -> dict[str, tuple[str, str, str]]:
        inputs = JudgeInputs(_BOOK, _COND, _CURRENT, _REFERENCE, request, candidate_audio_analysis=analysis)
        return {k: _split(v) for k, v in _lines(speech_facts(inputs)).items()}

    # The line heard whole, pitch as requested, speed not: 6 of 6 words, 1 of 2 attributes.
    right = facts({"transcript": "Oh, a lantern all by itself.", "speed": "fast", "pitch": "high"})
    assert right["alignment_with_metadata"] == (
        "it says the requested line",
        "8 to 10",
        "words of the requested line heard in the transcript: 6 of 6 (100 %)",
    )
    # line level 2 + 2 x delivery 0.5 = 3 points -> 6 to 8.
    assert right["satisfaction_of_generation_conditions"] == (
        "it gives mostly the requested line and delivery",
        "6 to 8",
        "words of the requested line heard: 6 of 6 (100 %); measured delivery attributes that match the "
        "request: 1 of 2",
    )
    assert right["semantic_consistency_and_persona_match_with_ground_truth"] == (
        "some measured attributes match the request",
        "4 to 6",
        "speed does not match (fast, requested normal); pitch matches (high); gender not measured; emotion "
        "not measured; words of the line heard: 6 of 6 (100 %)",
    )
    # Another line, not of this book: only "a" is shared (1 of 6, below 25 %); both attributes match,
    # so the delivery (which ASR errors cannot hide) still earns the persona line 2 to 4 (a wrong line of
    # this book's story in that voice: 6 to 8), the words 2 to 4.
    wrong = facts({"transcript": "Bolt swept a street.", "speed": "normal", "pitch": "high"})
    assert wrong["alignment_with_metadata"] == (
        "it says a line from another story, not the requested line",
        "2 to 4",
        "words of the requested line heard in the transcript: 1 of 6 (17 %)",
    )
    assert wrong["naturalness_and_conversational_relevance"][1] == "2 to 4"
    # line level 0 + 2 x delivery 1.0 = 2 points -> 4 to 6.
    assert wrong["satisfaction_of_generation_conditions"][1:] == (
        "4 to 6",
        "words of the requested line heard: 1 of 6 (17 %); measured delivery attributes that match the "
        "request: 2 of 2",
    )
    assert wrong["semantic_consistency_and_persona_match_with_ground_truth"][:2] == (
        "the line is from another story, and every measured attribute matches the request, but the line "
        "is not fully said",
        "2 to 4",
    )
    # Another line of this book's story (Pip, and "woke", "oak" of the current page) fits the moment
    # better than another book's: two points more on the first criterion, three on the second, and
    # the persona band above.
    story = facts({"transcript": "Pip woke under the oak.", "speed": "normal", "pitch": "high"})
    assert story["alignment_with_metadata"][:2] == ("it says another line, about this book's story", "4 to 6")
    assert story["naturalness_and_conversational_relevance"][1] == "5 to 7"
    assert story["semantic_consistency_and_persona_match_with_ground_truth"][:2] == (
        "every measured attribute matches the request, but the line is not fully said",
        "6 to 8",
    )
    # Another line in another voice: nothing matches.
    worst = facts({"transcript": "Bolt swept a street.", "speed": "slow", "pitch": "low"})
    assert worst["satisfaction_of_generation_conditions"][:2] == (
        "it gives neither the requested line nor its delivery",
        "1 to 3",
    )
    assert worst["semantic_consistency_and_persona_match_with_ground_truth"][:2] == (
        "the line is from another story, and the measured attributes do not match the request",
        "1 to 3",
    )
    # Nothing recognised, nothing measured.
    silent = facts({"transcript": "", "speed": None, "pitch": None})
    assert silent["naturalness_and_conversational_relevance"][:2] == (
        "nothing intelligible was recognised",
        "1 to 2",
    )
    assert silent["naturalness_and_conversational_relevance"][2].startswith("words recognised: 0;")
    assert silent["semantic_consistency_and_persona_match_with_ground_truth"][0] == (
        "no delivery attribute could be measured"
    )


def test_speech_facts_take_the_forced_line_fit_over_a_misheard_transcript() -> None:
    """With the describer's line fit (mean log-probability per token of the requested line, forced),
    the fit decides the line level; a transcript holding most of the line still counts."""
    request = {"name": "Pip", "line": "Oh! A lantern, all by itself?", "speed": "normal", "pitch": "high"}

    def facts(transcript: str, fit: float) -> dict[str, tuple[str, str, str]]:
        analysis = {"transcript": transcript, "speed": "normal", "pitch": "high", LINE_FIT_KEY: fit}
        inputs = JudgeInputs(_BOOK, _COND, _CURRENT, _REFERENCE, request, candidate_audio_analysis=analysis)
        return {k: _split(v) for k, v in _lines(speech_facts(inputs)).items()}

    # Misheard (0 of 6 words) but the line fits: exp(-1.0) = 36.8 % per token -> "37 %", level 2.
    misheard = facts("and then just open it", -1.0)
    assert misheard["alignment_with_metadata"] == (
        "it says the requested line",
        "8 to 10",
        "words of the requested line heard in the transcript: 0 of 6 (0 %); fit of the requested line to "
        "the audio: 37 % per token",
    )
    # level 2 + 2 x delivery 1.0 = 4 points.
    assert misheard["satisfaction_of_generation_conditions"][1] == "8 to 10"
    assert misheard["semantic_consistency_and_persona_match_with_ground_truth"][1] == "9 to 10"
    # Between -3.0 and -2.5: said unclearly (exp(-2.7) = 6.7 %).
    unclear = facts("and then just open it", -2.7)
    assert unclear["alignment_with_metadata"][:2] == (
        "it says part of the requested line, or says it unclearly",
        "4 to 6",
    )
    assert unclear["alignment_with_metadata"][2].endswith(
        "fit of the requested line to the audio: 7 % per token"
    )
    # Three of six words by chance ("a", "all", "by"), yet the line does not fit: another line (level 0).
    chance = facts("Bolt ran all by a wall.", -4.0)
    assert chance["alignment_with_metadata"][:2] == (
        "it says a line from another story, not the requested line",
        "2 to 4",
    )
    # Most of the line heard counts even with a poor fit.
    heard = facts("Oh, a lantern all by itself.", -4.0)
    assert heard["alignment_with_metadata"][:2] == ("it says the requested line", "8 to 10")
    # Nothing recognised, but the audio fits the line: not "nothing intelligible".
    unrecognised = facts("", -1.2)
    assert unrecognised["naturalness_and_conversational_relevance"][:2] == (
        "it says the requested line",
        "8 to 10",
    )


def test_facts_doctests() -> None:
    failures, tried = doctest.testmod(_facts)
    assert tried >= 5 and failures == 0


def test_cpu_panel_names_its_own_prompts_and_the_paper_panels_do_not() -> None:
    cpu = load_panel("cpu")
    assert (cpu.tracks["text"].variant, cpu.tracks["speech"].variant) == ("cpu", "cpu-cascade")
    assert cpu.tracks["speech"].input == "cascade"
    assert template("text", "cpu").version == CPU_TEXT_PROMPT_VERSION != PROMPT_VERSION
    assert template("text", "cpu").sha256() != template("text", "native").sha256()
    for name in ("paper-a", "paper-b", "paper-c", "paper"):
        panel = load_panel(name)
        assert {cfg.variant for cfg in panel.tracks.values() if cfg.judges} <= {"native", "cascade"}
        assert panel.model_dump(mode="json")["tracks"]
        assert all("prompt" not in t for t in panel.model_dump(mode="json")["tracks"].values())
    assert template_facts("text", "cpu") is text_facts
    assert template_facts("speech", "cpu-cascade") is speech_facts


def test_cpu_text_prompt_carries_the_facts_and_no_system_name(sample_root: Path) -> None:
    transitions = load_storybench(sample_root).transitions
    inputs = dataclasses.replace(page_turn_inputs(transitions[0]), candidate_text=transitions[12].next_text)
    framing = Framing(compact_json=True, max_field_chars=700)  # the cpu judge's; the facts are never cut
    system, user = render_messages(template("text", "cpu"), inputs, framing)
    text = user.parts[0].text  # type: ignore[union-attr]
    facts = text.split("<measured_facts>\n", 1)[1].split("\n</measured_facts>", 1)[0]
    assert facts == text_facts(inputs)
    assert "semantic_consistency_with_ground_truth: it keeps none of the reference's events" in facts
    assert "counts: content words of the reference also in the candidate: 0 of" in facts
    for leak in ("oracle", "shuffled", "copy-current", "ground truth", "ground-truth"):
        assert leak not in text.lower()
    assert "score range those counts suggest" in system.parts[0].text  # type: ignore[union-attr]
    # The paper's text prompt has no facts block.
    _, native_user = render_messages(template("text", "native"), inputs, framing)
    assert "<measured_facts>" not in native_user.parts[0].text  # type: ignore[union-attr]


def test_a_facts_block_needs_registered_facts() -> None:
    from omnieval.errors import ConfigError
    from omnieval.judges import register_templates
    from omnieval.judges._rubrics import registered_templates

    templates = dict(registered_templates())
    with pytest.raises(ConfigError, match="facts block but no facts"):
        register_templates(
            templates,
            benchmark="storybench",
            prompt_version=PROMPT_VERSION,
            repair_version="storybench-repair/1",
        )
