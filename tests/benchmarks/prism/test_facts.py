"""Measured facts: pure measurements against hand computations, and a clip with known events."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from omnieval.benchmarks.prism._facts import (
    ClipFacts,
    RequestedSound,
    cell_reading,
    colour_names,
    events_reading,
    fit_grade,
    level_stats,
    line_reading,
    line_similarity,
    match_events,
    measure_clip,
    measured_fit,
    motion_audio_correlation,
    quoted_lines,
    requested_sound,
    requested_words_heard,
    tempo_reading,
    visual_events,
)
from omnieval.benchmarks.prism._tags import Cell

from ._clips import SR, clicks, flash_frames, make_clip


def test_level_stats_against_loops() -> None:
    rng = np.random.default_rng(0)
    y = (rng.standard_normal(SR) * 0.1).astype(np.float32)
    y[:4000] = 0.0  # 250 ms of digital silence = 5 windows of 50 ms
    y[5000:5010] = 1.0  # 10 clipped samples
    stats = level_stats(y, SR)
    total = 0.0
    for v in y.tolist():
        total += v * v
    assert stats.rms_dbfs == pytest.approx(20 * math.log10(math.sqrt(total / len(y))), abs=1e-6)
    assert stats.peak_dbfs == pytest.approx(0.0, abs=1e-6)
    assert stats.clipping_share == pytest.approx(10 / SR)
    assert stats.silence_share == pytest.approx(5 / 20)


def test_match_events_signed_offsets() -> None:
    assert match_events([1.0, 2.0, 3.0], [0.97, 2.05, 2.2, 9.0]) == (-30.0, 50.0, None)
    assert match_events([], [1.0]) == ()


def test_visual_events_find_flashes_not_steady_motion() -> None:
    fps = 25
    frames = flash_frames([0.4, 1.2], 2.0, fps).astype(float).mean(axis=3)
    # A bar drifting one pixel per frame is steady motion: no event of its own.
    for k in range(frames.shape[0]):
        frames[k, 40:44, k : k + 6] = 200
    found = visual_events(frames, fps)
    assert found == pytest.approx([0.4, 1.2], abs=1 / fps + 1e-9)


def test_motion_follows_loudness_only_for_the_matching_track() -> None:
    fps, duration = 25, 3.0
    n = int(fps * duration)
    on = (np.arange(n) // 10) % 2 == 0  # 0.4 s on / 0.4 s off
    frames = np.full((n, 32, 32), 30.0)
    rng = np.random.default_rng(1)
    for k in np.nonzero(on)[0]:
        frames[k, 8:16, 8:16] = rng.uniform(0, 255, (8, 8))  # a "mouth" busy while sound plays
    envelope = np.repeat(on, SR // fps).astype(np.float32)
    matched = (rng.standard_normal(envelope.size) * 0.2 * envelope).astype(np.float32)
    shifted = np.roll(matched, int(0.4 * SR))
    r_match = motion_audio_correlation(frames, matched, SR, fps)
    r_shift = motion_audio_correlation(frames, shifted, SR, fps)
    assert r_match is not None and r_shift is not None
    assert r_match > 0.8 and r_shift < 0.0


def test_colour_names() -> None:
    img = np.zeros((10, 10, 3), dtype=np.uint8)
    img[:6] = (220, 30, 30)  # red, 60 %
    img[6:] = (30, 30, 220)  # blue, 40 %
    assert colour_names(img) == ("red", "blue")


def test_requested_words_and_quotes() -> None:
    caption = 'A man says "The kettle is finally boiling." while a dog barks.'
    assert quoted_lines(caption) == ["The kettle is finally boiling."]
    heard = requested_words_heard("the cattle is finally boiling", caption)
    assert heard is not None and (heard.heard, heard.requested) == (4, 5)
    wrong = requested_words_heard("it was a quiet evening", caption)
    assert wrong is not None and (wrong.heard, wrong.requested) == (0, 5)
    assert requested_words_heard("anything", "no quotes here") is None


def test_tempo_reading_counts_half_and_double_time() -> None:
    caption = "a tune at a steady 100 beats per minute"
    assert tempo_reading(ClipFacts(3.0, True, tempo_bpm=99.4), caption).grade == "good"
    assert tempo_reading(ClipFacts(3.0, True, tempo_bpm=201.0), caption).grade == "good"
    assert tempo_reading(ClipFacts(3.0, True, tempo_bpm=140.0), caption).grade == "poor"


@pytest.fixture(scope="module")
def synced_and_shifted(tmp_path_factory: pytest.TempPathFactory) -> tuple[ClipFacts, ClipFacts]:
    root = tmp_path_factory.mktemp("facts")
    events = [0.4, 1.0, 1.6, 2.2]
    synced = make_clip(root / "synced.mp4", duration=2.8, events=events, audio=clicks(events, 2.8))
    late = [t + 0.25 for t in events]
    shifted = make_clip(root / "shifted.mp4", duration=2.8, events=events, audio=clicks(late, 2.8))
    return measure_clip(synced, transcribe=False), measure_clip(shifted, transcribe=False)


def test_measured_sync_separates_a_shifted_soundtrack(
    synced_and_shifted: tuple[ClipFacts, ClipFacts],
) -> None:
    synced, shifted = synced_and_shifted
    assert synced.visual_events_s == pytest.approx([0.4, 1.0, 1.6, 2.2], abs=0.041)
    assert len(synced.audio_onsets_s) == 4
    assert synced.mean_abs_offset_ms is not None and synced.mean_abs_offset_ms <= 40
    assert synced.events_within(40) == 4
    assert shifted.events_within(100) == 0
    cell = Cell("av_coherence", "sound")
    assert cell_reading(synced, cell).grade == "good"
    assert cell_reading(shifted, cell).grade == "poor"
    assert "in sync" in cell_reading(synced, cell).text and "out of sync" in cell_reading(shifted, cell).text
    assert synced.transcript is None  # not asked for


def test_facts_round_trip_and_silent_clip_reading() -> None:
    facts = ClipFacts(
        2.0,
        True,
        loudness=-20.0,
        loudness_unit="dBFS RMS",
        audio_onsets_s=(0.5,),
        event_offsets_ms=(12.0, None),
    )
    assert ClipFacts.from_json(facts.to_json()) == facts
    silent = ClipFacts(2.0, False)
    assert cell_reading(silent, Cell("audio_quality", "music")).grade == "poor"
    with pytest.raises(ValueError):
        cell_reading(facts, Cell("prompt_following", "speech"))  # stage 2 needs the caption


@pytest.mark.slow
def test_transcript_of_a_sample_clip(prism_sample: Path) -> None:
    facts = measure_clip(prism_sample / "videos" / "on-01.mp4", transcribe=True)
    assert facts.transcript is not None and "boiling" in facts.transcript.lower()
    reading = cell_reading(
        facts, Cell("prompt_following", "speech"), caption='He says "The kettle is finally boiling."'
    )
    assert reading.grade == "good"


# -- readings that rank: each cell's fit from its own measurement (facts version 2) ---------------

KNOCKS = "On a stage a hammer knocks on a wooden block three times, each knock heard as a crisp knock."
WIND_AND_LINE = (
    'A man says "Let us paint the fence on Sunday." in a calm voice. A gusty wind howls off screen.'
)


def _clip(**values: object) -> ClipFacts:
    base: dict[str, object] = {"loudness": -22.0, "loudness_unit": "dBFS RMS", "silence_share": 0.1}
    return ClipFacts(3.0, True, **(base | values))  # type: ignore[arg-type]


def test_measured_fit_is_linear_through_the_grade_edges() -> None:
    # 4 + 3 * (value - partial) / (good - partial), rounded half up, clamped to 0-10.
    assert measured_fit(0.45, 0.3, 0.6) == 6  # 4 + 3 * 0.5 = 5.5 -> 6
    assert measured_fit(0.0, 0.3, 0.6) == 1  # 4 - 3 = 1
    assert measured_fit(-1.0, 0.3, 0.6) == 0 and measured_fit(5.0, 0.3, 0.6) == 10
    assert measured_fit(0.14, 0.2, 0.08) == 6  # less is better: 4 + 3 * 0.5 = 5.5 -> 6
    assert [fit_grade(f) for f in (0, 3, 4, 6, 7, 10)] == [
        "poor",
        "poor",
        "partial",
        "partial",
        "good",
        "good",
    ]


def test_requested_sound_from_the_caption() -> None:
    assert requested_sound(KNOCKS) == RequestedSound(3, "hits")
    assert requested_sound("a ball bounces twice") == RequestedSound(2, "hits")
    assert requested_sound("a drum is hit 12 times") == RequestedSound(12, "hits")
    assert requested_sound("Steady rain patters outside.") == RequestedSound(None, "steady")
    assert requested_sound("a door slams") == RequestedSound(None, "hits")
    assert requested_sound("a quiet scene") == RequestedSound(None, "unknown")


def test_requested_hits_heard_on_the_visible_impacts_rank_above_a_borrowed_tone() -> None:
    # The on-03 reference: three knocks, each within 10 ms of the hammer's impact.
    right = _clip(
        audio_onsets_s=(0.74, 1.61, 2.47),
        visual_events_s=(0.733, 1.6, 2.467),
        event_offsets_ms=(7.0, 10.0, 3.0),
        tonal_share=0.001,
    )
    reading = events_reading(right, KNOCKS, on_screen=True, alone=True)
    assert (reading.grade, reading.fit) == ("good", 10)
    assert "3 of 3 land within 40 ms of a visible impact" in reading.text
    # Another clip's beeping tune: 4 onsets (count off by one: 10 - 3 = 7), none on an impact
    # (4 - 3 * 0.34 / 0.33 = 0.9 -> 1), tonal 100 % (-4): max(7, 1) - 4 = 3.
    tone = _clip(
        audio_onsets_s=(0.12, 1.12, 2.12, 3.0),
        visual_events_s=(0.733, 1.6, 2.467),
        event_offsets_ms=(387.0, -480.0, -347.0),
        tonal_share=1.0,
    )
    reading = events_reading(tone, KNOCKS, on_screen=True, alone=True)
    assert (reading.grade, reading.fit) == ("poor", 3)
    assert "not the described sound" in reading.text
    # Beside music in the same track, a tonal share says nothing about the hits: no penalty.
    assert events_reading(tone, KNOCKS, on_screen=True, alone=False).fit == 7


def test_a_lasting_sound_is_read_from_how_much_of_the_clip_sounds() -> None:
    # heard 1.0: 4 + 3 * 0.5 / 0.4 = 7.75 -> 8; heard 0.8: 4 + 3 * 0.3 / 0.4 = 6.25 -> 6.
    assert events_reading(_clip(silence_share=0.0), WIND_AND_LINE, on_screen=False, alone=False).fit == 8
    partly = events_reading(_clip(silence_share=0.2), WIND_AND_LINE, on_screen=False, alone=False)
    assert (partly.grade, partly.fit) == ("partial", 6)
    unknown = events_reading(_clip(), "a quiet scene", on_screen=False, alone=True)
    assert (unknown.grade, unknown.fit) == ("unknown", None)


def test_a_misheard_line_counts_by_its_letters() -> None:
    misheard = "Let us aim to defend Son's own fate."  # Whisper tiny.en on the mix-03 reference
    alike = line_similarity(misheard, WIND_AND_LINE)
    # difflib: 2 x 17 matching letters over 28 heard ("letusaimtodefendson'sownfate") + 26 requested.
    assert alike == pytest.approx(34 / 54)
    reading = line_reading(_clip(transcript=misheard), WIND_AND_LINE)
    # words 2 of 7 (0.29): 3.86 -> 4; letters 0.63: 4 + 3 * 0.0796 / 0.25 = 4.96 -> 5; the better one.
    assert (reading.grade, reading.fit) == ("partial", 5)
    beeps = line_reading(_clip(transcript="Beep beep beep beep"), WIND_AND_LINE)
    assert beeps.grade == "poor" and beeps.fit is not None and beeps.fit <= 1


def test_tempo_needs_a_tune_and_a_held_tune_is_partly_verified() -> None:
    caption = "slow organ music at 120 beats per minute"
    # A voice at the asked pace is not the tune: tempo fit 9, tonal 0.23 caps it at 4 + 3 * 0.03 / 0.2 = 4.45 -> 4.
    assert tempo_reading(ClipFacts(3.0, True, tempo_bpm=120.0, tonal_share=0.23), caption).fit == 4
    held = tempo_reading(ClipFacts(3.0, True, tonal_share=1.0), caption)
    assert (held.grade, held.fit) == ("partial", 6) and "no beat to time" in held.text
    assert tempo_reading(ClipFacts(3.0, True, tonal_share=0.1), caption).grade == "poor"


def test_a_silent_track_fails_every_cell_and_a_still_picture_fails_av_coherence() -> None:
    silent = _clip(silence_share=1.0, loudness=-200.0)
    for dim in ("av_coherence", "audio_quality", "expressiveness", "prompt_following"):
        reading = cell_reading(silent, Cell(dim, "speech"), caption=WIND_AND_LINE, tags=("SPEECH_A",))
        assert (reading.grade, reading.fit) == ("poor", 0) and "silent" in reading.text
    still = _clip(
        motion_energy=0.0,
        motion_audio_r=0.61,
        transcript="let us paint the fence on sunday",
        words_per_second=2.3,
    )
    av = cell_reading(still, Cell("av_coherence", "speech"))
    assert (av.grade, av.fit) == ("poor", 1) and "picture is still" in av.text
    moving = cell_reading(replace(still, motion_energy=0.0003), Cell("av_coherence", "speech"))
    assert (moving.grade, moving.fit) == ("good", 7)  # r 0.61: 4 + 3 * 0.26 / 0.25 = 7.12 -> 7
    assert cell_reading(still, Cell("audio_quality", "speech")).grade == "good"


def test_two_cells_of_one_clip_measured_apart_read_apart() -> None:
    # The mix-02 reference: its line is heard (5 of 6 words), its music 19 % off the asked tempo.
    caption = 'A woman says "I found the keys under the sofa." Soft organ music plays at 90 beats per minute.'
    facts = _clip(
        transcript="I found the key under the solvent.",
        words_per_second=2.3,
        tempo_bpm=107.0,
        tonal_share=0.62,
    )
    tags = ("SPEECH_A", "MUSIC_B")
    speech = cell_reading(facts, Cell("prompt_following", "speech"), caption=caption, tags=tags)
    music = cell_reading(facts, Cell("prompt_following", "music"), caption=caption, tags=tags)
    assert (speech.grade, music.grade) == ("good", "partial")
    assert speech.fit is not None and music.fit is not None and speech.fit > music.fit
