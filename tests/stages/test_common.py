from __future__ import annotations

from pathlib import Path

from omnieval.stages._common import StatePaths, content_key, is_fresh, tree_digest, write_stamp


def test_stamp_is_fresh_only_for_the_same_key_and_existing_outputs(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "state")
    out = tmp_path / "state" / "out.txt"
    key = content_key(stage="x", inputs={"a": 1})
    assert not is_fresh(paths, "x", key, [out])
    out.parent.mkdir(parents=True)
    out.write_text("done")
    write_stamp(paths, "x", key)
    assert is_fresh(paths, "x", key, [out])
    assert not is_fresh(paths, "x", content_key(stage="x", inputs={"a": 2}), [out])
    out.unlink()
    assert not is_fresh(paths, "x", key, [out])


def test_content_key_ignores_dict_order_and_tree_digest_sees_bytes(tmp_path: Path) -> None:
    assert content_key(a=1, b={"x": 1, "y": 2}) == content_key(b={"y": 2, "x": 1}, a=1)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("1")
    before = tree_digest(tmp_path / "d")
    (tmp_path / "d" / "f").write_text("2")
    assert tree_digest(tmp_path / "d") != before
    assert tree_digest(tmp_path / "missing") == "absent"
