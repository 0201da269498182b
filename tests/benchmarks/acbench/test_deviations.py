"""Which of OmniACBench's declared deviations a run has, by its metrics config and limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnieval.benchmarks import BENCHMARKS, Deviation, RunSettings
from omnieval.benchmarks.acbench import AcbenchMetricsConfig
from omnieval.config import load_suite
from omnieval.stages._deviations import run_deviations

ROOT = Path(__file__).resolve().parents[3]
ACBENCH = BENCHMARKS.get("acbench")
ALWAYS = ["wer-normalization", "per-word-level", "wpm-definition", "vfr-f0-detector"]


@pytest.fixture(autouse=True)
def no_large_v3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An empty model cache: "auto" resolves to the packaged tiny.en whatever this machine holds.
    monkeypatch.setenv("OMNIEVAL_MODEL_CACHE", str(tmp_path))


def ledger(config: AcbenchMetricsConfig, **settings: object) -> dict[str, Deviation]:
    return {d.id: d for d in ACBENCH.deviation_ledger(RunSettings(metrics=config, **settings))}  # type: ignore[arg-type]


def test_the_shipped_suite_lists_every_departure_with_its_effect() -> None:
    found = run_deviations(load_suite(ROOT / "pipelines" / "acbench.yaml"), {})
    assert [d.id for d in found] == [
        "metric-backbone-asr",
        *ALWAYS,
        "attribute-evaluator-missing",
        "silent-clips-invalid",
    ]
    by_id = {d.id: d for d in found}
    assert "emotion, accent, timbre" in by_id["attribute-evaluator-missing"].what
    assert "not computed" in by_id["attribute-evaluator-missing"].effect
    assert all(d.effect for d in found)


def test_the_paper_asr_and_every_evaluator_leave_only_the_definitions() -> None:
    evaluators = {f: f"hf-audio:/models/{f}" for f in ("emotion", "accent", "timbre")}
    found = ledger(AcbenchMetricsConfig(asr_model="/models/whisper-large-v3", evaluators=evaluators))
    assert list(found) == [*ALWAYS, "attribute-evaluator-substitute", "silent-clips-invalid"]
    assert "timbre: hf-audio:/models/timbre" in found["attribute-evaluator-substitute"].what


def test_some_evaluators_split_into_missing_and_substitute() -> None:
    found = ledger(AcbenchMetricsConfig(evaluators={"accent": "hf-audio:/models/accent"}))
    assert "emotion, timbre" in found["attribute-evaluator-missing"].what
    assert "accent: hf-audio:/models/accent" in found["attribute-evaluator-substitute"].what


def test_settings_appear_in_the_sentences_and_the_limit_only_when_set() -> None:
    config = AcbenchMetricsConfig(trim_top_db=25.0, pitch_decoder="dense", silence_peak_dbfs=-55.0)
    found = ledger(config)
    assert "trimmed at 25 dB" in found["wpm-definition"].what
    assert "pYIN (dense decoder" in found["vfr-f0-detector"].what
    assert "-55 dBFS" in found["silent-clips-invalid"].what
    assert "dataset-limit" not in found
    assert "first 4 instances" in ledger(config, dataset_limit=4)["dataset-limit"].what
