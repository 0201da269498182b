"""Labeled speech corpora for training evaluators: manifest format, importers, synthesis, splits.

A corpus is a folder with ``manifest.jsonl`` (one clip per line: ``path, label, speaker, source,
split`` plus hash, duration, sample rate, text) and ``corpus.json`` (its card). Splits never share a
speaker or an audio file. See ``docs/training.md``.
"""

from omnieval.corpora._audio import (
    TARGET_RATE,
    AudioInfo,
    audio_info,
    load_audio_16k,
    to_mono_16k,
)
from omnieval.corpora._build import (
    CorpusConfig,
    ImportRecipe,
    ImportSource,
    ManifestCorpus,
    PreparedCorpus,
    prepare_corpus,
)
from omnieval.corpora._checks import GATE_COLUMNS, corpus_gate_frame, describe_problems
from omnieval.corpora._importers import FEATURE_LABELS, IMPORTERS, import_corpus
from omnieval.corpora._manifest import (
    CARD_NAME,
    MANIFEST_NAME,
    SPLITS,
    CorpusCard,
    ManifestRow,
    manifest_digest,
    read_manifest,
    write_manifest,
)
from omnieval.corpora._splits import SplitFractions, assign_splits, find_leaks, leaking_rows
from omnieval.corpora._synth import EspeakRecipe, plan_corpus, synthesize_corpus, whisperize

__all__ = [
    "CARD_NAME",
    "FEATURE_LABELS",
    "GATE_COLUMNS",
    "IMPORTERS",
    "MANIFEST_NAME",
    "SPLITS",
    "TARGET_RATE",
    "AudioInfo",
    "CorpusCard",
    "CorpusConfig",
    "EspeakRecipe",
    "ImportRecipe",
    "ImportSource",
    "ManifestCorpus",
    "ManifestRow",
    "PreparedCorpus",
    "SplitFractions",
    "assign_splits",
    "audio_info",
    "corpus_gate_frame",
    "describe_problems",
    "find_leaks",
    "import_corpus",
    "leaking_rows",
    "load_audio_16k",
    "manifest_digest",
    "plan_corpus",
    "prepare_corpus",
    "read_manifest",
    "synthesize_corpus",
    "to_mono_16k",
    "whisperize",
    "write_manifest",
]
