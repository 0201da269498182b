"""The contract every registered benchmark passes (lm-eval's ``BaseTasks`` idea).

Adding a benchmark without a mutation and a synthetic scores table here fails this battery on
purpose: the battery is how a new benchmark proves it plugs into the shared stages.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from omnieval.benchmarks import BENCHMARKS, Benchmark, Record, detect_benchmark
from omnieval.scores import SCORE_COLUMNS, coerce_scores

ROOT = Path(__file__).resolve().parents[2]
NAMES = BENCHMARKS.names()


# -- one mutation per benchmark: it must make validation fail naming the row/line and field ----------
def _mutate_storybench(root: Path) -> tuple[str, ...]:
    import pyarrow.parquet as pq

    table = pq.read_table(root / "data" / "omni_storybench.parquet").to_pandas()
    table.loc[3, "speech_speed"] = "ludicrous"
    table.to_parquet(root / "data" / "omni_storybench.parquet", index=False)
    return ("row 3", "speech_speed")


def _mutate_acbench(root: Path) -> tuple[str, ...]:
    manifest = root / "manifest.jsonl"
    lines = manifest.read_text(encoding="utf-8").splitlines()
    obj = json.loads(lines[2])
    obj["target_value"] = "mumbled"
    lines[2] = json.dumps(obj)
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ("line 3", str(obj["id"]), "target_value")


def _mutate_prism(root: Path) -> tuple[str, ...]:
    manifest = root / "manifest.jsonl"
    lines = manifest.read_text(encoding="utf-8").splitlines()
    obj = json.loads(lines[1])
    obj["active_tags"] = ["SPEECH_B"] if obj["subset"] == "on_screen" else ["SPEECH_A"]
    lines[1] = json.dumps(obj)
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ("line 2", str(obj["id"]), "active_tags")


MUTATIONS: dict[str, Callable[[Path], tuple[str, ...]]] = {
    "storybench": _mutate_storybench,
    "acbench": _mutate_acbench,
    "prism": _mutate_prism,
}


# -- one synthetic scores table per benchmark ----------------------------------------------------------
def _synthetic_storybench() -> pd.DataFrame:
    from omnieval_testkit.storybench_synthetic import make_scores

    return make_scores(n_systems=3, n_instances=12, seed=3, benchmark="storybench")


def _synthetic_acbench() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    targets = {
        "speech_rate": ["fast", "slow"],
        "phonation": ["whisper"],
        "pronunciation": ["heteronym"],
        "emotion": ["angry", "joy"],
        "accent": ["UK", "India"],
        "timbre": ["adult male", "elderly female"],
    }
    extra = {"speech_rate": "wpm", "phonation": "vfr", "pronunciation": "per"}
    rows = []
    index = 0
    for feature, values in targets.items():
        for value in values:
            for k in range(3):
                iid = f"{feature}-{value}-{k}".replace(" ", "_")
                for system in ("a", "b"):
                    for condition in ("original", "oracle"):
                        comps = ["wer", extra.get(feature, "attribute_accuracy")]
                        for comp in comps:
                            v = {
                                "wer": rng.uniform(0, 0.3),
                                "wpm": rng.uniform(90, 250),
                                "vfr": rng.uniform(0, 1),
                                "per": rng.uniform(0, 0.5),
                                "attribute_accuracy": float(rng.integers(0, 2)),
                            }[comp]
                            rows.append(
                                dict(
                                    benchmark="acbench",
                                    system=system,
                                    instance_id=iid,
                                    index=index,
                                    track=feature,
                                    component=comp,
                                    judge="",
                                    criterion=value,
                                    value=float(v),
                                    status="ok",
                                    condition=condition,
                                )
                            )
                index += 1
    return coerce_scores(pd.DataFrame(rows))


def _synthetic_prism() -> pd.DataFrame:
    from benchmarks.prism._tables import make_prism_scores

    return coerce_scores(make_prism_scores(seed=5, systems=("a", "b")))


SYNTHETIC: dict[str, Callable[[], pd.DataFrame]] = {
    "storybench": _synthetic_storybench,
    "acbench": _synthetic_acbench,
    "prism": _synthetic_prism,
}
# Pseudo-systems a benchmark's table holds beside the systems under test (not leaderboard rows).
REFERENCE_ROWS = {"prism": {"ground_truth"}}


@pytest.fixture(params=NAMES)
def bench(request: pytest.FixtureRequest) -> Benchmark:
    return BENCHMARKS.get(request.param)


def test_every_benchmark_has_a_battery_entry() -> None:
    assert set(NAMES) == set(MUTATIONS) == set(SYNTHETIC), "add the new benchmark to this battery"


def test_registration_facts(bench: Benchmark) -> None:
    assert bench.name in NAMES and bench.title and bench.modalities
    assert bench.system_kinds and "import" in bench.system_kinds
    assert set(bench.default_conditions) <= set(bench.conditions)
    config = bench.metrics_config()
    assert config.model_config.get("frozen") and config.model_config.get("extra") == "forbid"
    # The dataset gate: a suite file, or one derived from the benchmark's record model.
    record = getattr(bench, "record", None)
    derived = isinstance(record, type) and issubclass(record, Record)
    assert derived or (ROOT / "expectations" / f"{bench.name}_dataset.json").is_file()


def test_sample_loads_validates_and_is_detected(bench: Benchmark) -> None:
    root = ROOT / bench.default_dataset
    report = bench.validate(root)
    assert report.ok, report.problems[:5]
    instances = bench.instances(report.dataset)
    assert len(instances) == report.n_rows > 0
    assert [i.index for i in instances] == list(range(len(instances)))
    assert len({i.id for i in instances}) == len(instances)
    assert detect_benchmark(root) is bench
    assert bench.gate(root, None).success
    assert len(bench.fingerprint(report.dataset).digest) == 64
    assert len(bench.dataset_frame(root)) == len(instances)


def test_a_mutated_copy_is_rejected_naming_row_and_field(bench: Benchmark, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / bench.default_dataset, copy)
    fragments = MUTATIONS[bench.name](copy)
    report = bench.validate(copy)
    assert not report.ok
    assert any(all(f in p for f in fragments) for p in report.problems), report.problems


def test_a_synthetic_scores_table_aggregates_with_section_5_keys(bench: Benchmark) -> None:
    scores = SYNTHETIC[bench.name]()
    assert list(scores.columns) == list(SCORE_COLUMNS)
    board = bench.leaderboard(scores)
    assert board.document["benchmark"] == bench.name
    systems = set(scores["system"]) - REFERENCE_ROWS.get(bench.name, set())
    assert set(board.document["systems"]) == systems
    assert set(board.mlflow_metrics) == systems
    key = re.compile(rf"^{bench.name}\.[a-z0-9_]+\.[A-Za-z0-9_.\-/ :]+$")
    for system, metrics in board.mlflow_metrics.items():
        assert metrics, system
        for name, value in metrics.items():
            assert key.match(name), name
            assert math.isfinite(value), name
    text = bench.leaderboard_text(board.document)
    assert all(system in text for system in board.document["systems"])
    json.dumps(board.document, allow_nan=False)


def test_cli_lists_every_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    from omnieval.cli import main

    assert main(["benchmarks", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [entry["name"] for entry in listed] == NAMES
