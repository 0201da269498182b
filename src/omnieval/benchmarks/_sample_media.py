"""Media making shared by the sample generators (``omnieval make-sample``): pictures, PNGs, speech.

Every generator draws with PIL on a canvas twice (or more) the output size, then downsamples; the
:class:`Pen` is their drawing primitive (shapes at offsets from an anchor, scaled and optionally
mirrored; at the default anchor it draws in absolute canvas coordinates). PNGs are written by
:func:`save_png` so their bytes do not change between runs, and speech comes from espeak-ng
resampled with soxr's high-quality mode (:func:`espeak_speech`, :func:`resample_wav`).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageDraw

Color = tuple[int, int, int] | tuple[int, int, int, int]
Point = tuple[float, float]
Box = tuple[float, float, float, float]

INK: tuple[int, int, int] = (35, 35, 40)
WHITE: tuple[int, int, int] = (250, 250, 250)


class Pen:
    """Draws shapes at offsets from an anchor point, scaled and optionally mirrored.

    Widths (lines, arcs and outlines) scale too, and never drop below one pixel.
    """

    def __init__(
        self, draw: ImageDraw.ImageDraw, x: float = 0.0, y: float = 0.0, s: float = 1.0, flip: bool = False
    ) -> None:
        self.d = draw
        self.x, self.y, self.s = x, y, s
        self.f = -1.0 if flip else 1.0

    def p(self, dx: float, dy: float) -> Point:
        """Absolute canvas point of an offset."""
        return (self.x + self.f * dx * self.s, self.y + dy * self.s)

    def _w(self, width: float) -> int:
        return max(1, int(width * self.s))

    def _box(self, box: Box) -> Box:
        (ax, ay), (bx, by) = self.p(box[0], box[1]), self.p(box[2], box[3])
        return (min(ax, bx), min(ay, by), max(ax, bx), max(ay, by))

    def ellipse(
        self,
        dx: float,
        dy: float,
        rx: float,
        ry: float,
        fill: Color | None,
        outline: Color | None = None,
        width: float = 2,
    ) -> None:
        cx, cy = self.p(dx, dy)
        rx, ry = rx * self.s, ry * self.s
        self.d.ellipse((cx - rx, cy - ry, cx + rx, cy + ry), fill=fill, outline=outline, width=self._w(width))

    def circle(self, dx: float, dy: float, r: float, fill: Color) -> None:
        self.ellipse(dx, dy, r, r, fill)

    def poly(self, points: Sequence[Point], fill: Color, outline: Color | None = None) -> None:
        self.d.polygon([self.p(px, py) for px, py in points], fill=fill, outline=outline)

    def rect(self, box: Box, fill: Color, outline: Color | None = None, width: float = 3) -> None:
        self.d.rectangle(self._box(box), fill=fill, outline=outline, width=self._w(width))

    def line(self, points: Sequence[Point], fill: Color, width: float = 3) -> None:
        self.d.line([self.p(px, py) for px, py in points], fill=fill, width=self._w(width), joint="curve")

    def arc(
        self, dx: float, dy: float, r: float, start: float, end: float, fill: Color, width: float = 3
    ) -> None:
        cx, cy = self.p(dx, dy)
        rr = r * self.s
        if self.f < 0:
            start, end = 180 - end, 180 - start
        self.d.arc((cx - rr, cy - rr, cx + rr, cy + rr), start, end, fill=fill, width=self._w(width))

    def cap(self, box: Box, fill: Color, outline: Color | None = None) -> None:
        """The upper half of the ellipse in ``box``: hair, a hat, a dome, an umbrella."""
        self.d.pieslice(self._box(box), 180, 360, fill=fill, outline=outline)


def save_png(image: Image.Image, path: Path) -> None:
    """Write ``image`` as a PNG with stable bytes: no ancillary chunks (time, text), fixed compression."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="PNG", optimize=False, compress_level=9)


def resample_hq(samples: npt.NDArray[np.float32], rate_in: int, rate_out: int) -> npt.NDArray[np.float32]:
    """soxr's high-quality resampling (what librosa's ``soxr_hq`` calls, without importing librosa)."""
    import soxr

    return np.asarray(soxr.resample(samples, rate_in, rate_out, quality="HQ"), dtype=np.float32)


def resample_wav(path: Path, rate: int) -> None:
    """Rewrite a WAV in place at ``rate`` Hz, 16-bit PCM."""
    import soundfile as sf

    samples, rate_in = sf.read(str(path), dtype="float32")
    sf.write(str(path), resample_hq(samples, int(rate_in), rate), rate, subtype="PCM_16", format="WAV")


def espeak_speech(text: str, *, voice: str, rate_wpm: int, pitch: int, sr: int) -> npt.NDArray[np.float32]:
    """espeak-ng speech of ``text`` at ``sr`` Hz (float32).

    Raises:
        omnieval.backends.tts.SynthesisError: espeak-ng is missing or failed.
    """
    import soundfile as sf

    from omnieval.backends.tts import SynthesisError, espeak_binary

    with tempfile.TemporaryDirectory(prefix="sample-espeak.") as scratch:
        wav = Path(scratch) / "speech.wav"
        command = [espeak_binary(), "-v", voice, "-s", str(rate_wpm), "-p", str(pitch), "-w", str(wav)]
        done = subprocess.run(
            [*command, "--", text], capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0 or not wav.is_file():
            raise SynthesisError(f"espeak-ng failed for {text!r}: {done.stderr.strip() or done.returncode}")
        samples, rate_in = sf.read(str(wav), dtype="float32")
    return resample_hq(samples, int(rate_in), sr)
