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
    VIDEO = "video"
    """An audio-video clip (mp4 with a video and an audio stream): PRISM-Bench candidates."""


OUTPUT_FILES: dict[Modality, str] = {
    Modality.TEXT: "generated.txt",
    Modality.IMAGE: "generated.png",
    Modality.SPEECH: "generated.wav",
    Modality.VIDEO: "generated.mp4",
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
        if modality is Modality.VIDEO:
            return _video_problem(path)
        import soundfile as sf

        info = sf.info(str(path))
        if info.frames <= 0:
            return f"{path}: audio has no samples"
        return ""
    except UnicodeDecodeError:
        return f"{path}: not valid UTF-8"
    except Exception as exc:
        return f"{path}: cannot decode {modality.value}: {type(exc).__name__}: {exc}"


def _video_problem(path: Path) -> str:
    """'' when ffprobe finds a video and an audio stream with a positive duration, else why not."""
    import json
    import subprocess

    try:
        probe = subprocess.run(
            [
                "ffprobe",
                "-v",
                "error",
                "-show_entries",
                "stream=codec_type:format=duration",
                "-of",
                "json",
                str(path),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{path}: cannot probe video: {exc}"
    if probe.returncode != 0:
        return f"{path}: cannot decode video: {probe.stderr.strip()[:200] or 'ffprobe failed'}"
    info = json.loads(probe.stdout or "{}")
    kinds = {s.get("codec_type") for s in info.get("streams", [])}
    if "video" not in kinds:
        return f"{path}: no video stream"
    if "audio" not in kinds:
        return f"{path}: no audio stream"
    try:
        duration = float(info.get("format", {}).get("duration", 0.0))
    except (TypeError, ValueError):
        duration = 0.0
    return "" if duration > 0 else f"{path}: video has no duration"


def _check_inside(root: Path, path: Path) -> None:
    """Refuse an entry that leads out of the candidate folder (a symlink, or a linked index folder).

    A candidate folder may come from elsewhere (``import``); following such a link would hand a
    file from outside it (a key, a config) to the judges and copy it into the run folder.
    """
    from omnieval.errors import DataError
    from omnieval.security import inside

    if (path.exists() or path.is_symlink()) and not inside(root, path):
        rel = path.relative_to(root).as_posix()
        raise DataError(f"{root}: {rel} is a link that leaves the candidate folder; copy the file in instead")


def read_candidate(root: Path, modality: Modality, index: int, *, decode: bool = True) -> CandidateOutput:
    """Locate (and optionally decode-check) one output; absent or undecodable means missing.

    Raises:
        DataError: the output or its ``missing.txt`` resolves outside ``root`` (symlinks followed).
    """
    folder = root / modality.value / str(index)
    path = output_path(root, modality, index)
    _check_inside(root, path)
    if not path.is_file():
        reason_file = folder / "missing.txt"
        _check_inside(root, reason_file)
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
