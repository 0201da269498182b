"""Speech-attribute evaluators trained by ``omnieval train`` (see ``docs/training.md``).

``load_evaluator("models:/omnieval-standin-gender-espeak/1")`` or
``load_evaluator("models/evaluators/omnieval-standin-gender-espeak")`` returns a
:class:`SpeechAttributeClassifier` with ``name``, ``version``, ``labels`` and
``predict_proba(wave_16k)``. The CPU stand-ins are trained on synthetic speech only.

References become checkpoint folders in :mod:`omnieval.backends.evaluators`; the MLflow registry
plugs in there from the tracking layer, so this package never imports tracking or mlflow.
"""

from omnieval.backends.evaluators import DEFAULT_ROOT
from omnieval.evaluators._classifier import SpeechAttributeClassifier, load_evaluator

STANDIN_GENDER = "omnieval-standin-gender-espeak"
"""Registered name of the CPU stand-in for apparent voice gender (espeak-ng voices only)."""
STANDIN_PHONATION = "omnieval-standin-phonation-espeak"
"""Registered name of the CPU stand-in for modal vs whispered phonation (espeak-ng voices only)."""

__all__ = [
    "DEFAULT_ROOT",
    "STANDIN_GENDER",
    "STANDIN_PHONATION",
    "SpeechAttributeClassifier",
    "load_evaluator",
]
