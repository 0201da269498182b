"""A small PRISM-Bench sample written by code: one clip for every subset and valid tag combination.

29 clips (7 on-screen, 7 off-screen, 15 mixed combinations), each 3 s of 192 x 144 video at 15 fps
with a 24 kHz mono AAC track. Every tag has its own drawn layer and synthesized track:

- ``SOUND_A``: a ball bouncing on the floor, a stick hitting a drum or a hammer knocking on a block;
  each contact happens on a frame boundary and its synthesized impact starts on the same sample
  (the contact times are the line's ``visual_events``).
- ``SOUND_B``: rain, wind or surf made from filtered noise; nothing in the picture makes it.
- ``SPEECH_A``: an espeak-ng sentence and a drawn face whose mouth opens while the speech envelope
  of that frame is above a threshold.
- ``SPEECH_B``: an espeak-ng narration in another voice, with no speaker in the picture.
- ``MUSIC_A``: a short melody at a steady tempo whose beat is a whole number of frames, on a
  keyboard or a xylophone; the sounding key or bar lights up from its note's onset (the onsets are
  ``visual_events`` too).
- ``MUSIC_B``: a soft organ-like background melody; no instrument is drawn.

Captions describe the scene, the words spoken, the instrument and tempo and the events, in plain
words. The output is reproducible: the noise generators are seeded per clip, espeak-ng and the
drawing are deterministic, and :mod:`._media` encodes bit-exactly with one x264 thread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageDraw

from omnieval.benchmarks._sample_command import run_sample_command, sample_parser
from omnieval.benchmarks._sample_media import INK, WHITE, Pen, espeak_speech
from omnieval.benchmarks.prism._media import encode_clip
from omnieval.benchmarks.prism._record import MANIFEST_NAME, validate_prism
from omnieval.benchmarks.prism._tags import SUBSETS, TAGS, valid_tag_sets
from omnieval.data import refuse_foreign, replace_owned, write_manifest_records
from omnieval.errors import OmnievalError

FloatArray = npt.NDArray[np.float32]

#: Top-level entries the generator owns inside its output folder.
LAYOUT_ENTRIES = (MANIFEST_NAME, "videos", "README.md")

WIDTH, HEIGHT = 192, 144
FPS = 15
DURATION_S = 3.0
N_FRAMES = round(DURATION_S * FPS)
SR = 24000
SEED = 20260911
_SCALE = 2  # frames are drawn at twice the size, then downsampled (smooth edges)

#: Prefix of the ids of each subset (``on-01``, ``off-01``, ``mix-01``).
ID_PREFIX: dict[str, str] = {"on_screen": "on", "off_screen": "off", "mixed": "mix"}

Color = tuple[int, int, int]


def tag_sets_in_order(subset: str) -> list[tuple[str, ...]]:
    """The valid tag combinations of ``subset``: fewer tags first, then in :data:`TAGS` order.

    >>> tag_sets_in_order("on_screen")[:4]
    [('SPEECH_A',), ('MUSIC_A',), ('SOUND_A',), ('SPEECH_A', 'MUSIC_A')]
    """
    sets = [tuple(sorted(s, key=TAGS.index)) for s in valid_tag_sets(subset)]
    return sorted(sets, key=lambda s: (len(s), [TAGS.index(t) for t in s]))


# -- content tables --------------------------------------------------------------------------------

LINES_A: tuple[str, ...] = (
    "The kettle is finally boiling.",
    "I found the keys under the sofa.",
    "Let us paint the fence on Sunday.",
    "My brother plays the drums at night.",
    "The bus leaves at half past eight.",
    "Please close the window, it is cold.",
    "This map shows the way to the lake.",
)
LINES_B: tuple[str, ...] = (
    "It was a quiet evening in the little town.",
    "Nobody knew where the old road would lead.",
    "Every morning began with the same small song.",
    "The house had waited years for visitors.",
    "Later that day, the rain finally stopped.",
    "She remembered the summer by the sea.",
    "Far away, a train was crossing the valley.",
)
# Lines for clips where the visible speaker and the narrator both talk within 3 s.
SHORT_A: tuple[str, ...] = ("Look at this.", "Come over here.", "Is it ready?")
SHORT_B: tuple[str, ...] = ("He was not alone.", "The day was nearly over.", "She smiled at last.")


@dataclass(frozen=True)
class Voice:
    """An espeak-ng voice and how a caption calls it."""

    espeak: str
    pitch: int
    female: bool
    words: str


VOICES: tuple[Voice, ...] = (
    Voice("en-us+m3", 45, False, "a calm adult male voice"),
    Voice("en-us+f2", 60, True, "a bright adult female voice"),
    Voice("en-gb+m1", 40, False, "a deep male voice with a British accent"),
    Voice("en-us+f4", 55, True, "a soft female voice"),
)

#: Beats per minute whose beat lasts a whole number of frames at 15 fps (900 / frames per beat).
TEMPOS: tuple[int, ...] = (150, 100, 180, 90)

#: Melodies as semitone offsets from the root (C5 for on-screen, A3 for the background melody).
MELODIES: tuple[tuple[int, ...], ...] = (
    (0, 4, 7, 12, 7, 4, 0, 4, 7, 12, 7, 4),
    (0, 2, 4, 5, 7, 5, 4, 2, 0, 2, 4, 5),
    (7, 4, 0, 4, 7, 9, 7, 4, 2, 0, 2, 4),
    (0, 7, 5, 4, 2, 4, 0, 7, 5, 4, 2, 4),
)
_NOTE_NAMES = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")
_SCALE_STEPS = (0, 2, 4, 5, 7, 9, 11, 12)  # one octave of C major: the drawn keys and bars

IMPACT_FRAMES: tuple[tuple[int, ...], ...] = ((9, 21, 33), (8, 17, 26, 35), (11, 24, 37), (7, 19, 28, 39))
SOUND_KINDS: tuple[str, ...] = ("ball", "drum", "hammer")
AMBIENCES: tuple[str, ...] = ("rain", "wind", "surf")
SCENES: tuple[str, ...] = ("room", "park", "stage")

SCENE_WORDS = {
    "room": "In a living room with a beige wall and a wooden floor",
    "park": "In a sunny park with green grass, a tree and slowly drifting clouds",
    "stage": "On a small stage in front of a dark blue curtain",
}
SOUND_WORDS = {
    "ball": ("a red rubber ball drops and bounces on the floor", "bounce", "a dull, rubbery thud"),
    "drum": ("a wooden stick strikes a small drum", "hit", "a punchy drum beat"),
    "hammer": ("a hammer knocks on a wooden block", "knock", "a crisp wooden knock"),
}
AMBIENCE_WORDS = {
    "rain": "Steady rain patters somewhere outside the frame.",
    "wind": "A gusty wind howls off screen.",
    "surf": "Waves wash over a shore that cannot be seen.",
}
_COUNT_WORDS = {3: "three", 4: "four"}


@dataclass(frozen=True)
class ClipPlan:
    """Everything that decides one clip (pure data; :func:`render_clip` turns it into media).

    Attributes:
        id: Dataset id.
        subset: The subset.
        tags: Active tags in :data:`TAGS` order.
        ordinal: Position of the clip in the sample (0-based); picks the variations.
        scene: Background (``room``, ``park``, ``stage``).
        voice_a: Voice of the visible speaker (``SPEECH_A``).
        voice_b: Voice of the narrator (``SPEECH_B``).
        line_a: What the visible speaker says.
        line_b: What the narrator says.
        instrument: ``keyboard`` or ``xylophone`` (``MUSIC_A``).
        tempo_a: Beats per minute of the on-screen melody.
        melody_a: Semitones above C5 of the on-screen melody's notes.
        tempo_b: Beats per minute of the background melody (two beats per note).
        melody_b: Semitones above A3 of the background melody's notes.
        sound: ``ball``, ``drum`` or ``hammer`` (``SOUND_A``).
        impact_frames: Frames (0-based) at which the on-screen sound source makes contact.
        ambience: ``rain``, ``wind`` or ``surf`` (``SOUND_B``).
    """

    id: str
    subset: str
    tags: tuple[str, ...]
    ordinal: int
    scene: str
    voice_a: Voice
    voice_b: Voice
    line_a: str
    line_b: str
    instrument: str
    tempo_a: int
    melody_a: tuple[int, ...]
    tempo_b: int
    melody_b: tuple[int, ...]
    sound: str
    impact_frames: tuple[int, ...]
    ambience: str

    def has(self, tag: str) -> bool:
        """True when ``tag`` is active."""
        return tag in self.tags

    @property
    def both_speak(self) -> bool:
        """A visible speaker and a narrator share the clip (short lines, one after the other)."""
        return self.has("SPEECH_A") and self.has("SPEECH_B")

    @property
    def note_frames_a(self) -> tuple[int, ...]:
        """Frames at which the on-screen melody's notes start (one per beat from frame 3)."""
        beat = 900 // self.tempo_a
        return tuple(f for f in range(3, N_FRAMES - 3, beat))[: len(self.melody_a)]


def build_plans() -> list[ClipPlan]:
    """One plan per (subset, valid tag set), subsets in :data:`SUBSETS` order."""
    plans: list[ClipPlan] = []
    ordinal = 0
    for subset in SUBSETS:
        for n, tags in enumerate(tag_sets_in_order(subset), start=1):
            k = ordinal
            voice_a = VOICES[k % len(VOICES)]
            # The narrator's voice always differs from the speaker's (other gender when both speak).
            voice_b = VOICES[(k + 1) % len(VOICES)]
            both = "SPEECH_A" in tags and "SPEECH_B" in tags
            scene = "stage" if "MUSIC_A" in tags and k % 2 == 0 else SCENES[k % len(SCENES)]
            plans.append(
                ClipPlan(
                    id=f"{ID_PREFIX[subset]}-{n:02d}",
                    subset=subset,
                    tags=tags,
                    ordinal=k,
                    scene=scene,
                    voice_a=voice_a,
                    voice_b=voice_b,
                    line_a=(SHORT_A if both else LINES_A)[k % (len(SHORT_A) if both else len(LINES_A))],
                    line_b=(SHORT_B if both else LINES_B)[k % (len(SHORT_B) if both else len(LINES_B))],
                    instrument=("keyboard", "xylophone")[k % 2],
                    tempo_a=TEMPOS[k % len(TEMPOS)],
                    melody_a=MELODIES[k % len(MELODIES)],
                    tempo_b=(90, 100, 120)[k % 3],
                    melody_b=MELODIES[(k + 2) % len(MELODIES)][:6],
                    sound=SOUND_KINDS[k % len(SOUND_KINDS)],
                    impact_frames=IMPACT_FRAMES[k % len(IMPACT_FRAMES)],
                    ambience=AMBIENCES[k % len(AMBIENCES)],
                )
            )
            ordinal += 1
    return plans


# -- audio -------------------------------------------------------------------------------------------


def _espeak(text: str, voice: Voice, rate: int) -> FloatArray:
    """espeak-ng speech at :data:`SR`, leading and trailing silence trimmed."""
    out = espeak_speech(text, voice=voice.espeak, rate_wpm=rate, pitch=voice.pitch, sr=SR)
    loud = np.flatnonzero(np.abs(out) > 0.02 * float(np.max(np.abs(out))))
    return out[loud[0] : loud[-1] + 1] if loud.size else out


def _speech(text: str, voice: Voice, longest_s: float) -> FloatArray:
    """Speech no longer than ``longest_s``: espeak-ng's rate is raised until it fits."""
    for rate in range(165, 320, 15):
        samples = _espeak(text, voice, rate)
        if samples.shape[0] <= longest_s * SR:
            return samples
    raise OmnievalError(f"sample generator: {text!r} does not fit in {longest_s:g} s")


def _place(track: FloatArray, samples: FloatArray, start_s: float) -> None:
    start = round(start_s * SR)
    end = min(track.shape[0], start + samples.shape[0])
    track[start:end] += samples[: end - start]


def _note(freq: float, length_s: float, kind: str) -> FloatArray:
    """One synthesized note (float32, peak about 1)."""
    t = np.arange(int(length_s * SR)) / SR
    if kind == "keyboard":
        partials: list[tuple[float, float]] = [(float(k), 1.0 / k) for k in range(1, 7)]
        env = np.exp(-3.5 * t)
    elif kind == "xylophone":
        partials = [(1.0, 1.0), (3.93, 0.35), (9.2, 0.1)]
        env = np.exp(-9.0 * t)
    else:  # organ-like pad: slow attack, sustained, released at the end
        partials = [(1.0, 1.0), (2.0, 0.5), (3.0, 0.25), (4.0, 0.12)]
        env = np.minimum(1.0, t / 0.08) * np.minimum(1.0, (length_s - t) / 0.1).clip(0)
    wave = sum(a * np.sin(2 * np.pi * freq * k * t) for k, a in partials)
    attack = np.minimum(1.0, t / 0.004)
    out = np.asarray(wave * env * attack, dtype=np.float64)
    return (out / max(float(np.max(np.abs(out))), 1e-9)).astype(np.float32)


def _freq(semitones_above: int, root_midi: int) -> float:
    return float(440.0 * 2.0 ** ((root_midi + semitones_above - 69) / 12))


def _name(semitones_above: int, root_midi: int) -> str:
    midi = root_midi + semitones_above
    return f"{_NOTE_NAMES[midi % 12]}{midi // 12 - 1}"


def _impact(kind: str, rng: np.random.Generator) -> FloatArray:
    """One impact sound, 0.35 s long, starting on its first sample."""
    t = np.arange(int(0.35 * SR)) / SR
    noise = rng.standard_normal(t.shape[0])
    if kind == "ball":
        body = np.sin(2 * np.pi * (95 * t + 60 * (1 - np.exp(-t / 0.02)) * 0.02)) * np.exp(-22 * t)
        out = body + 0.25 * noise * np.exp(-160 * t)
    elif kind == "drum":
        sweep = 120 * t + 60 * 0.05 * (1 - np.exp(-t / 0.05))  # pitch falls from 180 to 120 Hz
        out = 0.8 * np.sin(2 * np.pi * sweep) * np.exp(-14 * t) + 0.6 * noise * np.exp(-30 * t)
    else:  # hammer on wood: two short modes and a click
        modes = np.sin(2 * np.pi * 870 * t) + 0.6 * np.sin(2 * np.pi * 1530 * t)
        out = modes * np.exp(-45 * t) + 0.5 * noise * np.exp(-300 * t)
    out[0] = 0.0
    return (out / float(np.max(np.abs(out)))).astype(np.float32)


def _ambience(kind: str, n: int, rng: np.random.Generator) -> FloatArray:
    """Filtered-noise ambience, ``n`` samples, unit RMS."""
    from scipy.signal import butter, sosfilt

    white = rng.standard_normal(n + SR // 2)
    t = np.arange(n) / SR
    if kind == "rain":
        hiss = sosfilt(butter(4, [1200, 7000], "bandpass", fs=SR, output="sos"), white)[-n:]
        drops = np.zeros(n)
        for pos in rng.integers(0, n, size=int(45 * n / SR)):
            length = min(n - pos, 240)
            drops[pos : pos + length] += rng.uniform(0.5, 2.0) * np.exp(-np.arange(length) / 30.0)
        drops = sosfilt(butter(2, 2500, "highpass", fs=SR, output="sos"), drops)
        out = hiss + 1.5 * drops * float(np.std(hiss))
    elif kind == "wind":
        low = sosfilt(butter(2, [150, 700], "bandpass", fs=SR, output="sos"), white)[-n:]
        out = low * (0.55 + 0.45 * np.sin(2 * np.pi * 0.45 * t + 1.0))
    else:  # surf: broadband wash swelling once a wave
        wash = sosfilt(butter(2, 1500, "lowpass", fs=SR, output="sos"), white)[-n:]
        out = wash * (0.25 + 0.75 * np.sin(np.pi * t / 1.5) ** 2)
    scaled: FloatArray = (out / max(float(np.sqrt(np.mean(out**2))), 1e-9)).astype(np.float32)
    return scaled


def _rms(x: FloatArray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


@dataclass
class _Tracks:
    """The clip's tracks before mixing, and what the picture needs from them."""

    n: int = int(DURATION_S * SR)
    parts: dict[str, FloatArray] = field(default_factory=dict)
    #: Start and end seconds of each speech tag's line.
    spans: dict[str, tuple[float, float]] = field(default_factory=dict)

    def empty(self) -> FloatArray:
        return np.zeros(self.n, dtype=np.float32)


#: Target RMS of each tag's track in the mix (impacts are set by peak instead).
LEVELS: dict[str, float] = {
    "SPEECH_A": 0.12,
    "SPEECH_B": 0.12,
    "MUSIC_A": 0.09,
    "MUSIC_B": 0.045,
    "SOUND_B": 0.035,
}
IMPACT_PEAK = 0.6


def synthesize_tracks(plan: ClipPlan) -> _Tracks:
    """Each active tag's track, :data:`SR` Hz, :data:`DURATION_S` long, at its mix level."""
    rng = np.random.default_rng(SEED + plan.ordinal)
    tracks = _Tracks()
    if plan.both_speak:
        a = _speech(plan.line_a, plan.voice_a, 1.15)
        b = _speech(plan.line_b, plan.voice_b, 1.3)
        start_a, start_b = 0.2, 0.2 + a.shape[0] / SR + 0.25
    else:
        a = _speech(plan.line_a, plan.voice_a, 2.5) if plan.has("SPEECH_A") else np.zeros(0, np.float32)
        b = _speech(plan.line_b, plan.voice_b, 2.5) if plan.has("SPEECH_B") else np.zeros(0, np.float32)
        start_a = start_b = 0.3
    for tag, samples, start in (("SPEECH_A", a, start_a), ("SPEECH_B", b, start_b)):
        if plan.has(tag):
            track = tracks.empty()
            _place(track, samples, start)
            tracks.parts[tag] = track
            tracks.spans[tag] = (start, start + samples.shape[0] / SR)
    if plan.has("MUSIC_A"):
        track = tracks.empty()
        beat_s = 60.0 / plan.tempo_a
        for frame, step in zip(plan.note_frames_a, plan.melody_a, strict=False):
            _place(track, _note(_freq(step, 72), beat_s * 1.4, plan.instrument), frame / FPS)
        tracks.parts["MUSIC_A"] = track
    if plan.has("MUSIC_B"):
        track = tracks.empty()
        note_s = 2 * 60.0 / plan.tempo_b
        for i, step in enumerate(plan.melody_b):
            if 0.1 + i * note_s < DURATION_S:
                _place(track, _note(_freq(step, 57), note_s, "pad"), 0.1 + i * note_s)
        tracks.parts["MUSIC_B"] = track
    if plan.has("SOUND_A"):
        track = tracks.empty()
        for frame in plan.impact_frames:
            _place(track, _impact(plan.sound, rng), frame / FPS)
        tracks.parts["SOUND_A"] = track * np.float32(IMPACT_PEAK / float(np.max(np.abs(track))))
    if plan.has("SOUND_B"):
        tracks.parts["SOUND_B"] = _ambience(plan.ambience, tracks.n, rng)
    for tag, level in LEVELS.items():
        if tag in tracks.parts:
            part = tracks.parts[tag]
            # Ambience alone carries the clip: twice its background level.
            boost = 2.0 if tag == "SOUND_B" and len(plan.tags) == 1 else 1.0
            tracks.parts[tag] = (part * np.float32(boost * level / max(_rms(part), 1e-9))).astype(np.float32)
    return tracks


def mix(tracks: _Tracks) -> FloatArray:
    """Sum the tracks; scale down to a 0.9 peak only when the sum would exceed it (no clipping)."""
    total: FloatArray = np.sum([tracks.parts[t] for t in TAGS if t in tracks.parts], axis=0).astype(
        np.float32
    )
    peak = float(np.max(np.abs(total)))
    if peak > 0.9:
        total *= np.float32(0.9 / peak)
    fade = int(0.01 * SR)  # 10 ms fades: no click at the clip's edges
    total[:fade] *= np.linspace(0, 1, fade, dtype=np.float32)
    total[-fade:] *= np.linspace(1, 0, fade, dtype=np.float32)
    return total


def mouth_openness(speech: FloatArray, threshold: float = 0.15) -> list[float]:
    """Per frame, how far the drawn mouth opens (0-1) given the visible speaker's track.

    The RMS of the samples within each frame's span is compared with the track's loudest frame:
    below ``threshold`` of it the mouth is shut, above it opens in proportion.
    """
    hop = SR // FPS
    rms = np.array([_rms(speech[i * hop : (i + 1) * hop]) for i in range(N_FRAMES)])
    top = float(rms.max()) or 1.0
    rel = rms / top
    return [0.0 if r < threshold else float(min(1.0, 0.3 + r)) for r in rel]


# -- drawing -----------------------------------------------------------------------------------------

SKIN: tuple[Color, ...] = ((240, 200, 170), (205, 160, 120), (150, 100, 70))
W2, H2 = WIDTH * _SCALE, HEIGHT * _SCALE
FLOOR_Y = int(H2 * 0.8)


def _background(pen: Pen, scene: str, frame: int) -> None:
    if scene == "room":
        pen.rect((0, 0, W2, FLOOR_Y), (232, 220, 196))
        pen.rect((0, FLOOR_Y, W2, H2), (168, 124, 86))
        for x in range(0, W2, 48):
            pen.line([(x, FLOOR_Y), (x - 30, H2)], (150, 108, 74), 2)
        pen.rect((W2 - 92, 30, W2 - 34, 74), (120, 150, 120), (110, 80, 50), 4)
    elif scene == "park":
        pen.rect((0, 0, W2, FLOOR_Y), (170, 210, 240))
        pen.rect((0, FLOOR_Y, W2, H2), (110, 175, 90))
        for base, y in ((40, 40), (230, 70)):
            drift = (base + frame * 1.2) % (W2 + 80) - 40.0  # clouds drift slowly to the right
            for dx, r in ((0, 16), (18, 20), (38, 15)):
                pen.circle(drift + dx, y, r, WHITE)
        pen.rect((18, FLOOR_Y - 70, 28, FLOOR_Y), (110, 80, 50))
        pen.ellipse(24, FLOOR_Y - 88, 24, 32, (60, 130, 60))
    else:
        pen.rect((0, 0, W2, FLOOR_Y), (30, 40, 95))
        for x in range(0, W2, 24):
            pen.line([(x + 12, 0), (x + 12, FLOOR_Y)], (24, 32, 80), 6)
        pen.rect((0, FLOOR_Y, W2, H2), (90, 60, 45))


def _speaker(pen: Pen, box: tuple[float, float], voice: Voice, openness: float, k: int) -> None:
    x0, x1 = box
    cx = (x0 + x1) / 2
    r = min((x1 - x0) * 0.22, H2 * 0.14)
    cy = FLOOR_Y - r * 3.4
    clothes = (190, 70, 120) if voice.female else (60, 90, 150)
    body = [
        (cx - r * 0.9, cy + r * 1.1),
        (cx + r * 0.9, cy + r * 1.1),
        (cx + r * 1.3, FLOOR_Y),
        (cx - r * 1.3, FLOOR_Y),
    ]
    pen.poly(body, clothes)
    hair = (90, 55, 30) if voice.female else (45, 35, 30)
    if voice.female:
        pen.rect((cx - r * 1.1, cy - r * 0.3, cx + r * 1.1, cy + r * 1.3), hair)
    pen.circle(cx, cy, r, SKIN[k % len(SKIN)])
    pen.cap((cx - r * 1.05, cy - r * 1.1, cx + r * 1.05, cy + r * 0.35), hair)
    for side in (-1, 1):
        pen.circle(cx + side * r * 0.38, cy, 3, INK)
    mouth_w, mouth_y = r * 0.45, cy + r * 0.5
    if openness <= 0:
        pen.line([(cx - mouth_w / 2, mouth_y), (cx + mouth_w / 2, mouth_y)], INK, 3)
    else:
        pen.ellipse(cx, mouth_y, mouth_w / 2, r * 0.38 * openness / 2, (120, 30, 40), INK, 2)


#: The xylophone's bars, lowest note first.
_BAR_COLORS: tuple[Color, ...] = (
    (220, 60, 60),
    (235, 140, 40),
    (230, 210, 50),
    (80, 180, 80),
    (60, 160, 220),
    (70, 90, 200),
    (150, 80, 190),
    (220, 80, 150),
)


def _instrument(pen: Pen, box: tuple[float, float], plan: ClipPlan, lit: int | None, hit: bool) -> None:
    """Eight keys or bars (C major from the root); ``lit`` is the index of the sounding one."""
    x0, x1 = box[0] + 8, box[1] - 8
    n = len(_SCALE_STEPS)
    step = (x1 - x0) / n
    if plan.instrument == "keyboard":
        top = FLOOR_Y - 58
        pen.rect((x0 - 4, top - 10, x1 + 4, top + 50), (40, 40, 45))
        pen.rect((x0 + 6, FLOOR_Y - 8, x0 + 12, FLOOR_Y), (40, 40, 45))
        pen.rect((x1 - 12, FLOOR_Y - 8, x1 - 6, FLOOR_Y), (40, 40, 45))
        for i in range(n):
            key: Color = (255, 200, 60) if i == lit else WHITE
            pen.rect((x0 + i * step + 1, top, x0 + (i + 1) * step - 1, top + 44), key, INK, 1)
        return
    pen.rect((x0 - 4, FLOOR_Y - 30, x1 + 4, FLOOR_Y - 24), (110, 80, 50))
    for i, c in enumerate(_BAR_COLORS):
        h = 60 - i * 4
        fill: Color = (min(255, c[0] + 90), min(255, c[1] + 90), min(255, c[2] + 90)) if i == lit else c
        bx = x0 + i * step
        pen.rect((bx + 2, FLOOR_Y - 27 - h, bx + step - 2, FLOOR_Y - 27), fill, INK, 1)
        if i == lit:
            my = FLOOR_Y - 27 - h - (0 if hit else 10)
            pen.line([(bx + step / 2, my), (bx + step / 2 + 22, my - 30)], (110, 80, 50), 3)
            pen.circle(bx + step / 2, my, 5, (200, 40, 40))


def _sound_source(pen: Pen, box: tuple[float, float], plan: ClipPlan, frame: int) -> None:
    x0, x1 = box
    cx = (x0 + x1) / 2
    impacts = plan.impact_frames
    at_impact = frame in impacts
    if plan.sound == "ball":
        r = 14
        top = 40.0
        if frame <= impacts[0]:
            u = frame / impacts[0]
            y = top + (FLOOR_Y - r - top) * u * u
        elif frame >= impacts[-1]:
            y = FLOOR_Y - r
        else:
            a = max(i for i in impacts if i <= frame)
            b = min(i for i in impacts if i > frame)
            u = (frame - a) / (b - a)
            height = (FLOOR_Y - r - top) * (b - a) / 14.0
            y = FLOOR_Y - r - height * 4 * u * (1 - u)
        squash = 4 if at_impact else 0
        pen.d.ellipse(
            (cx - r - squash, y - r + squash, cx + r + squash, y + r),
            fill=(210, 40, 40),
            outline=INK,
            width=2,
        )
        if at_impact:
            for dx in (-24, -16, 16, 24):
                pen.line([(cx + dx, FLOOR_Y - 2), (cx + dx * 1.4, FLOOR_Y - 10)], INK, 2)
        return
    if plan.sound == "drum":
        dw, top = 34, FLOOR_Y - 52
        pen.rect((cx - dw, top, cx + dw, FLOOR_Y - 8), (200, 50, 50), INK, 2)
        head = (255, 250, 210) if at_impact else (235, 225, 200)
        pen.ellipse(cx, top, dw, 9, head, INK, 2)
    else:
        bw, top = 30, FLOOR_Y - 26
        pen.rect((cx - bw, top, cx + bw, FLOOR_Y), (180, 130, 80), INK, 2)
    # The striker is lowest on the impact frame, lifted in between (it rises after each contact).
    since = min((frame - i for i in impacts if i <= frame), default=99)
    until = min((i - frame for i in impacts if i >= frame), default=99)
    lift = 0.0 if at_impact else min(1.0, min(since, until) / 3.0)
    tip_y = top - 4 - 44 * lift
    if plan.sound == "drum":
        pen.line([(cx + 10, tip_y), (cx + 52, tip_y - 34 + 20 * lift)], (120, 80, 40), 5)
        pen.circle(cx + 10, tip_y, 5, (120, 80, 40))
    else:
        pen.line([(cx + 6, tip_y - 6), (cx + 50, tip_y - 40 + 20 * lift)], (120, 80, 40), 6)
        pen.rect((cx - 12, tip_y - 14, cx + 18, tip_y), (90, 90, 100), INK, 1)
    if at_impact:
        for dx, dy in ((-30, -10), (30, -10), (-22, -24), (22, -24)):
            pen.line([(cx + dx * 0.6, top + dy * 0.6), (cx + dx, top + dy)], (250, 220, 60), 3)


def draw_frames(plan: ClipPlan, tracks: _Tracks) -> npt.NDArray[np.uint8]:
    """All frames of a clip, shape ``(N_FRAMES, HEIGHT, WIDTH, 3)``."""
    layers = [t for t in ("SPEECH_A", "MUSIC_A", "SOUND_A") if plan.has(t)]
    boxes = {tag: (i * W2 / len(layers), (i + 1) * W2 / len(layers)) for i, tag in enumerate(layers)}
    mouth = mouth_openness(tracks.parts["SPEECH_A"]) if plan.has("SPEECH_A") else []
    note_frames = plan.note_frames_a
    beat = 900 // plan.tempo_a
    keys = [_SCALE_STEPS.index(s) if s in _SCALE_STEPS else 0 for s in plan.melody_a]
    out = np.empty((N_FRAMES, HEIGHT, WIDTH, 3), dtype=np.uint8)
    for frame in range(N_FRAMES):
        img = Image.new("RGB", (W2, H2))
        pen = Pen(ImageDraw.Draw(img))
        _background(pen, plan.scene, frame)
        if "SPEECH_A" in boxes:
            _speaker(pen, boxes["SPEECH_A"], plan.voice_a, mouth[frame], plan.ordinal)
        if "MUSIC_A" in boxes:
            sounding = [i for i, f in enumerate(note_frames) if f <= frame < f + max(2, beat * 2 // 3)]
            lit = keys[sounding[-1]] if sounding else None
            _instrument(pen, boxes["MUSIC_A"], plan, lit, frame in note_frames)
        if "SOUND_A" in boxes:
            _sound_source(pen, boxes["SOUND_A"], plan, frame)
        out[frame] = np.asarray(img.resize((WIDTH, HEIGHT), Image.Resampling.LANCZOS))
    return out


# -- captions and manifest records -------------------------------------------------------------------


def visual_events(plan: ClipPlan) -> list[float]:
    """Seconds of each drawn on-screen sound event (impacts and note onsets), ascending, unique."""
    frames: set[int] = set()
    if plan.has("SOUND_A"):
        frames.update(plan.impact_frames)
    if plan.has("MUSIC_A"):
        frames.update(plan.note_frames_a)
    return [round(f / FPS, 4) for f in sorted(frames)]


def caption(plan: ClipPlan) -> str:
    """The clip's text prompt: the scene, then each on-screen source, then what is heard off screen."""
    on: list[str] = []
    if plan.has("SPEECH_A"):
        who = "a woman with long brown hair" if plan.voice_a.female else "a man with short dark hair"
        on.append(f'{who} faces the camera and says "{plan.line_a}" in {plan.voice_a.words}')
    if plan.has("MUSIC_A"):
        notes = len(plan.note_frames_a)
        if plan.instrument == "keyboard":
            on.append(
                f"a small electronic keyboard plays a bright {notes}-note melody in C major at "
                f"{plan.tempo_a} beats per minute, each key lighting up as it sounds"
            )
        else:
            on.append(
                f"a mallet strikes a rainbow-coloured xylophone note by note, a {notes}-note tune in "
                f"C major at a steady {plan.tempo_a} beats per minute"
            )
    if plan.has("SOUND_A"):
        what, event, sound = SOUND_WORDS[plan.sound]
        count = _COUNT_WORDS[len(plan.impact_frames)]
        on.append(f"{what} {count} times, each {event} heard as {sound}")
    off: list[str] = []
    if plan.has("SPEECH_B"):
        who = "female" if plan.voice_b.female else "male"
        off.append(f'An unseen {who} narrator says "{plan.line_b}"')
    if plan.has("MUSIC_B"):
        off.append(
            f"Soft organ-like background music plays a slow melody at {plan.tempo_b} beats per minute; "
            "no instrument is visible"
        )
    if plan.has("SOUND_B"):
        off.append(AMBIENCE_WORDS[plan.ambience].rstrip("."))
    scene = SCENE_WORDS[plan.scene]
    if on:
        joined = on[0] if len(on) == 1 else ", ".join(on[:-1]) + ", and " + on[-1]
        head = f"{scene}, {joined}."
    else:
        head = f"{scene}, nothing in view makes a sound."
    tail = " ".join(s if s.endswith(('."', '?"', '!"')) else f"{s}." for s in off)
    return f"{head} {tail}".strip()


def speaker(plan: ClipPlan) -> str | None:
    """Who speaks, with the espeak-ng voice (None without speech)."""
    voices = (("SPEECH_A", "on screen", plan.voice_a), ("SPEECH_B", "narrator", plan.voice_b))
    parts = [
        f"{who}: {'woman' if v.female else 'man'} (espeak-ng {v.espeak})"
        for tag, who, v in voices
        if plan.has(tag)
    ]
    return "; ".join(parts) or None


def notes(plan: ClipPlan, tracks: _Tracks) -> str:
    """How the clip was made: exact notes, tempi, event kinds and speech spans."""
    parts = [f"scene {plan.scene}"]
    parts += [f"{tag} {start:.2f}-{end:.2f} s" for tag, (start, end) in tracks.spans.items()]
    if plan.has("MUSIC_A"):
        names = " ".join(_name(s, 72) for s in plan.melody_a[: len(plan.note_frames_a)])
        parts.append(f"MUSIC_A {plan.instrument} {plan.tempo_a} BPM: {names}")
    if plan.has("MUSIC_B"):
        parts.append(
            f"MUSIC_B organ pad, half notes at {plan.tempo_b} BPM: "
            + " ".join(_name(s, 57) for s in plan.melody_b)
        )
    if plan.has("SOUND_A"):
        times = ", ".join(f"{f / FPS:.3f}" for f in plan.impact_frames)
        parts.append(f"SOUND_A {plan.sound} impacts at {times} s")
    if plan.has("SOUND_B"):
        parts.append(f"SOUND_B {plan.ambience} (filtered noise)")
    return "; ".join(parts)


def video_path(plan: ClipPlan) -> str:
    """The clip's path relative to the dataset folder."""
    return f"videos/{plan.id}.mp4"


def render_clip(plan: ClipPlan, out: Path) -> dict[str, Any]:
    """Synthesize, draw and encode one clip at ``out``; return its manifest record."""
    tracks = synthesize_tracks(plan)
    audio = mix(tracks)
    frames = draw_frames(plan, tracks)
    encode_clip(frames, FPS, audio, SR, out)
    record: dict[str, Any] = {
        "id": plan.id,
        "subset": plan.subset,
        "active_tags": list(plan.tags),
        "caption": caption(plan),
        "reference_video": video_path(plan),
    }
    events = visual_events(plan)
    if events:
        record["visual_events"] = events
    who = speaker(plan)
    if who:
        record["speaker"] = who
    record["notes"] = notes(plan, tracks)
    return record


@dataclass(frozen=True)
class PrismSampleSummary:
    """What :func:`write_prism_sample` wrote: where, how many clips per subset, total bytes."""

    root: Path
    n_instances: int
    counts: dict[str, int]
    size_bytes: int


_README = """# PRISM-Bench sample (made by omnieval)

{n} clips, one per subset and valid tag combination ({counts}), written by
`omnieval make-sample prism data/prism-sample`. Each clip is {duration:g} s of
{width}x{height} H.264 video at {fps} fps with a {sr} Hz mono AAC track, drawn with PIL and
synthesized with numpy and espeak-ng. `manifest.jsonl` follows FORMATS.md section 6; see
docs/prism.md for the fields. Regenerating gives the same bytes.
"""


def write_prism_sample(
    out: Path, *, ids: Sequence[str] | None = None, validate: bool = True
) -> PrismSampleSummary:
    """Write the sample into ``out`` (replacing an earlier sample there).

    Args:
        out: Target folder; if it exists it may only contain what this function writes.
        ids: Write only these clips (in sample order; tests use a few); all when None.
        validate: Check the written folder with :func:`~._record.validate_prism` before it
            replaces ``out``.

    Raises:
        OmnievalError: ``out`` holds foreign files, an id is unknown, or the result fails validation.
        omnieval.backends.tts.SynthesisError: espeak-ng is missing or failed.
        omnieval.benchmarks.prism._media.MediaError: ffmpeg is missing or failed.
    """
    out = Path(out)
    refuse_foreign(out, LAYOUT_ENTRIES)
    plans = build_plans()
    if ids is not None:
        known = {p.id for p in plans}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise OmnievalError(f"unknown sample id(s): {', '.join(unknown)}")
        plans = [p for p in plans if p.id in set(ids)]
    check = (lambda folder: validate_prism(folder).problems) if validate else None
    with replace_owned(out, LAYOUT_ENTRIES, validate=check) as tmp:
        records = [render_clip(plan, tmp / video_path(plan)) for plan in plans]
        write_manifest_records(tmp, records)
        counts = {s: sum(p.subset == s for p in plans) for s in SUBSETS}
        readme = _README.format(
            n=len(plans),
            counts=", ".join(f"{n} {s}" for s, n in counts.items()),
            duration=DURATION_S,
            width=WIDTH,
            height=HEIGHT,
            fps=FPS,
            sr=SR,
        )
        (tmp / "README.md").write_text(readme, encoding="utf-8")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return PrismSampleSummary(out, len(plans), counts, size)


def sample_main(argv: Sequence[str], prog: str) -> int:
    """Parse arguments, write the sample, print what was written; 0 on success, 2 on bad input."""

    description = "Write the PRISM-Bench sample dataset (manifest.jsonl, videos/)."
    parser = sample_parser(prog, description, "data/prism-sample")
    parser.add_argument("--ids", nargs="+", default=None, help="write only these clips (e.g. on-01 mix-03)")
    args = parser.parse_args(argv)
    start = time.perf_counter()

    def report(summary: PrismSampleSummary) -> int:
        seconds = time.perf_counter() - start
        print(
            f"wrote {summary.n_instances} clips to {summary.root} ({summary.size_bytes / 1e6:.2f} MB, {seconds:.1f} s)"
        )
        for subset, n in summary.counts.items():
            print(f"  {subset}: {n}")
        return 0

    return run_sample_command(lambda: write_prism_sample(args.out, ids=args.ids), report)
