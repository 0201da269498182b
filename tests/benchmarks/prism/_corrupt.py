"""Corrupted copies of the four-clip PRISM-Bench dataset: each case breaks one thing and names the report line.

Lines of :func:`conftest.prism_small`: 1 on-01 (SPEECH_A), 2 on-07 (SPEECH_A, MUSIC_A, SOUND_A),
3 off-03 (SOUND_B), 4 mix-01 (SPEECH_A, SPEECH_B).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnieval.benchmarks.prism._media import run_ffmpeg

MANIFEST = "manifest.jsonl"


@dataclass(frozen=True)
class Case:
    """One corruption and the fragments that one problem line must contain (line, id, field, reason)."""

    name: str
    apply: Callable[[Path], None]
    fragments: tuple[str, ...]


def edit_line(root: Path, number: int, mutate: Callable[[dict[str, Any]], Any]) -> None:
    """Apply ``mutate`` to the object on manifest line ``number`` (1-based) and write it back."""
    path = root / MANIFEST
    lines = path.read_text(encoding="utf-8").splitlines()
    obj = json.loads(lines[number - 1])
    mutate(obj)
    lines[number - 1] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def replace_line(root: Path, number: int, raw: bytes) -> None:
    path = root / MANIFEST
    lines = path.read_bytes().splitlines()
    lines[number - 1] = raw
    path.write_bytes(b"\n".join(lines) + b"\n")


def lavfi_clip(
    path: Path, *, seconds: float = 2.0, fps: int = 15, video: bool = True, audio: bool = True
) -> Path:
    """A synthetic clip made by ffmpeg's test sources (64 x 48 colour bars, a 440 Hz tone)."""
    args: list[str] = []
    if video:
        args += ["-f", "lavfi", "-i", f"testsrc=size=64x48:rate={fps}:duration={seconds}"]
    if audio:
        args += ["-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=16000:duration={seconds}"]
    codecs = (["-c:v", "libx264", "-pix_fmt", "yuv420p"] if video else []) + (
        ["-c:a", "aac"] if audio else []
    )
    run_ffmpeg([*args, *codecs, "-f", "mp4", str(path)], path=path)
    return path


def _set(number: int, name: str, value: Any) -> Callable[[Path], None]:
    return lambda root: edit_line(root, number, lambda obj: obj.__setitem__(name, value))


def _drop(number: int, name: str) -> Callable[[Path], None]:
    return lambda root: edit_line(root, number, lambda obj: obj.pop(name))


def _raw(number: int, raw: bytes) -> Callable[[Path], None]:
    return lambda root: replace_line(root, number, raw)


def _clip(rel: str, **kwargs: Any) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        (root / rel).unlink()
        lavfi_clip(root / rel, **kwargs)

    return apply


def _write(rel: str, data: bytes) -> Callable[[Path], None]:
    return lambda root: (root / rel).write_bytes(data)


def _outside(root: Path) -> None:
    (root.parent / "outside.mp4").write_bytes((root / "videos" / "on-07.mp4").read_bytes())
    edit_line(root, 2, lambda obj: obj.__setitem__("reference_video", "../outside.mp4"))


def _symlink_out(root: Path) -> None:
    outside = root.parent / "elsewhere.mp4"
    outside.write_bytes((root / "videos" / "off-03.mp4").read_bytes())
    (root / "videos" / "off-03.mp4").unlink()
    os.symlink(outside, root / "videos" / "off-03.mp4")


CASES: tuple[Case, ...] = (
    Case("non-JSON line", _raw(2, b'{"id": "on-07", '), ("manifest.jsonl line 2:", "not valid JSON")),
    Case("not an object", _raw(2, b"[1, 2]"), ("manifest.jsonl line 2:", "expected a JSON object")),
    Case("non-UTF-8 line", _raw(2, b'{"id": "on-\xff"}'), ("manifest.jsonl line 2:", "not UTF-8")),
    Case(
        "missing field", _drop(3, "caption"), ("manifest.jsonl line 3 (id off-03): caption: missing field",)
    ),
    Case(
        "unknown subset",
        _set(1, "subset", "onscreen"),
        (
            "line 1 (id on-01): subset: unknown subset 'onscreen' (expected one of on_screen, off_screen, mixed)",
        ),
    ),
    Case(
        "unknown tag",
        _set(1, "active_tags", ["SPEECH_C"]),
        ("line 1 (id on-01)", "active_tags: unknown tag 'SPEECH_C'"),
    ),
    Case(
        "tag invalid for subset",
        _set(3, "active_tags", ["MUSIC_A"]),
        ("manifest.jsonl line 3 (id off-03): active_tags: tag MUSIC_A is not valid for subset off_screen",),
    ),
    Case(
        "mixed without an off-screen tag",
        _set(4, "active_tags", ["SPEECH_A", "MUSIC_A"]),
        ("line 4 (id mix-01)", "active_tags:", "not a valid combination for subset mixed", "off-screen tag"),
    ),
    Case(
        "repeated tag",
        _set(1, "active_tags", ["SPEECH_A", "SPEECH_A"]),
        ("line 1 (id on-01)", "active_tags: a tag is repeated"),
    ),
    Case(
        "tags not a list",
        _set(1, "active_tags", "SPEECH_A"),
        ("line 1 (id on-01)", "active_tags: expected a non-empty list"),
    ),
    Case("blank caption", _set(2, "caption", "  \n "), ("line 2 (id on-07)", "caption: empty")),
    Case(
        "caption not a string",
        _set(2, "caption", 7),
        ("line 2 (id on-07)", "caption: expected a string, got int 7"),
    ),
    Case("duplicate id", _set(2, "id", "on-01"), ("line 2 (id on-01)", "id: duplicate of line 1")),
    Case("unknown field", _set(1, "captoin", "x"), ("line 1 (id on-01)", "captoin: unknown field")),
    Case(
        "absolute path",
        _set(1, "reference_video", "/etc/hostname"),
        ("line 1 (id on-01)", "reference_video: path '/etc/hostname' is absolute"),
    ),
    Case(
        "path outside the folder",
        _outside,
        ("line 2 (id on-07)", "reference_video: path '../outside.mp4' leaves the dataset folder"),
    ),
    Case(
        "symlink out of the folder",
        _symlink_out,
        ("line 3 (id off-03)", "reference_video: path 'videos/off-03.mp4' leaves the dataset folder"),
    ),
    Case(
        "missing file",
        lambda root: (root / "videos" / "mix-01.mp4").unlink(),
        ("line 4 (id mix-01)", "reference_video: videos/mix-01.mp4: file not found"),
    ),
    Case(
        "not a video",
        _write("videos/on-01.mp4", b"this is plain text, not a clip\n" * 20),
        ("line 1 (id on-01)", "reference_video: videos/on-01.mp4: cannot decode video"),
    ),
    Case(
        "no video stream",
        _clip("videos/on-01.mp4", video=False),
        ("line 1 (id on-01)", "reference_video: videos/on-01.mp4: cannot decode video (no video stream)"),
    ),
    Case(
        "no audio stream",
        _clip("videos/on-01.mp4", audio=False),
        ("line 1 (id on-01)", "reference_video: videos/on-01.mp4: no audio stream"),
    ),
    Case(
        "too short",
        _clip("videos/on-01.mp4", seconds=0.3),
        ("line 1 (id on-01)", "reference_video: videos/on-01.mp4: duration 0.3", "outside 0.5-120 s"),
    ),
    Case(
        "frame rate too low",
        _clip("videos/on-01.mp4", fps=3),
        ("line 1 (id on-01)", "reference_video: videos/on-01.mp4: frame rate 3 fps is outside 5-120 fps"),
    ),
    Case(
        "event outside the clip",
        _set(2, "visual_events", [0.5, 9.0]),
        ("line 2 (id on-07)", "visual_events: event at 9 s is outside the clip (0-3 s)"),
    ),
    Case(
        "events out of order",
        _set(2, "visual_events", [1.0, 0.5]),
        ("line 2 (id on-07)", "visual_events: event times must be in ascending order"),
    ),
    Case("meta not an object", _set(1, "meta", [1]), ("line 1 (id on-01)", "meta: expected a JSON object")),
)
