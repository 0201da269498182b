"""write_json_atomic: exact bytes per option set, and a failed write leaves the old file untouched."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from omnieval.jsonio import write_json_atomic


def test_bytes_follow_the_options(tmp_path: Path) -> None:
    doc = {"b": 1, "a": "é"}
    plain = write_json_atomic(tmp_path / "plain.json", doc)
    assert plain.read_text(encoding="utf-8") == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    stamped = write_json_atomic(tmp_path / "d" / "stamp.json", doc, sort_keys=True, ensure_ascii=True)
    assert stamped.read_text(encoding="utf-8") == '{\n  "a": "\\u00e9",\n  "b": 1\n}\n'
    assert write_json_atomic(tmp_path / "p.json", {"p": tmp_path}).read_text().count(str(tmp_path)) == 1


def test_failed_write_keeps_the_previous_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = write_json_atomic(tmp_path / "out.json", {"ok": True})
    with pytest.raises(ValueError):
        write_json_atomic(target, {"x": math.nan}, allow_nan=False)
    with pytest.raises(TypeError):
        write_json_atomic(target, {"x": object()}, default=None)
    assert json.loads(target.read_text()) == {"ok": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_jsonl_lines_carry_objects_or_problems_with_their_line(tmp_path: Path) -> None:
    from omnieval.jsonio import read_jsonl_objects

    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"a": 1}\n\n  \n[1, 2]\n{oops\n\xff\xfe{"b": 2}\n{"c": "\xc3\xa9"}\r\n')
    lines = list(read_jsonl_objects(path))
    assert [line.where for line in lines] == [f"{path}:{n}" for n in (1, 4, 5, 6, 7)]
    assert lines[0].obj == {"a": 1} and lines[0].problem is None
    assert lines[1].obj is None and lines[1].problem == f"{path}:4: expected a JSON object"
    assert lines[2].problem is not None and lines[2].problem.startswith(f"{path}:5: not valid JSON")
    assert lines[3].problem == f"{path}:6: not UTF-8 text (byte 0)"
    assert lines[4].obj == {"c": "é"}
