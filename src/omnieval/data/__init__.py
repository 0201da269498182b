"""Dataset building blocks shared by every benchmark: file checks, fingerprint manifests, JSONL manifests.

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
from omnieval.data._jsonl_manifest import InstanceDataset, write_manifest_records

__all__ = [
    "FileCheck",
    "FileEntry",
    "InstanceDataset",
    "Loaded",
    "Manifest",
    "Resolved",
    "TextEntry",
    "check_file",
    "clip",
    "file_entry",
    "image_problem",
    "manifest_digest",
    "normalize_text",
    "parse_characters",
    "read_json_file",
    "read_text_file",
    "refuse_foreign",
    "replace_owned",
    "resolve_in_root",
    "sha256_text",
    "show_value",
    "write_manifest",
    "write_manifest_records",
]
