from __future__ import annotations

import numpy as np
import pytest

from omnieval.evaluators import HeadConfig, ProsodyBackbone, WhisperBackbone, build_classifier
from omnieval.evaluators._model import masked_mean, pool_frames
from omnieval.training import ClipData, OptimConfig, train_point


def _clusters(n: int, dim: int, seed: int, shift: float = 3.0) -> ClipData:
    """Variable-length clips whose frames are drawn around one of two class centres."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=n)
    # Random directions: a uniform offset would vanish in the adapter's LayerNorm.
    centres = np.random.default_rng(99).standard_normal((2, dim)) * shift / np.sqrt(dim)
    frames = [centres[y] + rng.standard_normal((int(rng.integers(8, 30)), dim)) for y in labels]
    return ClipData.from_arrays([f.astype(np.float32) for f in frames], labels)


def test_masked_mean_and_pooling_ignore_padding() -> None:
    import torch

    x = torch.tensor([[[1.0], [3.0], [100.0]], [[2.0], [2.0], [2.0]]])
    mask = torch.tensor([[True, True, False], [True, True, True]])
    assert masked_mean(x, mask).flatten().tolist() == [2.0, 2.0]
    pooled, pooled_mask = pool_frames(x, mask, 2)
    assert pooled.flatten().tolist() == [2.0, 0.0, 2.0, 2.0]
    assert pooled_mask.tolist() == [[True, False], [True, True]]


def test_recipe_learns_reproducibly_with_two_learning_rates() -> None:
    train, dev = _clusters(96, 515, 0), _clusters(48, 515, 1)
    backbone = WhisperBackbone(adapter_dim=16, frame_stride=2)
    optim = OptimConfig(epochs=8, batch_size=16)

    def build() -> object:
        return build_classifier(backbone, 515, 2, HeadConfig(hidden=8))

    seen: list[float] = []
    outcome = train_point(
        build,
        train,
        dev,
        optim,
        head_lr=3e-3,
        backbone_lr=1e-3,
        seed=0,
        on_epoch=lambda log: seen.append(log.dev_accuracy),
    )
    assert outcome.best_dev_accuracy >= 0.9
    assert seen == [h.dev_accuracy for h in outcome.history] and len(seen) == 8
    assert outcome.best_dev_accuracy == max(seen) and seen[outcome.best_epoch - 1] == max(seen)
    # Warm-up: the learning rate of each group rises during the first two epochs, then decays.
    heads = [h.lr_head for h in outcome.history]
    backs = [h.lr_backbone for h in outcome.history]
    assert heads[0] == 0.0 and heads[2] == pytest.approx(3e-3, rel=0.05) and heads[-1] < heads[2]
    assert backs[2] == pytest.approx(1e-3, rel=0.05)
    again = train_point(build, train, dev, optim, head_lr=3e-3, backbone_lr=1e-3, seed=0)
    assert outcome.state
    assert all(np.array_equal(outcome.state[k].numpy(), again.state[k].numpy()) for k in outcome.state)


def test_parameter_groups_and_prosody_adapter() -> None:
    model = build_classifier(ProsodyBackbone(adapter_dim=8), 3, 4, HeadConfig(hidden=0))
    groups = model.parameter_groups(1e-3, 5e-5)
    assert [g["name"] for g in groups] == ["head", "backbone"]
    assert [g["lr"] for g in groups] == [1e-3, 5e-5]
    import torch

    logits = model(torch.randn(2, 9, 3), torch.ones(2, 9, dtype=torch.bool))
    assert logits.shape == (2, 4)
