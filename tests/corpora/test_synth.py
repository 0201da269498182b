from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from omnieval.corpora import (
    EspeakRecipe,
    load_audio_16k,
    plan_corpus,
    read_manifest,
    synthesize_corpus,
    whisperize,
)
from omnieval.corpora._synth import espeak_version, render_clip


def _voiced_share(wave: np.ndarray) -> float:
    """Share of frames Praat's pitch tracker calls voiced (an independent reference)."""
    import parselmouth

    pitch = parselmouth.Sound(wave.astype(np.float64), 16000).to_pitch(pitch_floor=65, pitch_ceiling=500)
    return float(np.mean(pitch.selected_array["frequency"] > 0))


def test_plan_is_deterministic_and_balanced(tmp_path: Path) -> None:
    recipe = EspeakRecipe(recipe="phonation", root=tmp_path, name="p", clips_per_label=40, seed=7)
    plans = plan_corpus(recipe)
    assert plans == plan_corpus(recipe)
    assert Counter(p.label for p in plans) == {"modal": 40, "whisper": 40}
    assert {p.whisper_method for p in plans if p.label == "whisper"} == {"lpc", "espeak"}
    assert plans != plan_corpus(recipe.model_copy(update={"seed": 8}))


def test_synthesized_gender_corpus(tmp_path: Path) -> None:
    espeak_version()
    recipe = EspeakRecipe(
        recipe="gender",
        root=tmp_path / "g",
        name="g",
        clips_per_label=6,
        female_variants=("f1", "f2", "f3"),
        male_variants=("m1", "m2", "m3"),
        splits={"train": 0.34, "dev": 0.33, "test": 0.33},
    )
    manifest = synthesize_corpus(recipe)
    rows = read_manifest(manifest)
    assert Counter(r.label for r in rows) == {"female": 6, "male": 6}
    assert {r.split for r in rows} == {"train", "dev", "test"}
    for row in rows:
        wave = load_audio_16k(recipe.root / row.path)
        assert 0.5 < row.duration_s < 6 and row.sample_rate == 16000
        assert abs(wave.size / 16000 - row.duration_s) < 1e-3
        assert 0.05 < np.max(np.abs(wave)) <= 1.0
    stamp = manifest.stat().st_mtime_ns
    synthesize_corpus(recipe)
    assert manifest.stat().st_mtime_ns == stamp, "an unchanged recipe must not re-render"


def test_whisperize_removes_voicing_but_keeps_level(tmp_path: Path) -> None:
    recipe = EspeakRecipe(recipe="phonation", root=tmp_path, name="p", clips_per_label=4, snr_db=(60.0, 60.0))
    plans = plan_corpus(recipe)
    modal = render_clip(next(p for p in plans if p.label == "modal"), tmp_path)[:12000]
    whispered = render_clip(next(p for p in plans if p.whisper_method == "lpc"), tmp_path)[:12000]
    assert _voiced_share(modal) > 0.4
    assert _voiced_share(whispered) < 0.15
    # A periodic buzz: LPC re-synthesis keeps its level within a factor of two and removes the pitch.
    t = np.arange(12000) / 16000
    buzz = (sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 20)) * 0.1).astype(np.float32)
    out = whisperize(buzz, 16000, np.random.default_rng(0))
    ratio = np.sqrt(np.mean(out**2)) / np.sqrt(np.mean(buzz**2))
    assert 0.5 < ratio < 2.0
    assert _voiced_share(out) < 0.15 < _voiced_share(buzz)
