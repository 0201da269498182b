"""Systems under test: registry, config and the shared write helpers."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from omnieval.candidates import Modality, output_path, write_missing
from omnieval.registry import Registry

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class GenerationSummary:
    """What a system produced; ``missing`` counts outputs it could not produce, per modality."""

    system: str
    kind: str
    candidates_root: Path
    written: int
    missing: dict[str, int] = field(default_factory=dict)
    lineage: dict[str, Any] = field(default_factory=dict)


class System(Protocol):
    """A system under test writes the candidate layout (FORMATS.md section 2) for every instance.

    Benchmarks with input conditions also pass ``condition=`` (see the benchmark's ``generate``).
    """

    uses_ground_truth: bool

    @property
    def generate(self) -> Callable[..., GenerationSummary]:
        """``generate(instances, out_root, *, progress=None, **benchmark_specific)``."""


SystemFactory = Callable[..., System]
SYSTEMS: Registry[SystemFactory] = Registry("system")


def write_text(root: Path, index: int, text: str) -> Path:
    path = output_path(root, Modality.TEXT, index)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    tmp.write_text(text.strip() + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def write_image(root: Path, index: int, source: Path) -> Path:
    """Copy ``source`` as the candidate PNG, converting other formats to PNG."""
    path = output_path(root, Modality.IMAGE, index)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name("generated.partial.png")
    if source.suffix.lower() == ".png":
        shutil.copyfile(source, tmp)
    else:
        from PIL import Image

        with Image.open(source) as img:
            img.convert("RGB").save(tmp, format="PNG")
    tmp.replace(path)
    return path


def clear_index(root: Path, index: int) -> None:
    """Remove stale outputs of one row (a previous run may have written a missing.txt)."""
    for modality in Modality:
        folder = root / modality.value / str(index)
        if folder.exists():
            shutil.rmtree(folder)


def record_missing(root: Path, modality: Modality, index: int, reason: str, counts: dict[str, int]) -> None:
    write_missing(root, modality, index, reason)
    counts[modality.value] = counts.get(modality.value, 0) + 1
