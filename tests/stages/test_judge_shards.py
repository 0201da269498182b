"""Which judge shards a distributed run makes: per system, unless a judge's answers depend on call order."""

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


def _faulty_cpu_panel(tmp_path: Path) -> str:
    """The cpu panel's llama.cpp judge wrapped in a fault-injecting backend."""
    from omnieval.judges import load_panel

    judge = load_panel("cpu").tracks["text"].judges[0]
    inner = judge.backend.model_dump(mode="json", exclude_none=True)
    doc = {
        "name": "faulty-cpu",
        "tracks": {
            "text": {
                "judges": [
                    {
                        "id": "faulty-cpu",
                        "model": judge.model,
                        "backend": {"kind": "faults", "rate": 0.1, "seed": 1, "inner": inner},
                        "decoding": {"temperature": 0.0, "max_tokens": 256},
                    }
                ]
            },
            "speech": {"unavailable": "not in this test"},
            "image": {"unavailable": "not in this test"},
        },
    }
    path = tmp_path / "faulty-cpu.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return str(path)


def test_a_request_by_request_judge_is_sharded_per_system(tmp_path: Path) -> None:
    config = load_suite(_suite(tmp_path))  # the scripted chaos judge
    assert order_dependent_judges(config) == []
    assert shard_plan(config, by_system=True) == [("oracle",), ("shuffled",)]
    assert shard_plan(config, by_system=False) == [("oracle", "shuffled")]


@pytest.mark.parametrize("panel", ["cpu", "faulty"])
def test_a_llamacpp_judge_keeps_one_shard(tmp_path: Path, panel: str) -> None:
    name = "cpu" if panel == "cpu" else _faulty_cpu_panel(tmp_path)
    config = load_suite(_suite(tmp_path, name))
    assert order_dependent_judges(config) == (
        ["cpu-qwen2.5-coder-1.5b"] if panel == "cpu" else ["faulty-cpu"]
    )
    assert shard_plan(config, by_system=True) == [("oracle", "shuffled")]
