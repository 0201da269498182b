"""Which judge shards a distributed run makes: per system, unless a judge's answers depend on the calls
around them (llama.cpp lockstep decoding, transformers)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from bench.chaos import write_suite

from omnieval.config import load_suite
from omnieval.stages.judge import order_dependent_judges, shard_plan

ROOT = Path(__file__).resolve().parents[2]


def _suite(tmp_path: Path, panel: str | None = None) -> Path:
    path = write_suite(tmp_path, "shards", limit=2, dataset=ROOT / "data" / "storybench-sample")
    if panel is not None:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        doc["judges"]["panels"] = [panel]
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _cpu_panel_file(tmp_path: Path, *, faults: bool, parallel: int = 1) -> str:
    """The cpu panel's llama.cpp judge, as a panel file: with ``parallel`` lockstep sequences, and
    wrapped in a fault-injecting backend when ``faults``."""
    from omnieval.judges import load_panel

    judge = load_panel("cpu").tracks["text"].judges[0]
    backend = judge.backend.model_dump(mode="json", exclude_none=True)
    backend["parallel_sequences"] = parallel
    if faults:
        backend = {"kind": "faults", "rate": 0.1, "seed": 1, "inner": backend}
    doc = {
        "name": "cpu-variant",
        "tracks": {
            "text": {
                "judges": [
                    {
                        "id": "cpu-variant",
                        "model": judge.model,
                        "backend": backend,
                        "decoding": {"temperature": 0.0, "max_tokens": 256},
                    }
                ]
            },
            "speech": {"unavailable": "not in this test"},
            "image": {"unavailable": "not in this test"},
        },
    }
    path = tmp_path / "cpu-variant.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return str(path)


def test_a_request_by_request_judge_is_sharded_per_system(tmp_path: Path) -> None:
    config = load_suite(_suite(tmp_path))  # the scripted chaos judge
    assert order_dependent_judges(config) == []
    assert shard_plan(config, by_system=True) == [("oracle",), ("shuffled",)]
    assert shard_plan(config, by_system=False) == [("oracle", "shuffled")]


@pytest.mark.parametrize("panel", ["cpu", "faulty"])
def test_a_one_at_a_time_llamacpp_judge_is_sharded_per_system(tmp_path: Path, panel: str) -> None:
    # Each verdict is decoded from the same state whatever came before it (docs/judges.md,
    # "Reproducibility after a crash"), so splitting the systems changes no answer.
    name = "cpu" if panel == "cpu" else _cpu_panel_file(tmp_path, faults=True)
    config = load_suite(_suite(tmp_path, name))
    assert order_dependent_judges(config) == []
    assert shard_plan(config, by_system=True) == [("oracle",), ("shuffled",)]


@pytest.mark.parametrize("faults", [False, True])
def test_a_lockstep_llamacpp_judge_keeps_one_shard(tmp_path: Path, faults: bool) -> None:
    # Lockstep decoding rounds by which requests share a batch: the systems stay together.
    config = load_suite(_suite(tmp_path, _cpu_panel_file(tmp_path, faults=faults, parallel=4)))
    assert order_dependent_judges(config) == ["cpu-variant"]
    assert shard_plan(config, by_system=True) == [("oracle", "shuffled")]
