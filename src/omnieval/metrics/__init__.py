"""Automatic metrics: Omni-StoryBench's, and the speech and text building blocks benchmarks share.

Pure functions live in :mod:`omnieval.metrics.functional`; this package wraps them with models,
a content-addressed cache and scores-table rows.
"""

from omnieval.metrics._cache import MetricCache, cache_key
from omnieval.metrics._classifiers import (
    AttributeClassifier,
    check_classifier_ref,
    classifier_identity,
    load_classifier,
)
from omnieval.metrics._config import MetricsConfig, SpeechAnalysisConfig
from omnieval.metrics._spec import (
    BERTSCORE_F1,
    DREAMSIM_DISTANCE,
    IMAGE_SIMILARITY,
    METRICS,
    PER,
    SPEECH_META,
    VFR,
    WER,
    WPM,
    MetricSpec,
)
from omnieval.metrics._speech import (
    NO_SPEECH,
    SpeechAnalyzer,
    SpeechAttributes,
    default_analyzer,
    describe_audio,
    describe_cached,
)
from omnieval.metrics._text_image import (
    BertScorer,
    DreamSimDistance,
    EmptyTextError,
    ImageSimilarity,
    bertscore,
    dreamsim_status,
    image_file_problem,
    image_similarity,
)

__all__ = [
    "BERTSCORE_F1",
    "DREAMSIM_DISTANCE",
    "IMAGE_SIMILARITY",
    "METRICS",
    "NO_SPEECH",
    "PER",
    "SPEECH_META",
    "VFR",
    "WER",
    "WPM",
    "AttributeClassifier",
    "BertScorer",
    "DreamSimDistance",
    "EmptyTextError",
    "ImageSimilarity",
    "MetricCache",
    "MetricSpec",
    "MetricsConfig",
    "SpeechAnalysisConfig",
    "SpeechAnalyzer",
    "SpeechAttributes",
    "bertscore",
    "cache_key",
    "check_classifier_ref",
    "classifier_identity",
    "default_analyzer",
    "describe_audio",
    "describe_cached",
    "dreamsim_status",
    "image_file_problem",
    "image_similarity",
    "load_classifier",
]
