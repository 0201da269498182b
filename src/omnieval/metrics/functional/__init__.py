"""Pure metric functions (numbers in, numbers out); model-backed wrappers live one level up."""

from omnieval.metrics.functional.acoustic import (
    classifier_accuracy,
    delta_wpm,
    is_whisper_like,
    phone_error_rate,
    reading_per,
    vfr_at,
    words_per_minute,
)
from omnieval.metrics.functional.emotion import (
    EMOTION_CLASSES,
    canonical_emotion,
    ensemble_emotion,
    to_canonical,
)
from omnieval.metrics.functional.gender import binarize_gender, mean_probabilities, window_spans
from omnieval.metrics.functional.image import cosine_similarity
from omnieval.metrics.functional.labels import SPEECH_FIELDS, exact_match, labels_match, normalize_label
from omnieval.metrics.functional.pitch import PITCH_THRESHOLDS, median_f0, pitch_label, pyin_f0
from omnieval.metrics.functional.speed import WordChunk, speaking_rate, speed_label
from omnieval.metrics.functional.text import (
    corpus_wer,
    edit_counts,
    error_rate,
    greedy_match_prf,
    normalize_words,
    word_errors,
)

__all__ = [
    "EMOTION_CLASSES",
    "PITCH_THRESHOLDS",
    "SPEECH_FIELDS",
    "WordChunk",
    "binarize_gender",
    "canonical_emotion",
    "classifier_accuracy",
    "corpus_wer",
    "cosine_similarity",
    "delta_wpm",
    "edit_counts",
    "ensemble_emotion",
    "error_rate",
    "exact_match",
    "greedy_match_prf",
    "is_whisper_like",
    "labels_match",
    "mean_probabilities",
    "median_f0",
    "normalize_label",
    "normalize_words",
    "phone_error_rate",
    "pitch_label",
    "pyin_f0",
    "reading_per",
    "speaking_rate",
    "speed_label",
    "to_canonical",
    "vfr_at",
    "window_spans",
    "word_errors",
    "words_per_minute",
]
