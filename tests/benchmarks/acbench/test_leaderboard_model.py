"""The acbench leaderboard model: it is the aggregate's document, byte for byte, and nothing else."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from benchmarks._leaderboard_checks import (
    GENERATION,
    assert_file_round_trips,
    assert_round_trips,
    with_report_facts,
)
from benchmarks.acbench.test_aggregate import synthetic_scores
from omnieval.benchmarks import BENCHMARKS, acbench
from omnieval.benchmarks._leaderboard import declared_blocks, dump_document
from omnieval.benchmarks.acbench._aggregate import METRIC_KEYS, aggregate_acbench

HERE = Path(__file__).resolve().parent

_BLOCKS = declared_blocks(acbench.__file__)  # acbench/leaderboard.yaml
AcbenchLeaderboard, ConditionMetrics = _BLOCKS["AcbenchLeaderboard"], _BLOCKS["ConditionMetrics"]


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return aggregate_acbench(synthetic_scores(3))


def test_aggregate_document_round_trips(document: dict[str, Any], tmp_path: Path) -> None:
    # The synthetic table has a null metric (beta has no emotion evaluator) and a missing condition.
    beta = document["systems"]["beta"]["conditions"]
    assert beta["original"]["emotion_accuracy"] is None and "s_to_t" not in beta
    model = assert_round_trips(AcbenchLeaderboard, document, tmp_path)
    assert list(model.systems) == ["alpha", "beta"]


def test_report_stage_document_round_trips(document: dict[str, Any], tmp_path: Path) -> None:
    by_condition = {"original": GENERATION, "oracle": GENERATION}
    board = with_report_facts(document, {**GENERATION, "by_condition": by_condition})
    model = assert_round_trips(AcbenchLeaderboard, board, tmp_path)
    generation = model.systems["alpha"].generation
    assert generation is not None and generation.by_condition is not None
    assert model.systems["beta"].generation is None and model.suite == "test-suite"


def test_committed_sample_leaderboard_round_trips(tmp_path: Path) -> None:
    """The acbench sample run's leaderboard.json (with a cascade's generation block per condition)."""
    assert_file_round_trips(AcbenchLeaderboard, HERE / "leaderboard_sample.json", tmp_path)


def test_leaderboard_returns_the_typed_document() -> None:
    scores = synthetic_scores(5)
    board = BENCHMARKS.get("acbench").leaderboard(scores)
    assert isinstance(board.model, AcbenchLeaderboard)
    assert board.document == dump_document(board.model) == aggregate_acbench(scores)
    assert (
        board.mlflow_metrics["alpha"]["acbench.original.n"]
        == board.document["systems"]["alpha"]["conditions"]["original"]["n"]
    )


def test_metric_fields_follow_the_aggregate() -> None:
    assert tuple(ConditionMetrics.model_fields)[: len(METRIC_KEYS)] == METRIC_KEYS


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(extra=1),
        lambda d: d["systems"]["alpha"]["conditions"]["original"].update(cer=1.0),
        lambda d: d["systems"]["alpha"]["conditions"]["original"].pop("per"),
        lambda d: d["systems"]["alpha"]["conditions"]["original"].update(n="eight"),
        lambda d: d.update(benchmark="prism"),
    ],
    ids=["top-level-key", "metric-key", "missing-metric", "bad-type", "other-benchmark"],
)
def test_drift_fails_loudly(document: dict[str, Any], mutate: Any) -> None:
    changed = copy.deepcopy(document)
    mutate(changed)
    with pytest.raises(ValidationError):
        AcbenchLeaderboard.model_validate(changed)


def test_model_is_frozen(document: dict[str, Any]) -> None:
    model = AcbenchLeaderboard.model_validate(document)
    with pytest.raises(ValidationError):
        model.benchmark = "acbench"  # type: ignore[misc]
