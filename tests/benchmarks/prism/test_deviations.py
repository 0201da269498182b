"""Which of PRISM-Bench's declared deviations a run has, by its judge panels and per-subset limit."""

from __future__ import annotations

from pathlib import Path

from omnieval.benchmarks import BENCHMARKS, RunSettings
from omnieval.benchmarks.prism import PrismMetricsConfig
from omnieval.config import load_suite
from omnieval.stages._deviations import run_deviations

ROOT = Path(__file__).resolve().parents[3]
PRISM = BENCHMARKS.get("prism")


def ids(*panels: str, limit: int | None = None) -> list[str]:
    run = RunSettings(panels=panels, metrics=PrismMetricsConfig(max_per_subset=limit))
    return [d.id for d in PRISM.deviation_ledger(run)]


def test_the_shipped_cpu_suite_names_the_cascade_the_wording_and_the_limit() -> None:
    found = run_deviations(load_suite(ROOT / "pipelines" / "prism.yaml"), {})
    assert [d.id for d in found] == ["judge-substitute-cpu", "prompt-paraphrase", "per-subset-limit"]
    by_id = {d.id: d for d in found}
    assert "Gemini-3.1-pro-preview" in by_id["judge-substitute-cpu"].what
    assert "metrics.max_per_subset 2" in by_id["per-subset-limit"].what
    assert "at most 2 instances per subset" in by_id["per-subset-limit"].effect


def test_the_paper_judge_without_a_limit_deviates_only_in_wording() -> None:
    assert ids("paper") == ["prompt-paraphrase"]
    assert ids() == []


def test_each_other_panel_names_its_own_departure() -> None:
    assert ids("omni") == ["judge-substitute-omni", "prompt-paraphrase"]
    assert ids("paper", "ablation") == ["judge-ablation-model-id", "prompt-paraphrase"]
    assert ids("my/panel.yaml", limit=3) == ["judge-panel-custom", "prompt-paraphrase", "per-subset-limit"]
    assert "judge-substitute-cpu" not in ids("omni", limit=None)
