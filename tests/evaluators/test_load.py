from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from omnieval.errors import DataError, OmnievalError
from omnieval.evaluators import (
    HeadConfig,
    ProsodyBackbone,
    SpeechAttributeClassifier,
    build_classifier,
    load_evaluator,
    save_checkpoint,
)
from omnieval.evaluators._frontends import PROSODY_VERSION


def _checkpoint(folder: Path) -> Path:
    import torch

    torch.manual_seed(0)
    backbone = ProsodyBackbone(adapter_dim=8)
    model = build_classifier(backbone, 3, 2, HeadConfig(hidden=0))
    fields = {
        "name": "unit-gender",
        "feature": "gender",
        "description": "unit test",
        "labels": ("female", "male"),
        "backbone": backbone.model_dump(mode="json"),
        "head": HeadConfig(hidden=0).model_dump(mode="json"),
        "frontend": {"identity": PROSODY_VERSION, "dim": 3},
        "corpus": {"name": "x", "version": "sha256:0", "synthetic": True},
        "code": {"git_sha": "unknown"},
        "selection": {},
        "test": {"accuracy": 1.0},
        "optim": {},
        "seed": 0,
    }
    save_checkpoint(folder, model.state_dict(), fields)
    return folder


def test_local_checkpoint_predicts_probabilities(tmp_path: Path) -> None:
    folder = _checkpoint(tmp_path / "unit-gender")
    evaluator = load_evaluator(str(folder))
    assert isinstance(evaluator, SpeechAttributeClassifier)
    assert evaluator.labels == ("female", "male") and evaluator.name == "unit-gender"
    assert evaluator.version.startswith("sha256:") and evaluator.ref.startswith("unit-gender@sha256:")
    wave = (0.3 * np.sin(2 * np.pi * 200 * np.arange(16000) / 16000)).astype(np.float32)
    probs = evaluator.predict_proba(wave)
    assert probs.shape == (2,) and probs.dtype == np.float64 and probs.sum() == pytest.approx(1.0)
    assert evaluator.predict(wave) in evaluator.labels
    assert load_evaluator(str(folder)) is evaluator
    with pytest.raises(DataError, match="one mono clip"):
        evaluator.predict_proba(np.zeros((2, 100), dtype=np.float32))
    with pytest.raises(DataError, match="NaN"):
        evaluator.predict_proba(np.array([0.0, np.nan], dtype=np.float32))


def test_tampered_weights_and_bad_references(tmp_path: Path) -> None:
    folder = _checkpoint(tmp_path / "unit")
    card = json.loads((folder / "card.json").read_text())
    card["weights_sha256"] = "0" * 64
    (folder / "card.json").write_text(json.dumps(card))
    with pytest.raises(DataError, match="does not match the card"):
        SpeechAttributeClassifier(folder)
    card["frontend"]["identity"] = "prosody-v0"
    (folder / "card.json").write_text(json.dumps(card))
    with pytest.raises(OmnievalError, match="frames would differ"):
        SpeechAttributeClassifier(folder)
    with pytest.raises(OmnievalError, match="not found"):
        load_evaluator(str(tmp_path / "nothing"))
    with pytest.raises(OmnievalError, match="models:/<name>/<version>"):
        load_evaluator("models:/only-name")


def test_unknown_registry_version_is_a_clear_error(mlflow_uri: str) -> None:
    with pytest.raises(OmnievalError, match="not in the Model Registry"):
        load_evaluator("models:/no-such-evaluator/3")
