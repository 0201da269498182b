"""The storybench leaderboard model: it is the aggregate's document, byte for byte, and nothing else."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import ValidationError

from benchmarks._leaderboard_checks import (
    GENERATION,
    assert_file_round_trips,
    assert_round_trips,
    with_report_facts,
)
from omnieval.benchmarks import BENCHMARKS, RunFacts, storybench
from omnieval.benchmarks._leaderboard import declared_blocks, dump_document
from omnieval.benchmarks.storybench._aggregate import aggregate
from omnieval.benchmarks.storybench._names import COMPONENTS
from omnieval_testkit.storybench_synthetic import make_scores

HERE = Path(__file__).resolve().parent

_BLOCKS = declared_blocks(storybench.__file__)  # storybench/leaderboard.yaml
StorybenchLeaderboard, PolicyScores = _BLOCKS["StorybenchLeaderboard"], _BLOCKS["PolicyScores"]


def _scores(**kwargs: Any) -> pd.DataFrame:
    return make_scores(n_systems=3, n_instances=12, seed=7, benchmark="storybench", **kwargs)


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return aggregate(_scores()).to_dict()


def test_aggregate_document_round_trips(document: dict[str, Any], tmp_path: Path) -> None:
    model = assert_round_trips(StorybenchLeaderboard, document, tmp_path)
    entry = model.systems["sys00"].valid_only
    assert entry.speech_meta_per_field is not None and entry.judge_text is not None


def test_gaps_round_trip(tmp_path: Path) -> None:
    """No speech metadata (its per-field keys are absent, not null), a track no judge can score,
    and a system with no valid text output (valid-only nulls)."""
    scores = _scores(not_applicable_tracks=("image",))
    scores = scores[scores["component"] != "speech_meta"]
    no_text = (scores["system"] == "sys01") & (scores["track"] == "text")
    scores.loc[no_text, ["status", "value"]] = ["missing_output", float("nan")]
    document = aggregate(scores, unavailable={"integrated": "no omni model here"}).to_dict()
    model = assert_round_trips(StorybenchLeaderboard, document, tmp_path)
    valid_only = model.systems["sys01"].valid_only
    assert valid_only.bertscore_f1 is None and valid_only.judge_image is None
    assert valid_only.speech_meta_per_field is None
    assert "speech_meta_per_field" not in document["systems"]["sys01"]["valid_only"]
    assert model.missing_judges and model.not_computed


def test_report_stage_document_round_trips(document: dict[str, Any], tmp_path: Path) -> None:
    model = assert_round_trips(StorybenchLeaderboard, with_report_facts(document, GENERATION), tmp_path)
    assert model.systems["sys00"].generation is not None
    assert model.systems["sys01"].generation is None


def test_committed_nightly_leaderboard_round_trips(tmp_path: Path) -> None:
    """The nightly suite's leaderboard.json: unavailable judges, speech fields, a generating system."""
    assert_file_round_trips(StorybenchLeaderboard, HERE / "leaderboard_nightly.json", tmp_path)


def test_leaderboard_returns_the_typed_document() -> None:
    scores = _scores()
    facts = RunFacts(n_instances=14, judge_lineage={"paper": {"unavailable": {"integrated": "no model"}}})
    board = BENCHMARKS.get("storybench").leaderboard(scores, facts)
    assert isinstance(board.model, StorybenchLeaderboard)
    assert board.model.n_instances == 14
    expected = aggregate(scores, n_instances=14, unavailable={"integrated": "no model"}).to_dict()
    assert board.document == dump_document(board.model) == expected


def test_component_fields_follow_the_aggregate() -> None:
    aliases = [field.alias or name for name, field in PolicyScores.model_fields.items()]
    assert tuple(aliases[: len(COMPONENTS)]) == COMPONENTS


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(extra=1),
        lambda d: d["systems"]["sys00"]["valid_only"].update(judge_text=1.0),
        lambda d: d["systems"]["sys00"]["zero_filled"].pop("judge.text"),
        lambda d: d["systems"]["sys00"]["completeness"]["records"].update(bertscore_f1={"valid": 1}),
        lambda d: d.update(n_instances="twelve"),
    ],
    ids=["top-level-key", "python-name-instead-of-key", "missing-component", "short-counts", "bad-type"],
)
def test_drift_fails_loudly(document: dict[str, Any], mutate: Any) -> None:
    changed = copy.deepcopy(document)
    mutate(changed)
    with pytest.raises(ValidationError):
        StorybenchLeaderboard.model_validate(changed)
