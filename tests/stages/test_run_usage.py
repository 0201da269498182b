"""The run's usage totals (``omnieval.stages._usage``), their MLflow metrics and report block."""

from __future__ import annotations

from typing import Any

from omnieval.backends.llm import TokenPrice
from omnieval.benchmarks import BENCHMARKS
from omnieval.reporting import usage_block
from omnieval.stages._usage import judge_usage, run_usage, system_usage
from omnieval.tracking import usage_metrics


def _entry(
    calls: int, prompt: int | None, completion: int | None, seconds: float, cached: int = 0
) -> dict[str, Any]:
    return {
        "calls": calls,
        "cached_calls": cached,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "calls_with_tokens": calls if prompt is not None else 0,
        "seconds": seconds,
    }


PANELS = {
    "cpu": {
        "judges": {"qwen-judge": {"model": "Qwen/Qwen2.5-1.5B-Instruct"}},
        "usage": {"qwen-judge": _entry(4, 4000, 400, 2.0, cached=2)},
    },
    "paper": {
        "judges": {"qwen-judge": {"model": "Qwen/Qwen2.5-1.5B-Instruct"}, "scripted": {"model": "x/s"}},
        "usage": {"qwen-judge": _entry(1, 1000, 100, 0.5), "scripted": _entry(3, None, None, 0.1)},
    },
}


def test_judge_usage_sums_a_judge_over_panels_and_prices_it_by_model() -> None:
    costs = {"Qwen/Qwen2.5-1.5B-Instruct": TokenPrice(prompt_per_million=1.0, completion_per_million=10.0)}
    doc = judge_usage(PANELS, costs, output_reused=False)
    qwen = doc["judges"]["qwen-judge"]
    assert (qwen["calls"], qwen["cached_calls"], qwen["prompt_tokens"], qwen["completion_tokens"]) == (
        5,
        2,
        5000,
        500,
    )
    assert qwen["cost"] == 0.01 and qwen["currency"] == "USD"  # 5000 * 1e-6 + 500 * 1e-5
    assert qwen["model"] == "Qwen/Qwen2.5-1.5B-Instruct"
    # A judge whose backend reports no tokens: unknown, unpriced.
    assert doc["judges"]["scripted"]["prompt_tokens"] is None and "cost" not in doc["judges"]["scripted"]
    assert doc["panels"]["cpu"]["qwen-judge"]["calls"] == 4
    assert doc["total"]["calls"] == 8 and doc["total"]["cost"] == {"USD": 0.01}


def test_run_usage_adds_systems_and_feeds_metrics_leaderboard_and_report() -> None:
    judges = judge_usage(PANELS, {}, output_reused=True)
    systems = system_usage(
        {
            "omni": {"kind": "openai-omni", "lineage": {"usage": {**_entry(2, 300, 900, 4.0), "model": "m"}}},
            "oracle": {"kind": "oracle", "lineage": {"tts": "espeak-ng"}},  # calls no language model
        },
        {"omni": TokenPrice(prompt_per_million=2.0, completion_per_million=2.0, currency="EUR")},
    )
    assert list(systems) == ["omni"] and systems["omni"]["cost"] == 0.0024
    usage = run_usage(judges, systems)
    assert usage["judge_output_reused"] is True
    assert usage["total"]["calls"] == 10 and usage["total"]["cost"] == {"EUR": 0.0024}

    metrics = usage_metrics(usage)
    assert metrics["usage.judge.qwen-judge.prompt_tokens"] == 5000.0
    assert metrics["usage.judge.qwen-judge.seconds"] == 2.5
    assert metrics["usage.system.omni.completion_tokens"] == 900.0
    assert metrics["usage.system.omni.cost"] == 0.0024
    assert "usage.judge.scripted.prompt_tokens" not in metrics  # unknown, not 0
    assert metrics["usage.judge.scripted.calls"] == 3.0

    # The leaderboard's optional block validates against the typed model.
    model = BENCHMARKS.get("storybench").leaderboard_model()
    assert model is not None
    fields = model.model_fields
    assert "usage" in fields and fields["usage"].default is None
    from omnieval.benchmarks._leaderboard import RunUsage

    RunUsage.model_validate(usage)

    html = usage_block(usage)
    assert "qwen-judge" in html and "omni" in html and "not reported" in html
    assert "0.0024 EUR" in html and "reused" in html
    assert "No model usage" in usage_block(None)
