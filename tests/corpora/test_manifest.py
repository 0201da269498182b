from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from omnieval.corpora import ManifestRow, manifest_digest, read_manifest, write_manifest
from omnieval.errors import DataError


def _rows() -> list[ManifestRow]:
    return [
        ManifestRow("audio/a.flac", "female", "f1", "espeak-ng", "train", "aa", 1.5, 16000, "hello"),
        ManifestRow("audio/b.flac", "male", "m1", "espeak-ng", "test", "bb", 2.0, 16000),
    ]


def test_roundtrip_and_digest_ignores_order(tmp_path: Path) -> None:
    rows = _rows()
    path = write_manifest(rows, tmp_path / "manifest.jsonl")
    assert read_manifest(tmp_path) == rows
    shuffled = rows[::-1]
    assert manifest_digest(shuffled) == manifest_digest(rows)
    changed = [rows[0], ManifestRow(**{**rows[1].as_dict(), "split": "dev"})]
    assert manifest_digest(changed) != manifest_digest(rows)
    assert path.read_text().count("\n") == 2


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"split": "validation"}, "split 'validation'"),
        ({"path": "/abs/a.wav"}, "must be relative"),
        ({"path": "../a.wav"}, "must be relative"),
        ({"label": ""}, "field 'label' is empty"),
        ({"colour": "red"}, "unknown field(s) colour"),
        ({"sample_rate": "16k"}, "sample_rate must be an integer"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, patch: dict[str, object], message: str) -> None:
    good = _rows()[0].as_dict()
    lines = [json.dumps(good), json.dumps({**good, **patch})]
    (tmp_path / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        read_manifest(tmp_path)
    text = str(err.value)
    assert f"{tmp_path / 'manifest.jsonl'}:2" in text
    assert message in text


def test_missing_required_field_and_bad_json(tmp_path: Path) -> None:
    good = _rows()[0].as_dict()
    del good["speaker"]
    (tmp_path / "manifest.jsonl").write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(DataError) as err:
        read_manifest(tmp_path)
    assert "missing field(s) speaker" in str(err.value)
    assert "not valid JSON" in str(err.value)


def test_digest_is_stable_across_random_permutations() -> None:
    rows = [ManifestRow(f"a/{i}.wav", "x" if i % 2 else "y", f"s{i % 5}", "src", "train") for i in range(40)]
    digests = {manifest_digest(random.Random(seed).sample(rows, len(rows))) for seed in range(5)}
    assert len(digests) == 1


def test_line_that_is_not_utf8_names_file_and_line(tmp_path: Path) -> None:
    good = json.dumps(_rows()[0].as_dict())
    (tmp_path / "manifest.jsonl").write_bytes(good.encode() + b"\n" + b'{"text": "caf\xe9"}\n')
    with pytest.raises(DataError) as err:
        read_manifest(tmp_path)
    assert f"{tmp_path / 'manifest.jsonl'}:2: not UTF-8 text" in str(err.value)
