"""The OmniACBench manifest loader: the sample loads; every corruption is named by line, id and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.acbench._corrupt import CASES, Case, edit_line
from omnieval.benchmarks.acbench._record import (
    FEATURES,
    FRAME_COLUMNS,
    AcbenchInstance,
    canonical_target,
    fingerprint_acbench,
    load_acbench,
    validate_acbench,
)
from omnieval.errors import DataError


def test_sample_validates(ac_sample: Path) -> None:
    report = validate_acbench(ac_sample)
    assert report.ok, report.problems
    assert report.dataset is not None
    assert report.n_rows == len(report.dataset) == 40
    assert [inst.index for inst in report.dataset] == list(range(40))
    assert all(inst.instruction_audio.is_file() and inst.image.is_file() for inst in report.dataset)


def test_sample_covers_every_feature_and_target(ac_sample: Path) -> None:
    dataset = load_acbench(ac_sample)
    seen = {(inst.feature, inst.target_value) for inst in dataset}
    assert seen == {(f, v) for f, values in FEATURES.items() for v in values}


def test_heteronym_only_on_pronunciation(ac_sample: Path) -> None:
    for inst in load_acbench(ac_sample):
        assert (inst.heteronym is not None) == (inst.feature == "pronunciation")
        if inst.heteronym is not None:
            assert inst.heteronym.word in inst.script.lower()
            assert inst.heteronym.target_phones == inst.heteronym.readings[inst.heteronym.reading]
            assert len(inst.heteronym.readings) == 2  # the target reading and one other


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_corruption_is_named(ac_copy: Path, case: Case) -> None:
    case.apply(ac_copy)
    report = validate_acbench(ac_copy)
    assert not report.ok and report.dataset is None
    matching = [p for p in report.problems if all(f in p for f in case.fragments)]
    assert matching, f"no problem names {case.fragments}; got {report.problems}"


def test_every_problem_is_reported_at_once(ac_copy: Path) -> None:
    for case in (CASES[0], CASES[1], CASES[2]):
        case.apply(ac_copy)
    (ac_copy / "images" / "ac-0020.png").unlink()
    report = validate_acbench(ac_copy)
    assert len(report.problems) == 4, report.problems
    with pytest.raises(DataError) as info:
        load_acbench(ac_copy)
    assert info.value.problems == report.problems
    assert "4 problems" in str(info.value)


def test_missing_and_empty_manifest(tmp_path: Path) -> None:
    assert validate_acbench(tmp_path / "nowhere").problems[0].endswith("dataset folder not found")
    report = validate_acbench(tmp_path)
    assert not report.ok and "manifest.jsonl: file not found" in report.problems[0]
    (tmp_path / "manifest.jsonl").write_text("\n\n", encoding="utf-8")
    assert validate_acbench(tmp_path).problems == [
        "manifest.jsonl: no instances (the file has no non-blank line)"
    ]


def test_values_match_case_insensitively_and_store_canonically(ac_copy: Path) -> None:
    edit_line(ac_copy, 1, lambda o: o.update(feature="Speech Rate", target_value="FAST"))
    edit_line(ac_copy, 27, lambda o: o.update(feature="global_accent", target_value="uk"))
    dataset = load_acbench(ac_copy)
    assert (dataset[0].feature, dataset[0].target_value) == ("speech_rate", "fast")
    assert (dataset[26].feature, dataset[26].target_value) == ("accent", "UK")
    assert canonical_target("timbre", "Elderly_Female") == "elderly female"


def test_blank_lines_do_not_shift_the_index(ac_copy: Path) -> None:
    path = ac_copy / "manifest.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([lines[0], "", *lines[1:]]) + "\n", encoding="utf-8")
    dataset = load_acbench(ac_copy)
    assert dataset[1].id == "ac-0002" and dataset[1].index == 1
    edit_line(ac_copy, 3, lambda o: o.update(target_value="loud"))  # file line 3 is ac-0002 now
    assert (
        validate_acbench(ac_copy).problems[0].startswith("manifest.jsonl line 3 (id ac-0002): target_value")
    )


def test_fingerprint_ignores_location_and_sees_every_byte(ac_sample: Path, ac_copy: Path) -> None:
    original = fingerprint_acbench(load_acbench(ac_sample))
    assert fingerprint_acbench(load_acbench(ac_copy)).digest == original.digest
    assert original.n_rows == 40 and original.parquet.path == "manifest.jsonl"
    assert len(original.files) == 80 and len(original.texts) == 40 * 3
    picture = ac_copy / "images" / "ac-0001.png"
    from PIL import Image

    with Image.open(picture) as img:
        img.convert("RGB").rotate(90).save(picture)
    assert fingerprint_acbench(load_acbench(ac_copy)).digest != original.digest


def test_fingerprint_sees_targets(ac_copy: Path) -> None:
    before = fingerprint_acbench(load_acbench(ac_copy)).digest
    edit_line(ac_copy, 1, lambda o: o.update(target_value="slow"))
    assert fingerprint_acbench(load_acbench(ac_copy)).digest != before


def test_frame_is_plain(ac_sample: Path) -> None:
    dataset = load_acbench(ac_sample)
    frame = dataset.frame()
    assert tuple(frame.columns) == FRAME_COLUMNS and len(frame) == 40
    row = frame.iloc[6]
    assert row["instruction_audio"] == "instructions/ac-0007.wav" and row["heteronym_word"] == "lead"
    assert frame.iloc[0]["heteronym_word"] == ""
    for column in FRAME_COLUMNS:
        values = frame[column].tolist()
        assert len(values) == 40 and all(isinstance(v, int if column == "index" else str) for v in values), (
            column
        )
    json.dumps(frame.to_dict(orient="records"))


def test_instances_are_hashable(ac_sample: Path) -> None:
    dataset = load_acbench(ac_sample)
    assert len({*dataset.instances}) == 40
    assert isinstance(dataset.by_id("ac-0007"), AcbenchInstance)
    assert dataset.ids[0] == "ac-0001"


def test_media_shared_by_lines_is_fine(ac_copy: Path) -> None:
    edit_line(ac_copy, 2, lambda o: o.update(image="images/ac-0001.png"))
    assert validate_acbench(ac_copy).ok
