"""Audio loading and preparation shared by every speech metric."""

from omnieval.audio._load import (
    TARGET_RATE,
    AudioError,
    AudioStatus,
    PreparedSpeech,
    Waveform,
    load_audio,
    prepare_speech,
    resample,
    to_mono,
    trim_silence,
)
from omnieval.audio._synth import espeak_wav, harmonic_tone

__all__ = [
    "TARGET_RATE",
    "AudioError",
    "AudioStatus",
    "PreparedSpeech",
    "Waveform",
    "espeak_wav",
    "harmonic_tone",
    "load_audio",
    "prepare_speech",
    "resample",
    "to_mono",
    "trim_silence",
]
