"""Shared fixtures: espeak-ng clips rendered once per session, and models loaded once."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnieval.audio import espeak_wav

LINE = "Come back here, you little rascal, before the tide takes you away."

CLIPS = {
    "female": {"voice": "en-us+f3", "rate_wpm": 175, "pitch": 50},
    "male": {"voice": "en-us+m3", "rate_wpm": 175, "pitch": 40},
    "slow": {"voice": "en-us+m3", "rate_wpm": 90, "pitch": 40},
    "fast": {"voice": "en-us+f3", "rate_wpm": 330, "pitch": 50},
    "whisper": {"voice": "en-us+whisper", "rate_wpm": 160, "pitch": 50},
}


@pytest.fixture(scope="session")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """espeak-ng renderings of one line with different delivery (22.05 kHz WAV)."""
    root = tmp_path_factory.mktemp("clips")
    return {name: espeak_wav(LINE, root / f"{name}.wav", **opts) for name, opts in CLIPS.items()}  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def analyzer():  # type: ignore[no-untyped-def]
    """The default speech analyzer (packaged Whisper tiny.en), shared by the slow tests."""
    from omnieval.metrics import MetricsConfig, SpeechAnalyzer

    return SpeechAnalyzer(MetricsConfig(workers=2))
