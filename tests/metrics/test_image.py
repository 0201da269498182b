"""Image similarity: itself is 1, a flipped copy is high, unrelated photos are lower; CLIP path on a tiny model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from omnieval.metrics.functional.image import cosine_similarity


def test_cosine_similarity() -> None:
    assert cosine_similarity(np.array([1.0, 2.0]), np.array([2.0, 4.0])) == pytest.approx(1.0)
    assert cosine_similarity(np.array([1.0, 0.0]), np.array([0.0, 3.0])) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        cosine_similarity(np.zeros(3), np.ones(3))


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import skimage.data

    root = tmp_path_factory.mktemp("photos")
    out = {}
    for name in ("astronaut", "chelsea", "coffee"):
        out[name] = root / f"{name}.png"
        Image.fromarray(getattr(skimage.data, name)()).save(out[name])
    out["astronaut_flipped"] = root / "flipped.png"
    Image.open(out["astronaut"]).transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(out["astronaut_flipped"])
    return out


@pytest.mark.slow
def test_efficientnet_similarity(photos: dict[str, Path]) -> None:
    from omnieval.metrics import MetricsConfig, image_similarity

    config = MetricsConfig(image_backbone="efficientnet-lite0")
    same = image_similarity(photos["astronaut"], photos["astronaut"], config=config)
    flipped = image_similarity(photos["astronaut"], photos["astronaut_flipped"], config=config)
    other = image_similarity(photos["astronaut"], photos["coffee"], config=config)
    assert same == pytest.approx(1.0, abs=1e-5)
    assert flipped > 0.9
    assert other < flipped


@pytest.mark.slow
def test_clip_backbone_loads_local_weights(photos: dict[str, Path], tmp_path: Path) -> None:
    """The CLIP path on a tiny randomly initialised CLIP saved to disk (real weights are not here)."""
    from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModelWithProjection

    from omnieval.backends.embeddings import ClipImageEmbedder, clip_available

    folder = tmp_path / "tiny-clip"
    config = CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=37,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=32,
        patch_size=8,
        projection_dim=16,
    )
    CLIPVisionModelWithProjection(config).save_pretrained(folder)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(
        folder
    )
    assert clip_available(str(folder))
    assert not clip_available(str(tmp_path / "absent"))
    embedder = ClipImageEmbedder(str(folder))
    vectors = embedder.embed([Image.open(photos["astronaut"]), Image.open(photos["astronaut"])])
    assert vectors.shape == (2, 16)
    assert cosine_similarity(vectors[0], vectors[1]) == pytest.approx(1.0, abs=1e-5)
    assert embedder.identity().sha256


def test_auto_backbone_falls_back_without_clip_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    from omnieval.backends import embeddings

    monkeypatch.setattr(embeddings, "clip_available", lambda source=embeddings.CLIP_B32_ID: False)
    created: list[str] = []

    class _Fake:
        backbone = "efficientnet-lite0"

        def __init__(self) -> None:
            created.append("efficientnet")

    monkeypatch.setattr(embeddings, "EfficientNetLite0Embedder", _Fake)
    embeddings.load_image_embedder.cache_clear()
    try:
        assert embeddings.load_image_embedder("auto").backbone == "efficientnet-lite0"
        assert created == ["efficientnet"]
    finally:
        embeddings.load_image_embedder.cache_clear()
