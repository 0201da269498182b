"""Corrupted copies of the sample dataset: each case breaks one thing and says what the error must name."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

PARQUET = "data/omni_storybench.parquet"
FOX = "omnieval-fables/pip-and-the-brass-lantern"
SEA = "omnieval-fables/marta-of-gull-rock"
CITY = "omnieval-adventures/bolt-in-brick-city"
SNOW = "omnieval-adventures/lena-and-the-northern-lights"


def read_rows(root: Path) -> list[dict[str, Any]]:
    return pq.read_table(root / PARQUET).to_pylist()


def rewrite_rows(
    root: Path, mutate: Callable[[list[dict[str, Any]]], Any], drop: tuple[str, ...] = ()
) -> None:
    """Apply ``mutate`` to the parquet rows (in place) and write them back."""
    rows = read_rows(root)
    mutate(rows)
    columns = [c for c in rows[0] if c not in drop]
    pq.write_table(pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in rows]), root / PARQUET)


def edit_json(path: Path, mutate: Callable[[dict[str, Any]], Any]) -> None:
    obj = json.loads(path.read_text(encoding="utf-8"))
    mutate(obj)
    path.write_text(json.dumps(obj, indent=2), encoding="utf-8")


@dataclass(frozen=True)
class Case:
    """One corruption and the fragments that one problem line must contain (row, field, file, reason)."""

    name: str
    apply: Callable[[Path], None]
    fragments: tuple[str, ...]


def _set(row: int, column: str, value: Any) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        rewrite_rows(root, lambda rows: rows[row].__setitem__(column, value))

    return apply


def _drop_column(root: Path) -> None:
    rewrite_rows(root, lambda rows: None, drop=("ambient_sound",))


def _missing_image(root: Path) -> None:
    (root / f"images/{SEA}/p03.png").unlink()


def _corrupt_image(root: Path) -> None:
    path = root / f"images/{CITY}/p04.png"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _symlink_outside(root: Path) -> None:
    outside = root.parent / "elsewhere.png"
    target = root / f"images/{FOX}/p02.png"
    outside.write_bytes(target.read_bytes())
    target.unlink()
    os.symlink(outside, target)


def _bad_utf8(root: Path) -> None:
    (root / f"texts/{SNOW}/p04.txt").write_bytes(b"Tundra \xff\xfe barked.\n")


def _text_mismatch(root: Path) -> None:
    (root / f"texts/{FOX}/p01.txt").write_text("A different first page.\n", encoding="utf-8")


def _duplicate_row(root: Path) -> None:
    rewrite_rows(root, lambda rows: rows.__setitem__(6, dict(rows[5])))


def _sample_disagrees(root: Path) -> None:
    path = root / f"samples/{CITY}/p02__p03.json"
    edit_json(path, lambda o: o["ground_truth"]["speech"].__setitem__("emotion", "angry"))


def _sample_lacks_key(root: Path) -> None:
    path = root / f"samples/{SNOW}/p01__p02.json"
    edit_json(path, lambda o: o["next_page_condition"].pop("scene"))


def _sample_invalid(root: Path) -> None:
    (root / f"samples/{SEA}/p04__p05.json").write_text("{not json", encoding="utf-8")


def _metadata_disagrees(root: Path) -> None:
    edit_json(root / f"metadata/{FOX}.json", lambda o: o.__setitem__("genre", "horror"))


CASES: tuple[Case, ...] = (
    Case("missing column", _drop_column, (PARQUET, "missing required column(s): ambient_sound")),
    Case(
        "path leaves the folder",
        _set(2, "current_image", "../outside.png"),
        ("row 2 ", "field 'current_image'", "'../outside.png' leaves the dataset folder"),
    ),
    Case(
        "absolute path",
        _set(3, "next_text_path", "/etc/hostname"),
        ("row 3 ", "field 'next_text_path'", "is absolute"),
    ),
    Case(
        "symlink out of the folder",
        _symlink_outside,
        ("row 0 ", "field 'next_image'", f"images/{FOX}/p02.png' leaves the dataset folder"),
    ),
    Case(
        "missing image",
        _missing_image,
        ("row 6 ", "field 'next_image'", f"images/{SEA}/p03.png: file not found"),
    ),
    Case(
        "corrupt image",
        _corrupt_image,
        ("row 13 ", "field 'current_image'", f"images/{CITY}/p04.png: cannot decode image"),
    ),
    Case(
        "unreadable text",
        _bad_utf8,
        (
            "row 17 ",
            "field 'next_text_path'",
            f"texts/{SNOW}/p04.txt: not valid UTF-8 (byte 0xff at offset 7)",
        ),
    ),
    Case(
        "text file differs from its column",
        _text_mismatch,
        ("row 0 ", "field 'current_text_path'", f"texts/{FOX}/p01.txt differs from column 'current_text'"),
    ),
    Case(
        "invalid characters JSON",
        _set(4, "condition_characters", '[{"name": "Pip",}]'),
        ("row 4 ", "field 'condition_characters'", "invalid JSON"),
    ),
    Case(
        "characters not a list",
        _set(8, "book_characters", '{"name": "Marta"}'),
        ("row 8 ", "field 'book_characters'", "expected a JSON list of objects, got an object"),
    ),
    Case(
        "character without a name",
        _set(9, "condition_characters", '[{"emotion": "calm"}]'),
        ("row 9 ", "field 'condition_characters'", "item 0 has no non-empty string 'name'"),
    ),
    Case(
        "duplicated id",
        _duplicate_row,
        ("rows 5, 6 ", f"(id '{SEA}/p01__p02')", "field 'id'", "duplicated id"),
    ),
    Case(
        "id does not match its keys",
        _set(1, "id", f"{FOX}/p02__p09"),
        ("row 1 ", "field 'id'", f"id must be '{FOX}/p02__p03'"),
    ),
    Case(
        "label outside the vocabulary",
        _set(12, "speech_pitch", "very high"),
        ("row 12 ", "field 'speech_pitch'", "'very high' is not one of low, normal, high"),
    ),
    Case(
        "empty string", _set(14, "topic", "  "), ("row 14 ", "field 'topic'", "expected a non-empty string")
    ),
    Case(
        "sample JSON disagrees with its row",
        _sample_disagrees,
        (
            "row 11 ",
            "field 'speech_emotion'",
            f"samples/{CITY}/p02__p03.json has ground_truth.speech.emotion = 'angry'",
        ),
    ),
    Case(
        "sample JSON lacks a key",
        _sample_lacks_key,
        ("row 15 ", "field 'scene'", f"samples/{SNOW}/p01__p02.json lacks 'next_page_condition.scene'"),
    ),
    Case(
        "sample JSON is not JSON",
        _sample_invalid,
        ("row 8 ", "field 'sample_path'", f"samples/{SEA}/p04__p05.json: invalid JSON"),
    ),
    Case(
        "metadata JSON disagrees with its row",
        _metadata_disagrees,
        ("row 0 ", "field 'genre'", f"metadata/{FOX}.json has genre = 'horror' but the row has 'fairy tale'"),
    ),
)
