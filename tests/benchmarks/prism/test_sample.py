"""The generated PRISM-Bench sample: coverage, captions, drawn events in sync with their sounds, reproducibility."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from omnieval.benchmarks.prism import _sample
from omnieval.benchmarks.prism._media import decode_audio, probe
from omnieval.benchmarks.prism._sample import (
    FPS,
    N_FRAMES,
    SR,
    build_plans,
    caption,
    draw_frames,
    mix,
    mouth_openness,
    sample_main,
    synthesize_tracks,
    write_prism_sample,
)
from omnieval.benchmarks.prism._tags import SUBSETS, valid_tag_sets
from omnieval.errors import OmnievalError

PLANS = {p.id: p for p in build_plans()}


def _records(sample: Path) -> dict[str, dict]:
    """The sample's manifest lines by id (read directly: validating all 29 clips is the loader's test)."""
    lines = (sample / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def test_one_plan_per_valid_combination() -> None:
    plans = build_plans()
    assert len(plans) == 29 and len(PLANS) == 29
    got = {(p.subset, frozenset(p.tags)) for p in plans}
    assert got == {(s, t) for s in SUBSETS for t in valid_tag_sets(s)}
    for subset, prefix, n in (("on_screen", "on", 7), ("off_screen", "off", 7), ("mixed", "mix", 15)):
        ids = [p.id for p in plans if p.subset == subset]
        assert ids == [f"{prefix}-{i:02d}" for i in range(1, n + 1)]


def test_captions_name_what_is_heard() -> None:
    for plan in PLANS.values():
        text = caption(plan)
        assert text.strip() and "  " not in text and '.".' not in text
        if plan.has("SPEECH_A"):
            assert f'"{plan.line_a}"' in text
        if plan.has("SPEECH_B"):
            assert f'"{plan.line_b}"' in text and "narrator" in text
        if plan.has("MUSIC_A"):
            assert f"{plan.tempo_a} beats per minute" in text and plan.instrument in text
        if plan.has("MUSIC_B"):
            assert "background music" in text and f"{plan.tempo_b} beats per minute" in text
        if plan.has("SOUND_A"):
            assert {3: "three", 4: "four"}[len(plan.impact_frames)] + " times" in text
        if not any(plan.has(t) for t in ("SPEECH_A", "MUSIC_A", "SOUND_A")):
            assert "nothing in view makes a sound" in text


def _onsets(audio: np.ndarray, hop: int = 96) -> list[float]:
    """Times where the 4 ms peak envelope jumps from quiet to loud (written apart from the generator)."""
    peaks = np.array([np.abs(audio[i : i + hop]).max() for i in range(0, audio.shape[0] - hop, hop)])
    top = float(peaks.max())
    out: list[float] = []
    for i in range(1, peaks.shape[0]):
        if peaks[i] > 0.5 * top and peaks[i - 1] < 0.5 * top and (not out or i * hop / SR - out[-1] > 0.15):
            out.append(i * hop / SR)
    return out


@pytest.mark.parametrize("clip_id", ["on-03", "on-02"])
def test_sound_onsets_match_visual_events(prism_sample: Path, clip_id: str) -> None:
    record = _records(prism_sample)[clip_id]
    audio = decode_audio(prism_sample / record["reference_video"], sr=SR)
    onsets = _onsets(audio)
    assert len(onsets) == len(record["visual_events"]), (onsets, record["visual_events"])
    for heard, seen in zip(onsets, record["visual_events"], strict=True):
        assert abs(heard - seen) <= 1 / FPS, (heard, seen)


def test_impact_frames_show_contact() -> None:
    """The striker and the struck object touch on the impact frames and are apart in between."""
    plan = PLANS["on-03"]  # a single SOUND_A source
    frames = draw_frames(plan, synthesize_tracks(plan)).astype(np.int16)
    # On an impact frame, yellow spark lines are drawn; nowhere else.
    yellow = [int(((f[..., 0] > 200) & (f[..., 1] > 180) & (f[..., 2] < 120)).sum()) for f in frames]
    spark = [i for i, n in enumerate(yellow) if n > 3]
    assert spark == list(plan.impact_frames)


def test_mouth_opens_only_while_speaking() -> None:
    plan = PLANS["on-01"]
    tracks = synthesize_tracks(plan)
    openness = mouth_openness(tracks.parts["SPEECH_A"])
    start, end = tracks.spans["SPEECH_A"]
    assert len(openness) == N_FRAMES
    before = [o for i, o in enumerate(openness) if (i + 1) / FPS <= start]
    after = [o for i, o in enumerate(openness) if i / FPS >= end]
    during = [o for i, o in enumerate(openness) if start + 0.1 <= i / FPS <= end - 0.1]
    assert before and after and all(o == 0 for o in before + after)
    assert sum(o > 0 for o in during) >= 0.6 * len(during)
    frames = draw_frames(plan, tracks)
    shut = next(i for i, o in enumerate(openness) if o == 0)
    wide = int(np.argmax(openness))
    assert np.abs(frames[shut].astype(int) - frames[wide].astype(int)).sum() > 0


@pytest.mark.parametrize("clip_id", ["off-01", "off-07"])
def test_off_screen_clips_draw_no_source(clip_id: str) -> None:
    for plan in (PLANS[clip_id],):
        tracks = synthesize_tracks(plan)
        bare = dataclasses.replace(plan, tags=())
        assert np.array_equal(draw_frames(plan, tracks), draw_frames(bare, tracks)), plan.id


@pytest.mark.parametrize("clip_id", ["on-07", "mix-01", "off-07", "mix-14"])
def test_mix_is_not_clipped_and_holds_every_track(clip_id: str) -> None:
    plan = PLANS[clip_id]
    tracks = synthesize_tracks(plan)
    assert set(tracks.parts) == set(plan.tags)
    audio = mix(tracks)
    assert audio.shape == (int(3.0 * SR),) and float(np.abs(audio).max()) <= 0.9 + 1e-6
    for part in tracks.parts.values():
        assert float(np.sqrt(np.mean(part**2))) > 0.01


def test_both_speakers_take_turns() -> None:
    tracks = synthesize_tracks(PLANS["mix-01"])
    (a0, a1), (b0, b1) = tracks.spans["SPEECH_A"], tracks.spans["SPEECH_B"]
    assert 0 < a0 < a1 < b0 < b1 <= 3.0


def test_committed_sample_is_small_and_well_formed(prism_sample: Path) -> None:
    size = sum(p.stat().st_size for p in prism_sample.rglob("*") if p.is_file())
    assert size < 5_000_000
    records = _records(prism_sample)
    assert len(records) == 29
    for record in records.values():
        info = probe(prism_sample / record["reference_video"])
        assert (info.width, info.height, info.fps, info.n_frames) == (192, 144, 15.0, 45)
        assert (info.video_codec, info.pix_fmt, info.audio_codec, info.audio_rate) == (
            "h264",
            "yuv420p",
            "aac",
            SR,
        )
        assert info.duration_s == pytest.approx(3.0, abs=0.01)
    lines = (prism_sample / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    assert list(json.loads(lines[0]))[:5] == ["id", "subset", "active_tags", "caption", "reference_video"]


def test_writing_is_reproducible(tmp_path: Path) -> None:
    first = write_prism_sample(tmp_path / "a", ids=["mix-11"])
    write_prism_sample(tmp_path / "b", ids=["mix-11"])
    assert first.n_instances == 1 and first.counts == {"on_screen": 0, "off_screen": 0, "mixed": 1}
    for name in ("manifest.jsonl", "videos/mix-11.mp4", "README.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    # Rewriting in place replaces the earlier sample.
    again = write_prism_sample(tmp_path / "a", ids=["off-01"])
    assert sorted(p.name for p in (tmp_path / "a" / "videos").iterdir()) == ["off-01.mp4"]
    assert again.size_bytes == sum(p.stat().st_size for p in (tmp_path / "a").rglob("*") if p.is_file())


def test_refuses_foreign_files_and_unknown_ids(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("x")
    with pytest.raises(OmnievalError, match=r"does not own: mine\.txt"):
        write_prism_sample(tmp_path, ids=["on-01"])
    with pytest.raises(OmnievalError, match="unknown sample id"):
        write_prism_sample(tmp_path / "new", ids=["on-99"])


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sample_main([str(tmp_path / "s"), "--ids", "off-01"], "omnieval make-sample prism") == 0
    assert re.search(r"wrote 1 clips to .* \(\d+\.\d\d MB, [\d.]+ s\)", capsys.readouterr().out)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "other").write_text("x")
    assert sample_main([str(tmp_path / "busy")], "omnieval make-sample prism") == 1
    assert "does not own" in capsys.readouterr().err


def test_generator_constants_agree() -> None:
    assert round(_sample.DURATION_S * FPS) == _sample.N_FRAMES
    assert _sample.TEMPOS
    assert all(900 % t == 0 for t in _sample.TEMPOS)  # each beat is a whole number of frames
