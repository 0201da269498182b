"""Automatic metrics: Omni-StoryBench's, and the speech and text building blocks benchmarks share.

Pure functions live in :mod:`omnieval.metrics.functional`; this package wraps them with models,
a content-addressed cache and scores-table rows.
"""

from omnieval.metrics._cache import MetricCache
from omnieval.metrics._classifiers import AttributeClassifier, load_classifier
from omnieval.metrics._config import MetricsConfig, SpeechAnalysisConfig
from omnieval.metrics._spec import METRICS, MetricSpec
from omnieval.metrics._speech import SpeechAnalyzer, SpeechAttributes, default_analyzer, describe_audio
from omnieval.metrics._text_image import BertScorer, ImageSimilarity, bertscore, image_similarity

__all__ = [
    "METRICS",
    "AttributeClassifier",
    "BertScorer",
    "ImageSimilarity",
    "MetricCache",
    "MetricSpec",
    "MetricsConfig",
    "SpeechAnalysisConfig",
    "SpeechAnalyzer",
    "SpeechAttributes",
    "bertscore",
    "default_analyzer",
    "describe_audio",
    "image_similarity",
    "load_classifier",
]
