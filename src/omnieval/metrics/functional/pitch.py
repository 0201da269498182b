"""Fundamental frequency and the pitch label of Omni-StoryBench (appendix E.2).

The harness runs ``librosa.pyin`` over C2-C7 on the trimmed 16 kHz audio, takes the median of the
finite estimates when there are at least five, else falls back to ``librosa.yin`` (same range; at
least five finite, positive estimates), else gives up and labels the clip ``normal``. The label then
compares the median with gender-dependent thresholds; boundary values are ``normal``.

:func:`pyin_f0` returns exactly what ``librosa.pyin`` returns (same frames, same float values, same
tie-breaking) but decodes the Viterbi path in time linear in the transition band instead of
quadratic in the 1,200 states: pYIN's pitch transitions are local (a triangle of +-70 bins at
16 kHz and hop 512), and every transition outside that band has the same log-probability
``log(tiny)``, so the best out-of-band predecessor is a running maximum. The dense decoder spends
~85 % of pYIN's time; this one a few percent.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.floating[Any]]

FMIN_HZ = 65.40639132514966
"""C2 in Hz (``librosa.note_to_hz('C2')``)."""
FMAX_HZ = 2093.004522404789
"""C7 in Hz (``librosa.note_to_hz('C7')``)."""
MIN_ESTIMATES = 5
"""Finite (pYIN) or finite positive (YIN) estimates needed for a median."""


class PitchThresholds(NamedTuple):
    """Median-F0 limits in Hz: below ``low`` is ``low``, above ``high`` is ``high``, else ``normal``."""

    low: float
    high: float


PITCH_THRESHOLDS: dict[str, PitchThresholds] = {
    "male": PitchThresholds(110.0, 170.0),
    "female": PitchThresholds(165.0, 255.0),
    "unknown": PitchThresholds(145.0, 220.0),
}


class F0Method(StrEnum):
    PYIN = "pyin"
    YIN = "yin"
    NONE = "none"


@dataclass(frozen=True)
class F0Track:
    """Frame-wise F0 of a clip.

    Attributes:
        f0: pYIN estimates in Hz per frame, NaN where unvoiced, shape ``(n_frames,)``.
        voiced_frame_ratio: Finite estimates / all frames (0-1); NaN when there are no frames.
    """

    f0: FloatArray

    @property
    def voiced_frame_ratio(self) -> float:
        if self.f0.size == 0:
            return math.nan
        return float(np.isfinite(self.f0).sum()) / float(self.f0.size)


@dataclass(frozen=True)
class MedianF0:
    """The clip's median F0 and how it was obtained (``hz`` is None when neither method had enough)."""

    hz: float | None
    method: F0Method
    voiced_frame_ratio: float


@functools.lru_cache(maxsize=8)
def _log_transition(n_pitch_bins: int, transition_width: int, switch_prob: float) -> npt.NDArray[np.float64]:
    """pYIN's log transition matrix, shape ``(2n, 2n)``, cached and read-only."""
    import librosa

    local = librosa.sequence.transition_local(n_pitch_bins, transition_width, window="triangle", wrap=False)
    switch = librosa.sequence.transition_loop(2, 1 - switch_prob)
    transition = np.kron(switch, local)
    # librosa.sequence.viterbi adds tiny(prob) before the log; keep the same constant.
    out = np.asarray(np.log(transition + np.finfo(np.float64).tiny), dtype=np.float64)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=8)
def _banded_model(n: int, width: int, switch_prob: float) -> tuple[npt.NDArray[np.float64], float | None]:
    """Transposed log transitions and the out-of-band constant (None: the band is not exact)."""
    log_trans = _log_transition(n, width, switch_prob)
    log_trans_t = np.ascontiguousarray(log_trans.T)
    log_trans_t.setflags(write=False)
    return log_trans_t, _band_is_exact(log_trans, n, width // 2)


def _band_is_exact(log_trans: npt.NDArray[np.float64], n: int, half: int) -> float | None:
    """Return the out-of-band constant when every transition outside ``|k_i-k_j|<=half`` equals it."""
    k = np.arange(2 * n) % n
    outside = np.abs(k[:, None] - k[None, :]) > half
    if not outside.any():
        return float(log_trans.min())
    values = log_trans[outside]
    const = float(values[0])
    return const if bool(np.all(values == const)) else None


def _banded_viterbi_py(
    log_prob: npt.NDArray[np.float64],
    log_trans_t: npt.NDArray[np.float64],
    log_p_init: npt.NDArray[np.float64],
    n: int,
    half: int,
    const: float,
) -> npt.NDArray[np.int64]:
    """Viterbi over two blocks of ``n`` pitch states with banded transitions.

    Equivalent to librosa's dense ``_viterbi`` including its tie rule (the lowest predecessor index
    wins): candidates are visited in index order and replace the best only when strictly larger.
    ``log_prob`` has shape ``(n_frames, 2n)``; ``log_trans_t[j, i]`` is the log-probability of
    moving from state ``i`` to ``j`` (transposed so the inner loop reads contiguous memory).
    """
    n_steps, n_states = log_prob.shape
    ptr = np.zeros((n_steps, n_states), dtype=np.int64)
    prev = log_prob[0] + log_p_init
    cur = np.empty(n_states)
    w = np.empty(n_states)
    pre_v = np.empty(n_states)
    pre_i = np.empty(n_states, dtype=np.int64)
    suf_v = np.empty(n_states)
    suf_i = np.empty(n_states, dtype=np.int64)
    for t in range(1, n_steps):
        for i in range(n_states):
            w[i] = prev[i] + const
        for b in range(2):
            base = b * n
            best = -np.inf
            best_i = base
            for k in range(n):
                if w[base + k] > best:
                    best = w[base + k]
                    best_i = base + k
                pre_v[base + k] = best
                pre_i[base + k] = best_i
            best = -np.inf
            best_i = base + n - 1
            for k in range(n - 1, -1, -1):
                if w[base + k] >= best:
                    best = w[base + k]
                    best_i = base + k
                suf_v[base + k] = best
                suf_i[base + k] = best_i
        for j in range(n_states):
            kj = j % n
            lo = kj - half
            hi = kj + half
            best = -np.inf
            best_i = -1
            for b in range(2):
                base = b * n
                if lo > 0:
                    v = pre_v[base + lo - 1]
                    if v > best:
                        best = v
                        best_i = pre_i[base + lo - 1]
                start = lo if lo > 0 else 0
                stop = hi if hi < n - 1 else n - 1
                for k in range(start, stop + 1):
                    i = base + k
                    v = prev[i] + log_trans_t[j, i]
                    if v > best:
                        best = v
                        best_i = i
                if hi < n - 1:
                    v = suf_v[base + hi + 1]
                    if v > best:
                        best = v
                        best_i = suf_i[base + hi + 1]
            ptr[t, j] = best_i
            cur[j] = log_prob[t, j] + best
        prev, cur = cur, prev
    states = np.zeros(n_steps, dtype=np.int64)
    states[-1] = int(np.argmax(prev))
    for t in range(n_steps - 2, -1, -1):
        states[t] = ptr[t + 1, states[t + 1]]
    return states


_BANDED_VITERBI: Any = None


def _banded_viterbi(*args: Any) -> npt.NDArray[np.int64]:
    """The banded decoder compiled by numba (cached on disk); pure Python if numba is absent."""
    global _BANDED_VITERBI
    if _BANDED_VITERBI is None:
        try:
            import numba

            _BANDED_VITERBI = numba.njit(cache=True, nogil=True)(_banded_viterbi_py)
        except ImportError:  # pragma: no cover - numba ships with librosa
            _BANDED_VITERBI = _banded_viterbi_py
    result: npt.NDArray[np.int64] = _BANDED_VITERBI(*args)
    return result


def pyin_f0(
    y: FloatArray,
    *,
    sr: int = 16_000,
    fmin: float = FMIN_HZ,
    fmax: float = FMAX_HZ,
    frame_length: int = 2048,
    hop_length: int | None = None,
    decoder: Literal["banded", "dense"] = "banded",
) -> F0Track:
    """pYIN F0 per frame, identical to ``librosa.pyin(y, fmin=fmin, fmax=fmax, sr=sr)[0]``.

    Args:
        y: Mono signal, shape ``(n,)``.
        sr: Sample rate in Hz.
        fmin, fmax: Search range in Hz (C2-C7 in the paper).
        frame_length: Analysis frame in samples (librosa's default 2048).
        hop_length: Hop in samples; default ``frame_length // 4``.
        decoder: ``banded`` (exact, fast) or ``dense`` (calls ``librosa.pyin`` itself).

    Returns:
        Frame-wise F0 in Hz, NaN for unvoiced frames.

    Example:
        >>> import numpy as np
        >>> t = np.arange(16000) / 16000
        >>> track = pyin_f0(0.5 * np.sin(2 * np.pi * 200.0 * t))
        >>> abs(float(np.nanmedian(track.f0)) - 200.0) < 2.0  # pYIN's grid is 10 cents
        True
    """
    import librosa
    from librosa.core import pitch as _pitch

    y = np.asarray(y, dtype=np.float32 if y.dtype == np.float32 else np.float64)
    helper = getattr(_pitch, "__pyin_helper", None)
    if decoder == "dense" or helper is None:
        f0, _, _ = librosa.pyin(
            y, fmin=fmin, fmax=fmax, sr=sr, frame_length=frame_length, hop_length=hop_length
        )
        return F0Track(np.asarray(f0, dtype=np.float64))

    import scipy.stats

    # The steps and defaults below follow librosa 0.11's pyin line by line, so the result matches
    # it exactly; only the decoder differs.
    hop = frame_length // 4 if hop_length is None else hop_length
    librosa.util.valid_audio(y)
    padded = np.pad(y, (frame_length // 2, frame_length // 2), mode="constant")
    frames = librosa.util.frame(padded, frame_length=frame_length, hop_length=hop)
    min_period = int(np.floor(sr / fmax))
    max_period = min(int(np.ceil(sr / fmin)), frame_length - 1)
    yin_frames = _pitch._cumulative_mean_normalized_difference(frames, min_period, max_period)
    shifts = _pitch._parabolic_interpolation(yin_frames)
    n_thresholds = 100
    thresholds = np.linspace(0, 1, n_thresholds + 1)
    beta_probs = np.diff(scipy.stats.beta.cdf(thresholds, 2, 18))
    resolution = 0.1
    bins_per_semitone = int(np.ceil(1.0 / resolution))
    n_bins = int(np.floor(12 * bins_per_semitone * np.log2(fmax / fmin))) + 1
    obs, _voiced_prob = helper(
        yin_frames, shifts, sr, thresholds, 2, beta_probs, 0.01, min_period, fmin, n_bins, bins_per_semitone
    )
    max_semitones_per_frame = round(35.92 * 12 * hop / sr)
    width = max_semitones_per_frame * bins_per_semitone + 1
    log_trans_t, const = _banded_model(n_bins, width, 0.01)
    prob = np.asarray(obs[0], dtype=np.float64)  # (2n, n_frames)
    eps = librosa.util.tiny(prob)
    log_prob = np.ascontiguousarray(np.log(prob + eps).T)
    p_init = np.ones(2 * n_bins) / (2 * n_bins)
    log_p_init = np.log(p_init + eps)
    if const is None:  # pragma: no cover - only if librosa changed its transition model
        f0, _, _ = librosa.pyin(
            y, fmin=fmin, fmax=fmax, sr=sr, frame_length=frame_length, hop_length=hop_length
        )
        return F0Track(np.asarray(f0, dtype=np.float64))
    states = _banded_viterbi(log_prob, log_trans_t, log_p_init, n_bins, width // 2, const)
    freqs = fmin * 2 ** (np.arange(n_bins) / (12 * bins_per_semitone))
    f0 = freqs[states % n_bins]
    f0[states >= n_bins] = np.nan
    return F0Track(np.asarray(f0, dtype=np.float64))


def yin_f0(y: FloatArray, *, sr: int = 16_000, fmin: float = FMIN_HZ, fmax: float = FMAX_HZ) -> FloatArray:
    """``librosa.yin`` estimates in Hz per frame (no voicing decision), shape ``(n_frames,)``."""
    import librosa

    return np.asarray(librosa.yin(y, fmin=fmin, fmax=fmax, sr=sr), dtype=np.float64)


def median_f0(
    y: FloatArray,
    *,
    sr: int = 16_000,
    fmin: float = FMIN_HZ,
    fmax: float = FMAX_HZ,
    decoder: Literal["banded", "dense"] = "banded",
) -> MedianF0:
    """Median F0 with the paper's fallback chain: pYIN (>= 5 finite), YIN (>= 5 finite > 0), none.

    The voiced-frame ratio always comes from pYIN (finite estimates / frames).
    """
    track = pyin_f0(y, sr=sr, fmin=fmin, fmax=fmax, decoder=decoder)
    finite = track.f0[np.isfinite(track.f0)]
    if finite.size >= MIN_ESTIMATES:
        return MedianF0(float(np.median(finite)), F0Method.PYIN, track.voiced_frame_ratio)
    est = yin_f0(y, sr=sr, fmin=fmin, fmax=fmax)
    usable = est[np.isfinite(est) & (est > 0)]
    if usable.size >= MIN_ESTIMATES:
        return MedianF0(float(np.median(usable)), F0Method.YIN, track.voiced_frame_ratio)
    return MedianF0(None, F0Method.NONE, track.voiced_frame_ratio)


def pitch_thresholds(gender: str | None) -> PitchThresholds:
    """Thresholds for a gender label (``male``/``female``); anything else uses the ``unknown`` pair."""
    key = (gender or "").strip().lower()
    return PITCH_THRESHOLDS.get(key, PITCH_THRESHOLDS["unknown"])


def pitch_label(f0_hz: float | None, gender: str | None) -> str:
    """``low`` / ``normal`` / ``high`` for a median F0; no F0 is ``normal``; boundaries are ``normal``.

    Example:
        >>> pitch_label(165.0, "female"), pitch_label(164.9, "female"), pitch_label(None, "male")
        ('normal', 'low', 'normal')
    """
    if f0_hz is None or not math.isfinite(f0_hz):
        return "normal"
    limits = pitch_thresholds(gender)
    if f0_hz < limits.low:
        return "low"
    if f0_hz > limits.high:
        return "high"
    return "normal"
