"""Speech attribute classifiers (gender, emotion, accent, timbre) behind one small interface.

A classifier is named in config by a reference string:

- ``hf-audio:<folder or cached id>``: a Hugging Face audio-classification model loaded from disk
  (``AutoModelForAudioClassification``), e.g. ``superb/hubert-large-superb-er`` for emotion; its
  ``id2label`` gives the labels.
- ``evaluator:<ref>``: a trained evaluator of omnieval's own (``omnieval.evaluators.load_evaluator``),
  e.g. the checkpoints registered under ``models/``.

None of the paper's recognizers (SpeechBrain wav2vec2-IEMOCAP, emotion2vec+, audeering's age/gender
wav2vec2 with its custom head) ship here; a field with no classifier is reported as unavailable.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from omnieval.backends.embeddings import load_local_pretrained
from omnieval.errors import ConfigError


@runtime_checkable
class AttributeClassifier(Protocol):
    """Class probabilities for a mono 16 kHz waveform.

    ``predict_proba`` returns shape ``(len(labels),)``, non-negative, summing to 1.
    """

    labels: tuple[str, ...]

    def predict_proba(self, wave_16k: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]: ...


class HFAudioClassifier:
    """A local Hugging Face audio-classification model (softmax over its logits)."""

    def __init__(self, source: str) -> None:
        path = Path(source).expanduser()
        self.source = str(path) if path.exists() else source
        from transformers import AutoFeatureExtractor, AutoModelForAudioClassification

        self._extractor, self._model = load_local_pretrained(
            AutoFeatureExtractor,
            AutoModelForAudioClassification,
            self.source,
            f"audio classifier {source!r} is not available locally",
        )
        id2label = self._model.config.id2label
        self.labels: tuple[str, ...] = tuple(str(id2label[i]) for i in range(len(id2label)))
        self._lock = threading.Lock()

    def predict_proba(self, wave_16k: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        import torch

        with self._lock, torch.inference_mode():
            inputs = self._extractor(
                np.asarray(wave_16k, dtype=np.float32), sampling_rate=16_000, return_tensors="pt"
            )
            logits = self._model(**inputs).logits[0]
            return np.asarray(torch.softmax(logits.double(), dim=-1).numpy(), dtype=np.float64)

    def identity(self) -> dict[str, str]:
        from omnieval.backends.assets import tree_sha256

        path = Path(self.source)
        return {"ref": f"hf-audio:{self.source}", "sha256": tree_sha256(path) if path.is_dir() else ""}


def _load_evaluator(ref: str) -> AttributeClassifier:
    try:
        from omnieval.evaluators import load_evaluator
    except ImportError:
        raise ConfigError(
            f"classifier 'evaluator:{ref}': omnieval.evaluators is not available in this installation"
        ) from None
    model: Any = load_evaluator(ref)
    if not isinstance(model, AttributeClassifier):
        raise ConfigError(f"evaluator {ref!r} does not expose labels and predict_proba(wave_16k)")
    return model


CLASSIFIER_KINDS: dict[str, Callable[[str], AttributeClassifier]] = {
    "hf-audio": HFAudioClassifier,
    "evaluator": _load_evaluator,
}


def check_classifier_ref(ref: str) -> str:
    """Validate the syntax of a reference (no model is loaded); returns it stripped."""
    ref = ref.strip()
    kind, sep, arg = ref.partition(":")
    if not sep or kind not in CLASSIFIER_KINDS or not arg:
        known = ", ".join(f"{k}:<...>" for k in sorted(CLASSIFIER_KINDS))
        raise ValueError(f"classifier reference {ref!r} must look like one of: {known}")
    return ref


@functools.lru_cache(maxsize=16)
def load_classifier(ref: str) -> AttributeClassifier:
    """Load (once per process) the classifier a reference names."""
    kind, _, arg = check_classifier_ref(ref).partition(":")
    return CLASSIFIER_KINDS[kind](arg)


def classifier_identity(ref: str, model: AttributeClassifier) -> dict[str, Any]:
    """What lineage records about a classifier: its reference, labels and, when known, weights hash."""
    out: dict[str, Any] = {"ref": ref, "labels": list(model.labels)}
    for attr in ("name", "version", "digest"):
        value = getattr(model, attr, None)
        if isinstance(value, str):
            out[attr] = value
    ident = getattr(model, "identity", None)
    extra: Any = ident() if callable(ident) else {}
    if isinstance(extra, dict):
        out.update({k: v for k, v in extra.items() if k != "ref"})
    return out
