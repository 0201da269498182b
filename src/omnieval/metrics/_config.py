"""Configuration of the automatic metrics (the ``metrics:`` block of a suite)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from omnieval.metrics._classifiers import check_classifier_ref


class SpeechAnalysisConfig(BaseModel):
    """ASR and audio-preparation settings shared by every benchmark's speech metrics.

    Benchmark configs (:class:`MetricsConfig`, OmniACBench's ``AcbenchMetricsConfig``) inherit these
    fields, so one option means the same thing in every suite's ``metrics:`` block.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    asr_model: str | None = "whisper-tiny.en"
    """``whisper-tiny.en``, ``whisper-base`` or a local CTranslate2 Whisper folder; None = no ASR (metrics
    that need a transcript are then unavailable)."""
    asr_beam_size: int = Field(default=1, ge=1)
    """1 = greedy decoding, as the paper's Hugging Face ASR pipeline does."""
    asr_language: str | None = "en"
    """Language forced on the ASR decoder (None = detect)."""
    asr_threads: int = Field(default=0, ge=0)
    """CTranslate2 intra-op threads per ASR worker (0 = the machine's cores divided by ``workers``)."""

    trim_top_db: float = Field(default=30.0, gt=0)
    """Silence trimming threshold in dB below the peak."""
    max_audio_seconds: float = Field(default=120.0, gt=0)
    """Longer clips are reported ``too_long`` instead of analysed."""
    silence_peak_dbfs: float = Field(default=-60.0, lt=0)
    """Clips whose peak is below this level are reported ``silent``."""
    pitch_decoder: Literal["banded", "dense"] = "banded"
    """pYIN Viterbi decoder: ``banded`` (same output as librosa, faster) or ``dense`` (librosa itself)."""
    workers: int = Field(default=2, ge=1)
    """Clips analysed concurrently (threads; pYIN and ASR release the GIL)."""


class MetricsConfig(SpeechAnalysisConfig):
    """Which models and settings the automatic metrics use. Defaults run offline on the packaged models."""

    text_encoder: str = "minilm"
    """BERTScore encoder: ``minilm`` (packaged all-MiniLM-L6-v2, layer 6), ``roberta-large`` (bert-score's
    English default, layer 17; needs local weights), or a local folder / cached Hugging Face id."""
    text_encoder_layers: int | None = Field(default=None, ge=1)
    """Layer whose output BERTScore uses; required for encoders other than the named ones."""
    batch_size: int = Field(default=64, ge=1)
    """Texts per encoder forward pass (BERTScore)."""

    image_backbone: Literal["auto", "clip-vit-b-32", "efficientnet-lite0"] = "auto"
    """``auto`` = CLIP ViT-B/32 when its weights are on disk, else the packaged EfficientNet-Lite0."""
    clip_source: str = "openai/clip-vit-base-patch32"
    """Local folder or cached Hugging Face id of the CLIP model."""
    dreamsim: bool = False
    """Also compute DreamSim distances (needs the ``dreamsim`` package and its weights on disk)."""
    dreamsim_cache: str | None = None
    """Folder holding DreamSim's downloaded weights."""

    gender_classifier: str | None = None
    """Reference of the gender classifier (``hf-audio:<folder>`` or ``evaluator:<ref>``); None = gender
    unavailable and pitch uses the gender-unknown thresholds."""
    emotion_classifiers: tuple[str, ...] = ()
    """References of the emotion recognizers averaged with equal weight; empty = emotion unavailable."""

    @field_validator("gender_classifier")
    @classmethod
    def _gender_ref(cls, value: str | None) -> str | None:
        return None if value is None else check_classifier_ref(value)

    @field_validator("emotion_classifiers")
    @classmethod
    def _emotion_refs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(check_classifier_ref(v) for v in value)
