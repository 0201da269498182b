from __future__ import annotations

import numpy as np
import pytest

from omnieval.evaluators._prosody import prosody_frames


@pytest.mark.parametrize("f0", [90.0, 140.0, 220.0, 330.0])
def test_pitch_of_harmonic_tones(f0: float) -> None:
    t = np.arange(24000) / 16000
    wave = sum(np.sin(2 * np.pi * f0 * k * t + k) / k for k in range(1, 8)) * 0.2
    frames = prosody_frames(wave)
    assert frames.shape == (75, 3)
    inner = frames[5:-5]
    assert 2 ** np.median(inner[:, 0]) * 100 == pytest.approx(f0, rel=0.02)
    assert np.all(inner[:, 1] > 0.95)
    assert np.all(inner[:, 2] <= 0) and np.all(inner[:, 2] >= -1)


def test_noise_is_unvoiced_and_silence_is_quiet() -> None:
    rng = np.random.default_rng(0)
    noise = prosody_frames(0.3 * rng.standard_normal(16000))
    assert np.mean(noise[:, 0] == 0.0) > 0.9
    assert np.median(noise[:, 1]) < 0.6
    clip = np.concatenate([0.3 * np.sin(2 * np.pi * 200 * np.arange(8000) / 16000), np.zeros(8000)])
    frames = prosody_frames(clip)
    assert frames[-5:, 2].max() == pytest.approx(-1.0)
    assert prosody_frames(np.zeros(100)).shape == (0, 3)


def test_agrees_with_praat_on_speech() -> None:
    """Median F0 of an espeak-ng clip against Praat's pitch tracker (an independent implementation)."""
    import parselmouth

    from omnieval.corpora import EspeakRecipe, plan_corpus
    from omnieval.corpora._synth import render_clip

    recipe = EspeakRecipe(
        recipe="gender",
        root=__import__("pathlib").Path("."),
        name="x",
        clips_per_label=4,
        snr_db=(60.0, 60.0),
    )
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        for plan in plan_corpus(recipe)[::4]:
            wave = render_clip(plan, Path(tmp))
            ours = prosody_frames(wave)
            voiced = ours[:, 0] != 0
            praat = parselmouth.Sound(wave.astype(np.float64), 16000).to_pitch(
                pitch_floor=60, pitch_ceiling=500
            )
            reference = praat.selected_array["frequency"]
            ref_median = float(np.median(reference[reference > 0]))
            assert 2 ** np.median(ours[voiced, 0]) * 100 == pytest.approx(ref_median, rel=0.08), plan.variant
