"""Omni-StoryBench dataset fingerprint: the parquet, every referenced file and the normalized texts."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from omnieval.benchmarks.storybench._loader import StoryBenchDataset
from omnieval.data import TEXT_FIELDS, Manifest, TextEntry, file_entry, manifest_digest, sha256_text


def fingerprint_storybench(dataset: StoryBenchDataset) -> Manifest:
    """Hash the parquet, every referenced file and every instance's normalized texts.

    Files used by several rows (a page is the next page of one transition and the current page of
    the following one) are listed once. Absolute paths never enter the digest, so the same data in
    another folder has the same digest.
    """
    root = dataset.root
    referenced: set[Path] = set()
    for t in dataset.transitions:
        referenced.update(p for p in _paths(t) if p is not None)
    files = tuple(sorted((file_entry(root, p) for p in referenced), key=lambda e: e.path))
    texts: list[TextEntry] = []
    for t in dataset.transitions:
        values = {
            "current_text": t.current_text,
            "next_text": t.next_text,
            "scene": t.condition.scene,
            "text_instruction": t.condition.text_content,
            "ambient_sound": t.condition.ambient_sound,
            "speech_utterance": t.target_speech.line,
        }
        texts.extend(TextEntry(t.id, name, sha256_text(values[name])) for name in TEXT_FIELDS)
    parquet = file_entry(root, dataset.parquet_path)
    texts_sorted = tuple(sorted(texts, key=lambda e: (e.id, e.field)))
    digest = manifest_digest(len(dataset.transitions), parquet, files, texts_sorted)
    return Manifest(len(dataset.transitions), parquet, files, texts_sorted, digest)


def _paths(t: Any) -> Iterable[Path | None]:
    return (
        t.current_image,
        t.next_image,
        t.current_text_path,
        t.next_text_path,
        t.sample_path,
        t.metadata_path,
    )
