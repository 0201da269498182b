"""Blind side-by-side presentation of a candidate and its reference (PRISM-Bench's judge input).

For each (system, instance) the two clips go to the judge in a seeded random order
(:func:`pair_order`); each is preceded by a 0.5 s black card with a large white "1" or "2" and
silent audio, so the judge can tell them apart without learning which one is the reference. Both
clips are brought to one frame size (letterboxed, the larger of the two), one frame rate and one
audio format before they are joined, so neither stands out by its encoding. Output: one MP4
(H.264 + AAC, yuv420p, ``+faststart``) holding card 1, clip 1, card 2, clip 2
(:func:`compose_pair`), or two MP4s ``clip1.mp4`` / ``clip2.mp4`` (:func:`compose_clips`) for judge
APIs that take two videos. A JSON sidecar maps "1"/"2" back to candidate/reference.

The digits are drawn as strokes, not with a font, so the cards look the same on every machine.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from omnieval.benchmarks.prism._media import probe, run_ffmpeg

Role = Literal["candidate", "reference"]
ROLES: tuple[Role, Role] = ("candidate", "reference")
ID_SECONDS = 0.5
SIDECAR_SUFFIX = ".order.json"


@dataclass(frozen=True)
class PairOrder:
    """Which clip is shown first for one (system, instance) pair.

    Attributes:
        first: the role shown as "1"; the other role is "2".
        system: the system whose candidate this is.
        instance_id: the dataset id.
        seed: the suite seed the order was drawn from.
    """

    first: Role
    system: str = ""
    instance_id: str = ""
    seed: int = 0

    def role(self, slot: int) -> Role:
        """The role shown as ``slot`` (1 or 2)."""
        if slot not in (1, 2):
            raise ValueError(f"slot must be 1 or 2, got {slot!r}")
        second: Role = "reference" if self.first == "candidate" else "candidate"
        return self.first if slot == 1 else second

    def slot(self, role: Role) -> int:
        """The number (1 or 2) shown on ``role``'s card."""
        return 1 if self.role(1) == role else 2

    def swapped(self) -> PairOrder:
        """The same pair in the other order (the swap check)."""
        return PairOrder(self.role(2), self.system, self.instance_id, self.seed)

    def sidecar(self) -> dict[str, Any]:
        """``{"1": {"role": ..., ["system": S]}, "2": {...}, "seed": ..., "instance_id": ...}``."""
        out: dict[str, Any] = {}
        for slot in (1, 2):
            role = self.role(slot)
            entry: dict[str, str] = {"role": role}
            if role == "candidate":
                entry["system"] = self.system
            out[str(slot)] = entry
        out["seed"] = self.seed
        out["instance_id"] = self.instance_id
        return out

    @classmethod
    def from_sidecar(cls, data: dict[str, Any]) -> PairOrder:
        """Read :meth:`sidecar` back; raise ValueError when the mapping is not one candidate + one reference."""
        roles = [str(data.get(s, {}).get("role", "")) for s in ("1", "2")]
        if sorted(roles) != ["candidate", "reference"]:
            raise ValueError(f"order sidecar needs one candidate and one reference, got {roles}")
        cand = data["1"] if roles[0] == "candidate" else data["2"]
        first: Role = "candidate" if roles[0] == "candidate" else "reference"
        return cls(
            first, str(cand.get("system", "")), str(data.get("instance_id", "")), int(data.get("seed", 0))
        )


def pair_order(seed: int, system: str, instance_id: str) -> PairOrder:
    """The seeded, reproducible order of one pair: a hash bit of (seed, system, instance).

    Independent per pair (no shared random state), so adding a system or an instance never changes
    another pair's order.

    Example:
        >>> pair_order(0, "sys", "a") == pair_order(0, "sys", "a")
        True
        >>> {pair_order(0, "sys", str(i)).first for i in range(20)} == {"candidate", "reference"}
        True
    """
    digest = hashlib.sha256(f"prism-order\x00{seed}\x00{system}\x00{instance_id}".encode()).digest()
    first: Role = "candidate" if digest[0] & 1 else "reference"
    return PairOrder(first, system, instance_id, seed)


def sidecar_path(out: Path) -> Path:
    """Where :func:`compose_pair` writes the order of ``out`` (``pair.mp4`` -> ``pair.order.json``)."""
    return out.with_name(out.stem + SIDECAR_SUFFIX)


def write_sidecar(order: PairOrder, path: Path) -> Path:
    path.write_text(json.dumps(order.sidecar(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_sidecar(path: Path) -> PairOrder:
    return PairOrder.from_sidecar(json.loads(path.read_text(encoding="utf-8")))


# -- media facts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClipInfo:
    """A clip and what ffprobe says about it. Durations in seconds; ``fps`` 0 when unknown."""

    path: Path
    duration_s: float
    width: int
    height: int
    fps: float
    has_audio: bool


def probe_clip(path: Path) -> ClipInfo:
    """Probe a video file (:func:`~._media.probe`); its length is the longer of its two streams.

    Raises:
        MediaError: the file is missing or unreadable, or has no video stream.
    """
    info = probe(path)
    duration = max(info.video_duration_s, info.audio_duration_s if info.has_audio else 0.0) or info.duration_s
    return ClipInfo(Path(path), duration, info.width, info.height, info.fps, info.has_audio)


# -- ID cards ------------------------------------------------------------------------------------


def digit_mask(digit: int, width: int, height: int) -> npt.NDArray[np.bool_]:
    """White-stroke mask, shape ``(height, width)``, of the card for ``digit`` (1 or 2).

    The digit is about 60 % of the frame height, centred, drawn with thick strokes.
    """
    from PIL import Image, ImageDraw

    if digit not in (1, 2):
        raise ValueError(f"only 1 and 2 have cards, got {digit!r}")
    img = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(img)
    h = 0.6 * height
    w = 0.42 * h
    stroke = max(2, round(0.11 * h))
    cx, top = width / 2, (height - h) / 2
    bottom = top + h
    left, right = cx - w / 2, cx + w / 2
    if digit == 1:
        draw.line([(cx, top), (cx, bottom)], fill=255, width=stroke)
        draw.line([(cx, top + stroke / 2), (cx - 0.45 * w, top + 0.28 * h)], fill=255, width=stroke)
        draw.line(
            [(cx - 0.5 * w, bottom - stroke / 2), (cx + 0.5 * w, bottom - stroke / 2)], fill=255, width=stroke
        )
    else:
        radius = w / 2
        box = [left, top + stroke / 2, right, top + stroke / 2 + 2 * radius]
        draw.arc(box, start=180, end=360 + 35, fill=255, width=stroke)
        # PIL draws an arc's stroke inside its box: the stroke's centre line is stroke/2 further in.
        centre = radius - stroke / 2
        start = (
            cx + centre * np.cos(np.radians(35)),
            top + stroke / 2 + radius + centre * np.sin(np.radians(35)),
        )
        draw.line([start, (left + stroke / 2, bottom - stroke / 2)], fill=255, width=stroke)
        draw.line([(left, bottom - stroke / 2), (right, bottom - stroke / 2)], fill=255, width=stroke)
    return np.asarray(img) > 127


def _card_png(digit: int, width: int, height: int, path: Path) -> Path:
    from PIL import Image

    mask = digit_mask(digit, width, height)
    rgb = np.zeros((height, width, 3), dtype=np.uint8)
    rgb[mask] = 255
    Image.fromarray(rgb, "RGB").save(path)
    return path


# -- rendering -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ComposeSpec:
    """Output format. ``None`` fields are derived from both clips alike (never from one role)."""

    width: int | None = None
    """Frame width in pixels; default: the larger clip's (even)."""
    height: int | None = None
    fps: float | None = None
    """Frame rate; default: the higher of the two (capped at 60; 25 when unknown)."""
    sample_rate: int = 48_000
    id_seconds: float = ID_SECONDS
    crf: int = 20
    preset: str = "veryfast"


@dataclass(frozen=True)
class _Target:
    width: int
    height: int
    fps: float
    sample_rate: int
    id_seconds: float


def _even(n: float) -> int:
    return max(2, round(n / 2) * 2)


def _target(infos: list[ClipInfo], spec: ComposeSpec) -> _Target:
    biggest = max(infos, key=lambda i: (i.width * i.height, i.width))
    width = spec.width or _even(biggest.width or 640)
    height = spec.height or _even(biggest.height or 360)
    fps = spec.fps or min(60.0, max((i.fps for i in infos), default=0.0) or 25.0)
    return _Target(_even(width), _even(height), round(float(fps), 3), spec.sample_rate, spec.id_seconds)


def _render(
    segments: list[int | ClipInfo], target: _Target, spec: ComposeSpec, out: Path, work: Path
) -> None:
    """Encode ``segments`` (an int = that digit's card, a ClipInfo = the clip) into one MP4."""
    args: list[str] = []
    filters: list[str] = []
    labels: list[str] = []
    n_inputs = 0
    sr, fps, w, h = target.sample_rate, target.fps, target.width, target.height
    silence = f"anullsrc=r={sr}:cl=stereo"
    afmt = f"aresample={sr},aformat=sample_fmts=fltp:channel_layouts=stereo"
    for k, seg in enumerate(segments):
        if isinstance(seg, int):
            png = _card_png(seg, w, h, work / f"card{k}_{seg}.png")
            args += ["-loop", "1", "-framerate", str(fps), "-t", f"{target.id_seconds}", "-i", str(png)]
            args += ["-f", "lavfi", "-t", f"{target.id_seconds}", "-i", silence]
            v_in, a_in = n_inputs, n_inputs + 1
            n_inputs += 2
            filters.append(
                f"[{v_in}:v]scale={w}:{h},setsar=1,fps={fps},format=yuv420p,"
                f"trim=duration={target.id_seconds},setpts=PTS-STARTPTS[v{k}]"
            )
            filters.append(f"[{a_in}:a]{afmt},atrim=duration={target.id_seconds},asetpts=N/SR/TB[a{k}]")
        else:
            dur = seg.duration_s
            args += ["-i", str(seg.path)]
            v_in = n_inputs
            n_inputs += 1
            if seg.has_audio:
                a_src = f"[{v_in}:a]"
            else:
                args += ["-f", "lavfi", "-t", f"{dur}", "-i", silence]
                a_src = f"[{n_inputs}:a]"
                n_inputs += 1
            filters.append(
                f"[{v_in}:v]scale={w}:{h}:force_original_aspect_ratio=decrease,"
                f"pad={w}:{h}:(ow-iw)/2:(oh-ih)/2:color=black,setsar=1,fps={fps},format=yuv420p,"
                f"setpts=PTS-STARTPTS,tpad=stop_mode=clone:stop_duration={dur},"
                f"trim=duration={dur},setpts=PTS-STARTPTS[v{k}]"
            )
            # Audio is padded/trimmed to the clip's length so the next segment starts in sync.
            filters.append(
                f"{a_src}{afmt},asetpts=PTS-STARTPTS,apad,atrim=duration={dur},asetpts=N/SR/TB[a{k}]"
            )
        labels.append(f"[v{k}][a{k}]")
    filters.append(f"{''.join(labels)}concat=n={len(segments)}:v=1:a=1[vout][aout]")
    args += [
        "-filter_complex",
        ";".join(filters),
        "-map",
        "[vout]",
        "-map",
        "[aout]",
        "-c:v",
        "libx264",
        "-preset",
        spec.preset,
        "-crf",
        str(spec.crf),
        "-pix_fmt",
        "yuv420p",
        "-r",
        str(fps),
        "-c:a",
        "aac",
        "-b:a",
        "160k",
        "-ar",
        str(sr),
        "-movflags",
        "+faststart",
        str(out),
    ]
    run_ffmpeg(args, path=out)


def _clips_in_order(candidate: Path, reference: Path, order: PairOrder) -> list[ClipInfo]:
    by_role = {"candidate": probe_clip(Path(candidate)), "reference": probe_clip(Path(reference))}
    return [by_role[order.role(1)], by_role[order.role(2)]]


def compose_pair(
    candidate: Path, reference: Path, order: PairOrder, out: Path, *, spec: ComposeSpec | None = None
) -> Path:
    """Write card 1, clip 1, card 2, clip 2 as one MP4 at ``out`` and the order sidecar beside it.

    Returns ``out``. Its duration is ``0.5 + d1 + 0.5 + d2`` seconds (each clip's length is the longer
    of its video and audio streams). The sidecar is :func:`sidecar_path` of ``out``.
    """
    spec = spec or ComposeSpec()
    clips = _clips_in_order(candidate, reference, order)
    target = _target(clips, spec)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="prism-compose-") as tmp:
        partial = Path(tmp) / "pair.mp4"
        _render([1, clips[0], 2, clips[1]], target, spec, partial, Path(tmp))
        shutil.move(str(partial), out)
    write_sidecar(order, sidecar_path(out))
    return out


@dataclass(frozen=True)
class ComposedClips:
    """Two blinded files and their order sidecar."""

    clip1: Path
    clip2: Path
    sidecar: Path


def compose_clips(
    candidate: Path, reference: Path, order: PairOrder, out_dir: Path, *, spec: ComposeSpec | None = None
) -> ComposedClips:
    """Write ``clip1.mp4`` (card 1 + clip 1) and ``clip2.mp4`` (card 2 + clip 2) and ``order.json``.

    Both files share one frame size, frame rate and audio format, derived from both clips.
    """
    spec = spec or ComposeSpec()
    clips = _clips_in_order(candidate, reference, order)
    target = _target(clips, spec)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="prism-compose-") as tmp:
        for slot, clip in ((1, clips[0]), (2, clips[1])):
            partial = Path(tmp) / f"clip{slot}.mp4"
            _render([slot, clip], target, spec, partial, Path(tmp))
            final = out_dir / f"clip{slot}.mp4"
            shutil.move(str(partial), final)
            paths.append(final)
    sidecar = write_sidecar(order, out_dir / "order.json")
    return ComposedClips(paths[0], paths[1], sidecar)
