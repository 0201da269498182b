"""The five input conditions: which form of each signal a system gets, and that only Oracle states the target."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from omnieval.benchmarks.acbench._conditions import CONDITIONS, TaskInputs, task_inputs
from omnieval.benchmarks.acbench._record import AcbenchDataset, load_acbench

# condition -> (instruction as audio, picture as image)
EXPECTED = {
    "original": (True, True),
    "s_to_t": (False, True),
    "i_to_t": (True, False),
    "all_to_t": (False, False),
    "oracle": (False, False),
}


@pytest.fixture(scope="module")
def dataset(ac_sample: Path) -> AcbenchDataset:
    return load_acbench(ac_sample)


def test_conditions_in_paper_order() -> None:
    assert CONDITIONS == ("original", "s_to_t", "i_to_t", "all_to_t", "oracle")
    assert set(EXPECTED) == set(CONDITIONS)


@pytest.mark.parametrize("condition", CONDITIONS)
def test_inputs_are_stripped_or_replaced_exactly(dataset: AcbenchDataset, condition: str) -> None:
    spoken, pictured = EXPECTED[condition]
    for inst in dataset:
        got = task_inputs(inst, condition)
        assert got.condition == condition
        assert got.script == inst.script
        assert got.instruction_audio == (inst.instruction_audio if spoken else None)
        assert got.instruction_text == (None if spoken else inst.instruction_text)
        assert got.image == (inst.image if pictured else None)
        assert got.image_keywords == (None if pictured else inst.image_keywords)


def test_only_oracle_states_the_target(dataset: AcbenchDataset) -> None:
    names = {f.name for f in dataclasses.fields(TaskInputs)}
    assert not names & {"feature", "target_value", "heteronym", "id"}
    for inst in dataset:
        for condition in CONDITIONS:
            statement = task_inputs(inst, condition).target_statement
            if condition != "oracle":
                assert statement is None
                continue
            assert statement is not None and inst.target_value in statement
            assert inst.feature.split("_")[0] in statement.replace(" ", "_")


def test_oracle_names_the_heteronym_reading(dataset: AcbenchDataset) -> None:
    inst = dataset.by_id("ac-0008")
    statement = task_inputs(inst, "oracle").target_statement
    assert (
        statement is not None and "'lead'" in statement and "'metal'" in statement and "L EH D" in statement
    )
    other = task_inputs(dataset.by_id("ac-0007"), "oracle").target_statement
    assert other is not None and "'leash'" in other


def test_fast_statement_reads_plainly(dataset: AcbenchDataset) -> None:
    assert task_inputs(dataset[0], "oracle").target_statement == "Deliver the script with speech rate = fast."


def test_condition_spelling_is_forgiven_but_unknown_ones_fail(dataset: AcbenchDataset) -> None:
    assert task_inputs(dataset[0], "S-to-T").condition == "s_to_t"
    with pytest.raises(ValueError, match="original, s_to_t, i_to_t, all_to_t, oracle"):
        task_inputs(dataset[0], "text_only")
