"""``import``: outputs made elsewhere, in the candidate layout, evaluated as they are."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from omnieval.candidates import Modality, read_candidate
from omnieval.errors import ConfigError
from omnieval.systems._base import SYSTEMS, GenerationRequest, GenerationSummary, System
from omnieval.systems._spec import ImportConfig, SystemSpec

ALL_MODALITIES: tuple[str, ...] = tuple(m.value for m in Modality if m is not Modality.VIDEO)
"""FORMATS.md section 2's candidate layout (text, image, speech): the default when a caller names no
modalities; the generate stage passes the benchmark's own (prism: ``video``)."""


class ImportSystem(System):
    """Points at an existing candidate folder; missing or undecodable outputs become ``missing_output``.

    Args:
        path: The folder of outputs made elsewhere (FORMATS.md section 2's layout).
        modalities: The outputs read from it (the benchmark's own; :data:`ALL_MODALITIES` by default).
    """

    kind: ClassVar[str] = "import"
    config_model: ClassVar[type[SystemSpec]] = ImportConfig

    def __init__(self, path: str | Path, modalities: Sequence[str] = ALL_MODALITIES) -> None:
        self.path = Path(path).expanduser()
        self.modalities = tuple(Modality(m) for m in modalities)

    def generate(self, request: GenerationRequest) -> GenerationSummary:
        """Check every instance's outputs in :attr:`path` and leave a pointer to it in
        ``request.out_root`` (``IMPORTED.json``: the folder, the counts and each problem)."""
        transitions, out_root = request.instances, request.out_root
        if not self.path.is_dir():
            raise ConfigError(f"import system: candidate folder {self.path} does not exist")
        source = self.path.resolve()
        counts: dict[str, int] = {}
        problems: list[str] = []
        for done, tr in enumerate(transitions, start=1):
            for modality in self.modalities:
                found = read_candidate(source, modality, tr.index)
                if not found.present:
                    counts[modality.value] = counts.get(modality.value, 0) + 1
                    problems.append(f"row {tr.index} ({tr.id}) {modality.value}: {found.problem}")
            request.tick(done)
        out_root.mkdir(parents=True, exist_ok=True)
        pointer = {"imported_from": str(source), "missing": counts, "problems": problems}
        (out_root / "IMPORTED.json").write_text(json.dumps(pointer, indent=2) + "\n", encoding="utf-8")
        return GenerationSummary(
            "import", "import", source, len(transitions), counts, {"imported_from": str(source)}
        )


SYSTEMS.register("import")(ImportSystem)


def resolve_candidates_root(out_root: Path) -> Path:
    """Where a system's outputs really are: the imported folder for ``import``, else ``out_root``."""
    pointer = out_root / "IMPORTED.json"
    if pointer.is_file():
        return Path(json.loads(pointer.read_text(encoding="utf-8"))["imported_from"])
    return out_root
