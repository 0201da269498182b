"""Which of Omni-StoryBench's declared deviations a run has, by its panels, metrics config and limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from omnieval.benchmarks import BENCHMARKS, Deviation, RunSettings
from omnieval.config import load_suite
from omnieval.metrics import MetricsConfig
from omnieval.stages._deviations import run_deviations

ROOT = Path(__file__).resolve().parents[3]
STORY = BENCHMARKS.get("storybench")


def recorded(backbone: str, *systems: str) -> dict[str, Any]:
    """Metrics lineages as the metrics stage writes them (only the image backbone filled)."""
    return {s: {"metrics": {"image_similarity": {"backbone": backbone}}} for s in systems or ("a",)}


def ids(run: RunSettings) -> list[str]:
    return [d.id for d in STORY.deviation_ledger(run)]


def by_id(run: RunSettings) -> dict[str, Deviation]:
    return {d.id: d for d in STORY.deviation_ledger(run)}


def test_the_default_nightly_run_lists_every_departure_with_its_effect() -> None:
    config = load_suite(ROOT / "pipelines" / "nightly.yaml")
    ledger = run_deviations(config, recorded("efficientnet-lite0", *config.systems))
    assert [d.id for d in ledger] == [
        "judge-substitute-cpu",
        "prompt-cpu-own",
        "metric-backbone-bertscore",
        "metric-backbone-image",
        "metric-backbone-asr",
        "speech-metadata-fields",
        "silent-clips-missing",
        "dataset-limit",
    ]
    found = {d.id: d for d in ledger}
    assert "all-MiniLM-L6-v2" in found["metric-backbone-bertscore"].what
    assert "efficientnet-lite0" in found["metric-backbone-image"].what
    assert "whisper-tiny.en" in found["metric-backbone-asr"].what
    assert "emotion and gender are not predicted" in found["speech-metadata-fields"].what
    assert "145/220 Hz" in found["speech-metadata-fields"].what
    assert "first 2 instances" in found["dataset-limit"].what
    for deviation in ledger:
        assert deviation.effect and deviation.effect != "none", deviation.id


def test_judge_deviations_follow_the_panels() -> None:
    assert not {"judge-substitute-cpu", "prompt-cpu-own", "prompt-paraphrase"} & set(ids(RunSettings()))
    paper = ids(RunSettings(panels=("paper-a",)))
    assert "prompt-paraphrase" in paper and "judge-substitute-cpu" not in paper
    assert "judge-panel-custom" not in paper
    both = ids(RunSettings(panels=("cpu", "paper")))
    assert {"judge-substitute-cpu", "prompt-cpu-own", "prompt-paraphrase"} <= set(both)
    custom = by_id(RunSettings(panels=("panels/mine.yaml",)))
    assert "panels/mine.yaml" in custom["judge-panel-custom"].what
    assert "prompt-paraphrase" in custom and "judge-substitute-cpu" not in custom


def test_metric_backbones_only_when_they_differ_from_the_paper() -> None:
    paper_like = MetricsConfig(text_encoder="roberta-large", asr_model="/models/whisper-large-v3")
    found = ids(RunSettings(metrics=paper_like, recorded=recorded("clip-vit-b-32")))
    assert not {"metric-backbone-bertscore", "metric-backbone-image", "metric-backbone-asr"} & set(found)
    custom = by_id(RunSettings(metrics=MetricsConfig(text_encoder="/enc", text_encoder_layers=9)))
    assert "/enc (layer 9)" in custom["metric-backbone-bertscore"].what


def test_the_image_backbone_is_the_one_recorded_else_the_configured_one() -> None:
    mixed = by_id(
        RunSettings(recorded={**recorded("clip-vit-b-32", "a"), **recorded("efficientnet-lite0", "b")})
    )
    assert "efficientnet-lite0" in mixed["metric-backbone-image"].what
    clip = RunSettings(metrics=MetricsConfig(image_backbone="clip-vit-b-32"))
    assert "metric-backbone-image" not in ids(clip)
    small = RunSettings(metrics=MetricsConfig(image_backbone="efficientnet-lite0"))
    assert "metric-backbone-image" in ids(small)


def test_speech_fields_name_what_is_missing_and_what_substitutes() -> None:
    full = MetricsConfig(
        gender_classifier="hf-audio:/models/gender",
        emotion_classifiers=("hf-audio:/a", "hf-audio:/b", "hf-audio:/c"),
    )
    fields = by_id(RunSettings(metrics=full))["speech-metadata-fields"]
    assert "not predicted" not in fields.what and "145/220" not in fields.what
    assert "hf-audio:/models/gender" in fields.what and "3 recognizer(s)" in fields.what
    assert "substitute models" in fields.effect
    no_asr = by_id(RunSettings(metrics=MetricsConfig(asr_model=None)))
    assert "metric-backbone-asr" not in no_asr
    assert "emotion, speed and gender are not predicted" in no_asr["speech-metadata-fields"].what
    assert "mean over pitch only" in no_asr["speech-metadata-fields"].effect


def test_silent_clips_always_and_the_limit_only_when_set() -> None:
    quiet = by_id(RunSettings(metrics=MetricsConfig(silence_peak_dbfs=-50.0)))
    assert "-50 dBFS" in quiet["silent-clips-missing"].what
    assert "dataset-limit" not in quiet
    assert "dataset-limit" in ids(RunSettings(dataset_limit=5))


def test_a_clashing_declaration_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    twice = Deviation("prompt-paraphrase", "Twice.", "none")
    monkeypatch.setattr(type(STORY), "deviations", lambda self, run: [twice, twice])
    with pytest.raises(ValueError, match="declared twice"):
        STORY.deviation_ledger(RunSettings())
