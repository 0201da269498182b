"""Scores tables shaped like real ones, on the bundled samples' instances (no models involved)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from omnieval.benchmarks import BENCHMARKS

ROOT = Path(__file__).resolve().parents[2]
ACBENCH_SAMPLE = ROOT / "data" / "acbench-sample"
STORYBENCH_SAMPLE = ROOT / "data" / "storybench-sample"


def instances_of(name: str, root: Path) -> tuple[Any, ...]:
    bench = BENCHMARKS.get(name)
    return tuple(bench.instances(bench.load(root)))


@pytest.fixture(scope="session")
def storybench_instances() -> tuple[Any, ...]:
    return instances_of("storybench", STORYBENCH_SAMPLE)


@pytest.fixture(scope="session")
def acbench_instances() -> tuple[Any, ...]:
    return instances_of("acbench", ACBENCH_SAMPLE)


def storybench_table(instances: tuple[Any, ...], systems: int = 2, seed: int = 3) -> pd.DataFrame:
    """The synthetic storybench generator's table, moved onto the sample's real instance ids."""
    from omnieval_testkit.storybench_synthetic import make_scores

    frame = make_scores(
        n_systems=systems,
        n_instances=len(instances),
        benchmark="storybench",
        narration_length=False,
        seed=seed,
    )
    ids = {i.index: i.id for i in instances}
    return frame.assign(instance_id=frame["index"].map(ids))


def acbench_table(
    instances: tuple[Any, ...], systems: tuple[str, ...], conditions: tuple[str, ...], seed: int = 5
) -> pd.DataFrame:
    """Rows as the acbench metrics write them: per instance WER plus the feature's own component.

    About one output in ten is missing (``missing_output`` rows without a value) and the evaluated
    features' accuracy is ``not_applicable`` for one system, as when no evaluator is trained.
    """
    from omnieval.benchmarks.acbench._metrics import COMPONENTS_BY_FEATURE
    from omnieval.scores import ScoreRow, scores_frame

    rng = np.random.default_rng(seed)
    draw = {
        "wer": lambda: float(rng.uniform(0.0, 1.3)),
        "wpm": lambda: float(rng.uniform(90.0, 300.0)),
        "per": lambda: float(rng.uniform(0.0, 0.6)),
        "vfr": lambda: float(rng.uniform(0.0, 1.0)),
        "attribute_accuracy": lambda: float(rng.integers(0, 2)),
    }
    rows: list[ScoreRow] = []
    for s, system in enumerate(systems):
        for condition in conditions:
            for inst in instances:
                missing = rng.random() < 0.1
                for component in COMPONENTS_BY_FEATURE[inst.feature]:
                    if component == "attribute_accuracy" and s == 1:
                        value, status = None, "not_applicable"
                    elif missing:
                        value, status = None, "missing_output"
                    else:
                        value, status = draw[component](), "ok"
                    rows.append(
                        ScoreRow(
                            "acbench", system, inst.id, inst.index, inst.feature, component, "",
                            inst.target_value, value, status, condition=condition,
                        )
                    )  # fmt: skip
    return scores_frame(rows)


def id_map(instances: tuple[Any, ...]) -> dict[str, int]:
    return {str(i.id): int(i.index) for i in instances}
