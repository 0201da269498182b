"""Corrupted copies of the OmniACBench sample: each case breaks one thing and says what the report must name.

Sample lines used (see ``omnieval.benchmarks.acbench._sample``): 1-2 speech_rate fast, 3-4 slow,
5-6 phonation, 7-14 pronunciation (7 = lead/leash, 8 = lead/metal), 15-26 emotion, 27-32 accent,
33-40 timbre.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from data._corrupt import Case  # one corruption and the fragments a problem line must contain

MANIFEST = "manifest.jsonl"


def edit_line(root: Path, number: int, mutate: Callable[[dict[str, Any]], Any]) -> None:
    """Apply ``mutate`` to the object on manifest line ``number`` (1-based) and write it back."""
    path = root / MANIFEST
    lines = path.read_text(encoding="utf-8").splitlines()
    obj = json.loads(lines[number - 1])
    mutate(obj)
    lines[number - 1] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def replace_line(root: Path, number: int, raw: bytes) -> None:
    """Replace manifest line ``number`` (1-based) with ``raw`` bytes."""
    path = root / MANIFEST
    lines = path.read_bytes().splitlines()
    lines[number - 1] = raw
    path.write_bytes(b"\n".join(lines) + b"\n")


def _set(number: int, name: str, value: Any) -> Callable[[Path], None]:
    return lambda root: edit_line(root, number, lambda obj: obj.__setitem__(name, value))


def _drop(number: int, name: str) -> Callable[[Path], None]:
    return lambda root: edit_line(root, number, lambda obj: obj.pop(name))


def _raw(number: int, raw: bytes) -> Callable[[Path], None]:
    return lambda root: replace_line(root, number, raw)


def _write(rel: str, data: bytes) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        (root / rel).write_bytes(data)

    return apply


def _delete(rel: str) -> Callable[[Path], None]:
    return lambda root: (root / rel).unlink()


def _outside(root: Path) -> None:
    (root.parent / "outside.png").write_bytes((root / "images" / "ac-0012.png").read_bytes())
    edit_line(root, 12, lambda obj: obj.__setitem__("image", "../outside.png"))


def _symlink_out(root: Path) -> None:
    outside = root.parent / "elsewhere.wav"
    outside.write_bytes((root / "instructions" / "ac-0013.wav").read_bytes())
    (root / "instructions" / "ac-0013.wav").unlink()
    os.symlink(outside, root / "instructions" / "ac-0013.wav")


def _heteronym(number: int, mutate: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    return lambda root: edit_line(root, number, lambda obj: mutate(obj["heteronym"]))


CASES: tuple[Case, ...] = (
    Case(
        "unknown feature",
        _set(5, "feature", "loudness"),
        ("manifest.jsonl line 5 (id ac-0005)", "feature: 'loudness' is not a feature"),
    ),
    Case(
        "target value not in feature",
        _set(1, "target_value", "loud"),
        (
            "manifest.jsonl line 1 (id ac-0001): target_value: 'loud' is not a value of speech_rate (fast, slow)",
        ),
    ),
    Case(
        "missing field", _drop(3, "image_keywords"), ("line 3 (id ac-0003)", "image_keywords: missing field")
    ),
    Case("duplicate id", _set(4, "id", "ac-0002"), ("line 4 (id ac-0002)", "id: duplicate of line 2")),
    Case("non-JSON line", _raw(6, b'{"id": "ac-0006", '), ("manifest.jsonl line 6:", "not valid JSON")),
    Case("not an object", _raw(6, b"[1, 2]"), ("manifest.jsonl line 6:", "expected a JSON object")),
    Case("non-UTF-8 line", _raw(6, b'{"id": "ac-\xff"}'), ("manifest.jsonl line 6:", "not UTF-8")),
    Case("wrong type", _set(9, "script", 3), ("line 9 (id ac-0009)", "script: expected a string, got int 3")),
    Case("empty script", _set(16, "script", "   "), ("line 16 (id ac-0016)", "script: empty")),
    Case(
        "keywords not a list",
        _set(17, "image_keywords", "a face"),
        ("line 17 (id ac-0017)", "image_keywords: expected a non-empty list"),
    ),
    Case(
        "media missing",
        _delete("images/ac-0010.png"),
        ("line 10 (id ac-0010)", "image: images/ac-0010.png: file not found"),
    ),
    Case(
        "undecodable image",
        _write("images/ac-0011.png", b"\x89PNG\r\n\x1a\nnot really a picture"),
        ("line 11 (id ac-0011)", "image: images/ac-0011.png: cannot decode image"),
    ),
    Case(
        "undecodable audio",
        _write("instructions/ac-0014.wav", b"RIFF\x00\x00\x00\x00WAVEjunkjunk"),
        ("line 14 (id ac-0014)", "instruction_audio: instructions/ac-0014.wav:"),
    ),
    Case(
        "path outside the folder",
        _outside,
        ("line 12 (id ac-0012)", "image: path '../outside.png' leaves the dataset folder"),
    ),
    Case(
        "absolute path",
        _set(18, "instruction_audio", "/etc/hostname"),
        ("line 18 (id ac-0018)", "instruction_audio: path '/etc/hostname' is absolute"),
    ),
    Case(
        "symlink out of the folder",
        _symlink_out,
        (
            "line 13 (id ac-0013)",
            "instruction_audio: path 'instructions/ac-0013.wav' leaves the dataset folder",
        ),
    ),
    Case(
        "heteronym missing",
        _drop(7, "heteronym"),
        ("line 7 (id ac-0007)", "heteronym: missing field (required for pronunciation instances)"),
    ),
    Case(
        "heteronym on another feature",
        _set(1, "heteronym", {"word": "train", "reading": "a", "readings": {"a": ["T"], "b": ["D"]}}),
        ("line 1 (id ac-0001)", "heteronym: only pronunciation instances carry one"),
    ),
    Case(
        "heteronym reading unknown",
        _heteronym(8, lambda h: h.__setitem__("reading", "gold")),
        ("line 8 (id ac-0008)", "heteronym.reading: 'gold' is not a key of heteronym.readings"),
    ),
    Case(
        "heteronym bad phone",
        _heteronym(8, lambda h: h["readings"].__setitem__("metal", ["L", "QQ", "D"])),
        ("line 8 (id ac-0008)", "heteronym.readings.metal: 'QQ' is not an ARPAbet phone"),
    ),
    Case(
        "heteronym word not in script",
        _heteronym(8, lambda h: h.__setitem__("word", "tin")),
        ("line 8 (id ac-0008)", "heteronym.word: 'tin' does not occur in the script"),
    ),
)
