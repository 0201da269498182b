"""Measured facts about one clip, for the CPU cascade judge (a text model that cannot see or hear).

Everything here is measured by code from the clip alone: loudness, clipping, silence, a transcript
(packaged faster-whisper tiny.en), sharp audio onsets (librosa), sudden visual events (frame
difference peaks), how far each visual event is from the nearest onset, whether picture motion
rises and falls with loudness, picture brightness and colours, and simple music measures (tempo,
beat steadiness, tonal share). :func:`cell_reading` picks, per (dimension, audio type) cell, the
measurements that speak to it, states them with their plain meaning ("4 of 4 visual events have a
sound onset within 40 ms: in sync") and sums them up as a grade (good, partial, poor, unknown)
and a *fit*: the measurement placed on the judge's 0-10 scale, linear through 4 at the edge of
partial and 7 at the edge of good (:func:`measured_fit`), so two cells or two clips graded alike but
measured apart read apart. Stage 2 reads each type against the caption: the quoted line heard
(words, and letters for a misheard line), the named tempo and a tune's tonal share, the sound
events asked for (counted hits on the visible impacts, or a lasting sound such as wind or rain).
A silent soundtrack fails every cell and a still picture fails AV coherence, whatever else is
measured.

Loudness is integrated LUFS (ITU-R BS.1770) when ``pyloudnorm`` is installed, else the RMS level
in dBFS; the unit is always stated.

The pure measurement functions take arrays so tests can check them on synthetic signals:

Example:
    >>> import numpy as np
    >>> match_events((1.0, 2.0), (1.02, 3.0))
    (20.0, None)
    >>> round(level_stats(np.full(16000, 0.5, dtype=np.float32), 16000).rms_dbfs, 2)
    -6.02
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from omnieval.benchmarks.prism._tags import Cell, parse_tag

FloatArray = npt.NDArray[np.float32]

FACTS_VERSION = "prism-facts-2"
"""Changes whenever a measurement or its wording changes (part of cache keys and lineage)."""
ANALYSIS_SR = 16_000
ANALYSIS_FPS = 25.0
"""Frame rate used when a clip does not state its own."""
ANALYSIS_SIZE = (64, 36)
SILENCE_DBFS = -50.0
CLIP_LEVEL = 0.999
MATCH_TIGHT_MS = 40.0
MATCH_SEARCH_MS = 500.0
FUZZY_WORD_RATIO = 0.75
SAID_SHARE = 0.6
PARTLY_SAID_SHARE = 0.3
_WORD = re.compile(r"[a-z0-9']+")
_QUOTED = re.compile(r"[\"“”«»]([^\"“”«»]{2,})[\"“”«»]")


@dataclass(frozen=True)
class LevelStats:
    """Levels of a mono signal. dB values are relative to full scale; shares are 0-1."""

    rms_dbfs: float
    peak_dbfs: float
    clipping_share: float
    silence_share: float
    loudness_range_db: float
    """Spread (std, dB) of 400 ms windows above the silence floor: how much loudness moves."""


@dataclass(frozen=True)
class ClipFacts:
    """What code measured on one clip; ``None`` = not measured (no audio, or not asked for).

    Times are seconds from the clip's start; offsets in milliseconds (onset minus event).
    """

    duration_s: float
    has_audio: bool
    loudness: float | None = None
    loudness_unit: str = ""
    peak_dbfs: float | None = None
    clipping_share: float | None = None
    silence_share: float | None = None
    loudness_range_db: float | None = None
    transcript: str | None = None
    words_per_second: float | None = None
    audio_onsets_s: tuple[float, ...] = ()
    visual_events_s: tuple[float, ...] = ()
    event_offsets_ms: tuple[float | None, ...] = ()
    motion_audio_r: float | None = None
    brightness: float | None = None
    colours: tuple[str, ...] = ()
    motion_energy: float | None = None
    tempo_bpm: float | None = None
    beat_cv: float | None = None
    tonal_share: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClipFacts:
        values = dict(data)
        for key in ("audio_onsets_s", "visual_events_s", "event_offsets_ms", "colours", "notes"):
            values[key] = tuple(values.get(key) or ())
        return cls(**values)

    @property
    def mean_abs_offset_ms(self) -> float | None:
        found = [abs(o) for o in self.event_offsets_ms if o is not None]
        return float(np.mean(found)) if found else None

    def events_within(self, ms: float) -> int:
        return sum(1 for o in self.event_offsets_ms if o is not None and abs(o) <= ms)


# -- pure measurements ---------------------------------------------------------------------------


def _db(x: float) -> float:
    return float(20.0 * np.log10(max(x, 1e-10)))


def level_stats(y: FloatArray, sr: int) -> LevelStats:
    """RMS and peak level, clipped-sample share, share of silent 50 ms windows, loudness spread.

    Args:
        y: mono samples in [-1, 1], shape ``(n,)``.
        sr: sample rate in Hz.
    """
    y = np.asarray(y, dtype=np.float64)
    if y.size == 0:
        return LevelStats(-200.0, -200.0, 0.0, 1.0, 0.0)
    rms = float(np.sqrt(np.mean(y**2)))
    peak = float(np.max(np.abs(y)))
    clipping = float(np.mean(np.abs(y) >= CLIP_LEVEL))
    levels = _window_db(y, int(0.05 * sr))
    silence = float(np.mean(levels < SILENCE_DBFS)) if levels.size else float(_db(rms) < SILENCE_DBFS)
    block_db = _window_db(y, int(0.4 * sr))
    loud = block_db[block_db >= SILENCE_DBFS] if block_db.size >= 2 else block_db[:0]
    spread = float(np.std(loud)) if loud.size >= 2 else 0.0
    return LevelStats(_db(rms), _db(peak), clipping, silence, spread)


def _window_db(y: npt.NDArray[np.floating[Any]], win: int) -> npt.NDArray[np.float64]:
    """RMS level (dBFS) of each whole window of ``win`` samples (at least 1); empty when none fits."""
    win = max(1, win)
    n = y.size // win
    frames = y[: n * win].reshape(n, win)
    return np.asarray(20 * np.log10(np.maximum(np.sqrt(np.mean(frames**2, axis=1)), 1e-10)), dtype=np.float64)


def integrated_loudness(y: FloatArray, sr: int) -> tuple[float, str]:
    """Integrated LUFS with pyloudnorm when installed, else RMS dBFS; returns (value, unit)."""
    try:
        import pyloudnorm
    except ImportError:
        return level_stats(y, sr).rms_dbfs, "dBFS RMS"
    if y.size < int(0.4 * sr):
        return level_stats(y, sr).rms_dbfs, "dBFS RMS"
    value = float(pyloudnorm.Meter(sr).integrated_loudness(np.asarray(y, dtype=np.float64)))
    if not np.isfinite(value):
        return level_stats(y, sr).rms_dbfs, "dBFS RMS"
    return value, "LUFS"


def frame_differences(gray: npt.NDArray[np.floating[Any]]) -> npt.NDArray[np.float64]:
    """Mean absolute change between consecutive frames, shape ``(n-1,)``, on the 0-255 scale.

    Args:
        gray: frames, shape ``(n, height, width)``.
    """
    g = np.asarray(gray, dtype=np.float64)
    if g.shape[0] < 2:
        return np.zeros(0)
    return np.asarray(np.mean(np.abs(np.diff(g, axis=0)), axis=(1, 2)), dtype=np.float64)


def _cell_means(x: npt.NDArray[np.float64], grid: int) -> npt.NDArray[np.float64]:
    """``(n, h, w)`` -> ``(n, grid*grid)``: the mean of each region of a ``grid`` x ``grid`` split."""
    n, h, w = x.shape
    out = np.empty((n, grid * grid))
    for r in range(grid):
        for c in range(grid):
            region = x[:, r * h // grid : (r + 1) * h // grid, c * w // grid : (c + 1) * w // grid]
            out[:, r * grid + c] = region.mean(axis=(1, 2))
    return out


def visual_events(gray: npt.NDArray[np.floating[Any]], fps: float, grid: int = 4) -> tuple[float, ...]:
    """Times (s) of abrupt visual changes: an object hitting something, a key lighting up, a cut.

    Per region of a ``grid`` x ``grid`` split, the frame-to-frame *acceleration*
    ``|f[k+1] - 2 f[k] + f[k-1]|`` (0-255 scale) is large where motion starts, stops or reverses,
    and small for steady motion (drifting clouds, a ball in flight). Events are peaks of the
    strongest region's acceleration that stand out by 40 % of the clip's largest peak (and 1.5
    grey levels), at least 150 ms apart; an event's time is its middle frame's.

    Args:
        gray: frames, shape ``(n, height, width)``.
        fps: frames per second of ``gray``.
    """
    from scipy.signal import find_peaks

    g = np.asarray(gray, dtype=np.float64)
    if g.shape[0] < 5:
        return ()
    accel = np.abs(g[2:] - 2 * g[1:-1] + g[:-2])
    strongest = _cell_means(accel, grid).max(axis=1)
    top = float(strongest.max())
    if top < 1.5:
        return ()
    peaks, _ = find_peaks(strongest, prominence=max(1.5, 0.4 * top), distance=max(1, round(0.15 * fps)))
    return tuple(round((int(p) + 1) / fps, 3) for p in peaks)


def audio_onsets(y: FloatArray, sr: int) -> tuple[float, ...]:
    """Times (s) of sharp sound onsets: librosa's onset detector at 10 ms hops, strong peaks only."""
    import librosa

    if y.size < sr // 10 or float(np.max(np.abs(y))) < 1e-4:
        return ()
    hop = sr // 100
    env = librosa.onset.onset_strength(y=y.astype(np.float32), sr=sr, hop_length=hop)
    if env.size == 0 or float(env.max()) <= 0:
        return ()
    times = librosa.onset.onset_detect(
        onset_envelope=env, sr=sr, hop_length=hop, units="time", delta=0.2, wait=10, backtrack=False
    )
    return tuple(round(float(t), 3) for t in times)


def match_events(
    events: Sequence[float], onsets: Sequence[float], search_ms: float = MATCH_SEARCH_MS
) -> tuple[float | None, ...]:
    """For each visual event, the signed offset (ms) of the nearest onset, None when none is within ``search_ms``."""
    out: list[float | None] = []
    for event in events:
        best: float | None = None
        for onset in onsets:
            offset = (onset - event) * 1000.0
            if abs(offset) <= search_ms and (best is None or abs(offset) < abs(best)):
                best = offset
        out.append(None if best is None else round(best, 1))
    return tuple(out)


def motion_audio_correlation(
    gray: npt.NDArray[np.floating[Any]], y: FloatArray, sr: int, fps: float, grid: int = 4
) -> float | None:
    """Best Pearson r, over a ``grid`` x ``grid`` split of the picture, between a region's motion and loudness.

    Motion of a region = mean absolute frame difference inside it; loudness = RMS of the audio
    during that frame step; both smoothed over 3 steps. A talking mouth or a struck drum moves in
    step with the sound (high r); a borrowed soundtrack does not. None when either is constant.
    """
    g = np.asarray(gray, dtype=np.float64)
    n = g.shape[0]
    if n < 6 or y.size == 0:
        return None
    diffs = np.abs(np.diff(g, axis=0))
    hop = sr / fps
    env = np.zeros(n - 1)
    for i in range(1, n):
        seg = y[int((i - 1) * hop) : int(i * hop)]
        env[i - 1] = float(np.sqrt(np.mean(seg.astype(np.float64) ** 2))) if seg.size else 0.0
    kernel = np.ones(3) / 3
    env = np.convolve(env, kernel, mode="same")
    if float(np.std(env)) < 1e-9:
        return None
    best: float | None = None
    for region in _cell_means(diffs, grid).T:
        motion = np.convolve(region, kernel, mode="same")
        if float(np.std(motion)) < 1e-9:
            continue
        value = float(np.corrcoef(motion, env)[0, 1])
        if np.isfinite(value) and (best is None or value > best):
            best = value
    return None if best is None else round(best, 3)


_HUES: tuple[tuple[float, str], ...] = (
    (15, "red"),
    (45, "orange"),
    (70, "yellow"),
    (165, "green"),
    (200, "cyan"),
    (260, "blue"),
    (300, "purple"),
    (345, "pink"),
    (360, "red"),
)


def colour_names(rgb: npt.NDArray[np.uint8], min_share: float = 0.1, top: int = 3) -> tuple[str, ...]:
    """The most common colour names of the pixels (each at least ``min_share``), most common first."""
    px = np.asarray(rgb, dtype=np.float64).reshape(-1, 3) / 255.0
    if px.size == 0:
        return ()
    mx, mn = px.max(axis=1), px.min(axis=1)
    sat = np.where(mx > 0, (mx - mn) / np.maximum(mx, 1e-9), 0.0)
    r, g, b = px[:, 0], px[:, 1], px[:, 2]
    delta = np.maximum(mx - mn, 1e-9)
    hue = np.where(
        mx == r,
        (60 * ((g - b) / delta)) % 360,
        np.where(mx == g, 60 * ((b - r) / delta) + 120, 60 * ((r - g) / delta) + 240),
    )
    names = np.empty(px.shape[0], dtype=object)
    names[:] = "grey"
    names[mx >= 0.8] = "white"
    chromatic = (sat >= 0.25) & (mx >= 0.2)
    for i, (edge, name) in enumerate(_HUES):
        low = _HUES[i - 1][0] if i else 0.0
        names[chromatic & (hue >= low) & (hue < edge)] = name
    names[mx < 0.2] = "black"
    values, counts = np.unique(names.astype(str), return_counts=True)
    ranked = sorted(zip(counts / px.shape[0], values, strict=True), key=lambda t: (-t[0], t[1]))
    return tuple(str(name) for share, name in ranked[:top] if share >= min_share)


def music_measures(y: FloatArray, sr: int) -> tuple[float | None, float | None, float | None]:
    """(tempo in BPM, beat-interval variation as a coefficient of variation, tonal energy share 0-1)."""
    import librosa

    if y.size < sr or float(np.max(np.abs(y))) < 1e-4:
        return None, None, None
    y32 = y.astype(np.float32)
    tempo, beats = librosa.beat.beat_track(y=y32, sr=sr, hop_length=256)
    tempo_value = float(np.atleast_1d(tempo)[0]) if np.size(tempo) else 0.0
    beat_times = librosa.frames_to_time(beats, sr=sr, hop_length=256)
    intervals = np.diff(beat_times)
    cv = (
        float(np.std(intervals) / np.mean(intervals))
        if intervals.size >= 2 and np.mean(intervals) > 0
        else None
    )
    spectrum = np.abs(librosa.stft(y32, n_fft=1024, hop_length=256))
    harmonic, percussive = librosa.decompose.hpss(spectrum)
    total = float(np.sum(harmonic**2) + np.sum(percussive**2))
    tonal = float(np.sum(harmonic**2) / total) if total > 0 else None
    return (
        (round(tempo_value, 1) if tempo_value > 0 else None),
        (None if cv is None else round(cv, 3)),
        (None if tonal is None else round(tonal, 3)),
    )


def words(text: str) -> list[str]:
    """Lower-case word tokens (letters, digits, apostrophes)."""
    return _WORD.findall(text.lower().replace("’", "'"))


def quoted_lines(caption: str) -> list[str]:
    """Spans of the caption inside quotation marks (the lines a speaker is asked to say)."""
    return [m.group(1).strip() for m in _QUOTED.finditer(caption) if words(m.group(1))]


@dataclass(frozen=True)
class WordMatch:
    """How much of the requested wording was heard: ``heard`` of ``requested`` distinct words."""

    heard: int
    requested: int
    source: str
    """``quoted line`` when the caption quotes what is said, else ``caption``."""

    @property
    def share(self) -> float:
        return self.heard / self.requested if self.requested else 0.0


def _heard(word: str, heard: Sequence[str]) -> bool:
    if word in heard:
        return True
    if len(word) < 4:
        return False
    # Small ASR models mishear synthetic voices ("kettle" -> "cattle"): near spellings count.
    return any(
        len(h) >= 3 and difflib.SequenceMatcher(None, word, h).ratio() >= FUZZY_WORD_RATIO for h in heard
    )


def requested_words_heard(transcript: str, caption: str) -> WordMatch | None:
    """Distinct words of the caption's quoted lines found in the transcript (None without quotes).

    A word counts as heard when the transcript has it, or (4+ letters) a word spelled at least
    75 % alike (difflib ratio).

    Example:
        >>> m = requested_words_heard("The cattle is finally boiling.", 'He says "The kettle is finally boiling."')
        >>> (m.heard, m.requested)
        (4, 5)
    """
    quoted = quoted_lines(caption)
    if not quoted:
        return None
    wanted = sorted({w for line in quoted for w in words(line)})
    heard = words(transcript)
    return WordMatch(sum(_heard(w, heard) for w in wanted), len(wanted), "quoted line")


# -- measuring a clip ------------------------------------------------------------------------------


def _gray(frames: Sequence[npt.NDArray[np.uint8]]) -> npt.NDArray[np.float64]:
    stack = np.stack([np.asarray(f, dtype=np.float64) for f in frames])
    return np.asarray(stack @ np.array([0.299, 0.587, 0.114]), dtype=np.float64)


def measure_clip(path: Path, *, transcribe: bool, asr_model: str = "whisper-tiny.en") -> ClipFacts:
    """Measure ``path`` (an mp4 with video and, normally, audio).

    Args:
        path: the clip.
        transcribe: run ASR (only when the sample has speech; whisper invents words on music).
        asr_model: a packaged Whisper name or a local CTranslate2 folder.

    Raises:
        MediaError: the clip cannot be probed or decoded.
    """
    from omnieval.benchmarks.prism._media import decode_audio, extract_frames, probe

    info = probe(path)
    duration = max(info.video_duration_s, info.audio_duration_s) or info.duration_s
    # The clip's own frame rate (capped): resampling to another rate duplicates frames, and the
    # duplicates' zero differences would blur the event peaks.
    fps = min(info.fps, 30.0) if info.fps > 0 else ANALYSIS_FPS
    frames = extract_frames(path, fps=fps, size=ANALYSIS_SIZE)
    gray = _gray(frames) if frames else np.zeros((0, ANALYSIS_SIZE[1], ANALYSIS_SIZE[0]))
    diffs = frame_differences(gray)
    events = visual_events(gray, fps)
    picked = [frames[int(len(frames) * q)] for q in (0.25, 0.5, 0.75)] if frames else []
    colours = colour_names(np.stack(picked)) if picked else ()
    brightness = round(float(np.mean(gray)) / 255.0, 3) if gray.size else None
    motion = round(float(np.mean(diffs)) / 255.0, 4) if diffs.size else None
    if not info.has_audio:
        return ClipFacts(
            duration_s=round(duration, 3),
            has_audio=False,
            visual_events_s=events,
            brightness=brightness,
            colours=colours,
            motion_energy=motion,
            notes=("no audio track",),
        )
    y = decode_audio(path, sr=ANALYSIS_SR)
    levels = level_stats(y, ANALYSIS_SR)
    loudness, unit = integrated_loudness(y, ANALYSIS_SR)
    onsets = audio_onsets(y, ANALYSIS_SR)
    transcript: str | None = None
    wps: float | None = None
    if transcribe:
        from omnieval.backends.asr import load_transcriber

        heard = load_transcriber(asr_model).transcribe(y)
        transcript = heard.text.strip()
        wps = round(len(words(transcript)) / duration, 2) if duration > 0 else None
    tempo, beat_cv, tonal = music_measures(y, ANALYSIS_SR)
    return ClipFacts(
        duration_s=round(duration, 3),
        has_audio=True,
        loudness=round(loudness, 1),
        loudness_unit=unit,
        peak_dbfs=round(levels.peak_dbfs, 1),
        clipping_share=round(levels.clipping_share, 4),
        silence_share=round(levels.silence_share, 3),
        loudness_range_db=round(levels.loudness_range_db, 1),
        transcript=transcript,
        words_per_second=wps,
        audio_onsets_s=onsets,
        visual_events_s=events,
        event_offsets_ms=match_events(events, onsets),
        motion_audio_r=motion_audio_correlation(gray, y, ANALYSIS_SR, fps),
        brightness=brightness,
        colours=colours,
        motion_energy=motion,
        tempo_bpm=tempo,
        beat_cv=beat_cv,
        tonal_share=tonal,
    )


# -- plain readings for the judge, per cell -------------------------------------------------------

Grade = Literal["good", "partial", "poor", "unknown"]
_RANK_ORDER: tuple[Grade, ...] = ("good", "partial", "poor")
_BPM = re.compile(r"(\d{2,3})\s*(?:beats per minute|bpm)", re.I)
_COUNT_WORDS: dict[str, int] = {
    "once": 1,
    "twice": 2,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_TIMES = re.compile(
    r"\b(once|twice|(?:one|two|three|four|five|six|seven|eight|nine|ten|\d{1,2})\s+times)\b", re.I
)
# Words that name a sound made of separate hits, and words that name a sound that lasts (ambience).
_HIT_WORDS = re.compile(
    r"\b(knock|hit|strik|bounc|thud|bang|clap|tap|slam|crash|drop|footstep|stomp)\w*", re.I
)
_STEADY_WORDS = re.compile(
    r"\b(rain|wind|wave|surf|howl|patter|hum|rumbl|traffic|crowd|stream|buzz|hiss|breez)\w*", re.I
)

SILENT_TRACK_SHARE = 0.98
"""Share of silent 50 ms windows from which a soundtrack counts as silent: nothing to judge in any cell."""
STILL_MOTION = 0.0001
"""Mean frame change (0-1 scale) below which the picture counts as still (a frozen frame)."""
TONAL_SHARE = 0.6
"""Tonal energy share from which a track counts as a tune or a tone rather than noise or hits."""
LINE_ALIKE = 0.8
LINE_PARTLY_ALIKE = 0.55
"""Letter similarity of the heard line to the requested one (said / partly said): small ASR models
mishear synthetic voices word by word ("paint the fence" -> "aim to defend") but keep its letters."""


@dataclass(frozen=True)
class CellReading:
    """What the measurements say about one clip for one (dimension, audio type) cell.

    ``text`` states the numbers with their plain meaning; ``grade`` sums it up (``unknown`` when
    nothing measured speaks to the cell); ``fit`` is the measurement placed on the judge's 0-10
    scale (None when unknown), so two cells graded alike but measured apart read apart.
    """

    text: str
    grade: Grade
    fit: int | None = None


def measured_fit(value: float, partial_at: float, good_at: float) -> int:
    """``value`` on the 0-10 scale, linear through 4 at ``partial_at`` and 7 at ``good_at``, clamped.

    Works for measures where less is better too (``good_at < partial_at``).

    Example:
        >>> measured_fit(0.6, 0.3, 0.6), measured_fit(0.3, 0.3, 0.6), measured_fit(1.0, 0.3, 0.6)
        (7, 4, 10)
        >>> measured_fit(0.02, 0.2, 0.08), measured_fit(0.5, 0.2, 0.08)
        (9, 0)
    """
    x = 4.0 + 3.0 * (value - partial_at) / (good_at - partial_at)
    return int(min(10.0, max(0.0, np.floor(x + 0.5))))


def fit_grade(fit: int) -> Grade:
    """The grade of a fit: 7-10 good, 4-6 partial, 0-3 poor (the judge's scale bands)."""
    return "good" if fit >= 7 else "partial" if fit >= 4 else "poor"


def _fitted(template: str, fit: int, words: tuple[str, str, str]) -> CellReading:
    """``template`` with the word of the fit's grade (``words`` in the order good, partial, poor)."""
    grade = fit_grade(fit)
    return CellReading(template.format(words[_RANK_ORDER.index(grade)]), grade, fit)


def silent_reading(facts: ClipFacts) -> CellReading | None:
    """A missing or silent soundtrack fails every cell: None when something is heard."""
    if not facts.has_audio:
        return CellReading("NO audio track (silent clip)", "poor", 0)
    if facts.silence_share is not None and facts.silence_share >= SILENT_TRACK_SHARE:
        silent = round(facts.silence_share * 100)
        return CellReading(
            f"the soundtrack is silent ({silent}% of the clip below -50 dBFS): nothing is heard", "poor", 0
        )
    return None


def still_reading(facts: ClipFacts) -> CellReading | None:
    """A picture that never changes shows no source acting, whatever the sound: None when it moves."""
    if facts.motion_energy is None or facts.motion_energy >= STILL_MOTION:
        return None
    return CellReading(
        f"the picture is still (mean frame change {facts.motion_energy * 100:.2f}%): no visible action for the sound to follow",
        "poor",
        1,
    )


def sync_reading(facts: ClipFacts) -> CellReading:
    """Sound onsets against abrupt visual events (within 40 ms); fit from the share of events met."""
    events = facts.visual_events_s
    if not events:
        return CellReading("no abrupt visual event to time sounds against", "unknown")
    n = len(events)
    hit = facts.events_within(MATCH_TIGHT_MS)
    landed = sum(any(abs(o - e) * 1000 <= MATCH_TIGHT_MS for e in events) for o in facts.audio_onsets_s)
    numbers = f"{hit} of {n} visual events have a sound onset within {MATCH_TIGHT_MS:.0f} ms, {landed} of {len(facts.audio_onsets_s)} onsets fall on one"
    sync = ("in sync", "partly out of sync", "out of sync")
    return _fitted(numbers + ": {}", measured_fit(hit / n, 0.2, 0.5), sync)


def motion_reading(facts: ClipFacts) -> CellReading:
    """Picture motion against loudness (best region's Pearson r; 0.35 partial, 0.6 good)."""
    r = facts.motion_audio_r
    if r is None:
        return CellReading("motion vs loudness not measurable", "unknown")
    how = ("follows", "loosely follows", "does not follow")
    return _fitted(f"motion {{}} loudness (r={r:.2f})", measured_fit(r, 0.35, 0.6), how)


def level_reading(facts: ClipFacts) -> CellReading:
    """Level, clipping and silence: a technical floor for audio quality."""
    if facts.loudness is None:
        return CellReading("no audio track", "poor", 0)
    clipped = (facts.clipping_share or 0.0) * 100
    silent = (facts.silence_share or 0.0) * 100
    text = f"level {facts.loudness:.0f} {facts.loudness_unit}, clipped {clipped:.1f}%, silent {silent:.0f}%"
    if clipped >= 0.5 or facts.loudness < -50:
        return CellReading(text + ": distorted or nearly inaudible", "poor", 2)
    return CellReading(text + ": clean", "good", 8)


def speech_reading(facts: ClipFacts) -> CellReading:
    """Whether the ASR found words, at a speaking pace (1.5-4 words/s natural, 1-5 plausible)."""
    if facts.transcript is None:
        return CellReading("speech not measured", "unknown")
    text = facts.transcript
    if not words(text):
        return CellReading("no words recognised", "poor", 1)
    shown = text if len(text) <= 70 else text[:67] + "..."
    wps = facts.words_per_second or 0.0
    fit = 9 if 1.5 <= wps <= 4.0 else 7 if 1.0 <= wps <= 5.0 else 3
    pace = ("natural pace", "plausible pace", "odd pace")
    return _fitted(f'heard "{shown}" ({wps:.1f} words/s, {{}})', fit, pace)


def line_similarity(transcript: str, caption: str) -> float | None:
    """How alike the heard text's letters are to the caption's quoted lines' (difflib ratio, 0-1).

    Example:
        >>> round(line_similarity("Let us aim to defend Son's own fate.", 'says "Let us paint the fence on Sunday."'), 2)
        0.63
    """
    quoted = quoted_lines(caption)
    if not quoted:
        return None
    heard = "".join(words(transcript))
    wanted = "".join(w for line in quoted for w in words(line))
    return difflib.SequenceMatcher(None, heard, wanted, autojunk=False).ratio()


def line_reading(facts: ClipFacts, caption: str) -> CellReading:
    """How much of the caption's quoted line the transcript contains: distinct words heard (0.3
    partial, 0.6 good) or, for a misheard line, its letters alike (0.55 partial, 0.8 good)."""
    if facts.transcript is None:
        return CellReading("speech not measured", "unknown")
    match = requested_words_heard(facts.transcript, caption)
    alike = line_similarity(facts.transcript, caption)
    if match is None or alike is None:
        return CellReading("the description quotes no line to check", "unknown")
    fit = max(
        measured_fit(match.share, PARTLY_SAID_SHARE, SAID_SHARE),
        measured_fit(alike, LINE_PARTLY_ALIKE, LINE_ALIKE),
    )
    numbers = (
        f"{match.heard} of {match.requested} requested words heard ({round(100 * match.share)}%), "
        f"heard line {round(100 * alike)}% alike in letters"
    )
    return _fitted(numbers + ": the requested line is {}", fit, ("said", "partly said", "NOT said"))


def music_reading(facts: ClipFacts) -> CellReading:
    """Tempo, beat steadiness and tonal share (0.4 partial, 0.6 good; an unsteady beat costs 2)."""
    if facts.tonal_share is None:
        return CellReading("no tone or beat found", "poor", 1)
    fit = measured_fit(facts.tonal_share, 0.4, TONAL_SHARE)
    parts = [f"tonal share {facts.tonal_share * 100:.0f}%"]
    if facts.tempo_bpm is not None:
        parts.append(f"tempo {facts.tempo_bpm:.0f} BPM")
    if facts.beat_cv is not None:
        steady = facts.beat_cv <= 0.1
        parts.append(f"beat spacing varies {facts.beat_cv * 100:.0f}%" + ("" if steady else " (unsteady)"))
        fit = fit if steady else max(0, fit - 2)
    return CellReading(", ".join(parts), fit_grade(fit), fit)


def tempo_reading(facts: ClipFacts, caption: str) -> CellReading:
    """Measured tempo against a tempo the caption names (half and double tempo count as a match;
    relative error 0.2 partial, 0.08 good), and whether the track is tonal enough to be a tune."""
    asked = _BPM.search(caption)
    if asked is None:
        return music_reading(facts)
    want = float(asked.group(1))
    tonal = facts.tonal_share
    if facts.tempo_bpm is None:
        if tonal is None or tonal < TONAL_SHARE:
            return CellReading(f"no steady beat found (asked {want:.0f} BPM)", "poor", 1)
        # Slow pads and held notes have no onsets to time: the tune is there, its tempo unverified.
        fit = min(6, measured_fit(tonal, 0.4, TONAL_SHARE))
        text = f"tonal share {tonal * 100:.0f}%: a tune is heard, but it has no beat to time (asked {want:.0f} BPM)"
        return CellReading(text, fit_grade(fit), fit)
    got = facts.tempo_bpm
    error = min(abs(got - want * k) / (want * k) for k in (0.5, 1.0, 2.0))
    fit = measured_fit(error, 0.2, 0.08)
    text = f"tempo {got:.0f} BPM vs asked {want:.0f} BPM (off by {error * 100:.0f}%)"
    if tonal is not None:
        # A beat alone is not music: hits or a voice at the asked pace must not pass for the tune.
        text += f", tonal share {tonal * 100:.0f}%"
        fit = min(fit, measured_fit(tonal, 0.2, 0.4))
    return _fitted(text + ": {}", fit, ("matches", "partly matches", "does not match"))


@dataclass(frozen=True)
class RequestedSound:
    """What the caption asks of its sound effects: a number of hits, a lasting sound, or neither."""

    hits: int | None
    """How many separate hits (``three times`` -> 3), None when no count is given."""
    kind: Literal["hits", "steady", "unknown"]


def requested_sound(caption: str) -> RequestedSound:
    """The sound the caption describes: counted hits, a lasting (ambient) sound, or unknown.

    A count (``three times``, ``twice``) means hits; else words of a lasting sound (rain, wind,
    waves) mean a steady sound; else words of hits (knock, bounce, thud) mean hits, uncounted.

    Example:
        >>> requested_sound("a hammer knocks on a wooden block three times")
        RequestedSound(hits=3, kind='hits')
        >>> requested_sound("A gusty wind howls off screen.")
        RequestedSound(hits=None, kind='steady')
    """
    counted = _TIMES.search(caption)
    if counted is not None:
        first = counted.group(1).lower().split()[0]
        n = _COUNT_WORDS.get(first) or int(first)
        return RequestedSound(n, "hits")
    if _STEADY_WORDS.search(caption):
        return RequestedSound(None, "steady")
    if _HIT_WORDS.search(caption):
        return RequestedSound(None, "hits")
    return RequestedSound(None, "unknown")


def events_reading(facts: ClipFacts, caption: str, *, on_screen: bool, alone: bool) -> CellReading:
    """The sound events the caption asks for against what is heard.

    Counted hits: on screen, how many of the requested hits have a sound onset within 40 ms of a
    visible impact (a third partial, two thirds good); else (or when better) the onset count
    against the request (each hit too many or too few costs 3). A lasting sound: the share of the
    clip where sound is heard (0.5 partial, 0.9 good). When the track carries this type ``alone``,
    a tonal track (a tune, a beep) is not hits or ambience and costs 4.
    """
    asked = requested_sound(caption)
    onsets = len(facts.audio_onsets_s)
    tonal = facts.tonal_share
    heard = 1.0 - (facts.silence_share or 0.0)
    parts: list[str] = []
    if asked.kind == "hits" and asked.hits:
        n = asked.hits
        fit = max(0, 10 - 3 * abs(onsets - n))
        parts.append(f"{onsets} sharp sound onsets for {n} requested hits")
        if on_screen and facts.visual_events_s:
            met = min(n, facts.events_within(MATCH_TIGHT_MS))
            parts.append(f"{met} of {n} land within {MATCH_TIGHT_MS:.0f} ms of a visible impact")
            fit = max(fit, measured_fit(met / n, 0.34, 0.67))
    elif asked.kind == "steady":
        fit = measured_fit(heard, 0.5, 0.9)
        parts.append(f"a lasting sound is asked for; sound is heard in {heard * 100:.0f}% of the clip")
    else:
        what = (
            "hits are asked for, uncounted"
            if asked.kind == "hits"
            else "the description names no countable sound"
        )
        return CellReading(
            f"{what}; {onsets} sharp sound onsets, sound heard in {heard * 100:.0f}% of the clip", "unknown"
        )
    if alone and tonal is not None:
        parts.append(f"tonal share {tonal * 100:.0f}%")
        if tonal >= TONAL_SHARE:
            parts[-1] += " (a tune or tone, not the described sound)"
            fit = max(0, fit - 4)
    verdict = (
        "the described sound is heard",
        "the described sound is partly heard",
        "the described sound is NOT heard",
    )
    return _fitted("; ".join(parts) + ": {}", fit, verdict)


def onset_reading(facts: ClipFacts) -> CellReading:
    n = len(facts.audio_onsets_s)
    return CellReading(f"{n} sharp sound onsets", "unknown")


def dynamics_reading(facts: ClipFacts) -> CellReading:
    if facts.loudness_range_db is None:
        return CellReading("no audio track", "poor", 0)
    spread = facts.loudness_range_db
    label = "lively" if spread >= 4 else ("some variation" if spread >= 2 else "flat")
    return CellReading(f"loudness moves {spread:.0f} dB ({label})", "unknown")


def cell_reading(
    facts: ClipFacts, cell: Cell, *, caption: str | None = None, tags: Sequence[str] = ()
) -> CellReading:
    """The measured facts that speak to ``cell`` for one clip, joined, with an overall grade and fit.

    ``caption`` is given in stage 2 only (prompt following and expressiveness compare against it).
    ``tags`` (the sample's active tags) say whether the type's source is on screen and whether it
    shares the track with other types; without them it counts as on screen and alone.
    """
    dim, kind = cell.dimension, cell.audio_type
    if dim in ("expressiveness", "prompt_following") and caption is None:
        raise ValueError(f"{cell} is judged with the caption")
    silent = silent_reading(facts)
    if silent is not None:
        return silent
    parsed = [parse_tag(t) for t in tags]
    on_screen = any(t.on_screen for t in parsed if t.audio_type == kind) if parsed else True
    alone = all(t.audio_type == kind for t in parsed)
    parts: list[CellReading]
    if dim == "av_coherence":
        parts = [motion_reading(facts)] if kind == "speech" else [sync_reading(facts), motion_reading(facts)]
        lead = parts[0] if parts[0].grade != "unknown" else parts[-1]
        still = still_reading(facts)
        if still is not None:
            parts, lead = [still, *parts], still
    elif dim == "audio_quality":
        extra = {"speech": speech_reading, "music": music_reading, "sound": onset_reading}[kind](facts)
        parts = [level_reading(facts), extra]
        # A faulty level decides; a clean one is a floor, and the type's own line decides above it.
        level = parts[0]
        lead = level if level.grade == "poor" or extra.fit is None else extra
    else:
        assert caption is not None
        if kind == "speech":
            content = line_reading(facts, caption)
        elif kind == "music":
            content = tempo_reading(facts, caption)
        else:
            content = events_reading(facts, caption, on_screen=on_screen, alone=alone)
        parts = [content, dynamics_reading(facts)] if dim == "expressiveness" else [content]
        lead = content
    return CellReading("; ".join(p.text for p in parts), lead.grade, lead.fit)
