"""The prism leaderboard model: it is the aggregate's document, byte for byte, and nothing else."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from benchmarks._leaderboard_checks import GENERATION, assert_round_trips, with_report_facts
from benchmarks.prism._tables import make_prism_scores
from omnieval.benchmarks import BENCHMARKS, RunFacts, prism
from omnieval.benchmarks._leaderboard import declared_document, dump_document
from omnieval.benchmarks.prism._aggregate import aggregate_prism

PrismLeaderboard = declared_document(prism.__file__)  # prism/leaderboard.yaml

SWAP = {
    "stage_1": {
        "cells": 12,
        "flips": 3,
        "flip_rate": 0.25,
        "strict_flips": 1,
        "strict_flip_rate": 1 / 12,
        "first_slot_wins": 0.5416666666666666,
    },
    "stage_2": {
        "cells": 0,
        "flips": 0,
        "flip_rate": None,
        "strict_flips": 0,
        "strict_flip_rate": None,
        "first_slot_wins": None,
    },
}
"""Shaped as ``prism._judge.swap_summary`` returns it (a stage without cells has null rates)."""

FACTS = RunFacts(
    judge_lineage={
        "panel-1": {"swap": SWAP, "unavailable": {"av_coherence": "no video model here"}},
        "panel-2": {"swap": None},
    }
)


@pytest.fixture(scope="module")
def scores() -> Any:
    # Invalid and missing rows leave some calibrated cells (and their totals) null.
    return make_prism_scores(seed=4, items_per_subset=2, invalid_rate=0.3, missing_rate=0.2)


def test_aggregate_document_round_trips(scores: Any, tmp_path: Path) -> None:
    document = aggregate_prism(scores, FACTS)
    model = assert_round_trips(PrismLeaderboard, document, tmp_path)
    assert model.panel is None and model.swap_check is None
    finals = [sub.final for system in model.systems.values() for sub in system.subsets.values()]
    assert None in finals and any(f is not None for f in finals)
    # off_screen has no AV coherence: the dimension is absent there, not null.
    assert "av_coherence" in model.ground_truth.subsets["mixed"].dimensions
    assert "av_coherence" not in model.ground_truth.subsets["off_screen"].dimensions


def test_leaderboard_with_swap_check_round_trips(scores: Any, tmp_path: Path) -> None:
    board = BENCHMARKS.get("prism").leaderboard(scores, FACTS)
    assert isinstance(board.model, PrismLeaderboard)
    assert board.model.swap_check is not None and list(board.model.swap_check) == ["panel-1"]
    expected = {**aggregate_prism(scores, FACTS), "swap_check": {"panel-1": SWAP}}
    assert_round_trips(PrismLeaderboard, expected, tmp_path)
    assert board.document == dump_document(board.model) == expected


def test_single_panel_document_round_trips(scores: Any, tmp_path: Path) -> None:
    document = aggregate_prism(scores, panel="panel-1")
    assert document["panel"] == "panel-1"
    assert_round_trips(PrismLeaderboard, document, tmp_path)


def test_report_stage_document_round_trips(scores: Any, tmp_path: Path) -> None:
    board = with_report_facts(aggregate_prism(scores), GENERATION)
    model = assert_round_trips(PrismLeaderboard, board, tmp_path)
    assert model.systems["sys-a"].generation is not None and model.mlflow_metrics is not None


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(extra=1),
        lambda d: d["systems"]["sys-a"]["subsets"]["mixed"].update(total=1.0),
        lambda d: d["ground_truth"].pop("subsets"),
        lambda d: d["coverage"]["sys-a"]["mixed"].update(cells=None),
        lambda d: d.update(swap_check={"p": {"stage_1": {"cells": 1}}}),
    ],
    ids=["top-level-key", "subset-key", "missing-key", "bad-type", "short-swap-stage"],
)
def test_drift_fails_loudly(scores: Any, mutate: Any) -> None:
    document = copy.deepcopy(aggregate_prism(scores))
    mutate(document)
    with pytest.raises(ValidationError):
        PrismLeaderboard.model_validate(document)
