"""Each shipped benchmark's leaderboard document and per-instance components, pinned by digest.

Built from small fixed scores tables (the synthetic tables the benchmarks' own tests use), the
report stage's bytes of ``leaderboard.json`` (before and after the run facts it adds), the MLflow
metrics, the per-instance components ``omnieval compare`` pairs and the document's JSON schema
must not move when the code that builds them is reorganised: a digest here changes only with a
deliberate change of output, never to make a refactoring pass.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from benchmarks._leaderboard_checks import GENERATION, with_report_facts, written
from benchmarks.acbench.test_aggregate import synthetic_scores
from benchmarks.prism._tables import make_prism_scores
from omnieval.benchmarks import BENCHMARKS, RunFacts
from omnieval.benchmarks._leaderboard import dump_document
from omnieval_testkit.storybench_synthetic import make_scores

_SWAP = {
    "stage_1": {
        "cells": 12,
        "flips": 3,
        "flip_rate": 0.25,
        "strict_flips": 1,
        "strict_flip_rate": 1 / 12,
        "first_slot_wins": 0.5416666666666666,
    }
}


def _table(benchmark: str) -> tuple[pd.DataFrame, RunFacts | None]:
    if benchmark == "storybench":
        scores = make_scores(n_systems=3, n_instances=12, seed=7, benchmark="storybench")
        return scores, RunFacts(judge_lineage={"cpu": {"unavailable": {"integrated": "no omni model"}}})
    if benchmark == "prism":
        scores = make_prism_scores(seed=4, items_per_subset=2, invalid_rate=0.3, missing_rate=0.2)
        return scores, RunFacts(judge_lineage={"panel-1": {"swap": _SWAP}})
    return synthetic_scores(3), None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _frame_bytes(frame: pd.DataFrame) -> bytes:
    """Columns, dtypes and every value (floats by their shortest round-tripping repr)."""
    body = {
        "columns": list(frame.columns),
        "dtypes": [str(t) for t in frame.dtypes],
        "rows": [[repr(v) for v in row] for row in frame.itertuples(index=False)],
        "index": [repr(i) for i in frame.index],
    }
    return json.dumps(body).encode()


def digests(benchmark: str, tmp: Path) -> dict[str, str]:
    """What is pinned of one benchmark, by name."""
    bench = BENCHMARKS.get(benchmark)
    scores, facts = _table(benchmark)
    board = bench.leaderboard(scores, facts)
    model = bench.leaderboard_model()
    assert model is not None and board.model is not None
    completed = with_report_facts(board.document, GENERATION)
    again = dump_document(model.model_validate(completed))
    assert json.dumps(again) == json.dumps(completed)
    return {
        "document": _digest(written(tmp / "document.json", board.document)),
        "report_stage": _digest(written(tmp / "completed.json", again)),
        "mlflow_metrics": _digest(json.dumps(board.mlflow_metrics).encode()),
        "components": _digest(_frame_bytes(bench.instance_components(scores))),
        "schema": _digest(json.dumps(model.model_json_schema(by_alias=True)).encode()),
    }


PINNED: dict[str, dict[str, str]] = {
    "storybench": {
        "document": "72abd7fdbd41f6fbf0ba4afb3d9de0cec1bf281e0dda878f1ed79ef910e21a02",
        "report_stage": "85e2da356e5f81cf2aee9a1fb79adcf54a223c890b6b2b5d01795bf302ecdfa5",
        "mlflow_metrics": "d1f2005611e4d5742a8271638c1f524316c3d82b84aad396437e5278eee519bd",
        "components": "6bf877402297c3bae673c11875bcb59785cb9aa74d1627e637ae7b8a0a11a3c9",
        "schema": "3c5ed577ef581688ab98c122d8ef1ae5b5a18213455ffc8b1bafa2f22e8e9631",
    },
    "prism": {
        "document": "aaa820a86623ebaacc0855db5a519f756ff3aac70b3113d604415169cc140050",
        "report_stage": "9f893355923f1dc86f4a85b66dff6f6d33d9a7b1b64ee5b8b436285b8efa32a7",
        "mlflow_metrics": "a247be5552df18024a8dd7bbd23fc974e7dd9bb824423ad8196ecbd2f02df4ec",
        "components": "edf1f1bba7bedb4f6c68397d6091c9091207d086893d9eefd1cceeb7c46b0785",
        "schema": "43878bffba0fca818b6fe2c8fee03342adaa4ad6b06a9ea3632a83c691817cd5",
    },
    "acbench": {
        "document": "bfd9f53cbb0989669b1cf71e0f88251b26bf81c2e94fa3bc26441847960e99ab",
        "report_stage": "aa9f47db1167cc031e549c90b43ff7a24ff7aed0a4c2950e8cb0eeb1b8a46f2f",
        "mlflow_metrics": "6e18426f475b27feb98b50fc693715615e0947cec2d0864366e9caefe33db204",
        "components": "328845a2d89ce55f90f23318fd8a60e09442631ead2507c8a9f9235f45dd0e37",
        "schema": "68a4b09a3fdcc976726f316221382307ec223a1a7c91ca2e0c1f23f0a638542a",
    },
}
"""Taken from the code before the leaderboard models and components became declarations."""


@pytest.mark.parametrize("benchmark", ["storybench", "prism", "acbench"])
def test_leaderboard_and_components_are_pinned(benchmark: str, tmp_path: Path) -> None:
    assert digests(benchmark, tmp_path) == PINNED[benchmark]
