"""Prompt building: the caption only in stage 2, the schema from the active cells, stable hashes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnieval.backends.llm._skeleton import IntChoice, plan_schema
from omnieval.backends.llm._types import AudioPart, Message, TextPart, VideoPart
from omnieval.benchmarks.prism._facts import ClipFacts
from omnieval.benchmarks.prism._prompts import (
    PromptKind,
    StageInputs,
    build_messages,
    field_path,
    render_repair,
    template_sha256,
    verdict_schema,
)
from omnieval.benchmarks.prism._tags import Cell, stage_cells
from omnieval.judges._render import Framing

CAPTION = 'On a stage a hammer knocks three times while a narrator says "Listen closely."'
TAGS = ("SOUND_A", "SPEECH_B")
FACTS = (
    ClipFacts(
        3.0, True, loudness=-20.0, loudness_unit="dBFS RMS", transcript="listen closely", words_per_second=1.0
    ),
    ClipFacts(3.0, False),
)


def _all_text(messages: tuple[Message, ...]) -> str:
    return "\n".join(p.text for m in messages for p in m.parts if isinstance(p, TextPart))


@pytest.mark.parametrize("kind", ["cascade", "native"])
def test_caption_absent_in_stage_1_present_in_stage_2(kind: PromptKind, tmp_path: Path) -> None:
    clips = (tmp_path / "clip1.mp4", tmp_path / "clip2.mp4")
    extra = {"facts": FACTS} if kind == "cascade" else {"clips": clips}
    s1 = StageInputs(1, TAGS, tuple(stage_cells(TAGS, 1)), None, **extra)
    s2 = StageInputs(2, TAGS, tuple(stage_cells(TAGS, 2)), CAPTION, **extra)
    text1 = _all_text(build_messages(kind, s1, Framing()))
    text2 = _all_text(build_messages(kind, s2, Framing()))
    assert CAPTION not in text1 and "hammer" not in text1 and "Listen closely" not in text1
    assert CAPTION in text2
    # Stage 1 names its cells (AV coherence only for the on-screen sound), stage 2 its own.
    assert "av_coherence.sound" in text1 and "av_coherence.speech" not in text1
    assert "audio_quality.speech" in text1 and "prompt_following" not in text1
    assert "prompt_following.speech" in text2 and "audio_quality" not in text2


def test_stage_inputs_are_checked() -> None:
    cells1 = tuple(stage_cells(TAGS, 1))
    with pytest.raises(ValueError, match="without the caption"):
        build_messages("cascade", StageInputs(1, TAGS, cells1, CAPTION, facts=FACTS), Framing())
    with pytest.raises(ValueError, match="needs the caption"):
        build_messages(
            "cascade", StageInputs(2, TAGS, tuple(stage_cells(TAGS, 2)), None, facts=FACTS), Framing()
        )
    with pytest.raises(ValueError, match="do not belong"):
        build_messages("cascade", StageInputs(2, TAGS, cells1, CAPTION, facts=FACTS), Framing())


def test_native_messages_carry_both_clips_in_order(tmp_path: Path) -> None:
    clips = (tmp_path / "clip1.mp4", tmp_path / "clip2.mp4")
    tracks = (tmp_path / "clip1.wav", tmp_path / "clip2.wav")
    inputs = StageInputs(1, TAGS, tuple(stage_cells(TAGS, 1)), None, clips=clips, soundtracks=tracks)
    system, user = build_messages("native", inputs, Framing(system_prefix="/no_think\n"))
    assert system.text.startswith("/no_think\n") and "1 or 2" in system.text
    media = [p for p in user.parts if not isinstance(p, TextPart)]
    assert media == [VideoPart(clips[0]), AudioPart(tracks[0]), VideoPart(clips[1]), AudioPart(tracks[1])]
    assert "onset alignment" in user.text and "lip sync" not in user.text  # full questions, active only


def test_cascade_lines_follow_each_clip() -> None:
    inputs = StageInputs(1, TAGS, tuple(stage_cells(TAGS, 1)), None, facts=FACTS)
    text = _all_text(build_messages("cascade", inputs, Framing(rationale_max_chars=32)))
    clip1, clip2 = text.split("Clip 2 (candidate_2) measured:")
    assert 'heard "listen closely"' in clip1 and "NO audio track" in clip2
    assert "at most 32 characters" in text


def test_schema_from_active_cells() -> None:
    cells = stage_cells(("SPEECH_A", "MUSIC_B", "SOUND_B"), 1)
    schema = verdict_schema(cells, evidence_max_chars=40, evidence_first=True)
    assert list(schema["properties"]) == ["candidate_1", "candidate_2"]
    cand = schema["properties"]["candidate_1"]
    assert list(cand["properties"]) == ["av_coherence", "audio_quality"]
    assert list(cand["properties"]["av_coherence"]["properties"]) == ["speech"]
    assert list(cand["properties"]["audio_quality"]["properties"]) == ["speech", "music", "sound"]
    leaf = cand["properties"]["audio_quality"]["properties"]["music"]
    assert list(leaf["properties"]) == ["evidence", "score"]
    assert leaf["properties"]["score"] == {"type": "integer", "minimum": 0, "maximum": 10}
    assert leaf["properties"]["evidence"]["maxLength"] == 40
    # The llama.cpp skeleton decoder can plan it: 2 clips x 4 cells = 8 integer choices 0..10.
    plan = plan_schema(schema)
    assert plan is not None
    ints = [s for s in plan if isinstance(s, IntChoice)]
    assert len(ints) == 8 and all(s.values == tuple(range(11)) for s in ints)
    assert field_path(2, Cell("audio_quality", "music")) == "candidate_2.audio_quality.music"


def test_repair_prompt_embeds_the_answer_and_schema() -> None:
    cells = stage_cells(("SOUND_A",), 2)
    system, user = render_repair("candidate 1 got 7 </judge_answer>", "no JSON object found", cells)
    assert "never add" in system.text
    assert "</judge_answer>" in user.text and user.text.count("</judge_answer>") == 1
    assert json.dumps(verdict_schema(cells), separators=(",", ":")) in user.text


#: The stage prompts' template hashes, pinned: an edit of a PRISM stage prompt (wording, criteria,
#: layout) must be a deliberate change of this table, since the hash is part of every judge cache key
#: and of the run's lineage (a changed prompt makes the night INCONCLUSIVE).
TEMPLATE_SHA256 = {
    ("native", 1): "5b3272ed17783719d74087b3db969ae1fa8fe04df0a7aeb2f0a13d78cfb8ecb8",
    ("native", 2): "30865912355a31c7e4c2b2a4116a171fee4f7a03e5649cba8ead854dbfef489f",
    ("cascade", 1): "263c140d812d3b57b815e8d9e81a47390ae0de3e183afec577863b9f4b2af614",
    ("cascade", 2): "e91fafa2dfb0ab04fcc3c1cabdf80010e1b026c5a2d6925ecb1ef909a11f07e6",
}


def test_template_hashes_differ_per_stage_and_kind_and_are_pinned() -> None:
    hashes = {(k, s): template_sha256(k, s) for k in ("native", "cascade") for s in (1, 2)}
    assert len(set(hashes.values())) == 4
    assert hashes == TEMPLATE_SHA256
