"""The record framework's options PRISM-Bench needs, on hand-made folders: a source's word for an
unknown key and the kinds of problem a line reports first, a media check with several problems (each
on its own line), and validators that read the raw row."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated

from pydantic import ValidationInfo, field_validator

from omnieval.benchmarks._records import DECLARED, MANIFEST, JsonLines, Media, Record, RowContext, read_rows


def _size_problems(path: Path, label: str) -> tuple[str, ...]:
    size = path.stat().st_size
    return tuple(f"{label}: {why}" for why, bad in (("too small", size < 4), ("odd", size % 2)) if bad)


BLOB = Media("file", check=_size_problems)


class Row(Record):
    text: str
    blob: Annotated[Path, BLOB]
    size: int = 0

    @field_validator("size", mode="plain")
    @classmethod
    def _size(cls, raw: object, info: ValidationInfo) -> int:
        # The blob's input, whether or not the blob passed its checks.
        context = info.context
        if isinstance(context, RowContext) and "blob" in context.row:
            found = context.media(BLOB, context.row["blob"])
            if found.path is not None and found.path.stat().st_size != raw:
                raise ValueError("not the blob's size")
        assert isinstance(raw, int)
        return raw


def _folder(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    (tmp_path / "a.bin").write_bytes(b"xyz")  # 3 bytes: too small and odd
    (tmp_path / "b.bin").write_bytes(b"abcdef")
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return tmp_path


def test_a_media_check_may_report_several_problems(tmp_path: Path) -> None:
    root = _folder(
        tmp_path, [{"id": "a", "text": "x", "blob": "a.bin"}, {"id": "b", "text": "y", "blob": "b.bin"}]
    )
    found = read_rows(root, JsonLines("rows.jsonl"), Row)
    assert found.problems == [
        "rows.jsonl:1 (a): blob: a.bin: too small",
        "rows.jsonl:1 (a): blob: a.bin: odd",
    ]
    assert found.rows[1]["blob__present"] and not found.rows[1]["blob__decodable"]
    assert found.rows[2]["blob__decodable"]


def test_validators_read_the_raw_row(tmp_path: Path) -> None:
    root = _folder(tmp_path, [{"id": "a", "text": "x", "blob": "a.bin", "size": 2}])
    found = read_rows(root, JsonLines("rows.jsonl"), Row)
    assert "rows.jsonl:1 (a): size: Value error, not the blob's size" in found.problems


def test_unknown_key_wording_and_the_problems_a_line_reports_first(tmp_path: Path) -> None:
    rows: list[dict[str, object]] = [
        {"id": "a", "text": "x", "blob": "b.bin"},
        {"id": "a", "blob": "a.bin", "zz": 1},
    ]
    root = _folder(tmp_path, rows)
    default = read_rows(root, JsonLines("rows.jsonl", MANIFEST), Row).problems
    assert default == [
        "rows.jsonl line 2 (id a): text: missing field",
        "rows.jsonl line 2 (id a): blob: a.bin: too small",
        "rows.jsonl line 2 (id a): blob: a.bin: odd",
        "rows.jsonl line 2 (id a): zz: Extra inputs are not permitted",
        "rows.jsonl line 2 (id a): id: duplicate of line 1",
    ]
    wording = replace(MANIFEST, unknown_field="unknown field", first=("unknown", "missing", "duplicate"))
    assert read_rows(root, JsonLines("rows.jsonl", wording), Row).problems == [
        "rows.jsonl line 2 (id a): zz: unknown field",
        "rows.jsonl line 2 (id a): text: missing field",
        "rows.jsonl line 2 (id a): id: duplicate of line 1",
        "rows.jsonl line 2 (id a): blob: a.bin: too small",
        "rows.jsonl line 2 (id a): blob: a.bin: odd",
    ]
    assert DECLARED.first == () and DECLARED.unknown_field == ""  # the default wording is unchanged
