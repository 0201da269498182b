"""Speech-attribute evaluators trained by ``omnieval train`` (see ``docs/training.md``).

``load_evaluator("models:/omnieval-standin-gender-espeak/1")`` or
``load_evaluator("models/evaluators/omnieval-standin-gender-espeak")`` returns a
:class:`SpeechAttributeClassifier` with ``name``, ``version``, ``labels`` and
``predict_proba(wave_16k)``. The CPU stand-ins are trained on synthetic speech only.

References become checkpoint folders in :mod:`omnieval.backends.evaluators`; the MLflow registry
plugs in there from the tracking layer, so this package never imports tracking or mlflow.

This package also owns what a trained evaluator is: the backbone and head settings
(:class:`WhisperBackbone`, :class:`ProsodyBackbone`, :class:`WavLMBackbone`, :class:`HeadConfig`),
the frozen frontends that turn audio into frames, the network built from them and the checkpoint
format (``card.json`` + ``weights.safetensors``). ``omnieval.training`` imports these from here to
write checkpoints, so scoring never depends on training code.
"""

from omnieval.backends.evaluators import DEFAULT_ROOT
from omnieval.evaluators._checkpoint import EvaluatorCard, load_weights, read_card, save_checkpoint
from omnieval.evaluators._classifier import SpeechAttributeClassifier, load_evaluator
from omnieval.evaluators._frontends import Frontend, cached_frames, make_frontend
from omnieval.evaluators._model import build_classifier
from omnieval.evaluators._network import (
    BackboneConfig,
    HeadConfig,
    ProsodyBackbone,
    WavLMBackbone,
    WhisperBackbone,
)

STANDIN_GENDER = "omnieval-standin-gender-espeak"
"""Registered name of the CPU stand-in for apparent voice gender (espeak-ng voices only)."""
STANDIN_PHONATION = "omnieval-standin-phonation-espeak"
"""Registered name of the CPU stand-in for modal vs whispered phonation (espeak-ng voices only)."""

__all__ = [
    "DEFAULT_ROOT",
    "STANDIN_GENDER",
    "STANDIN_PHONATION",
    "BackboneConfig",
    "EvaluatorCard",
    "Frontend",
    "HeadConfig",
    "ProsodyBackbone",
    "SpeechAttributeClassifier",
    "WavLMBackbone",
    "WhisperBackbone",
    "build_classifier",
    "cached_frames",
    "load_evaluator",
    "load_weights",
    "make_frontend",
    "read_card",
    "save_checkpoint",
]
