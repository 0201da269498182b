"""Trained speech-attribute classifiers, loaded by registry reference or checkpoint folder."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from omnieval.backends.evaluators import resolve_evaluator
from omnieval.errors import DataError, OmnievalError
from omnieval.evaluators._checkpoint import load_weights, read_card
from omnieval.evaluators._frontends import make_frontend
from omnieval.evaluators._model import build_classifier
from omnieval.evaluators._network import HeadConfig, ProsodyBackbone, WavLMBackbone, WhisperBackbone


class SpeechAttributeClassifier:
    """A classifier over one speech attribute (gender, phonation, emotion, accent, timbre).

    Attributes:
        name: registered name, e.g. ``omnieval-standin-gender-espeak``.
        version: Model Registry version (``"3"``) when loaded from the registry, else
            ``sha256:<first 12 hex of the weights>``; scores should carry ``f"{name}@{version}"``.
        labels: class labels in the order of :meth:`predict_proba`'s output.
        digest: SHA-256 of the weights file.
        card: the checkpoint's card (corpus version, code version, test accuracy, chance levels).
    """

    def __init__(self, folder: Path, *, version: str | None = None, device: str = "cpu") -> None:
        self.folder = folder
        self.card = read_card(folder)
        self.name = self.card.name
        self.labels: tuple[str, ...] = tuple(self.card.labels)
        self.digest = self.card.weights_sha256
        self.version = version or f"sha256:{self.digest[:12]}"
        self.device = device
        kind = self.card.backbone.get("kind")
        backbone: WhisperBackbone | ProsodyBackbone | WavLMBackbone
        wavlm_model: Any = None
        if kind == "whisper-ct2":
            backbone = WhisperBackbone(**self.card.backbone)
        elif kind == "prosody":
            backbone = ProsodyBackbone(**self.card.backbone)
        elif kind == "wavlm":
            from transformers import WavLMConfig, WavLMModel

            backbone = WavLMBackbone(**{**self.card.backbone, "path": None, "config": self.card.wavlm_config})
            wavlm_model = WavLMModel(WavLMConfig(**(self.card.wavlm_config or {})))
        else:
            raise DataError(f"{folder}: unknown backbone kind {kind!r} in card.json")
        self.frontend = make_frontend(backbone)
        expected = self.card.frontend.get("identity")
        if self.frontend.identity != expected:
            raise OmnievalError(
                f"evaluator {self.name}: its frontend here is {self.frontend.identity!r} but it was trained on "
                f"{expected!r}; the frames would differ, so its predictions would not mean what its card says"
            )
        model = build_classifier(
            backbone,
            self.frontend.dim,
            len(self.labels),
            HeadConfig(**self.card.head),
            wavlm_model=wavlm_model,
        )
        model.load_state_dict(load_weights(folder, self.card))
        self._model = model.to(device).eval()
        self._lock = threading.Lock()

    @property
    def ref(self) -> str:
        """``name@version``: what a score row should record about the evaluator that produced it."""
        return f"{self.name}@{self.version}"

    def predict_proba(self, wave_16k: np.ndarray) -> np.ndarray:
        """Probabilities over :attr:`labels` (shape ``[len(labels)]``, sums to 1) for one clip.

        Args:
            wave_16k: mono float32 samples at 16 kHz, shape ``[n]``, at least one sample.
        """
        import torch

        wave = np.asarray(wave_16k)
        if wave.ndim != 1 or wave.size == 0:
            raise DataError(
                f"predict_proba needs one mono clip, shape [n] with n > 0; got shape {wave.shape}"
            )
        if not np.all(np.isfinite(wave)):
            raise DataError("predict_proba: the clip contains NaN or infinite samples")
        frames = self.frontend(wave.astype(np.float32))
        x = torch.from_numpy(frames)[None].to(self.device)
        mask = torch.ones(x.shape[:2], dtype=torch.bool, device=self.device)
        with self._lock, torch.no_grad():
            logits = self._model(x, mask)
        probs: np.ndarray = torch.softmax(logits.float(), dim=-1)[0].cpu().numpy().astype(np.float64)
        return probs

    def predict(self, wave_16k: np.ndarray) -> str:
        """The most probable label for one clip."""
        return self.labels[int(np.argmax(self.predict_proba(wave_16k)))]

    def __repr__(self) -> str:
        return f"SpeechAttributeClassifier({self.ref}, labels={list(self.labels)})"


_CACHE: dict[tuple[str, str], SpeechAttributeClassifier] = {}
_CACHE_LOCK = threading.Lock()


def load_evaluator(ref: str, *, device: str = "cpu") -> SpeechAttributeClassifier:
    """Load an evaluator by reference; repeated calls with the same reference share one instance.

    ``ref`` is ``models:/<registered name>/<version>`` (the MLflow Model Registry at
    ``MLFLOW_TRACKING_URI`` or the local store; version may be ``latest``), a checkpoint folder
    holding ``card.json`` and ``weights.safetensors``, or a bare registered name found under
    ``models/evaluators/``. Turning the reference into a folder is
    :func:`omnieval.backends.evaluators.resolve_evaluator`'s job (registries plug in there).
    """
    key = (ref, device)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
    folder, version = resolve_evaluator(ref)
    evaluator = SpeechAttributeClassifier(folder, version=version, device=device)
    with _CACHE_LOCK:
        _CACHE.setdefault(key, evaluator)
        return _CACHE[key]
