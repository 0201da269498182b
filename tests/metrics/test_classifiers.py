"""Classifier references: syntax checks, a local Hugging Face audio classifier, trained evaluators."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from omnieval.metrics import MetricsConfig
from omnieval.metrics._classifiers import (
    AttributeClassifier,
    check_classifier_ref,
    classifier_identity,
    load_classifier,
)


def test_reference_syntax_is_checked_by_the_config() -> None:
    assert check_classifier_ref(" hf-audio:/x ") == "hf-audio:/x"
    with pytest.raises(ValidationError, match="classifier reference"):
        MetricsConfig(gender_classifier="audeering/wav2vec2")
    with pytest.raises(ValidationError):
        MetricsConfig(emotion_classifiers=("evaluator:",))
    with pytest.raises(ValidationError):
        MetricsConfig(unknown_option=1)  # type: ignore[call-arg]


@pytest.mark.slow
def test_hf_audio_classifier_on_tiny_random_model(tmp_path: Path) -> None:
    import torch
    from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2ForSequenceClassification

    config = Wav2Vec2Config(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=20,
        conv_dim=(8, 8),
        conv_stride=(5, 4),
        conv_kernel=(10, 8),
        num_conv_pos_embeddings=4,
        num_conv_pos_embedding_groups=2,
        num_labels=3,
        id2label={0: "female", 1: "male", 2: "child"},
        label2id={"female": 0, "male": 1, "child": 2},
        classifier_proj_size=8,
    )
    folder = tmp_path / "gender"
    torch.manual_seed(0)
    Wav2Vec2ForSequenceClassification(config).save_pretrained(folder)
    Wav2Vec2FeatureExtractor(sampling_rate=16000).save_pretrained(folder)
    model = load_classifier(f"hf-audio:{folder}")
    assert isinstance(model, AttributeClassifier)
    assert model.labels == ("female", "male", "child")
    probs = model.predict_proba(np.random.default_rng(0).normal(0, 0.1, 16000).astype(np.float32))
    assert probs.shape == (3,) and probs.sum() == pytest.approx(1.0)
    ident = classifier_identity(f"hf-audio:{folder}", model)
    assert ident["labels"] == ["female", "male", "child"] and ident["sha256"]


def test_missing_evaluator_is_reported() -> None:
    from omnieval.errors import OmnievalError

    with pytest.raises(OmnievalError):
        load_classifier("evaluator:/definitely/not/a/checkpoint")
