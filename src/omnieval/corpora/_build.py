"""Corpus configs and the one entry point that turns a config into a ready manifest.

Three kinds (``kind`` in YAML): ``espeak`` synthesizes (see :mod:`._synth`), ``import`` builds a
manifest from public corpora in their published layouts (see :mod:`._importers`), ``manifest`` uses a
manifest someone already wrote.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from omnieval.corpora._importers import IMPORTERS, import_corpus
from omnieval.corpora._manifest import (
    CARD_NAME,
    MANIFEST_NAME,
    CorpusCard,
    ManifestRow,
    manifest_digest,
    read_manifest,
    with_splits,
    write_manifest,
)
from omnieval.corpora._splits import SplitFractions, assign_splits
from omnieval.corpora._synth import EspeakRecipe, synthesize_corpus
from omnieval.errors import DataError


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ImportSource(_Strict):
    format: str
    """Registered importer: ``crema_d``, ``tess``, ``ravdess``, ``savee``, ``globe``, ``edacc``."""
    path: Path
    """The downloaded corpus, relative to the corpus root (put it, or a symlink to it, under ``sources/``)."""

    @field_validator("format")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in IMPORTERS:
            raise ValueError(f"unknown importer {value!r}; known: {', '.join(IMPORTERS.names())}")
        return value

    @field_validator("path")
    @classmethod
    def _relative(cls, value: Path) -> Path:
        if value.is_absolute() or ".." in value.parts:
            raise ValueError(
                "source paths are relative to the corpus root, without '..' (symlink outside data in)"
            )
        return value


class ImportRecipe(_Strict):
    kind: Literal["import"] = "import"
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    root: Path
    """Corpus folder; the manifest and card are written here."""
    feature: Literal["emotion", "accent", "timbre"]
    sources: tuple[ImportSource, ...] = Field(min_length=1)
    splits: SplitFractions = SplitFractions()
    seed: int = 0


class ManifestCorpus(_Strict):
    kind: Literal["manifest"] = "manifest"
    root: Path
    """Folder holding ``manifest.jsonl`` and ``corpus.json``, written by hand or by another tool."""


CorpusConfig = Annotated[EspeakRecipe | ImportRecipe | ManifestCorpus, Field(discriminator="kind")]


@dataclass(frozen=True)
class PreparedCorpus:
    """A corpus ready for the gate: rows, card, and its content version."""

    root: Path
    rows: tuple[ManifestRow, ...]
    card: CorpusCard
    digest: str
    """:func:`manifest_digest` of the rows: the corpus version recorded with every model trained on it."""

    @property
    def manifest_path(self) -> Path:
        return self.root / MANIFEST_NAME

    @property
    def version(self) -> str:
        return f"sha256:{self.digest[:16]}"


def _import(recipe: ImportRecipe) -> None:
    settings = recipe.model_dump(mode="json", exclude={"root"})
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()
    if (recipe.root / CARD_NAME).is_file() and (recipe.root / MANIFEST_NAME).is_file():
        try:
            if CorpusCard.read(recipe.root).recipe.get("digest") == key:
                return
        except DataError:
            pass
    rows: list[ManifestRow] = []
    for source in recipe.sources:
        prefix = source.path.as_posix().rstrip("/")
        for row in import_corpus(source.format, recipe.root / source.path, recipe.feature):
            rows.append(ManifestRow(**{**row.as_dict(), "path": f"{prefix}/{row.path}"}))
    splits = assign_splits(rows, recipe.splits, seed=recipe.seed)
    write_manifest(with_splits(rows, splits), recipe.root / MANIFEST_NAME)
    from omnieval.corpora._importers import FEATURE_LABELS

    CorpusCard(
        name=recipe.name,
        feature=recipe.feature,
        labels=FEATURE_LABELS[recipe.feature],
        description=f"{recipe.feature} corpus imported from " + ", ".join(s.format for s in recipe.sources),
        sources=tuple(s.format for s in recipe.sources),
        recipe={"digest": key, "settings": settings},
        synthetic=False,
    ).write(recipe.root)


def prepare_corpus(
    config: EspeakRecipe | ImportRecipe | ManifestCorpus, progress: Callable[[int, int], None] | None = None
) -> PreparedCorpus:
    """Make sure the corpus of ``config`` exists (synthesize or import when needed) and read it."""
    if isinstance(config, EspeakRecipe):
        synthesize_corpus(config, progress=progress)
    elif isinstance(config, ImportRecipe):
        _import(config)
    root = config.root
    rows = read_manifest(root / MANIFEST_NAME)
    card = CorpusCard.read(root)
    return PreparedCorpus(root=root, rows=tuple(rows), card=card, digest=manifest_digest(rows))
