"""PER is labelled as omnieval's word-level decision wherever it leaves the benchmark: the hook the
track stage turns into MLflow tags, the parent run's description, lineage deviations."""

from __future__ import annotations

from omnieval.benchmarks import BENCHMARKS, RunSettings
from omnieval.benchmarks.acbench import PER_DEFINITION, AcbenchMetricsConfig
from omnieval.tracking import METRIC_NOTE_TAG
from omnieval.tracking._mlflow import _note


def test_acbench_names_its_per_for_tracking() -> None:
    notes = BENCHMARKS.get("acbench").metric_notes
    assert notes == {"per": PER_DEFINITION}
    assert "word-level decision" in notes["per"] and "POWSM" in notes["per"]
    # Benchmarks whose keys mean what the paper's do add nothing.
    assert BENCHMARKS.get("prism").metric_notes == {}


def test_run_description_lists_the_metric_notes() -> None:
    tags = {"omnieval.benchmark": "acbench", f"{METRIC_NOTE_TAG}per": PER_DEFINITION}
    text = _note("acbench", "night", ["neutral"], [], tags)
    assert f"- metric `per`: {PER_DEFINITION}" in text.splitlines()
    assert "metric `" not in _note("acbench", "night", ["neutral"], [], {"omnieval.benchmark": "acbench"})


def test_lineage_deviation_names_the_word_level_per() -> None:
    ledger = BENCHMARKS.get("acbench").deviation_ledger(RunSettings(metrics=AcbenchMetricsConfig()))
    per = next(d for d in ledger if d.id == "per-word-level")
    assert per.what.startswith("PER(word), omnieval's word-level decision") and "not comparable" in per.effect
