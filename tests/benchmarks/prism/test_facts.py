"""Measured facts: pure measurements against hand computations, and a clip with known events."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from omnieval.benchmarks.prism._facts import (
    ClipFacts,
    cell_reading,
    colour_names,
    level_stats,
    match_events,
    measure_clip,
    motion_audio_correlation,
    quoted_lines,
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
