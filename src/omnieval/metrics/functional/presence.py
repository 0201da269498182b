"""Whether a clip holds speech at all: the rule behind the ``no_speech`` status.

pYIN finds a pitch in almost anything periodic or coloured (a chord, a hum, a melody, some noise),
so F0 statistics cannot tell a voice from music or noise: on synthetic fixtures a triad and a 50 Hz
hum are 100 % voiced, espeak-ng's whisper voice 0-25 %; spectral flatness does not separate them
either (a melody 0.000, white noise 0.56, speech 0.001-0.10). Whisper is the witness, through the
evidence it computes for every 30 s window (:class:`~omnieval.backends.asr.WindowEvidence`): the
probability of its no-speech token, the mean token log-probability, whether faster-whisper dropped
the window as silence, and what the decoder read in it.

The rule, from Whisper tiny.en (greedy) on 36 synthetic non-speech clips (pink, white, brown and
amplitude-modulated noise at several levels and lengths, melodies, a chord, a tone, a hum, drum
hits, quiet noise) and 100 espeak-ng speech clips (eleven voices, whispered ones included, 90-320
wpm; plus the storybench sample's oracle lines): a window *heard speech* when its decoded text holds
a word (a letter or digit), its no-speech probability is at most 0.8, and, if faster-whisper dropped
it as silence, its mean log-probability is above -1.4. A clip with no such window is ``no_speech``.

- Non-speech had no-speech probabilities of 0.85-0.96, except a pure tone (0.74-0.79), whose
  dropped windows read hallucinated sentences at log-probabilities -1.51 and -1.68; noise and
  melodies otherwise decoded ``.``, ``you`` or ``Thank you.`` (once kept as the transcript, at 0.88).
- Speech had at most 0.62 where the window was kept, and 0.64-0.77 in the three very short, fast
  clips (three to six words in about 0.6 s) that faster-whisper dropped as silence although the
  decoder read words in them (log-probabilities -1.13 to -1.22). Those stay ``ok``, with the empty
  transcript faster-whisper returns (so their labels are the plain harness's).

Neither threshold is Whisper's own (0.6 and -1.0 decide what faster-whisper drops); both sit between
the closest cases seen, with small margins (0.77 vs 0.85; -1.22 vs -1.51), so re-check them with
``tests/metrics/test_presence.py`` and ``python -m bench metrics`` when the ASR model changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt


def has_words(transcript: str | None) -> bool:
    """True when the transcript holds at least one letter or digit (punctuation alone is no speech).

    Example:
        >>> has_words("Yes."), has_words(". . ."), has_words(""), has_words(None)
        (True, False, False, False)
    """
    return bool(transcript) and any(ch.isalnum() for ch in str(transcript))


def spectral_flatness(
    y: npt.NDArray[np.floating[Any]], *, n_fft: int = 2048, hop_length: int = 512
) -> float | None:
    """Median spectral flatness over frames (``librosa.feature.spectral_flatness``, power spectrum).

    Flatness is the geometric over the arithmetic mean of a frame's power spectrum: 1 for white
    noise, near 0 for a few pure partials. None for a clip shorter than one sample.

    Args:
        y: Mono signal, shape ``(n,)``.
        n_fft: FFT size in samples.
        hop_length: Hop in samples.
    """
    import librosa

    y = np.asarray(y, dtype=np.float32)
    if y.size == 0:
        return None
    flat = librosa.feature.spectral_flatness(y=y, n_fft=n_fft, hop_length=hop_length)
    return float(np.median(flat))


class Window(Protocol):
    """What :func:`heard_speech` reads of one decoded window (``WindowEvidence`` has it)."""

    @property
    def no_speech_prob(self) -> float: ...
    @property
    def avg_logprob(self) -> float: ...
    @property
    def skipped(self) -> bool: ...
    @property
    def text(self) -> str: ...


NO_SPEECH_PROB_MAX = 0.8
"""A window whose no-speech probability is above this did not hear speech, whatever it decoded."""
DROPPED_LOGPROB_MIN = -1.4
"""A window faster-whisper dropped as silence heard speech only above this mean log-probability."""


def window_heard_speech(window: Window) -> bool:
    """The rule of the module docstring for one window.

    Example:
        >>> from types import SimpleNamespace as W
        >>> window_heard_speech(W(no_speech_prob=0.2, avg_logprob=-0.4, skipped=False, text=" Hi."))
        True
        >>> window_heard_speech(W(no_speech_prob=0.88, avg_logprob=-0.8, skipped=False, text=" Thank you."))
        False
        >>> window_heard_speech(W(no_speech_prob=0.77, avg_logprob=-1.15, skipped=True, text=" Good boy."))
        True
        >>> window_heard_speech(W(no_speech_prob=0.79, avg_logprob=-1.51, skipped=True, text=" We go."))
        False
    """
    if not has_words(window.text) or window.no_speech_prob > NO_SPEECH_PROB_MAX:
        return False
    return not window.skipped or window.avg_logprob > DROPPED_LOGPROB_MIN


def heard_speech(transcript: str, windows: Sequence[Window]) -> bool:
    """Whether the ASR heard speech in a clip: some window did; without window evidence, a word.

    Args:
        transcript: The ASR's transcript (used only when ``windows`` is empty, e.g. an ASR that
            exposes no per-window evidence).
        windows: Per-window evidence, in order.
    """
    if not windows:
        return has_words(transcript)
    return any(window_heard_speech(w) for w in windows)


def no_speech_message(transcript: str, windows: Sequence[Window]) -> str:
    """Why a clip is ``no_speech``, with the ASR's evidence, for messages and reports."""
    if not windows:
        heard = f"decoded only {transcript!r}" if transcript.strip() else "decoded nothing"
        return f"no speech detected: the ASR {heard}"
    parts = []
    for i, w in enumerate(windows):
        read = repr(w.text.strip()) if w.text.strip() else "nothing"
        fate = "dropped as silence" if w.skipped else "kept"
        where = f"window {i + 1}: " if len(windows) > 1 else ""
        parts.append(
            f"{where}no-speech probability {w.no_speech_prob:.2f}, mean log-probability {w.avg_logprob:.2f}, "
            f"read {read}, {fate}"
        )
    return "no speech detected: Whisper heard no speech (" + "; ".join(parts) + ")"
