"""Omni-StoryBench's judge rubrics: registered on import, and hashed exactly as before they moved here.

The template and repair-prompt hashes key the judge response cache and go into lineage, so a change
in wording, ids or section order must be deliberate: update the golden below together with the
version ids (``storybench-judge/N``, ``storybench-repair/N``). The ``cpu`` panel's own prompts
(variants ``cpu`` and ``cpu-cascade``, version ``storybench-judge-cpu/N+...``) have their own golden:
changing them must leave the paper's templates as they are.
"""

from __future__ import annotations

import doctest

from omnieval.benchmarks.storybench import _rubrics
from omnieval.benchmarks.storybench._rubrics import TEMPLATES
from omnieval.judges import registered_benchmark, repair_prompt_sha256, template, template_catalog
from omnieval.judges._render import neutralize_tags
from omnieval.judges._rubrics import section_tags

CPU = {
    ("text", "cpu"): "storybench-judge-cpu/2+storybench-cpu-facts/6",
    ("speech", "cpu-cascade"): "storybench-judge-cpu/2+storybench-cpu-facts/7",
    ("image", "cpu-cascade"): "storybench-judge-cpu/2+storybench-cpu-image-facts/1",
    ("integrated", "cpu-cascade"): (
        "storybench-judge-cpu/2+storybench-cpu-integrated-facts/1"
        "(storybench-cpu-facts/6,storybench-cpu-image-facts/1,storybench-cpu-facts/7)"
    ),
}

# Recorded from omnieval/judges/_rubrics.py before the wording moved to this benchmark's package.
GOLDEN_TEMPLATE_SHA256 = {
    ("text", "native"): "7aabbb2576bfdf7f6f7464658e6e6232fe104bc5b4e78d13089eb5b5869e555d",
    ("image", "native"): "b255fbaa624df3b323f6e4fc57d05864482212dc7f555ca0b27aec7c65a8b6f3",
    ("speech", "native"): "f9039936b59a6041ea0c71aa9329bce650eca49331c7d825e7951a46e24d29dc",
    ("speech", "cascade"): "b03bd2741c57621007a5187f939a521949595fad7faf70cfb24f8b1ea841204d",
    ("integrated", "native"): "d918462b5350f86bf0afa79aef45d7ac82867160774387b5ba3c9b59903f8a57",
}
GOLDEN_CPU_TEMPLATE_SHA256 = {
    ("text", "cpu"): "639969fc84d1dbb1e7cbbd9b1fc46ccd84751af83b13184a3129f2de29067c25",
    ("speech", "cpu-cascade"): "b414c5b413b879ba464bbbe8b29e8b9052a18e26a6d3244462ff3ee8b1839c52",
    ("image", "cpu-cascade"): "1945fe195e8598cdef815ba643f0bba5c7ddb98f42524734d0010a1c3a6fef17",
    ("integrated", "cpu-cascade"): "4e77d40030020719d8725123cac48d58199fd6a4e0f5267f7fc9488e614810c7",
}
GOLDEN_REPAIR_SHA256 = "628159ff918bfcf4a01bbc311bfb6013583c47d06bfeb747b27185979a75d517"
GOLDEN_SECTION_TAGS = {
    "book_metadata",
    "candidate_image_analysis",
    "candidate_next_narration",
    "candidate_next_scene_image",
    "candidate_speech_analysis",
    "candidate_speech_audio",
    "current_page_narration",
    "current_scene_image",
    "measured_facts",
    "next_page_conditions",
    "reference_next_narration",
    "reference_next_scene_image",
    "reference_speech_metadata",
}


def test_template_hashes_are_unchanged() -> None:
    assert set(TEMPLATES) == set(GOLDEN_TEMPLATE_SHA256) | set(GOLDEN_CPU_TEMPLATE_SHA256)
    assert {key: tpl.sha256() for key, tpl in TEMPLATES.items() if key in GOLDEN_TEMPLATE_SHA256} == (
        GOLDEN_TEMPLATE_SHA256
    )
    assert {key: tpl.sha256() for key, tpl in TEMPLATES.items() if key in GOLDEN_CPU_TEMPLATE_SHA256} == (
        GOLDEN_CPU_TEMPLATE_SHA256
    )
    assert repair_prompt_sha256() == GOLDEN_REPAIR_SHA256


def test_templates_are_registered_with_the_judges() -> None:
    assert registered_benchmark() == "storybench"
    for (track_name, variant), tpl in TEMPLATES.items():
        assert template(track_name, variant) == tpl
        assert tpl.version == (
            "storybench-judge/1"
            if (track_name, variant) in GOLDEN_TEMPLATE_SHA256
            else CPU[(track_name, variant)]
        )
    catalog = {(e["track"], e["variant"]): (e["version"], e["sha256"]) for e in template_catalog()}
    assert catalog == {
        **{key: ("storybench-judge/1", sha) for key, sha in GOLDEN_TEMPLATE_SHA256.items()},
        **{key: (CPU[key], sha) for key, sha in GOLDEN_CPU_TEMPLATE_SHA256.items()},
        ("repair", "native"): ("storybench-repair/1", GOLDEN_REPAIR_SHA256),
    }


def test_every_block_tag_is_defused_in_user_content() -> None:
    assert section_tags() == GOLDEN_SECTION_TAGS
    for tag in sorted(GOLDEN_SECTION_TAGS | {"judge_answer"}):
        assert neutralize_tags(f"x</{tag}>< {tag.upper()} >") == f"x&lt;/{tag}&gt;&lt;{tag.upper()}&gt;"


def test_docstring_examples() -> None:
    failures, tried = doctest.testmod(_rubrics)
    assert tried >= 3 and failures == 0
