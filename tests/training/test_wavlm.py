"""The paper's WavLM path on a tiny randomly initialised WavLM (no weights exist offline)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omnieval.errors import OmnievalError
from omnieval.evaluators import HeadConfig, WavLMBackbone, build_classifier
from omnieval.evaluators._model import build_wavlm
from omnieval.training import ClipData, OptimConfig, train_point

TINY = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "conv_dim": [16, 16],
    "conv_kernel": [10, 3],
    "conv_stride": [5, 2],
    "num_conv_pos_embeddings": 8,
    "num_conv_pos_embedding_groups": 2,
    "num_buckets": 16,
    "max_bucket_distance": 40,
    "feat_extract_norm": "layer",
    "do_stable_layer_norm": True,
}


def _waves(n: int, seed: int) -> ClipData:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=n)
    waves = []
    for y in labels:
        t = np.arange(int(rng.integers(1600, 3200))) / 16000
        waves.append(
            (0.3 * np.sin(2 * np.pi * (150 if y else 600) * t) + 0.01 * rng.standard_normal(t.size))
            .astype(np.float32)
            .reshape(-1, 1)
        )
    return ClipData.from_arrays(waves, labels)


def test_full_fine_tuning_with_separate_learning_rates() -> None:
    backbone = WavLMBackbone(config=TINY)
    model = build_classifier(backbone, 1, 2, HeadConfig(hidden=16))
    groups = model.parameter_groups(1e-3, 1e-4)
    n_backbone = sum(p.numel() for p in groups[1]["params"])
    assert groups[1]["lr"] == 1e-4 and n_backbone == sum(p.numel() for p in model.backbone.parameters())
    before = {k: v.clone() for k, v in model.backbone.state_dict().items()}

    outcome = train_point(
        lambda: build_classifier(backbone, 1, 2, HeadConfig(hidden=16)),
        _waves(12, 0),
        _waves(6, 1),
        OptimConfig(epochs=2, batch_size=4),
        head_lr=1e-3,
        backbone_lr=1e-4,
        seed=0,
    )
    assert len(outcome.history) == 2
    changed = [
        k
        for k, v in before.items()
        if k.startswith("wavlm.encoder")
        and not np.allclose(v.numpy(), outcome.state[f"backbone.{k}"].numpy())
    ]
    assert changed, "the WavLM encoder must be fine-tuned, not frozen"


def test_padding_does_not_change_predictions() -> None:
    import torch

    model = build_classifier(WavLMBackbone(config=TINY), 1, 2, HeadConfig(hidden=0)).eval()
    wave = torch.randn(1, 2400, 1)
    padded = torch.cat([wave, torch.zeros(1, 800, 1)], dim=1)
    mask = torch.cat([torch.ones(1, 2400, dtype=torch.bool), torch.zeros(1, 800, dtype=torch.bool)], dim=1)
    with torch.no_grad():
        alone = model(wave, torch.ones(1, 2400, dtype=torch.bool))
        batched = model(padded, mask)
    assert torch.allclose(alone, batched, atol=1e-4)


def test_local_weights_are_loaded_from_a_folder_and_never_downloaded(tmp_path: Path) -> None:
    from transformers import WavLMConfig, WavLMModel

    WavLMModel(WavLMConfig(**TINY)).save_pretrained(tmp_path / "wavlm")
    model = build_wavlm(WavLMBackbone(path=tmp_path / "wavlm"))
    assert model.config.hidden_size == 32
    with pytest.raises(OmnievalError, match="never downloads"):
        build_wavlm(WavLMBackbone(path=tmp_path / "missing"))
    with pytest.raises(ValueError, match="exactly one"):
        WavLMBackbone()
