"""One-line readings of the analysis outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from omnieval.analysis import AnalysisConfig, run_analyses
from omnieval.reporting import analysis_reading
from omnieval_testkit.storybench_synthetic import make_scores


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("analyses")
    frame = make_scores(n_systems=5, n_instances=24, benchmark="storybench", seed=4, dreamsim=True)
    run_analyses(frame, out, config=AnalysisConfig(bootstrap_draws=200))
    return {p.stem: json.loads(p.read_text()) for p in sorted(out.glob("*.json"))}


def test_every_analysis_that_ran_has_its_own_reading(outputs: dict[str, Any]) -> None:
    ran = {k: v for k, v in outputs.items() if not (isinstance(v, dict) and v.get("status") == "skipped")}
    assert {"bootstrap", "bottleneck", "correlations", "weight_sweeps", "zero_filled_sensitivity"} <= set(ran)
    for name, doc in ran.items():
        reading = analysis_reading(name, doc)
        assert not reading.startswith("Ran"), (name, reading)  # no fallback for the known shapes
        assert reading.endswith(".") and len(reading) < 400, (name, reading)


def test_readings_quote_the_documents_numbers(outputs: dict[str, Any]) -> None:
    boot = outputs["bootstrap"]["leader"]
    text = analysis_reading("bootstrap", outputs["bootstrap"])
    assert text.startswith(f"{boot['system']} leads {boot['runner_up']} by {boot['difference']:.2f} points")
    sweeps = outputs["weight_sweeps"]["dirichlet"]
    assert (
        f"{100 * sweeps['original_winner_share']:.0f}% of {sweeps['draws']} Dirichlet draws"
        in analysis_reading("weight_sweeps", outputs["weight_sweeps"])
    )
    zf = outputs["zero_filled_sensitivity"]
    reading = analysis_reading("zero_filled_sensitivity", zf)
    assert f"moves {zf['agreement']['n_moved']} of {zf['agreement']['n']} systems" in reading
    bottleneck = outputs["bottleneck"]["valid_only"]["systems"]
    assert f"of {len(bottleneck)} systems" in analysis_reading("bottleneck", outputs["bottleneck"])


def test_skipped_and_unknown_shapes() -> None:
    assert (
        analysis_reading("human_agreement", {"status": "skipped", "reason": "no ratings"})
        == "Skipped: no ratings."
    )
    # A document of an unexpected shape falls back to the registered summary, not an exception.
    assert analysis_reading("bootstrap", {"status": "ok"}).startswith("Ran: paired bootstrap")
    assert analysis_reading("not_an_analysis", {"status": "ok"}) == "Ran; the numbers are in the JSON."


def test_partial_correlations_list_document(tmp_path: Path) -> None:
    doc = [
        {
            "x": "text",
            "y": "image",
            "controls": ["speech"],
            "r": 0.52,
            "p": 0.2288,
            "policy": "valid_only",
            "subset": "all",
        },
        {
            "x": "text",
            "y": "image",
            "controls": ["speech"],
            "r": 0.9,
            "p": 0.01,
            "policy": "zero_filled",
            "subset": "all",
        },
    ]
    assert analysis_reading("partial_correlations", doc) == (
        "Controlling for the other modalities: text-image r = 0.52 (p 0.229)."
    )
