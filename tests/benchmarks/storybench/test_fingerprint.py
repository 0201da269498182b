"""Fingerprint manifest: file and normalized-text SHA-256, a digest that is stable and content-sensitive."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from PIL import Image

from data._corrupt import FOX, PARQUET, read_rows
from omnieval.benchmarks.storybench._record import fingerprint_storybench, load_storybench
from omnieval.benchmarks.storybench._schema import PATH_COLUMNS
from omnieval.data import normalize_text, sha256_text, write_manifest


def test_file_hashes_match_hashlib(sample_root: Path) -> None:
    manifest = fingerprint_storybench(load_storybench(sample_root))
    referenced = {r[c] for r in read_rows(sample_root) for c in PATH_COLUMNS}
    assert {f.path for f in manifest.files} == referenced
    for entry in manifest.files:
        data = (sample_root / entry.path).read_bytes()
        assert entry.sha256 == hashlib.sha256(data).hexdigest() and entry.size == len(data)
    assert manifest.parquet.path == PARQUET
    assert manifest.parquet.sha256 == hashlib.sha256((sample_root / PARQUET).read_bytes()).hexdigest()
    assert len(manifest.texts) == 20 * 6 and manifest.n_rows == 20


def test_text_hashes_are_normalized(sample_root: Path) -> None:
    dataset = load_storybench(sample_root)
    manifest = fingerprint_storybench(dataset)
    t = dataset[0]
    entry = next(e for e in manifest.texts if e.id == t.id and e.field == "next_text")
    words = " ".join(t.next_text.split()).casefold()
    assert entry.sha256 == hashlib.sha256(words.encode("utf-8")).hexdigest()
    assert sha256_text("  The  FOX\n ran ") == sha256_text("the fox ran")
    assert normalize_text("Ｆｏｘ") == "fox"  # NFKC folds full-width letters


def test_digest_is_stable_and_location_independent(sample_root: Path, tmp_path: Path) -> None:
    first = fingerprint_storybench(load_storybench(sample_root))
    again = fingerprint_storybench(load_storybench(sample_root))
    moved = tmp_path / "elsewhere"
    shutil.copytree(sample_root, moved)
    assert first.digest == again.digest == fingerprint_storybench(load_storybench(moved)).digest
    assert first.to_dict() == again.to_dict()


def test_digest_changes_when_a_file_changes(sample_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(sample_root, root)
    before = fingerprint_storybench(load_storybench(root))
    image_path = root / f"images/{FOX}/p03.png"
    with Image.open(image_path) as img:
        img = img.copy()
    img.putpixel((0, 0), (1, 2, 3))
    img.save(image_path, format="PNG")
    after = fingerprint_storybench(load_storybench(root))
    assert after.digest != before.digest
    changed = {e.path for e in after.files} - {f"{e.path}" for e in after.files if e in before.files}
    assert changed == {f"images/{FOX}/p03.png"}


def test_write_manifest_round_trips(sample_root: Path, tmp_path: Path) -> None:
    manifest = fingerprint_storybench(load_storybench(sample_root))
    path = write_manifest(manifest, tmp_path / "nested" / "manifest.json")
    loaded = json.loads(path.read_text(encoding="utf-8"))
    assert loaded == manifest.to_dict()
    assert loaded["digest"] == manifest.digest and loaded["algorithm"] == "sha256"
    assert not list(path.parent.glob(".*.tmp"))
