"""Criteria as data: activation by tags, coverage of every valid tag set, and the count."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from omnieval.benchmarks.prism._tags import (
    AUDIO_TYPES,
    DIMENSIONS,
    SUBSETS,
    Cell,
    active_cells,
    parse_tag,
    valid_tag_sets,
)
from omnieval.benchmarks.prism._tracks import (
    all_criteria,
    criteria_count,
    criteria_for,
    load_criteria,
    parse_criteria,
)
from omnieval.errors import ConfigError


def test_every_active_cell_of_every_valid_tag_set_has_criteria() -> None:
    checked = 0
    for subset in SUBSETS:
        for tags in valid_tag_sets(subset):
            for cell in active_cells(tags):
                found = criteria_for(cell, tags)
                assert found, f"{subset} {sorted(tags)}: no criterion for {cell}"
                assert all(c.cell == cell for c in found)
                checked += 1
    assert checked > 29 * 2


def test_av_coherence_never_for_off_screen_only_types() -> None:
    for subset in SUBSETS:
        for tags in valid_tag_sets(subset):
            on_types = {parse_tag(t).audio_type for t in tags if t.endswith("_A")}
            for audio_type in AUDIO_TYPES:
                found = criteria_for(Cell("av_coherence", audio_type), tags)
                if audio_type not in on_types:
                    assert found == [], (sorted(tags), audio_type)
                else:
                    assert found and all(c.visibility == "on_screen" for c in found)


def test_visibility_wordings_follow_the_tags() -> None:
    speech = Cell("expressiveness", "speech")
    on = criteria_for(speech, ["SPEECH_A"])
    off = criteria_for(speech, ["SPEECH_B"])
    both = criteria_for(speech, ["SPEECH_A", "SPEECH_B"])
    assert {c.visibility for c in on} == {"on_screen"}
    assert {c.visibility for c in off} == {"off_screen"}
    # A visible speaker plus a narrator: each split criterion in both wordings, on-screen first.
    assert [(c.name, c.visibility) for c in both] == [
        (name, vis) for name in [c.name for c in on] for vis in ("on_screen", "off_screen")
    ]
    quality = criteria_for(Cell("audio_quality", "music"), ["MUSIC_B"])
    assert quality and {c.visibility for c in quality} == {"any"}
    assert criteria_for(Cell("audio_quality", "music"), ["SPEECH_A"]) == []


def test_count_is_the_papers_35_with_44_wordings() -> None:
    # Counted by hand from the YAML: AV 4+3+2, quality 4+4+3, expressiveness 3+3+3 (each with an
    # on- and an off-screen wording), prompt following 2+2+2.
    per_dimension: dict[str, set[tuple[str, str]]] = {d: set() for d in DIMENSIONS}
    for c in all_criteria():
        per_dimension[c.dimension].add((c.audio_type, c.name))
    assert {d: len(v) for d, v in per_dimension.items()} == {
        "av_coherence": 9,
        "audio_quality": 11,
        "expressiveness": 9,
        "prompt_following": 6,
    }
    assert criteria_count() == 35
    assert len(all_criteria()) == 9 + 11 + 2 * 9 + 6


def test_questions_are_single_lines_and_names_unique_per_cell() -> None:
    seen: set[tuple[str, str, str, str]] = set()
    for c in all_criteria():
        assert c.question and "\n" not in c.question and c.question.endswith("?")
        key = (c.dimension, c.audio_type, c.name, c.visibility)
        assert key not in seen
        seen.add(key)
    assert len(load_criteria().sha256) == 64


def _raw() -> dict[str, Any]:
    from importlib import resources

    text = resources.files("omnieval.benchmarks.prism").joinpath("criteria.yaml").read_text(encoding="utf-8")
    raw: dict[str, Any] = yaml.safe_load(text)
    return raw


def test_bad_criteria_files_are_refused_with_the_place() -> None:
    raw = _raw()
    raw["dimensions"]["av_coherence"]["sound"][0] = {"name": "onset_alignment", "any": "Is it in sync?"}
    with pytest.raises(ConfigError, match=r"av_coherence\.sound\[0\].*on screen only"):
        parse_criteria(raw)
    raw = _raw()
    raw["dimensions"]["audio_quality"]["music"].append({"name": "melodic_sense", "any": "Again?"})
    with pytest.raises(ConfigError, match="repeated"):
        parse_criteria(raw)
    raw = _raw()
    del raw["dimensions"]["prompt_following"]
    with pytest.raises(ConfigError, match="dimensions"):
        parse_criteria(raw)
