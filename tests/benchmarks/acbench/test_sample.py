"""The OmniACBench sample generator: deterministic, covers every target, scripts stay neutral."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from omnieval.benchmarks.acbench._heteronyms import HETERONYMS
from omnieval.benchmarks.acbench._record import FEATURES, validate_acbench
from omnieval.benchmarks.acbench._sample import (
    INSTRUCTIONS,
    SAMPLE_HETERONYMS,
    SAMPLE_ITEMS,
    SCENES,
    build_records,
    count_targets,
    draw_scene,
    sample_main,
)
from omnieval.errors import OmnievalError

# Words that would give a target away if a script (or an instruction) said them.
_GIVEAWAYS = {
    *(v.lower() for values in FEATURES.values() for v in values for v in v.split()),
    "quick", "quickly", "hurry", "slowly", "quiet", "quietly", "whispering", "happy", "sad", "scared",
    "british", "indian", "australian", "england", "london", "sydney", "old", "young", "woman", "man",
    "grandma", "grandpa", "she", "he", "her", "his",
}  # fmt: skip
_GIVEAWAYS -= {"heteronym"}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def test_records_cover_every_target_about_twice() -> None:
    records = build_records()
    counts = count_targets(records)
    assert list(counts) == list(FEATURES)
    for feature, values in counts.items():
        assert set(values) == set(FEATURES[feature])
        if feature != "pronunciation":
            assert all(n == 2 for n in values.values()), (feature, values)
    assert 38 <= len(records) <= 45
    assert len({r["id"] for r in records}) == len(records)


def test_both_readings_of_several_heteronyms() -> None:
    records = [r for r in build_records() if r["feature"] == "pronunciation"]
    pairs = Counter((r["heteronym"]["word"], r["heteronym"]["reading"]) for r in records)
    words = {w for w, _ in pairs}
    assert words == set(SAMPLE_HETERONYMS) and len(words) >= 4
    for entry in HETERONYMS:
        if entry.word in words:
            assert {k for w, k in pairs if w == entry.word} == set(entry.readings)
    # both readings share one sentence: only the picture tells them apart
    for word in words:
        scripts = {r["script"] for r in records if r["heteronym"]["word"] == word}
        assert len(scripts) == 1


def test_scripts_and_instructions_do_not_give_the_target_away() -> None:
    for record in build_records():
        if record["feature"] != "pronunciation":
            leaked = _words(record["script"]) & _GIVEAWAYS
            assert not leaked, (record["id"], leaked)
        assert not _words(record["instruction_text"]) & _GIVEAWAYS, record["id"]
    all_templates = [t for ts in INSTRUCTIONS.values() for t in ts]
    assert len(set(all_templates)) == len(all_templates)


def test_every_item_has_a_scene() -> None:
    assert {item.scene for item in SAMPLE_ITEMS} <= set(SCENES)
    picture = draw_scene(SAMPLE_ITEMS[0].scene, 64)
    assert picture.size == (64, 64) and picture.mode == "RGB"
    with pytest.raises(KeyError, match="no scene"):
        draw_scene("volcano")


def test_generator_is_deterministic_and_matches_the_sample(ac_sample: Path, tmp_path: Path) -> None:
    assert sample_main([str(tmp_path / "fresh")], "omnieval make-sample acbench") == 0
    fresh = tmp_path / "fresh"
    assert validate_acbench(fresh).ok
    names = sorted(p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(ac_sample).as_posix() for p in ac_sample.rglob("*") if p.is_file())
    for name in names:
        assert (fresh / name).read_bytes() == (ac_sample / name).read_bytes(), name
    assert "instructions/<id>.wav" in (fresh / "README.md").read_text(encoding="utf-8")


def test_refuses_a_folder_with_foreign_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    from omnieval.benchmarks.acbench._sample import write_acbench_sample

    with pytest.raises(OmnievalError, match=r"notes\.txt"):
        write_acbench_sample(tmp_path)
