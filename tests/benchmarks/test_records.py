"""The record framework on hand-made folders: media fields (missing, outside, wrong suffix, not
decodable, shared), a parquet source, sub-field problems, the gate and the fingerprint derived from
the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import pandas as pd
import pytest
import soundfile as sf
from pydantic import Field, field_validator, model_validator

from benchmarks.toy_caption import Caption, ToyCaption
from omnieval.audio import harmonic_tone
from omnieval.benchmarks._records import (
    MANIFEST,
    JsonLines,
    Media,
    ParquetRows,
    Record,
    Text,
    Wording,
    dataset_suite,
    dataset_table,
    fingerprint_records,
    gate_records,
    problems,
    read_rows,
)


class Clip(Record):
    """A row naming a picture and a spoken clip, with a closed set of moods and a checked note."""

    gate_fields: ClassVar[tuple[str, ...]] = ("note",)
    hashed_texts: ClassVar[tuple[str, ...]] = ("caption",)

    caption: Text
    mood: Literal["calm", "tense"]
    picture: Annotated[Path, Media("image", suffixes=(".png",))]
    voice: Annotated[Path, Media("audio", suffixes=(".wav",))]
    note: dict[str, str] = Field(default_factory=dict)

    @field_validator("note")
    @classmethod
    def _note(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [(key, "must be upper case") for key, text in value.items() if text != text.upper()]
        if bad:
            raise problems(bad)
        return value


def _folder(tmp_path: Path) -> Path:
    from PIL import Image

    root = tmp_path / "clips"
    (root / "media").mkdir(parents=True)
    Image.new("RGB", (4, 4), (200, 10, 10)).save(root / "media" / "red.png")
    Image.new("RGB", (4, 4), (10, 10, 200)).save(root / "media" / "blue.png")
    sf.write(root / "media" / "a.wav", harmonic_tone(220.0, 0.2), 16000)
    return root


def _row(rid: str, **change: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": rid,
        "caption": f"caption {rid}",
        "mood": "calm",
        "picture": "media/red.png",
        "voice": "media/a.wav",
    }
    row.update(change)
    return row


def _jsonl(root: Path, *rows: dict[str, object]) -> None:
    (root / "clips.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_media_fields_resolve_and_every_problem_is_named(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    (root / "media" / "noise.png").write_bytes(b"\x89PNG\r\n\x1a\nnot a picture")
    (root / "media" / "photo.jpg").write_bytes((root / "media" / "red.png").read_bytes())
    _jsonl(
        root,
        _row("a"),
        _row("b", picture="media/gone.png"),
        _row("c", picture="media/photo.jpg"),
        _row("d", picture="media/noise.png", voice="../outside.wav"),
        _row("e", mood="angry", caption="  ", note={"x": "low"}),
    )
    found = read_rows(root, JsonLines("clips.jsonl"), Clip)
    assert found.problems == [
        "clips.jsonl:2 (b): picture: media/gone.png: file not found",
        "clips.jsonl:3 (c): picture: media/photo.jpg: expected a .png file",
        "clips.jsonl:4 (d): picture: media/noise.png: cannot decode image (UnidentifiedImageError: cannot identify image file)",
        "clips.jsonl:4 (d): voice: path '../outside.wav' leaves the dataset folder",
        "clips.jsonl:5 (e): caption: empty",
        "clips.jsonl:5 (e): mood: Input should be 'calm' or 'tense'",
        "clips.jsonl:5 (e): note.x: must be upper case",
    ]
    assert found.instances == ()  # never half a dataset
    _jsonl(root, _row("a"), _row("b", picture="media/blue.png"), _row("c"))
    clean = read_rows(root, JsonLines("clips.jsonl"), Clip)
    assert not clean.problems and [i.index for i in clean.instances] == [0, 1, 2]
    record = clean.instances[1].record
    assert isinstance(record, Clip) and record.picture == (root / "media" / "blue.png").resolve()


def test_a_file_many_rows_name_is_checked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _folder(tmp_path)
    _jsonl(root, *(_row(f"r{i}") for i in range(5)))
    calls: list[object] = []
    inspect = Media.inspect

    def counting(self: Media, where: Path, rel: object) -> object:
        calls.append(rel)
        return inspect(self, where, rel)

    monkeypatch.setattr(Media, "inspect", counting)
    assert not read_rows(root, JsonLines("clips.jsonl"), Clip).problems
    assert sorted(map(str, calls)) == ["media/a.wav", "media/red.png"]


def test_a_parquet_source_names_the_row(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    rows = [_row("a"), _row("b", voice=None), _row("c", mood="loud"), _row("a")]
    pd.DataFrame(rows).to_parquet(root / "clips.parquet")
    found = read_rows(root, ParquetRows("clips.parquet"), Clip)
    assert found.problems == [
        "clips.parquet:2 (b): voice: Field required",  # a null cell is an absent field
        "clips.parquet:3 (c): mood: Input should be 'calm' or 'tense'",
        "clips.parquet:4 (a): id: repeats line 1",
    ]
    (root / "broken.parquet").write_bytes(b"PAR1 not really")
    broken = read_rows(root, ParquetRows("broken.parquet"), Clip)
    assert broken.problems == ["broken.parquet:1: not a readable parquet table (ArrowInvalid)"]


def test_the_manifest_wording(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    source = JsonLines("clips.jsonl", MANIFEST)
    assert read_rows(tmp_path / "nowhere", source, Clip).problems[0].endswith("dataset folder not found")
    assert read_rows(root, source, Clip).problems[0].startswith("clips.jsonl: file not found (expected at ")
    (root / "clips.jsonl").write_bytes(b'{"id": "a", "caption": "x"}\n[1]\n{"id": "\xff"}\n')
    assert read_rows(root, source, Clip).problems == [
        "clips.jsonl line 1 (id a): mood: missing field",
        "clips.jsonl line 1 (id a): picture: missing field",
        "clips.jsonl line 1 (id a): voice: missing field",
        "clips.jsonl line 2: expected a JSON object",
        "clips.jsonl line 3: not UTF-8 text (byte 8)",
    ]
    (root / "clips.jsonl").write_text("\n", encoding="utf-8")
    assert read_rows(root, source, Clip).problems == [
        "clips.jsonl: no instances (the file has no non-blank line)"
    ]


class Pair(Record):
    """Two lines that must differ (a check of the row as a whole), a file read as text."""

    first: str
    second: str
    notes: Annotated[
        Path, Media("file", check=lambda path, label: "" if path.suffix == ".txt" else f"{label}: not text")
    ]
    other: Annotated[Path, Media("file")]

    @model_validator(mode="after")
    def _differ(self) -> Pair:
        if self.first == self.second:
            raise problems([("first", "equals second"), ("second", "equals first")])
        return self


def test_an_own_wording_repeats_last_and_row_checks_name_their_fields(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    (tmp_path / "b.md").write_text("y", encoding="utf-8")
    wording = Wording(
        where="{file} row {line}",
        with_id="{where} (id {id!r})",
        problem="{where} field {field!r}: {why}",
        id_when_blank=True,
        duplicates="{file} rows {rows} (id {id!r}): repeated",
        row="row {line}",
    )
    rows = [
        {"id": "a", "first": "x", "second": "x", "notes": "a.txt", "other": "b.md"},
        {"id": " ", "first": "x", "second": "y", "notes": "b.md", "other": "b.md"},
        {"id": "a", "first": "x", "second": "y", "notes": "a.txt", "other": "a.txt"},
    ]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    found = read_rows(tmp_path, JsonLines("pairs.jsonl", wording), Pair)
    assert found.problems == [
        "pairs.jsonl row 1 (id 'a') field 'first': equals second",
        "pairs.jsonl row 1 (id 'a') field 'second': equals first",
        "pairs.jsonl row 2 (id ' ') field 'notes': b.md: not text",
        "pairs.jsonl rows 1, 3 (id 'a'): repeated",
    ]
    # The same file under a marker without the check is fine: markers differ by their checks.
    assert not [p for p in found.problems if "'other'" in p]
    assert found.rows[1]["record__problem"] == "row 1: first: equals second; second: equals first"
    assert found.rows[2]["notes__problem"] == "row 2: notes: b.md: not text"


def test_the_gate_is_derived_from_the_model(tmp_path: Path) -> None:
    suite = dataset_suite(Clip, "clips")
    columns = [(e["type"].removeprefix("expect_"), e["kwargs"].get("column")) for e in suite["expectations"]]
    assert columns == [
        ("table_row_count_to_be_between", None),
        ("column_values_to_be_in_set", "record__parses"),
        *(("column_values_to_not_be_null", f) for f in ("id", "caption", "mood", "picture", "voice")),
        ("column_values_to_be_unique", "id"),
        ("column_values_to_be_in_set", "mood__valid"),
        ("column_values_to_be_in_set", "note__valid"),
        ("column_values_to_be_in_set", "picture__present"),
        ("column_values_to_be_in_set", "picture__decodable"),
        ("column_values_to_be_in_set", "voice__present"),
        ("column_values_to_be_in_set", "voice__decodable"),
    ]
    root = _folder(tmp_path)
    _jsonl(root, _row("a"), _row("b"))
    assert gate_records(root, JsonLines("clips.jsonl"), Clip, "clips", None).success
    (root / "media" / "a.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    _jsonl(root, _row("a"), _row("b", picture="media/gone.png"))
    result = gate_records(root, JsonLines("clips.jsonl"), Clip, "clips", tmp_path / "gate.json")
    failed = {f.column: f.describe() for f in result.failed}
    assert "line 2: picture: media/gone.png: file not found" in failed["picture__present"]
    assert "voice__present" not in failed and "voice: media/a.wav:" in failed["voice__decodable"]
    assert json.loads((tmp_path / "gate.json").read_text())["suite"] == "clips_dataset"
    missing = gate_records(tmp_path / "empty", JsonLines("clips.jsonl"), Clip, "clips", None)
    assert missing.failed[0].expectation_type == "dataset_is_readable"


def test_the_fingerprint_hashes_media_content_and_texts(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    _jsonl(root, _row("a"), _row("b", picture="media/blue.png"), _row("c"))
    source = JsonLines("clips.jsonl")

    def fingerprint() -> str:
        records = [i.record for i in read_rows(root, source, Clip).instances]
        manifest = fingerprint_records(root, source.path(root), Clip, records)
        assert [f.path for f in manifest.files] == ["media/a.wav", "media/blue.png", "media/red.png"]
        assert [(t.id, t.field) for t in manifest.texts] == [
            ("a", "caption"),
            ("b", "caption"),
            ("c", "caption"),
        ]
        return manifest.digest

    before = fingerprint()
    from PIL import Image

    Image.new("RGB", (4, 4), (0, 200, 0)).save(root / "media" / "blue.png")
    assert fingerprint() != before  # the manifest did not change, a picture it names did
    table = dataset_table(Clip, read_rows(root, source, Clip).instances, root)
    assert table["picture"].tolist() == ["media/red.png", "media/blue.png", "media/red.png"]


def test_a_record_built_in_code_takes_its_paths_as_given() -> None:
    clip = Clip(id="x", caption="c", mood="tense", picture=Path("p.png"), voice="v.wav")  # type: ignore[arg-type]
    assert clip.voice == Path("v.wav")


def test_a_declared_benchmark_reads_a_parquet_with_media(tmp_path: Path) -> None:
    class PictureCaption(Caption):
        picture: Annotated[Path, Media("image")]

    class ParquetToy(ToyCaption):
        record = PictureCaption  # type: ignore[assignment]  # (a subclass; the pydantic plugin says its constructor differs)

        @property
        def source(self) -> ParquetRows:
            return ParquetRows("captions.parquet")

    root = _folder(tmp_path)
    rows = [{"id": "a", "prompt": "p", "reference": "r", "picture": "media/red.png"}]
    pd.DataFrame([*rows, {**rows[0], "id": "b", "picture": "media/none.png"}]).to_parquet(
        root / "captions.parquet"
    )
    bench = ParquetToy()
    assert bench.validate(root).problems == [
        "captions.parquet:2 (b): picture: media/none.png: file not found"
    ]
    assert not bench.gate(root, None).success
    pd.DataFrame(rows).to_parquet(root / "captions.parquet")
    report = bench.validate(root)
    assert report.ok and bench.gate(root, None).success
    manifest = bench.fingerprint(report.dataset)
    assert manifest.parquet.path == "captions.parquet" and [f.path for f in manifest.files] == [
        "media/red.png"
    ]
    assert bench.dataset_frame(root)["picture"].tolist() == ["media/red.png"]
