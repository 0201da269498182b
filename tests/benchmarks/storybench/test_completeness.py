"""Output completeness per modality counts every missing example, checked against plain pandas."""

from __future__ import annotations

import pandas as pd

from omnieval.benchmarks.storybench._aggregate import aggregate
from omnieval_testkit.storybench_synthetic import make_scores


def _independent_missing(scores: pd.DataFrame, system: str) -> dict[str, int]:
    """Instances whose ``track`` output the system lacks: a ``missing_output`` row of that track."""
    rows = scores[(scores["system"] == system) & (scores["status"] == "missing_output")]
    return {m: rows.loc[rows["track"] == m, "instance_id"].nunique() for m in ("text", "image", "speech")}


def test_several_missing_examples_per_modality_are_all_counted() -> None:
    scores = make_scores(n_systems=3, n_instances=12, seed=7, benchmark="storybench", missing_rate=0.0)
    ids = sorted(scores["instance_id"].unique())
    # sys01 lacks 3 narrations and 2 images; sys02 lacks 4 speech clips; sys00 lacks nothing.
    for system, track, lacking in (
        ("sys01", "text", ids[:3]),
        ("sys01", "image", ids[5:7]),
        ("sys02", "speech", ids[:4]),
    ):
        gone = (scores["system"] == system) & (scores["track"] == track) & scores["instance_id"].isin(lacking)
        assert gone.any()
        scores.loc[gone, ["status", "value"]] = ["missing_output", float("nan")]
    board = aggregate(scores)
    expected = {
        "sys00": {"text": 0, "image": 0, "speech": 0},
        "sys01": {"text": 3, "image": 2, "speech": 0},
        "sys02": {"text": 0, "image": 0, "speech": 4},
    }
    for system, counts in expected.items():
        assert _independent_missing(scores, system) == counts, system
        outputs = board.completeness(system)["outputs"]
        assert {m: outputs[m]["missing"] for m in counts} == counts, system
        assert all(outputs[m]["n_instances"] == 12 for m in counts)
