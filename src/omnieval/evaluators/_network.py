"""What a trained evaluator's network is: the backbone and head settings a checkpoint card records.

These models live with the evaluators, not with training, because loading a checkpoint has to
rebuild exactly the network that was trained: scoring reads them back from ``card.json`` and
training writes them there. The field names and the ``kind`` discriminator are part of the
checkpoint format; renaming one would make every existing card unreadable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class WhisperBackbone(_Strict):
    """Frozen Whisper encoder (CTranslate2) frames plus a trainable frame adapter: CPU-sized."""

    kind: Literal["whisper-ct2"] = "whisper-ct2"
    model: str = "whisper-base"
    """A packaged model name from ``omnieval.backends.assets`` (``whisper-base``, ``whisper-tiny.en``)
    or a CTranslate2 Whisper folder."""
    compute_type: Literal["float32", "int8"] = "float32"
    """float32 keeps cached features identical across CPUs."""
    prosody: bool = True
    """Append per-frame pitch, periodicity and level (``omnieval.evaluators._prosody``) to the encoder frames."""
    adapter_dim: int = Field(default=256, ge=8)
    """Width of the trainable per-frame adapter (LayerNorm, Linear, GELU) trained at the backbone lr."""
    frame_stride: int = Field(default=4, ge=1)
    """Average this many 20 ms frames before the adapter (4 = 80 ms): the adapter's cost drops by as much."""
    encoder_dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    """Dropout on the encoder part of each frame before the adapter (prosody values are kept)."""
    threads: int = Field(default=2, ge=1)


class ProsodyBackbone(_Strict):
    """Frame-level pitch, periodicity and level only, with a trainable frame adapter: tiny and voice-agnostic.

    For attributes carried by prosody (apparent gender, phonation) on small corpora, where encoder
    frames let a model memorise the few training voices instead of learning the attribute.
    """

    kind: Literal["prosody"] = "prosody"
    adapter_dim: int = Field(default=64, ge=4)
    frame_stride: int = Field(default=4, ge=1)
    """Average this many 20 ms frames before the adapter."""


class WavLMBackbone(_Strict):
    """WavLM (the paper's backbone: WavLM-Large), fully fine-tuned from local weights."""

    kind: Literal["wavlm"] = "wavlm"
    path: Path | None = None
    """Local folder with ``config.json`` and weights (never downloaded); required unless ``config`` is set."""
    config: dict[str, Any] | None = None
    """Build a randomly initialised model from these ``WavLMConfig`` fields instead (tests)."""
    normalize: bool = True
    """Zero-mean unit-variance per clip, as WavLM-Large's feature extractor does."""
    freeze_feature_encoder: bool = False
    """The paper fine-tunes everything; set True to keep the convolutional front end fixed."""
    gradient_checkpointing: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> WavLMBackbone:
        if (self.path is None) == (self.config is None):
            raise ValueError("set exactly one of 'path' (local weights) or 'config' (random init)")
        return self


BackboneConfig = Annotated[WhisperBackbone | ProsodyBackbone | WavLMBackbone, Field(discriminator="kind")]
"""Any backbone, told apart by ``kind`` (the key a training config and a checkpoint card both carry)."""


class HeadConfig(_Strict):
    """Classification head on the mean-pooled frames."""

    hidden: int = Field(default=256, ge=0)
    """Hidden width of a two-layer head; 0 = a single linear layer."""
    dropout: float = Field(default=0.1, ge=0.0, lt=1.0)
