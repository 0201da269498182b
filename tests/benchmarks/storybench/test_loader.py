"""Loader and strict validation of the Omni-StoryBench release layout (FORMATS.md section 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data._corrupt import CASES, PARQUET, Case, read_rows, rewrite_rows
from omnieval.benchmarks.storybench._record import StoryBenchDataset, load_storybench, validate_storybench
from omnieval.benchmarks.storybench._records import Character
from omnieval.benchmarks.storybench._schema import REQUIRED_COLUMNS, SPEECH_LABELS
from omnieval.errors import DataError


def test_sample_loads_as_typed_records(sample_root: Path) -> None:
    dataset = load_storybench(sample_root)
    rows = read_rows(sample_root)
    assert isinstance(dataset, StoryBenchDataset)
    assert len(dataset) == len(rows) >= 16
    assert [t.index for t in dataset] == list(range(len(rows)))
    assert dataset.ids == tuple(r["id"] for r in rows)
    assert len(dataset.books) >= 4
    first = dataset[0]
    assert first.current_image.is_absolute() and first.current_image.is_file()
    assert first.current_text == rows[0]["current_text"].strip()
    assert first.condition.as_dict()["text content"] == rows[0]["text_instruction"]
    assert first.target_speech.as_dict()["line"] == rows[0]["speech_utterance"]
    assert dataset.by_id(rows[3]["id"]).index == 3


def test_records_reproduce_the_json_files(sample_root: Path) -> None:
    for t in load_storybench(sample_root):
        sample = json.loads(t.sample_path.read_text(encoding="utf-8"))
        meta = json.loads(t.metadata_path.read_text(encoding="utf-8"))
        assert t.metadata.as_dict() == meta
        assert t.condition.as_dict() == sample["next_page_condition"]
        assert t.target_speech.as_dict() == sample["ground_truth"]["speech"]
        # Key order matters: prompts render these objects and hash the prompt.
        assert list(t.condition.as_dict()["characters"][0]) == list(
            sample["next_page_condition"]["characters"][0]
        )


def test_task_inputs_never_carry_the_next_page(sample_root: Path) -> None:
    t = load_storybench(sample_root)[0]
    inputs = t.task_inputs()
    flat = json.dumps({k: str(v) for k, v in vars(inputs).items()})
    assert str(t.next_image) not in flat
    assert t.next_text not in flat


def test_character_round_trip_keeps_unknown_keys_and_order() -> None:
    obj = {"visibility": "visible", "name": "Pip", "mood": {"level": 3}}
    c = Character.from_obj(obj)
    assert (
        c.name == "Pip" and c.description == "" and c.extra == {"visibility": "visible", "mood": {"level": 3}}
    )
    assert c.as_dict() == obj and list(c.as_dict()) == list(obj)
    assert Character("Hazel", "an owl").as_dict() == {"name": "Hazel", "description": "an owl"}


def test_validate_reports_ok(sample_root: Path) -> None:
    report = validate_storybench(sample_root)
    assert report.ok and report.problems == [] and report.n_rows == 20
    assert report.dataset is not None


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_problem_names_row_field_and_file(sample_copy: Path, case: Case) -> None:
    case.apply(sample_copy)
    report = validate_storybench(sample_copy)
    assert not report.ok and report.dataset is None
    matching = [p for p in report.problems if all(f in p for f in case.fragments)]
    assert matching, f"no problem line contains {case.fragments}:\n" + "\n".join(report.problems)
    with pytest.raises(DataError) as info:
        load_storybench(sample_copy)
    assert info.value.problems == report.problems
    assert info.value.exit_code == 2


def test_every_problem_is_reported_at_once(sample_copy: Path) -> None:
    for case in CASES[1:]:
        if case.name in {"duplicated id", "symlink out of the folder"}:
            continue
        case.apply(sample_copy)
    problems = validate_storybench(sample_copy).problems
    for case in CASES[1:]:
        if case.name in {"duplicated id", "symlink out of the folder"}:
            continue
        assert any(all(f in p for f in case.fragments) for p in problems), case.name


def test_missing_and_unreadable_parquet(sample_copy: Path, tmp_path: Path) -> None:
    (sample_copy / PARQUET).write_bytes(b"PAR1 not really")
    report = validate_storybench(sample_copy)
    assert len(report.problems) == 1 and report.problems[0].startswith(f"{PARQUET}: cannot read parquet")
    (sample_copy / PARQUET).unlink()
    assert validate_storybench(sample_copy).problems[0].startswith(f"{PARQUET}: file not found")
    assert validate_storybench(tmp_path / "nowhere").problems[0].endswith("dataset folder not found")


def test_empty_table_is_a_problem(sample_copy: Path) -> None:
    schema = pq.read_schema(sample_copy / PARQUET)
    pq.write_table(schema.empty_table(), sample_copy / PARQUET)
    assert validate_storybench(sample_copy).problems == [f"{PARQUET}: the table has no rows"]


def test_characters_as_list_of_structs_are_accepted(sample_copy: Path) -> None:
    rows = read_rows(sample_copy)
    for row in rows:
        for column in ("condition_characters", "book_characters"):
            row[column] = json.loads(row[column])
    pq.write_table(pa.Table.from_pylist(rows), sample_copy / PARQUET)
    dataset = load_storybench(sample_copy)
    assert dataset[0].condition.characters[0].name == "Pip"


def test_non_string_value_is_named(sample_copy: Path) -> None:
    rewrite_rows(sample_copy, lambda rows: rows[7].__setitem__("style", None))
    problems = validate_storybench(sample_copy).problems
    assert any("row 7 " in p and "field 'style'" in p and "got null" in p for p in problems)


def test_schema_constants_follow_formats_md() -> None:
    assert len(REQUIRED_COLUMNS) == 29 and len(set(REQUIRED_COLUMNS)) == 29
    assert SPEECH_LABELS["speech_gender"] == ("female", "male")
