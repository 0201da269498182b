"""The training stages end to end on a tiny synthesized corpus: gate, grid, MLflow, registry, reload."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from omnieval.corpora import read_manifest, write_manifest
from omnieval.errors import GateFailed
from omnieval.training import (
    FeatureConfig,
    TrainEvaluatorsConfig,
    run_training,
    stage_gate,
    stage_prepare,
)


def _config(tmp_path: Path, **corpus: object) -> TrainEvaluatorsConfig:
    feature = FeatureConfig.model_validate(
        {
            "feature": "gender",
            "registered_name": "test-gender",
            "description": "test stand-in",
            "labels": ["female", "male"],
            "corpus": {
                "kind": "espeak",
                "recipe": "gender",
                "name": "tiny-gender",
                "root": str(tmp_path / "corpus"),
                "clips_per_label": 12,
                "female_variants": ["f1", "f2", "f3", "f4"],
                "male_variants": ["m1", "m2", "m3", "m4"],
                "splits": {"train": 0.5, "dev": 0.25, "test": 0.25},
                **corpus,
            },
            "backbone": {"kind": "prosody", "adapter_dim": 16},
            "head": {"hidden": 16},
            "optim": {"epochs": 4, "batch_size": 8},
            "grid": {"head_lr": [1e-3], "backbone_lr": [1e-4, 1e-3]},
            "device": "cpu",
        }
    )
    return TrainEvaluatorsConfig(
        features=(feature,),
        output_dir=tmp_path / "models",
        work_dir=tmp_path / "work",
        runs_dir=tmp_path / "runs",
        experiment="test/train-evaluators",
    )


def test_train_register_and_reload(tmp_path: Path, mlflow_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow import MlflowClient

    monkeypatch.setenv("OMNIEVAL_CACHE", str(tmp_path / "cache"))
    config = _config(tmp_path)
    [result] = run_training(config)

    card = json.loads((result.checkpoint / "card.json").read_text())
    assert card["labels"] == ["female", "male"]
    assert card["corpus"]["version"] == result.corpus_version and card["corpus"]["synthetic"] is True
    assert card["test"]["chance_uniform"] == 0.5
    assert len(card["selection"]["grid"]) == 2
    assert result.version == "1"
    assert result.check["evaluator"] == "test-gender@1"
    assert result.check["matches_training_report"] is True

    client = MlflowClient(mlflow_uri)
    version = client.get_model_version("test-gender", "1")
    assert version.tags["omnieval.corpus.version"] == result.corpus_version
    assert version.tags["omnieval.weights_sha256"] == card["weights_sha256"]
    experiment = client.get_experiment_by_name("test/train-evaluators")
    runs = client.search_runs([experiment.experiment_id])
    kinds = sorted(r.data.tags["omnieval.kind"] for r in runs)
    assert kinds == ["evaluator-check", "evaluator-training", "grid-point", "grid-point"]
    parent = next(r for r in runs if r.data.tags["omnieval.kind"] == "evaluator-training")
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 2
    history = client.get_metric_history(children[0].info.run_id, "dev_accuracy")
    assert [m.step for m in history] == [1, 2, 3, 4]
    assert parent.inputs.dataset_inputs[0].dataset.name == "tiny-gender"
    assert "test_accuracy" in parent.data.metrics and "chance_uniform" in parent.data.metrics
    check = next(r for r in runs if r.data.tags["omnieval.kind"] == "evaluator-check")
    assert check.data.tags["omnieval.evaluator.gender"] == "test-gender@1"

    # A second run with nothing changed reuses the grid points and the registered version.
    [again] = run_training(config)
    assert again.version == "1"
    assert again.test == result.test


def _gate_error(feature: FeatureConfig, tmp_path: Path) -> str:
    prepared = stage_prepare(feature)
    with pytest.raises(GateFailed) as err:
        stage_gate(feature, prepared, tmp_path / "gate.json")
    assert json.loads((tmp_path / "gate.json").read_text())["success"] is False
    return str(err.value)


def _as_manifest_corpus(config: TrainEvaluatorsConfig) -> FeatureConfig:
    """The same corpus read as a plain manifest (the synthesizer would repair edits and deletions)."""
    feature = config.features[0]
    data = feature.model_dump(mode="json")
    data["corpus"] = {"kind": "manifest", "root": str(feature.corpus.root)}
    return FeatureConfig.model_validate(data)


def test_gate_rejects_leak_unknown_label_and_missing_audio(tmp_path: Path) -> None:
    config = _config(tmp_path)
    prepared = stage_prepare(config.features[0])
    feature = _as_manifest_corpus(config)
    stage_gate(feature, prepared, tmp_path / "ok.json")
    manifest = prepared.manifest_path
    original = read_manifest(manifest)

    leaked = list(original)
    first_test = next(i for i, r in enumerate(leaked) if r.split == "test")
    train_speaker = next(r.speaker for r in leaked if r.split == "train")
    leaked[first_test] = replace(leaked[first_test], speaker=train_speaker)
    write_manifest(leaked, manifest)
    report = _gate_error(feature, tmp_path)
    assert "split_leak" in report and train_speaker in report

    write_manifest([replace(original[0], label="robot"), *original[1:]], manifest)
    report = _gate_error(feature, tmp_path)
    assert "label_known" in report and "robot" in report

    write_manifest(original, manifest)
    (prepared.root / original[3].path).unlink()
    report = _gate_error(feature, tmp_path)
    assert "file_exists" in report and original[3].path in report


def test_gate_failure_stops_before_training(tmp_path: Path, mlflow_uri: str) -> None:
    from mlflow import MlflowClient

    config = _config(tmp_path)
    prepared = stage_prepare(config.features[0])
    rows = read_manifest(prepared.manifest_path)
    write_manifest([replace(rows[0], label="robot"), *rows[1:]], prepared.manifest_path)
    config = config.model_copy(update={"features": (_as_manifest_corpus(config),)})
    with pytest.raises(GateFailed, match="robot"):
        run_training(config)
    assert not (tmp_path / "work" / "gender" / "grid").exists()
    client = MlflowClient(mlflow_uri)
    experiment = client.get_experiment_by_name("test/train-evaluators")
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FAILED" and run.data.tags["omnieval.failed"] == "corpus gate"
    assert [a.path for a in client.list_artifacts(run.info.run_id, "gates")] == ["gates/gate.json"]
