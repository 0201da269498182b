"""A small OmniACBench sample written by code: every feature and every target value, CPU-sized.

Each instance follows the paper's construction (section 3.2) at toy scale: a neutral script (the
text alone does not reveal the target), a spoken instruction that names the acoustic dimension but
not its value (paraphrased per instance from a few templates, synthesized with espeak-ng), and a
picture drawn with PIL whose scene implies the target value, plus the keywords describing it.
Pronunciation instances use heteronyms from :mod:`omnieval.benchmarks.acbench._heteronyms`: both
readings of each word share one sentence and only the picture tells them apart.

The output is reproducible: pictures are drawn from fixed data (no randomness), PNGs are written
without ancillary chunks at a fixed compression level, espeak-ng output is deterministic, and the
manifest is written with a fixed key order.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from omnieval.benchmarks._sample_command import run_sample_command, sample_parser
from omnieval.benchmarks._sample_media import INK, WHITE, Box, Pen, resample_wav, save_png
from omnieval.benchmarks.acbench._heteronyms import HETERONYMS, Heteronym
from omnieval.benchmarks.acbench._record import (
    FEATURES,
    MANIFEST_NAME,
    PRONUNCIATION,
    REQUIRED_FIELDS,
    validate_acbench,
)
from omnieval.data import refuse_foreign, replace_owned, write_manifest_records
from omnieval.errors import OmnievalError

#: Top-level entries the generator owns inside its output folder.
LAYOUT_ENTRIES = (MANIFEST_NAME, "instructions", "images", "README.md")

#: Side of the written pictures in pixels (drawn at twice the size, then downsampled).
IMAGE_SIZE = 256
_CANVAS = 512

#: Heteronyms used by the sample (both readings of each become an instance).
SAMPLE_HETERONYMS: tuple[str, ...] = ("lead", "tear", "bass", "bow")

# Instruction templates per feature: each names the acoustic dimension to control, never its value.
INSTRUCTIONS: dict[str, tuple[str, ...]] = {
    "speech_rate": (
        "Read the line below at the pace this situation calls for.",
        "Look at the picture, pick a reading speed that suits it, and read the script.",
        "Say the following sentence with a tempo that fits what is happening in the image.",
    ),
    "phonation": (
        "Read this line the way you would speak in the place shown in the picture.",
        "Think about where the picture was taken and use a voice that suits that place as you read.",
        "Deliver the script with the kind of voice the setting in the image calls for.",
    ),
    "pronunciation": (
        "Read the sentence aloud, pronouncing each word with the meaning the picture points to.",
        "Let the picture tell you which sense of the words is meant, and read the line accordingly.",
        "Say this sentence so that its words sound the way the scene in the image suggests.",
    ),
    "emotion": (
        "Read the script with the feeling shown on the face in the picture.",
        "Match your tone to the mood of the person in the image as you read this line.",
        "Let the expression in the picture colour the way you say the following sentence.",
    ),
    "accent": (
        "Read this line with the English accent of the country the picture shows.",
        "Look at where the picture is set and speak the script with that place's accent.",
        "Say the sentence the way a local of the pictured country would say it.",
    ),
    "timbre": (
        "Read the script in a voice like that of the person in the picture.",
        "Speak this line as if you were the person shown in the image.",
        "Take on the voice of the pictured speaker, age and all, and read the line.",
    ),
}

# Neutral scripts: no emotion, place, age or gender cue, and nothing about pace or loudness.
SCRIPTS: tuple[str, ...] = (
    "The next train leaves from platform four.",
    "Please put the folders on the second shelf.",
    "The meeting has moved to Thursday afternoon.",
    "Turn left at the corner and walk two blocks.",
    "The package should arrive before noon.",
    "Remember to bring the blue notebook tomorrow.",
    "The report is on the table by the window.",
    "We will need three more chairs for the room.",
    "The shop opens at nine in the morning.",
    "Write your name at the top of the page.",
    "The bus stops here every twenty minutes.",
    "There are two messages waiting for you.",
    "The keys are in the drawer under the sink.",
    "Fold the paper in half and then once more.",
    "The painting goes on the wall near the door.",
    "Take the stairs to the third floor.",
    "The form needs a signature on the last line.",
    "Lunch will be served in the main hall.",
    "The printer is out of paper again.",
    "Check the list before you leave the house.",
    "The road is closed between the two bridges.",
    "Our tickets are for the evening show.",
    "The plants need water twice a week.",
    "Put the cups back in the cupboard.",
    "The hallway lights turn off at ten.",
    "This box goes to the office upstairs.",
    "The recipe calls for two eggs and some flour.",
    "Send the file to everyone on the team.",
    "We parked the car behind the tall building.",
    "The lesson starts after the short break.",
    "There is a green bench beside the fountain.",
    "The new schedule is pinned to the board.",
)


@dataclass(frozen=True)
class SampleItem:
    """One planned instance: its target, the scene to draw and the words describing that scene."""

    feature: str
    target_value: str
    scene: str
    keywords: tuple[str, ...]
    heteronym: tuple[str, str] | None = None
    """``(word, reading key)`` for pronunciation items."""


#: Scene -> (feature, target value, keywords...) of the instances whose scene is drawn by its own routine.
_SCENE_ITEMS: dict[str, tuple[str, ...]] = {
    "falling_brick": ("speech_rate", "fast", "a brick falling toward a construction worker", "building site"),
    "boiling_pot": ("speech_rate", "fast", "a pot boiling over on the stove", "kitchen"),
    "elderly_armchair": ("speech_rate", "slow", "an elderly man in an armchair", "someone talking to him"),
    "elderly_bench": ("speech_rate", "slow", "an elderly woman with a walking cane", "park bench"),
    "library": ("phonation", "whisper", "people studying in a library reading room", "quiet sign"),
    "museum": ("phonation", "whisper", "a quiet art museum with visitors", "framed paintings"),
    "uk_flag": ("accent", "UK", "the Union Jack flag of the United Kingdom", "red double-decker bus"),
    "uk_clock_tower": ("accent", "UK", "the Big Ben clock tower in London", "red telephone box"),
    "india_flag": ("accent", "India", "the national flag of India", "saffron, white and green"),
    "india_taj": ("accent", "India", "the Taj Mahal in India", "reflecting pool"),
    "australia_flag": ("accent", "Australia", "the national flag of Australia", "Southern Cross stars"),
    "australia_opera": ("accent", "Australia", "the Opera House in Sydney, Australia", "kangaroo"),
}


def _items() -> tuple[SampleItem, ...]:
    def scenes(*features: str) -> tuple[SampleItem, ...]:
        return tuple(
            SampleItem(f, v, scene, tuple(kw)) for scene, (f, v, *kw) in _SCENE_ITEMS.items() if f in features
        )

    pronunciation = tuple(
        SampleItem(PRONUNCIATION, "heteronym", f"{word}_{key}", (reading.image_hint,), (word, key))
        for word in SAMPLE_HETERONYMS
        for key, reading in _heteronym(word).readings.items()
    )
    emotion = tuple(
        SampleItem(
            "emotion", emo, f"face_{emo}_{v}", (f"a person with {_EMOTION_WORDS[emo]} expression", *extra)
        )
        for emo in FEATURES["emotion"]
        for v, extra in enumerate(((), ("close-up portrait",)))
    )
    timbre = tuple(
        SampleItem("timbre", who, f"person_{who.replace(' ', '_')}_{v}", (_TIMBRE_WORDS[who], place))
        for who in FEATURES["timbre"]
        for v, place in enumerate(("standing in a park", "standing in a living room"))
    )
    return scenes("speech_rate", "phonation") + pronunciation + emotion + scenes("accent") + timbre


_TIMBRE_WORDS = {
    "adult female": "a young adult woman",
    "adult male": "a young adult man",
    "elderly female": "an elderly woman with grey hair",
    "elderly male": "an elderly man with grey hair",
}

_EMOTION_WORDS = {
    "angry": "an angry",
    "disgust": "a disgusted",
    "fear": "a frightened",
    "joy": "a joyful",
    "sadness": "a sad",
    "surprised": "a surprised",
}


def _heteronym(word: str) -> Heteronym:
    for entry in HETERONYMS:
        if entry.word == word:
            return entry
    raise OmnievalError(f"the sample needs the heteronym {word!r}, which _heteronyms.HETERONYMS lacks")


SAMPLE_ITEMS: tuple[SampleItem, ...] = _items()


def build_records(items: Sequence[SampleItem] = SAMPLE_ITEMS) -> list[dict[str, Any]]:
    """The manifest lines (dicts in field order) for ``items``, ids ``ac-0001`` upwards."""
    records: list[dict[str, Any]] = []
    scripts = iter(SCRIPTS)
    per_feature: dict[str, int] = {}
    for n, item in enumerate(items, start=1):
        rid = f"ac-{n:04d}"
        turn = per_feature.get(item.feature, 0)
        per_feature[item.feature] = turn + 1
        templates = INSTRUCTIONS[item.feature]
        record: dict[str, Any] = {
            "id": rid,
            "feature": item.feature,
            "target_value": item.target_value,
            "script": "",
            "instruction_audio": f"instructions/{rid}.wav",
            "instruction_text": templates[turn % len(templates)],
            "image": f"images/{rid}.png",
            "image_keywords": list(item.keywords),
        }
        if item.heteronym is not None:
            word, key = item.heteronym
            entry = _heteronym(word)
            record["script"] = entry.readings[key].example_script
            record["heteronym"] = {
                "word": word,
                "reading": key,
                "readings": {k: list(v) for k, v in entry.arpabet().items()},
            }
        else:
            try:
                record["script"] = next(scripts)
            except StopIteration:
                raise OmnievalError("the sample has more instances than neutral scripts") from None
        records.append({k: record[k] for k in (*REQUIRED_FIELDS, "heteronym") if k in record})
    return records


@dataclass(frozen=True)
class AcbenchSampleSummary:
    """What :func:`write_acbench_sample` wrote: the folder and instances per (feature, target)."""

    root: Path
    n_instances: int
    counts: dict[str, dict[str, int]]


_README = """# OmniACBench sample (made by omnieval)

{n} instances covering every acoustic feature and every target value of OmniACBench
(FORMATS.md section 6), small enough for CPU metrics. Written by
`omnieval make-sample acbench <folder>`; the output is identical on every run.

Layout:

```
manifest.jsonl            one JSON object per line, line order = candidate index
instructions/<id>.wav     the spoken instruction (espeak-ng, 16 kHz mono 16-bit)
images/<id>.png           the context picture, {size} x {size}, drawn by code
README.md                 this file
```

Manifest fields: `id`, `feature`, `target_value`, `script` (neutral text to read aloud),
`instruction_audio` and `image` (paths relative to this folder), `instruction_text` (what the
audio says), `image_keywords` (the words the picture shows). Pronunciation lines also carry
`heteronym`: `{{"word", "reading": <target reading key>, "readings": {{<key>: [ARPAbet...]}}}}`; both
readings of each word appear as targets with the same sentence, and only the picture tells which.

Instances per feature and target value:

{counts}

Pictures and scripts are by the omnieval project (same licence as omnieval); speech is synthesized
with espeak-ng (GPL-3.0; the generated audio is not covered by it). Heteronym phones are from
CMUdict (via `omnieval.benchmarks.acbench._heteronyms`).
"""


def count_targets(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Instances per feature and target value, in :data:`FEATURES` order."""
    counts: dict[str, dict[str, int]] = {f: dict.fromkeys(values, 0) for f, values in FEATURES.items()}
    for record in records:
        counts[record["feature"]][record["target_value"]] += 1
    return counts


def write_acbench_sample(out: Path, *, size: int = IMAGE_SIZE, validate: bool = True) -> AcbenchSampleSummary:
    """Write the sample into ``out`` (replacing an earlier sample there).

    Args:
        out: Target folder; if it exists it may only contain what this function writes.
        size: Picture width and height in pixels.
        validate: Check the written folder with :func:`~._record.validate_acbench` before it
            replaces ``out``.

    Returns:
        Where it was written and how many instances each target value got.

    Raises:
        OmnievalError: ``out`` holds foreign files, or the written sample fails validation.
        omnieval.backends.tts.SynthesisError: espeak-ng is missing or failed.
    """
    out = Path(out)
    refuse_foreign(out, LAYOUT_ENTRIES)
    records = build_records()
    counts = count_targets(records)
    check = (lambda folder: validate_acbench(folder).problems) if validate else None
    with replace_owned(out, LAYOUT_ENTRIES, validate=check) as tmp:
        _write_media(tmp, records, size)
        write_manifest_records(tmp, records)
        table = "\n".join(
            f"- {feature}: " + ", ".join(f"{value} {n}" for value, n in values.items())
            for feature, values in counts.items()
        )
        readme = _README.format(n=len(records), size=size, counts=table)
        (tmp / "README.md").write_text(readme, encoding="utf-8")
    return AcbenchSampleSummary(out, len(records), counts)


def _write_media(root: Path, records: Sequence[dict[str, Any]], size: int) -> None:
    """Synthesize each record's instruction and draw its picture under ``root``."""
    from omnieval.audio import TARGET_RATE
    from omnieval.backends.tts import EspeakProsody, SpeechRequest, synthesize

    prosody = EspeakProsody()
    for record, item in zip(records, SAMPLE_ITEMS, strict=True):
        # One plain voice at a plain rate for every instruction: its delivery must not hint at the target.
        wav = root / record["instruction_audio"]
        synthesize(SpeechRequest(record["instruction_text"]), wav, prosody, controlled_rate=False)
        resample_wav(wav, TARGET_RATE)  # 16 kHz mono 16-bit: the rate the speech metrics use
        save_png(draw_scene(item.scene, size), root / record["image"])


# -- drawing ------------------------------------------------------------------------------------

Color = tuple[int, int, int]

SKY: Color = (176, 214, 240)
GRASS: Color = (120, 180, 95)
WALL: Color = (236, 226, 205)
FLOOR: Color = (170, 130, 95)
RED: Color = (200, 40, 45)
NAVY: Color = (20, 36, 110)
GREY: Color = (150, 150, 155)
SKIN: tuple[Color, ...] = ((240, 200, 170), (150, 100, 70), (205, 160, 120))


class _Scene(Pen):
    """A 512 x 512 canvas (absolute coordinates) with the few composite shapes every scene uses."""

    def __init__(self, background: Color = WALL) -> None:
        self.img = Image.new("RGB", (_CANVAS, _CANVAS), background)
        super().__init__(ImageDraw.Draw(self.img))

    def text(self, xy: tuple[float, float], text: str, size: int, fill: Color = INK) -> None:
        self.d.text(xy, text, fill=fill, font=ImageFont.load_default(size=size), anchor="mm")

    def ground(self, y: float, sky: Color = SKY, floor: Color = GRASS) -> None:
        self.rect((0, 0, _CANVAS, y), sky)
        self.rect((0, y, _CANVAS, _CANVAS), floor)

    def star(self, cx: float, cy: float, r: float, fill: Color = WHITE, points: int = 7) -> None:
        pts = []
        for k in range(points * 2):
            radius = r if k % 2 == 0 else r * 0.45
            angle = -math.pi / 2 + k * math.pi / points
            pts.append((cx + radius * math.cos(angle), cy + radius * math.sin(angle)))
        self.poly(pts, fill)

    def union_jack(self, box: Box) -> None:
        """The Union Jack filling ``box`` (stripe widths in proportion to its height)."""
        x0, y0, x1, y1 = box
        h = y1 - y0
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        self.rect(box, NAVY)
        for a, b in (((x0, y0), (x1, y1)), ((x0, y1), (x1, y0))):
            self.line([a, b], WHITE, round(0.2 * h))
            self.line([a, b], RED, round(0.067 * h))
        for half, color in ((0.15 * h, WHITE), (0.09 * h, RED)):
            self.rect((x0, cy - half, x1, cy + half), color)
            self.rect((cx - half, y0, cx + half, y1), color)

    def person(
        self,
        x: float,
        feet: float,
        h: float,
        *,
        female: bool,
        elderly: bool = False,
        skin: Color = SKIN[0],
        clothes: Color = (70, 110, 170),
        hair: Color | None = None,
        cane: bool = False,
        hard_hat: bool = False,
        flip: bool = False,
    ) -> None:
        """A standing figure ``h`` px tall, feet at (x, feet); age and gender cues drawn in."""
        f = -1.0 if flip else 1.0
        lean = h * 0.06 * f if elderly else 0.0  # elderly figures stoop forward
        head_r = h * 0.09
        hx, hy = x + lean, feet - h + head_r
        neck_y = hy + head_r
        hip_y = feet - h * 0.45
        hair = hair or ((225, 225, 225) if elderly else ((90, 55, 30) if female else (50, 40, 35)))
        legs = (60, 60, 80) if not female else skin
        self.line([(x - h * 0.05, hip_y), (x - h * 0.07, feet)], legs, int(h * 0.05))
        self.line([(x + h * 0.05, hip_y), (x + h * 0.07, feet)], legs, int(h * 0.05))
        # a dress (a trapezoid from the shoulders to the knees) or a shirt down to the hips
        shoulders, hem_w, hem_y = (0.1, 0.17, feet - h * 0.25) if female else (0.11, 0.1, hip_y + 6)
        self.poly(
            [
                (hx - h * shoulders, neck_y + 4),
                (hx + h * shoulders, neck_y + 4),
                (x + h * hem_w, hem_y),
                (x - h * hem_w, hem_y),
            ],
            clothes,
        )
        arm_y = neck_y + h * 0.06
        hand_front = (x + f * h * 0.2, hip_y + (h * 0.06 if cane else -h * 0.02))
        self.line([(hx + f * h * 0.09, arm_y), hand_front], clothes, int(h * 0.04))
        self.line([(hx - f * h * 0.09, arm_y), (x - f * h * 0.15, hip_y)], clothes, int(h * 0.04))
        if cane:
            self.line([hand_front, (hand_front[0] + f * h * 0.03, feet)], (110, 70, 40), int(h * 0.02))
            self.arc(
                hand_front[0] - f * h * 0.03, hand_front[1], h * 0.03, 180, 360, (110, 70, 40), int(h * 0.02)
            )
        if female and not elderly:
            # long hair falling behind the shoulders
            self.poly(
                [
                    (hx - head_r * 1.1, hy - head_r * 0.3),
                    (hx + head_r * 1.1, hy - head_r * 0.3),
                    (hx + head_r * 1.2, hy + head_r * 1.9),
                    (hx - head_r * 1.2, hy + head_r * 1.9),
                ],
                hair,
            )
        self.ellipse(hx, hy, head_r, head_r, skin)
        eye_y = hy - head_r * 0.1
        self.ellipse(hx - head_r * 0.35, eye_y, head_r * 0.1, head_r * 0.1, INK)
        self.ellipse(hx + head_r * 0.35, eye_y, head_r * 0.1, head_r * 0.1, INK)
        self.arc(hx, hy + head_r * 0.2, head_r * 0.4, 40, 140, INK, 2)
        if hard_hat:
            self.cap(
                (hx - head_r * 1.15, hy - head_r * 1.25, hx + head_r * 1.15, hy + head_r * 0.6),
                (245, 200, 20),
            )
            return
        if elderly:
            # glasses, wrinkles, and white hair (a bun for her, a fringe round a bald crown for him)
            for ex in (-0.35, 0.35):
                self.ellipse(hx + head_r * ex, eye_y, head_r * 0.25, head_r * 0.2, None, INK, 2)
            self.line([(hx - head_r * 0.1, eye_y), (hx + head_r * 0.1, eye_y)], INK, 2)
            for k in (-1, 1):
                self.arc(
                    hx + k * head_r * 0.75, eye_y + head_r * 0.05, head_r * 0.15, 60, 120, (120, 90, 70), 2
                )
            if female:
                self.cap((hx - head_r * 1.05, hy - head_r * 1.1, hx + head_r * 1.05, hy + head_r * 0.2), hair)
                self.ellipse(hx, hy - head_r * 1.15, head_r * 0.45, head_r * 0.35, hair)
            else:
                for k in (-1, 1):
                    self.ellipse(
                        hx + k * head_r * 0.95, hy - head_r * 0.15, head_r * 0.22, head_r * 0.4, hair
                    )
                self.line(
                    [(hx - head_r * 0.35, hy + head_r * 0.35), (hx + head_r * 0.35, hy + head_r * 0.35)],
                    hair,
                    5,
                )
        elif female:
            self.cap((hx - head_r * 1.1, hy - head_r * 1.15, hx + head_r * 1.1, hy + head_r * 0.3), hair)
        else:
            self.cap((hx - head_r * 1.02, hy - head_r * 1.1, hx + head_r * 1.02, hy + head_r * 0.1), hair)
            # stubble along the jaw
            self.arc(hx, hy + head_r * 0.05, head_r * 0.8, 30, 150, (110, 90, 80), 3)

    def done(self, size: int) -> Image.Image:
        return self.img.resize((size, size), Image.Resampling.LANCZOS)


def _shelves(s: _Scene, x0: float, x1: float, y0: float, y1: float) -> None:
    s.rect((x0, y0, x1, y1), (120, 80, 50))
    colors: tuple[Color, ...] = ((180, 50, 50), (50, 100, 160), (60, 140, 80), (200, 170, 60), (120, 70, 140))
    rows = 4
    for r in range(rows):
        top = y0 + 8 + r * (y1 - y0) / rows
        bottom = top + (y1 - y0) / rows - 14
        x = x0 + 8
        k = r
        while x < x1 - 20:
            w = 12 + (k * 7) % 10
            s.rect((x, top + (k % 3) * 4, x + w, bottom), colors[k % len(colors)])
            x += w + 3
            k += 1
        s.rect((x0, bottom, x1, bottom + 6), (90, 60, 35))


def _scene_falling_brick() -> _Scene:
    s = _Scene()
    s.ground(380, (190, 215, 235), (185, 160, 120))
    s.rect((300, 60, 470, 380), (200, 120, 90))  # half-built wall
    for row in range(8):
        y = 60 + row * 40
        s.line([(300, y), (470, y)], (150, 90, 70), 3)
    s.line([(300, 20), (300, 380)], (90, 90, 90), 8)  # scaffold pole
    s.person(200, 440, 230, female=False, hard_hat=True, clothes=(240, 130, 30))
    s.rect((165, 110, 235, 150), (170, 70, 50), INK)  # the brick, falling toward the worker's head
    for k in range(3):
        s.line([(178 + k * 22, 55), (178 + k * 22, 100)], INK, 3)  # motion lines
    s.poly([(60, 300), (110, 210), (160, 300)], (250, 210, 30), INK)  # warning triangle
    s.text((110, 272), "!", 56)
    return s


def _scene_boiling_pot() -> _Scene:
    s = _Scene((225, 232, 236))
    s.rect((40, 330, 472, 512), (120, 120, 130))  # stove
    for cx in (170, 340):
        for k in range(5):
            s.poly(
                [(cx - 50 + k * 25, 330), (cx - 40 + k * 25, 300), (cx - 30 + k * 25, 330)], (240, 120, 30)
            )
    s.rect((100, 200, 240, 320), (70, 70, 80))  # pot
    s.rect((80, 200, 260, 215), (50, 50, 60))
    for k, dx in enumerate((110, 140, 175, 210, 235)):
        s.ellipse(dx, 200 - (k % 2) * 12, 26, 22, WHITE)  # foam spilling over
    s.poly([(100, 215), (92, 280), (108, 280)], WHITE)
    s.poly([(240, 215), (232, 300), (250, 300)], WHITE)
    for k in range(3):
        s.arc(140 + k * 35, 120, 30, 200, 340, (200, 200, 210), 6)  # steam
    s.ellipse(380, 140, 55, 55, WHITE, INK, 5)  # kitchen timer ringing
    s.line([(380, 140), (380, 105)], INK, 5)
    s.line([(380, 140), (405, 155)], INK, 5)
    for k in (-1, 1):
        s.arc(380, 140, 75, 300 if k > 0 else 210, 330 if k > 0 else 240, RED, 5)
    return s


def _scene_elderly_armchair() -> _Scene:
    s = _Scene()
    s.rect((0, 380, _CANVAS, _CANVAS), FLOOR)
    s.rect((60, 60, 200, 200), (190, 220, 240), (150, 110, 80), 8)  # window
    s.rect((230, 250, 450, 420), (140, 60, 60))  # armchair
    s.rect((230, 200, 270, 420), (120, 50, 50))
    s.rect((410, 200, 450, 420), (120, 50, 50))
    s.person(340, 420, 230, female=False, elderly=True, clothes=(120, 110, 90), flip=True)
    s.rect((230, 330, 450, 420), (140, 60, 60))  # seat cushion in front of the legs
    s.person(130, 470, 260, female=True, clothes=(90, 150, 110), skin=SKIN[2])
    s.ellipse(240, 150, 50, 30, WHITE, INK, 3)  # a speech bubble with a slow ellipsis
    s.text((240, 150), "...", 36)
    return s


def _scene_elderly_bench() -> _Scene:
    s = _Scene()
    s.ground(330)
    s.ellipse(420, 170, 70, 90, (60, 140, 70))  # tree
    s.rect((410, 230, 430, 330), (110, 80, 50))
    s.rect((60, 360, 300, 380), (140, 100, 60))  # bench
    s.rect((60, 300, 300, 315), (140, 100, 60))
    s.line([(80, 380), (80, 430)], (90, 70, 50), 8)
    s.line([(280, 380), (280, 430)], (90, 70, 50), 8)
    s.person(190, 450, 250, female=True, elderly=True, clothes=(150, 100, 150), cane=True)
    s.person(370, 470, 250, female=False, clothes=(60, 90, 140), skin=SKIN[1], flip=True)
    return s


def _scene_library() -> _Scene:
    s = _Scene((230, 220, 195))
    s.rect((0, 400, _CANVAS, _CANVAS), FLOOR)
    _shelves(s, 20, 200, 40, 300)
    _shelves(s, 312, 492, 40, 300)
    s.rect((215, 60, 297, 110), WHITE, INK, 3)
    s.text((256, 85), "QUIET", 26, RED)
    s.rect((60, 360, 452, 380), (140, 100, 60))  # reading desk
    for cx in (140, 256, 372):
        s.ellipse(cx, 315, 26, 26, SKIN[(cx // 100) % 3])  # readers' heads bent over books
        s.rect((cx - 30, 340, cx + 30, 362), (70, 100, 150))
        s.poly([(cx - 28, 358), (cx, 350), (cx + 28, 358), (cx, 366)], WHITE)
    return s


def _scene_museum() -> _Scene:
    s = _Scene((240, 236, 228))
    s.rect((0, 420, _CANVAS, _CANVAS), (200, 190, 175))
    frames = (
        (40, 90, 190, 220, (90, 140, 190)),
        (220, 70, 330, 230, (200, 150, 80)),
        (360, 100, 480, 210, (120, 160, 100)),
    )
    for x0, y0, x1, y1, color in frames:
        s.rect((x0 - 10, y0 - 10, x1 + 10, y1 + 10), (180, 140, 60))
        s.rect((x0, y0, x1, y1), color)
        s.ellipse((x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 5, (y1 - y0) / 5, (240, 230, 200))
    s.line([(40, 330), (480, 330)], (150, 130, 100), 3)  # rope barrier
    s.rect((190, 250, 320, 290), WHITE, INK, 3)
    s.text((255, 270), "SILENCE", 22, RED)
    s.person(120, 470, 200, female=True, clothes=(110, 80, 140), flip=True)
    s.person(400, 470, 210, female=False, clothes=(80, 80, 90), skin=SKIN[2], flip=True)
    return s


def _scene_lead_leash() -> _Scene:
    s = _Scene()
    s.rect((0, 400, _CANVAS, _CANVAS), FLOOR)
    s.rect((330, 80, 470, 400), (130, 80, 50), INK)  # front door
    s.ellipse(350, 250, 8, 8, (220, 190, 60))
    s.ellipse(200, 330, 80, 45, (190, 140, 80))  # the dog
    s.ellipse(270, 280, 38, 34, (190, 140, 80))
    s.ellipse(290, 262, 10, 18, (140, 95, 50))
    s.ellipse(285, 278, 5, 5, INK)
    for lx in (150, 180, 225, 250):
        s.line([(lx, 360), (lx, 400)], (190, 140, 80), 12)
    s.line([(130, 320), (105, 290)], (190, 140, 80), 10)
    s.line([(255, 305), (285, 305)], RED, 8)  # collar
    s.line([(285, 305), (310, 230), (340, 200)], RED, 5)  # the lead, hanging from the door hook
    s.ellipse(342, 198, 8, 8, GREY)
    return s


def _scene_lead_metal() -> _Scene:
    s = _Scene((210, 210, 215))
    s.rect((30, 300, 482, 330), (140, 100, 60))  # workbench
    s.rect((60, 330, 80, 470), (110, 80, 50))
    s.rect((432, 330, 452, 470), (110, 80, 50))
    for k in range(3):
        y = 190 + k * 36
        s.rect((70, y, 320, y + 26), (120, 125, 135), INK, 2)  # dull grey pipes
        s.ellipse(320, y + 13, 8, 13, (90, 95, 105))
    s.poly([(350, 300), (370, 240), (460, 240), (480, 300)], (110, 115, 125), INK)  # an ingot
    s.text((415, 272), "Pb", 34, WHITE)
    s.line([(120, 120), (220, 150)], (90, 90, 95), 10)  # a wrench
    s.ellipse(110, 117, 16, 16, (90, 90, 95))
    return s


def _scene_tear_cry() -> _Scene:
    s = _Scene((200, 215, 235))
    s.ellipse(256, 260, 150, 170, SKIN[0])
    s.cap((96, 80, 416, 330), (90, 55, 30))
    for ex in (196, 316):
        s.arc(ex, 230, 28, 20, 160, INK, 6)  # eyes squeezed shut
    s.line([(170, 190), (220, 180)], INK, 5)
    s.line([(340, 190), (292, 180)], INK, 5)
    s.arc(256, 370, 45, 200, 340, INK, 6)  # mouth turned down
    drop: list[tuple[float, float]] = [(205, 262), (190, 300), (220, 300)]
    s.poly(drop, (110, 170, 230))  # a tear running down the cheek
    s.ellipse(205, 303, 15, 15, (110, 170, 230))
    s.ellipse(210, 345, 9, 11, (110, 170, 230))
    return s


def _scene_tear_rip() -> _Scene:
    s = _Scene((235, 230, 220))
    s.poly(
        [(140, 40), (372, 40), (400, 480), (270, 480), (256, 160), (242, 480), (112, 480)], (60, 90, 150)
    )  # jeans
    s.line([(256, 40), (256, 160)], (40, 60, 110), 3)
    s.poly(
        [(150, 300), (175, 280), (205, 298), (225, 290), (215, 330), (190, 345), (160, 335)], SKIN[0]
    )  # the hole at the knee
    for k in range(5):
        s.line(
            [(155 + k * 14, 296 - (k % 2) * 6), (150 + k * 14, 283 - (k % 2) * 6)], WHITE, 3
        )  # loose threads
    return s


def _scene_bass_music() -> _Scene:
    s = _Scene((60, 40, 80))
    s.rect((0, 430, _CANVAS, _CANVAS), (40, 30, 40))
    s.ellipse(256, 40, 160, 30, (250, 230, 140))  # stage light
    s.ellipse(256, 350, 85, 75, (180, 40, 40))  # bass body
    s.ellipse(256, 280, 60, 55, (180, 40, 40))
    s.rect((246, 60, 266, 300), (120, 80, 40))  # long neck
    s.rect((238, 40, 274, 80), (80, 50, 30))
    for k in range(4):
        s.line([(250 + k * 4, 60), (250 + k * 4, 400)], (230, 230, 230), 1)
        s.ellipse(234 if k < 2 else 278, 48 + (k % 2) * 20, 5, 5, (220, 220, 220))
    s.line([(190, 440), (256, 380), (322, 440)], GREY, 6)  # stand
    s.rect((120, 390, 180, 470), (30, 30, 30), GREY, 3)  # amplifier
    return s


def _scene_bass_fish() -> _Scene:
    s = _Scene()
    s.ground(300, SKY, (70, 130, 170))
    s.rect((0, 380, _CANVAS, _CANVAS), (120, 90, 60))  # jetty
    s.person(150, 470, 260, female=False, clothes=(80, 120, 80), skin=SKIN[2])
    s.ellipse(300, 260, 90, 38, (110, 140, 80))  # the fish held up
    s.poly([(385, 260), (430, 225), (430, 295)], (110, 140, 80))
    s.ellipse(240, 252, 7, 7, INK)
    s.line([(225, 275), (250, 270)], INK, 3)
    s.line([(200, 270), (215, 260)], SKIN[2], 12)  # hand gripping it
    s.line([(60, 120), (230, 250)], (90, 70, 50), 4)  # rod
    return s


def _scene_bow_ribbon() -> _Scene:
    s = _Scene((245, 235, 225))
    s.rect((136, 250, 376, 440), (80, 140, 200))  # gift box
    s.rect((120, 220, 392, 260), (70, 125, 185))
    s.rect((241, 220, 271, 440), RED)
    s.rect((120, 232, 392, 248), RED)
    s.poly([(256, 222), (170, 160), (180, 240)], RED)  # the bow's loops
    s.poly([(256, 222), (342, 160), (332, 240)], RED)
    s.ellipse(256, 222, 18, 18, (170, 25, 30))
    return s


def _scene_bow_ship() -> _Scene:
    s = _Scene()
    s.ground(320, SKY, (50, 110, 170))
    s.poly([(40, 200), (400, 200), (480, 330), (40, 330)], (170, 40, 40))  # the prow cutting the water
    s.rect((40, 180, 400, 205), WHITE)
    s.line([(400, 200), (480, 330)], INK, 4)
    for k in range(4):
        s.arc(430 + k * 18, 345, 30, 180, 300, WHITE, 4)  # bow wave
    s.rect((120, 110, 220, 180), (230, 230, 230))
    s.line([(320, 40), (320, 180)], INK, 5)
    return s


def _scene_uk_flag() -> _Scene:
    s = _Scene((200, 220, 240))
    x0, y0, x1, y1 = 56.0, 40.0, 456.0, 240.0
    s.union_jack((x0, y0, x1, y1))
    s.rect((x0 - 12, y0, x0 - 4, 500), GREY)
    s.rect((150, 300, 470, 470), RED, INK)  # double-decker bus
    s.line([(150, 385), (470, 385)], INK, 4)
    for k in range(5):
        s.rect((165 + k * 60, 315, 205 + k * 60, 365), (200, 225, 240))
        s.rect((165 + k * 60, 400, 205 + k * 60, 440), (200, 225, 240))
    for wx in (210, 410):
        s.ellipse(wx, 470, 22, 22, INK)
    return s


def _scene_uk_clock_tower() -> _Scene:
    s = _Scene((185, 200, 215))
    s.rect((0, 460, _CANVAS, _CANVAS), GREY)
    s.rect((200, 140, 300, 460), (200, 175, 120), INK)  # tower
    s.poly([(195, 140), (250, 40), (305, 140)], (90, 100, 90))
    s.ellipse(250, 195, 38, 38, WHITE, INK, 4)  # clock face
    s.line([(250, 195), (250, 170)], INK, 4)
    s.line([(250, 195), (268, 200)], INK, 4)
    for k in range(5):
        s.line([(212 + k * 19, 250), (212 + k * 19, 450)], (160, 135, 90), 3)
    s.rect((360, 320, 420, 460), RED, INK)  # telephone box
    for row in range(4):
        s.rect((370, 345 + row * 25, 410, 363 + row * 25), (220, 230, 235))
    s.rect((60, 400, 170, 460), (40, 40, 45))  # black cab
    return s


def _scene_india_flag() -> _Scene:
    s = _Scene((225, 235, 245))
    x0, y0, x1, y1 = 56.0, 80.0, 456.0, 347.0
    band = (y1 - y0) / 3
    s.rect((x0, y0, x1, y0 + band), (255, 153, 51))
    s.rect((x0, y0 + band, x1, y0 + 2 * band), WHITE)
    s.rect((x0, y0 + 2 * band, x1, y1), (19, 136, 8))
    cx, cy, r = (x0 + x1) / 2, (y0 + y1) / 2, band * 0.42
    s.ellipse(cx, cy, r, r, None, NAVY, 4)  # the chakra with its 24 spokes
    for k in range(24):
        a = k * math.pi / 12
        s.line([(cx, cy), (cx + r * math.cos(a), cy + r * math.sin(a))], NAVY, 2)
    s.rect((x0 - 12, y0, x0 - 4, 500), GREY)
    return s


def _scene_india_taj() -> _Scene:
    s = _Scene((250, 215, 170))
    s.rect((0, 380, _CANVAS, _CANVAS), (200, 190, 170))
    s.rect((150, 230, 362, 380), (245, 243, 235), INK, 2)  # marble hall
    s.cap((186, 110, 326, 290), (245, 243, 235), outline=INK)  # the onion dome
    s.poly([(250, 110), (256, 70), (262, 110)], (200, 180, 90))
    s.d.chord((216, 270, 296, 390), 180, 360, fill=(200, 190, 175))  # arched gateway
    s.rect((216, 330, 296, 380), (200, 190, 175))
    for mx in (90, 422):
        s.rect((mx - 10, 170, mx + 10, 380), (245, 243, 235), INK, 2)  # minarets
        s.ellipse(mx, 168, 16, 14, (245, 243, 235), INK, 2)
    s.rect((216, 400, 296, 500), (120, 170, 210))  # reflecting pool
    return s


def _scene_australia_flag() -> _Scene:
    s = _Scene((220, 235, 245))
    x0, y0, x1, y1 = 56.0, 60.0, 456.0, 260.0
    s.rect((x0, y0, x1, y1), NAVY)
    s.union_jack((x0, y0, (x0 + x1) / 2, (y0 + y1) / 2))  # the canton
    s.star(x0 + 100, y0 + 155, 30)  # Commonwealth star
    for sx, sy, r in ((370, 90, 14), (330, 150, 14), (410, 140, 14), (370, 225, 16), (385, 175, 8)):
        s.star(sx, sy, r)  # the Southern Cross
    s.rect((x0 - 12, y0, x0 - 4, 500), GREY)
    s.ellipse(380, 410, 40, 55, (170, 110, 70))  # kangaroo
    s.ellipse(395, 345, 18, 20, (170, 110, 70))
    s.line([(345, 450), (290, 470)], (170, 110, 70), 12)
    return s


def _scene_australia_opera() -> _Scene:
    s = _Scene((150, 200, 240))
    s.rect((0, 330, _CANVAS, _CANVAS), (40, 100, 160))  # harbour
    s.rect((60, 300, 460, 340), (220, 200, 170))
    for k, (x, h) in enumerate(((110, 120), (180, 170), (260, 190), (340, 150), (400, 110))):
        s.poly([(x - 50, 300), (x + 5 * (k % 2), 300 - h), (x + 40, 300)], WHITE, GREY)  # the sails
    s.arc(256, 470, 230, 200, 340, (110, 110, 120), 10)  # harbour bridge arch
    s.line([(40, 420), (470, 420)], (110, 110, 120), 6)
    return s


def _scene_face(emotion: str, variant: int) -> _Scene:
    """A big face showing ``emotion`` (two people: variant 0 and 1), with a telling background cue."""
    backgrounds = {
        "angry": (235, 150, 140),
        "disgust": (200, 220, 170),
        "fear": (120, 120, 150),
        "joy": (255, 230, 140),
        "sadness": (150, 170, 200),
        "surprised": (250, 210, 230),
    }
    s = _Scene(backgrounds[emotion])
    skin = SKIN[(variant + len(emotion)) % 3]
    hair = ((60, 40, 30), (20, 20, 25))[variant]
    cx, cy, r = 256.0, 280.0, 150.0
    s.rect((cx - 90, cy + 120, cx + 90, _CANVAS), ((70, 110, 170), (150, 80, 90))[variant])  # shoulders
    s.ellipse(cx, cy, r, r * 1.1, skin)
    if variant == 0:
        s.cap((cx - r, cy - r * 1.15, cx + r, cy + r * 0.2), hair)
    else:
        s.cap((cx - r * 0.95, cy - r * 1.12, cx + r * 0.95, cy - r * 0.2), hair)
    ex, ey, mouth_y = 55.0, cy - 15, cy + 70
    eyes = {"fear": 22.0, "surprised": 24.0}.get(emotion, 14.0)
    for side in (-1, 1):
        x = cx + side * ex
        if emotion == "joy":
            s.arc(x, ey + 8, 18, 200, 340, INK, 6)  # smiling eyes
        else:
            s.ellipse(x, ey, eyes, eyes * (1.2 if emotion in ("fear", "surprised") else 1.0), WHITE, INK, 3)
            s.ellipse(x, ey + 2, 6 if emotion == "fear" else 9, 6 if emotion == "fear" else 9, INK)
        inner, outer = cx + side * 20, cx + side * 90
        brow = {
            "angry": (ey - 20, ey - 48),  # inner end low: a frown
            "sadness": (ey - 45, ey - 25),  # inner end raised
            "fear": (ey - 50, ey - 40),
            "surprised": (ey - 60, ey - 55),
            "disgust": (ey - 28, ey - 38) if side < 0 else (ey - 40, ey - 40),
            "joy": (ey - 40, ey - 42),
        }[emotion]
        s.line([(inner, brow[0]), (outer, brow[1])], hair, 8)
    if emotion == "joy":
        s.d.chord((cx - 60, mouth_y - 40, cx + 60, mouth_y + 40), 0, 180, fill=(150, 40, 50))
        for k, (x, y) in enumerate(((60, 60), (450, 90), (80, 400), (440, 380), (120, 150))):
            s.rect((x, y, x + 14, y + 8), ((230, 60, 60), (60, 150, 230), (60, 180, 90))[k % 3])  # confetti
    elif emotion == "sadness":
        s.arc(cx, mouth_y + 40, 45, 220, 320, INK, 6)
        s.ellipse(cx - ex, ey + 40, 8, 13, (110, 170, 230))
        for k in range(8):
            s.line(
                [(40 + k * 60, 20 + (k % 3) * 30), (30 + k * 60, 60 + (k % 3) * 30)], (90, 110, 150), 3
            )  # rain
    elif emotion == "angry":
        s.rect((cx - 45, mouth_y - 12, cx + 45, mouth_y + 12), WHITE, INK, 4)  # clenched teeth
        s.line([(cx - 45, mouth_y), (cx + 45, mouth_y)], INK, 2)
        for side in (-1, 1):
            s.ellipse(cx + side * 185, cy - 150, 30, 22, (240, 240, 240))  # steam puffs
    elif emotion == "fear":
        s.ellipse(cx, mouth_y + 5, 40, 22, INK)  # a stretched, open mouth
        s.ellipse(cx + 110, cy - 70, 8, 14, (170, 210, 240))  # cold sweat
        for side in (-1, 1):
            start = 150 if side < 0 else -30  # trembling lines beside the head, opening outward
            for k in range(3):
                s.arc(cx + side * (175 + k * 14), cy, 40, start, start + 60, INK, 3)
    elif emotion == "disgust":
        s.line(
            [(cx - 40, mouth_y + 10), (cx, mouth_y - 5), (cx + 45, mouth_y + 15)], INK, 6
        )  # upper lip raised
        s.ellipse(cx + 10, mouth_y + 22, 18, 12, (220, 90, 110))  # tongue out
        for k in (-1, 1):
            s.line([(cx + k * 12, cy + 20), (cx + k * 22, cy + 30)], (150, 110, 90), 3)  # wrinkled nose
        s.ellipse(430, 440, 40, 20, (140, 150, 70))  # spoiled food with flies
        for k in range(3):
            s.ellipse(410 + k * 20, 400 - (k % 2) * 15, 4, 4, INK)
        for k in range(3):
            s.arc(410 + k * 18, 380, 14, 200, 340, (110, 120, 60), 3)  # stink lines
    else:  # surprised
        s.ellipse(cx, mouth_y + 5, 28, 36, INK)  # mouth in an O
        s.text((80, 110), "!", 90, RED)
        s.text((440, 110), "!", 90, RED)
    return s


def _scene_person(who: str, variant: int) -> _Scene:
    elderly = who.startswith("elderly")
    female = who.endswith("female")
    s = _Scene()
    if variant == 0:
        s.ground(330)
        s.ellipse(90, 180, 60, 80, (70, 140, 70))
        s.rect((80, 240, 100, 330), (110, 80, 50))
    else:
        s.rect((0, 400, _CANVAS, _CANVAS), FLOOR)
        s.rect((340, 80, 470, 220), (190, 220, 240), (150, 110, 80), 8)
        s.rect((30, 300, 170, 400), (110, 140, 120))  # sofa
    clothes: Color = (
        ((190, 70, 120) if female else (60, 90, 150))
        if not elderly
        else ((140, 110, 150) if female else (120, 110, 90))
    )
    s.person(
        270,
        480,
        380,
        female=female,
        elderly=elderly,
        cane=elderly,
        clothes=clothes,
        skin=SKIN[variant * 2 % 3],
    )
    return s


def _routine(item: SampleItem) -> Callable[[], _Scene]:
    """What draws ``item``'s scene: a face or a person for its target, else ``_scene_<scene>``."""
    if item.feature in ("emotion", "timbre"):
        draw = _scene_face if item.feature == "emotion" else _scene_person
        return functools.partial(draw, item.target_value, int(item.scene[-1]))
    routine: Callable[[], _Scene] = globals()[f"_scene_{item.scene}"]
    return routine


SCENES: dict[str, Callable[[], _Scene]] = {item.scene: _routine(item) for item in SAMPLE_ITEMS}


def draw_scene(scene: str, size: int = IMAGE_SIZE) -> Image.Image:
    """Draw one named scene as an RGB picture of ``size`` x ``size`` pixels.

    Raises:
        KeyError: no such scene (see :data:`SCENES`).
    """
    if scene not in SCENES:
        raise KeyError(f"no scene {scene!r}; known: {', '.join(sorted(SCENES))}")
    return SCENES[scene]().done(size)


def sample_main(argv: Sequence[str], prog: str) -> int:
    """Parse arguments, write the sample, print what was written; 0 on success, 2 on bad input."""

    description = "Write the OmniACBench sample dataset (manifest.jsonl, instructions/, images/)."
    parser = sample_parser(prog, description, "data/acbench-sample")
    parser.add_argument("--size", type=int, default=IMAGE_SIZE, help="picture side in pixels")
    args = parser.parse_args(argv)

    def report(summary: AcbenchSampleSummary) -> int:
        print(f"wrote {summary.n_instances} instances to {summary.root}")
        for feature, values in summary.counts.items():
            print(f"  {feature}: " + ", ".join(f"{value} {n}" for value, n in values.items()))
        return 0

    return run_sample_command(lambda: write_acbench_sample(args.out, size=args.size), report)
