"""The PRISM-Bench manifest loader: the sample loads; every corruption is named by line, id and field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.prism._corrupt import CASES, Case, edit_line
from omnieval.benchmarks import BENCHMARKS
from omnieval.benchmarks.prism._record import (
    FRAME_COLUMNS,
    PrismInstance,
    candidate_video,
    load_prism,
    tags_problem,
    validate_prism,
)
from omnieval.benchmarks.prism._tags import SUBSETS, valid_tag_sets
from omnieval.errors import DataError


def test_sample_validates_and_covers_every_combination(prism_sample: Path) -> None:
    report = validate_prism(prism_sample)
    assert report.ok, report.problems
    dataset = report.dataset
    assert dataset is not None and report.n_rows == len(dataset) == 29
    assert [inst.index for inst in dataset] == list(range(29))
    assert [inst.line for inst in dataset] == list(range(1, 30))
    seen = [(inst.subset, frozenset(inst.active_tags)) for inst in dataset]
    expected = [(s, tags) for s in SUBSETS for tags in valid_tag_sets(s)]
    assert sorted(seen, key=str) == sorted(expected, key=str)  # each combination exactly once
    assert [len(dataset.subset(s)) for s in SUBSETS] == [7, 7, 15]
    for inst in dataset:
        assert inst.reference_video.is_file() and inst.reference_video.is_relative_to(dataset.root)
        assert inst.id.startswith({"on_screen": "on-", "off_screen": "off-", "mixed": "mix-"}[inst.subset])
        # visual events exist exactly where something on screen makes a sound event
        assert bool(inst.visual_events) == any(t in inst.active_tags for t in ("SOUND_A", "MUSIC_A"))


def test_instance_fields(prism_small: Path) -> None:
    dataset = load_prism(prism_small)
    inst = dataset.by_id("on-07")
    assert isinstance(inst, PrismInstance)
    assert (inst.index, inst.line, inst.subset) == (1, 2, "on_screen")
    assert inst.active_tags == ("SPEECH_A", "MUSIC_A", "SOUND_A")
    assert inst.audio_types == ("music", "sound", "speech")
    assert inst.visual_events == tuple(sorted(inst.visual_events)) and inst.visual_events[0] > 0
    assert "on screen" in inst.speaker and inst.notes
    assert len(inst.cells) == 12  # 3 coherence + 3 x 3 other dimensions
    assert dataset.ids == ("on-01", "on-07", "off-03", "mix-01")
    with pytest.raises(KeyError):
        dataset.by_id("nope")


def test_tags_are_stored_in_canonical_order(prism_small: Path) -> None:
    edit_line(prism_small, 4, lambda o: o.update(active_tags=["SPEECH_B", "SPEECH_A"]))
    assert load_prism(prism_small).by_id("mix-01").active_tags == ("SPEECH_A", "SPEECH_B")


def test_optional_fields_and_meta(prism_small: Path) -> None:
    edit_line(prism_small, 1, lambda o: o.update(meta={"source": "made here", "n": 3}))
    edit_line(prism_small, 3, lambda o: [o.pop(k, None) for k in ("speaker", "notes", "visual_events")])
    dataset = load_prism(prism_small)
    assert dataset.by_id("on-01").meta == {"source": "made here", "n": 3}
    bare = dataset.by_id("off-03")
    assert (bare.visual_events, bare.speaker, bare.notes, dict(bare.meta)) == ((), "", "", {})


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_corruption_is_named(prism_small: Path, case: Case) -> None:
    case.apply(prism_small)
    report = validate_prism(prism_small)
    assert not report.ok and report.dataset is None
    matching = [p for p in report.problems if all(f in p for f in case.fragments)]
    assert matching, f"no problem names {case.fragments}; got {report.problems}"


def test_every_problem_is_reported_at_once(prism_small: Path) -> None:
    edit_line(prism_small, 1, lambda o: o.update(subset="somewhere"))
    edit_line(prism_small, 2, lambda o: o.update(caption=""))
    edit_line(prism_small, 3, lambda o: o.update(active_tags=["SOUND_A"]))
    (prism_small / "videos" / "mix-01.mp4").unlink()
    report = validate_prism(prism_small)
    assert len(report.problems) == 4, report.problems
    assert [p.split(":")[0] for p in report.problems] == [
        "manifest.jsonl line 1 (id on-01)",
        "manifest.jsonl line 2 (id on-07)",
        "manifest.jsonl line 3 (id off-03)",
        "manifest.jsonl line 4 (id mix-01)",
    ]
    with pytest.raises(DataError) as info:
        load_prism(prism_small)
    assert info.value.problems == report.problems and info.value.exit_code == 2
    assert "4 problems" in str(info.value)


def test_missing_and_empty_manifest(tmp_path: Path) -> None:
    assert validate_prism(tmp_path / "nowhere").problems[0].endswith("dataset folder not found")
    report = validate_prism(tmp_path)
    assert not report.ok and "manifest.jsonl: file not found" in report.problems[0]
    (tmp_path / "manifest.jsonl").write_text("\n \n", encoding="utf-8")
    assert validate_prism(tmp_path).problems == [
        "manifest.jsonl: no instances (the file has no non-blank line)"
    ]
    with pytest.raises(DataError):
        load_prism(tmp_path)


def test_non_utf8_file(prism_small: Path) -> None:
    (prism_small / "manifest.jsonl").write_bytes("caf\u00e9".encode("latin-1") + b"\n")
    report = validate_prism(prism_small)
    assert report.problems == ["manifest.jsonl line 1: not UTF-8 text (byte 3)"]


def test_blank_lines_do_not_count(prism_small: Path) -> None:
    path = prism_small / "manifest.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([lines[0], "", lines[1]]) + "\n", encoding="utf-8")
    dataset = load_prism(prism_small)
    assert [(i.index, i.line) for i in dataset] == [(0, 1), (1, 3)]


def test_tags_problem_messages() -> None:
    assert tags_problem("on_screen", ["SPEECH_A", "MUSIC_B"]).startswith(
        "tag MUSIC_B is not valid for subset on_screen"
    )
    assert "three different audio types" in tags_problem("mixed", ["SPEECH_A", "SPEECH_B", "MUSIC_B"])
    assert tags_problem("mixed", ["SPEECH_A", "MUSIC_B", "SOUND_B"]) == ""
    assert tags_problem("mixed", ["SPEECH_A", "SPEECH_B"]) == ""


def test_fingerprint_is_stable_and_sensitive(prism_small: Path, tmp_path: Path) -> None:
    first = BENCHMARKS.get("prism").fingerprint(load_prism(prism_small))
    moved = shutil.copytree(prism_small, tmp_path / "elsewhere")
    assert BENCHMARKS.get("prism").fingerprint(load_prism(moved)).digest == first.digest
    assert first.n_rows == 4 and len(first.files) == 4 and len(first.texts) == 4
    assert first.parquet.path == "manifest.jsonl"
    assert {f.path for f in first.files} == {
        f"videos/{i}.mp4" for i in ("on-01", "on-07", "off-03", "mix-01")
    }
    edit_line(moved, 1, lambda o: o.update(caption=o["caption"] + " Then silence."))
    assert BENCHMARKS.get("prism").fingerprint(load_prism(moved)).digest != first.digest
    moved2 = shutil.copytree(prism_small, tmp_path / "bytes")
    data = bytearray((moved2 / "videos" / "on-01.mp4").read_bytes())
    data[-1] ^= 1  # one bit of the last atom: still decodes, different bytes
    (moved2 / "videos" / "on-01.mp4").write_bytes(bytes(data))
    assert BENCHMARKS.get("prism").fingerprint(load_prism(moved2)).digest != first.digest


def test_frame(prism_small: Path) -> None:
    dataset = load_prism(prism_small)
    frame = dataset.frame()
    assert tuple(frame.columns) == FRAME_COLUMNS
    assert frame["index"].tolist() == [0, 1, 2, 3]
    row = frame.iloc[1]
    record = json.loads((prism_small / "manifest.jsonl").read_text(encoding="utf-8").splitlines()[1])
    assert row["reference_video"] == record["reference_video"] == "videos/on-07.mp4"
    assert row["active_tags"] == "SPEECH_A,MUSIC_A,SOUND_A"
    assert [float(x) for x in row["visual_events"].split(",")] == record["visual_events"]
    assert frame.iloc[2]["visual_events"] == ""


def test_candidate_video_path(tmp_path: Path) -> None:
    assert candidate_video(tmp_path, 12) == tmp_path / "video" / "12" / "generated.mp4"
