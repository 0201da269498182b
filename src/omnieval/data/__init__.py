"""Dataset loaders, strict validation and fingerprints.

Omni-StoryBench (FORMATS.md section 1): :func:`load_storybench` gives typed :class:`Transition`
records in parquet row order or raises :class:`~omnieval.errors.DataError` listing every problem;
:func:`validate_storybench` reports without raising; :func:`fingerprint_storybench` hashes it all.
"""

from omnieval.data._files import (
    Loaded,
    Resolved,
    image_problem,
    parse_characters,
    read_json_file,
    read_text_file,
    resolve_in_root,
)
from omnieval.data._fingerprint import (
    FileEntry,
    Manifest,
    TextEntry,
    fingerprint_storybench,
    normalize_text,
    sha256_text,
    write_manifest,
)
from omnieval.data._records import (
    BookMetadata,
    Character,
    NextPageCondition,
    TargetSpeech,
    TaskInputs,
    Transition,
)
from omnieval.data._schema import (
    PARQUET_RELPATH,
    PATH_COLUMNS,
    REQUIRED_COLUMNS,
    SAMPLE_LAYOUT,
    SPEECH_LABELS,
    SampleField,
    expected_id,
)
from omnieval.data._storybench import (
    StoryBenchDataset,
    ValidationReport,
    load_storybench,
    validate_storybench,
)

__all__ = [
    "PARQUET_RELPATH",
    "PATH_COLUMNS",
    "REQUIRED_COLUMNS",
    "SAMPLE_LAYOUT",
    "SPEECH_LABELS",
    "BookMetadata",
    "Character",
    "FileEntry",
    "Loaded",
    "Manifest",
    "NextPageCondition",
    "Resolved",
    "SampleField",
    "StoryBenchDataset",
    "TargetSpeech",
    "TaskInputs",
    "TextEntry",
    "Transition",
    "ValidationReport",
    "expected_id",
    "fingerprint_storybench",
    "image_problem",
    "load_storybench",
    "normalize_text",
    "parse_characters",
    "read_json_file",
    "read_text_file",
    "resolve_in_root",
    "sha256_text",
    "validate_storybench",
    "write_manifest",
]
