"""Dataset building blocks shared by every benchmark: file checks, records, fingerprint manifests.

Each benchmark's own loader and validator live in its package under :mod:`omnieval.benchmarks`.
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
    file_entry,
    manifest_digest,
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

__all__ = [
    "BookMetadata",
    "Character",
    "FileEntry",
    "Loaded",
    "Manifest",
    "NextPageCondition",
    "Resolved",
    "TargetSpeech",
    "TaskInputs",
    "TextEntry",
    "Transition",
    "file_entry",
    "image_problem",
    "manifest_digest",
    "normalize_text",
    "parse_characters",
    "read_json_file",
    "read_text_file",
    "resolve_in_root",
    "sha256_text",
    "write_manifest",
]
