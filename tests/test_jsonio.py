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
