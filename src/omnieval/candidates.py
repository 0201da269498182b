"""Candidate layout (FORMATS.md section 2): what a system under test produces.

```
<candidates>/text/<index>/generated.txt      non-empty UTF-8
<candidates>/image/<index>/generated.png     decodable image
<candidates>/speech/<index>/generated.wav    decodable WAV
<candidates>/<modality>/<index>/missing.txt  optional reason an output is missing
```
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class Modality(StrEnum):
    TEXT = "text"
    IMAGE = "image"
    SPEECH = "speech"


OUTPUT_FILES: dict[Modality, str] = {
    Modality.TEXT: "generated.txt",
    Modality.IMAGE: "generated.png",
    Modality.SPEECH: "generated.wav",
}


@dataclass(frozen=True)
class CandidateOutput:
    """One candidate output; ``path`` is None when missing, with the reason in ``problem``."""

    modality: Modality
    index: int
    path: Path | None
    problem: str = ""

    @property
    def present(self) -> bool:
        return self.path is not None


def output_path(root: Path, modality: Modality, index: int) -> Path:
    """Where a system writes the output of ``modality`` for dataset row ``index``."""
    return root / modality.value / str(index) / OUTPUT_FILES[modality]


_INVISIBLE = str.maketrans("", "", "\u200b\u200c\u200d\u2060\ufeff\u00ad")


def _decode_problem(path: Path, modality: Modality) -> str:
    """Return '' when the file decodes as its modality, else a short reason naming the file."""
    try:
        if path.stat().st_size == 0:
            return f"{path}: empty file"
        if modality is Modality.TEXT:
            text = path.read_text(encoding="utf-8")
            # Zero-width and byte-order marks survive str.strip() but leave nothing to score.
            visible = text.translate(_INVISIBLE).strip()
            return "" if visible else f"{path}: narration is empty"
        if modality is Modality.IMAGE:
            from PIL import Image

            with Image.open(path) as img:
                img.load()
            return ""
        import soundfile as sf

        info = sf.info(str(path))
        if info.frames <= 0:
            return f"{path}: audio has no samples"
        return ""
    except UnicodeDecodeError:
        return f"{path}: not valid UTF-8"
    except Exception as exc:
        return f"{path}: cannot decode {modality.value}: {type(exc).__name__}: {exc}"


def read_candidate(root: Path, modality: Modality, index: int, *, decode: bool = True) -> CandidateOutput:
    """Locate (and optionally decode-check) one output; absent or undecodable means missing."""
    folder = root / modality.value / str(index)
    path = output_path(root, modality, index)
    if not path.is_file():
        reason_file = folder / "missing.txt"
        reason = (
            reason_file.read_text(encoding="utf-8", errors="replace").strip() if reason_file.is_file() else ""
        )
        return CandidateOutput(modality, index, None, reason or f"{path}: no output")
    if decode:
        problem = _decode_problem(path, modality)
        if problem:
            return CandidateOutput(modality, index, None, problem)
    return CandidateOutput(modality, index, path)


def write_missing(root: Path, modality: Modality, index: int, reason: str) -> None:
    """Record why a system produced no output for one modality of one row."""
    folder = root / modality.value / str(index)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "missing.txt").write_text(reason + "\n", encoding="utf-8")
