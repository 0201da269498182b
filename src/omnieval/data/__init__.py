"""Dataset building blocks shared by every benchmark: file checks, fingerprint manifests, typed datasets.

Each benchmark's own loader and validator live in its package under :mod:`omnieval.benchmarks`.
"""

from omnieval.data._files import (
    FileCheck,
    Loaded,
    Resolved,
    check_file,
    clip,
    image_problem,
    parse_characters,
    read_json_file,
    read_text_file,
    resolve_in_root,
    show_value,
)
from omnieval.data._fingerprint import (
    TEXT_FIELDS,
    FileEntry,
    Manifest,
    TextEntry,
    file_entry,
    manifest_digest,
    normalize_text,
    sha256_text,
    write_manifest,
)
from omnieval.data._generated import refuse_foreign, replace_owned
from omnieval.data._jsonl_manifest import (
    MANIFEST_NAME,
    Identified,
    InstanceDataset,
    ManifestDataset,
    ManifestReport,
    load_manifest,
    relative_posix,
    write_manifest_records,
)

__all__ = [
    "MANIFEST_NAME",
    "TEXT_FIELDS",
    "FileCheck",
    "FileEntry",
    "Identified",
    "InstanceDataset",
    "Loaded",
    "Manifest",
    "ManifestDataset",
    "ManifestReport",
    "Resolved",
    "TextEntry",
    "check_file",
    "clip",
    "file_entry",
    "image_problem",
    "load_manifest",
    "manifest_digest",
    "normalize_text",
    "parse_characters",
    "read_json_file",
    "read_text_file",
    "refuse_foreign",
    "relative_posix",
    "replace_owned",
    "resolve_in_root",
    "sha256_text",
    "show_value",
    "write_manifest",
    "write_manifest_records",
]
