"""Omni-StoryBench's judge rubrics and prompt templates for its four tracks, versioned and hashed.

The wording is the project's own; the protocol facts it carries are fixed by PROTOCOLS.md: the four
criterion keys per track, the 1-10 integer scale with its anchors (10 excellent, 5 mixed or partly
adequate, 1 very poor), no overall score, the inputs in the protocol's order (for images: current,
ground truth, candidate), the rule that everything the user message carries is data and never an
instruction, and the JSON answer schema.

The wording is in Jinja2 files, ``templates/judge/<track>.<variant>.j2`` (the rubric as the body,
the user message's first and last instruction as its ``opening`` and ``closing`` macros), with the
blocks several prompts share (scale anchors, the data rule, the answer shape, the speech criteria,
the ``cpu`` prompts' facts rule) written once in ``templates/judge/_shared.j2``; this module says
which sections each prompt shows, in which order, and under which version id
(:func:`omnieval.judges.prompt_text` renders the files). Importing it registers :data:`TEMPLATES`
with the judges (:func:`omnieval.judges.register_templates`), which stay free of any benchmark's
wording. The rendered wording and the ids below feed every prompt hash and cache key, so they
change only together; tests pin the hashes and every rendered prompt.

Example:
    >>> from omnieval.judges import registered_benchmark, template
    >>> registered_benchmark()
    'storybench'
    >>> [s.tag for s in template("text").sections]
    ['book_metadata', 'current_page_narration', 'next_page_conditions', 'reference_next_narration', 'candidate_next_narration']
    >>> template("speech", "cascade").version
    'storybench-judge/1'
"""

from __future__ import annotations

from omnieval.benchmarks.storybench._facts import (
    IMAGE_FACTS_VERSION,
    INTEGRATED_FACTS_VERSION,
    SPEECH_FACTS_VERSION,
    TEXT_FACTS_VERSION,
    image_facts,
    integrated_facts,
    speech_facts,
    text_facts,
)
from omnieval.benchmarks.storybench._tracks import BENCHMARK  # registers the tracks the wording keys
from omnieval.judges import PromptTemplate, Section, prompt_text, register_templates

PROMPT_VERSION = "storybench-judge/1"
REPAIR_PROMPT_VERSION = "storybench-repair/1"
CPU_TEXT_PROMPT_VERSION = f"storybench-judge-cpu/2+{TEXT_FACTS_VERSION}"
"""The ``cpu`` panel's own text prompt (variant ``cpu``): not the paper's protocol wording but a
reference-guided rubric with measured facts for the packaged 1.5B judge (:mod:`._facts`); the text
facts' version is part of it, so a change of either changes its hash."""
CPU_SPEECH_PROMPT_VERSION = f"storybench-judge-cpu/2+{SPEECH_FACTS_VERSION}"
"""The same for the ``cpu-cascade`` speech prompt, with the speech facts' version."""
CPU_IMAGE_PROMPT_VERSION = f"storybench-judge-cpu/2+{IMAGE_FACTS_VERSION}"
"""The ``cpu-cascade`` image prompt: a text judge reads the candidate image's measured analysis
(similarities to the reference and current images, blank or noise) and the image facts."""
CPU_INTEGRATED_PROMPT_VERSION = f"storybench-judge-cpu/2+{INTEGRATED_FACTS_VERSION}"
"""The ``cpu-cascade`` integrated prompt: the narration, the image's and the clip's analyses, and
facts combining the three tracks' findings."""

_PACKAGE = __name__.rpartition(".")[0]


def _template(track: str, variant: str, version: str, sections: tuple[Section, ...]) -> PromptTemplate:
    """The template whose wording (rubric, opening, closing) is ``templates/judge/<track>.<variant>.j2``."""
    wording = prompt_text(_PACKAGE, f"judge/{track}.{variant}.j2")
    return PromptTemplate(
        track=track,
        variant=variant,
        version=version,
        rubric=wording.rubric,
        # The speech judges take a single user turn: the rubric opens it.
        rubric_in_user=(track, variant) == ("speech", "native"),
        opening=wording.opening,
        sections=sections,
        closing=wording.closing,
    )


_FACTS = Section("measured_facts", "facts")

_META = Section("book_metadata", "metadata")
_COND = Section("next_page_conditions", "condition")
_CUR_TEXT = Section("current_page_narration", "current_text")
_REF_TEXT = Section("reference_next_narration", "reference_text")
_CAND_TEXT = Section("candidate_next_narration", "candidate_text")
_REF_SPEECH = Section("reference_speech_metadata", "reference_speech")
_CUR_IMG = Section("current_scene_image", "current_image", "the current scene image")
_REF_IMG = Section(
    "reference_next_scene_image", "reference_image", "the reference (ground-truth) next-scene image"
)
_CAND_IMG = Section(
    "candidate_next_scene_image", "candidate_image", "the candidate next-scene image to evaluate"
)
_CAND_AUDIO = Section("candidate_speech_audio", "candidate_audio", "the candidate speech audio to evaluate")
_ANALYSIS = Section("candidate_speech_analysis", "candidate_audio_analysis")
_IMAGE_ANALYSIS = Section("candidate_image_analysis", "candidate_image_analysis")

_TEXT_SECTIONS = (_META, _CUR_TEXT, _COND, _REF_TEXT, _CAND_TEXT)

TEMPLATES: dict[tuple[str, str], PromptTemplate] = {
    (t.track, t.variant): t
    for t in (
        _template("text", "native", PROMPT_VERSION, _TEXT_SECTIONS),
        _template("image", "native", PROMPT_VERSION, (_META, _COND, _CUR_IMG, _REF_IMG, _CAND_IMG)),
        _template("speech", "native", PROMPT_VERSION, (_META, _COND, _REF_SPEECH, _CAND_AUDIO)),
        _template("speech", "cascade", PROMPT_VERSION, (_META, _COND, _REF_SPEECH, _ANALYSIS)),
        _template("text", "cpu", CPU_TEXT_PROMPT_VERSION, (*_TEXT_SECTIONS, _FACTS)),
        _template(
            "speech", "cpu-cascade", CPU_SPEECH_PROMPT_VERSION, (_META, _COND, _REF_SPEECH, _ANALYSIS, _FACTS)
        ),
        _template("image", "cpu-cascade", CPU_IMAGE_PROMPT_VERSION, (_META, _COND, _IMAGE_ANALYSIS, _FACTS)),
        _template(
            "integrated",
            "cpu-cascade",
            CPU_INTEGRATED_PROMPT_VERSION,
            (_META, _COND, _CUR_TEXT, _CAND_TEXT, _IMAGE_ANALYSIS, _ANALYSIS, _FACTS),
        ),
        _template(
            "integrated",
            "native",
            PROMPT_VERSION,
            (
                _META,
                _COND,
                _CUR_TEXT,
                _REF_TEXT,
                _CAND_TEXT,
                _REF_SPEECH,
                _CUR_IMG,
                _REF_IMG,
                _CAND_IMG,
                _CAND_AUDIO,
            ),
        ),
    )
}
"""``(track, variant)`` -> template, in the order the catalogue lists them."""

register_templates(
    TEMPLATES,
    benchmark=BENCHMARK,
    prompt_version=PROMPT_VERSION,
    repair_version=REPAIR_PROMPT_VERSION,
    facts={
        ("text", "cpu"): text_facts,
        ("speech", "cpu-cascade"): speech_facts,
        ("image", "cpu-cascade"): image_facts,
        ("integrated", "cpu-cascade"): integrated_facts,
    },
)
