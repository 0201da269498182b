"""The candidate-folder gate (FORMATS.md section 2), run after generation and before scoring.

The gate is generic over a benchmark's ``modalities`` (folder names under the candidate root, e.g.
storybench's text/image/speech, acbench's speech, prism's video): each is a
:class:`~omnieval.candidates.Modality` with one output file, ``generated.<suffix>``.

Missing or undecodable outputs are *not* gate failures: they become ``missing_output`` rows of the
scores table (and are listed as notes in the result). The gate fails only on structure: an index
folder that is not a dataset row, a file or folder outside the layout, or no candidate folder at all.
Hidden entries (names starting with ``.``) are ignored; loose files at the top level (for example a
system's pointer or manifest JSON) are allowed.

With a :class:`SpeechCheck`, decodable speech outputs are also analysed (through the metrics cache,
so the metrics stage reuses the result): a clip that holds no speech (noise, music, near-silence:
status ``no_speech``) is a note naming its file and index, like a missing output; it is scored as
``missing_output`` later and never fails the gate.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.candidates import OUTPUT_FILES, Modality, read_candidate
from omnieval.errors import ConfigError
from omnieval.gates._core import GateResult, expectations_dir, validate_frame

if TYPE_CHECKING:
    import pandas as pd

    from omnieval.metrics import MetricsConfig

log = logging.getLogger("omnieval.gates")

CANDIDATES_SUITE = "candidates.json"
CANDIDATE_COLUMNS = ("index", "modality", "entry", "present", "decodable", "status", "in_layout", "problem")

_RAW = "raw"
_RAW_FILE = "generated_raw.json"
_MISSING_FILE = "missing.txt"
#: ``raw/<index>/unscored/``: a system's own files of a failed example (a semi-orchestration
#: backbone's text.txt, image.png, speech.wav), kept for inspection and never scored.
_UNSCORED = "unscored"
_UNSCORED_FILES = frozenset(f"{m.value}{Path(name).suffix}" for m, name in OUTPUT_FILES.items())

BASE_MODALITIES: tuple[str, ...] = ("text", "image", "speech")
"""The FORMATS.md section 2 folders: always part of the layout (a benchmark may leave some empty)."""

MAX_SPEECH_NOTES = 20
"""Clips without speech named one by one in the notes; the rest are counted."""


@dataclass(frozen=True)
class SpeechCheck:
    """Analyse the decodable speech outputs and note those that hold no speech.

    Attributes:
        config: The suite's metric settings (the same analyzer and cache keys as the metrics stage).
        cache_dir: The metrics cache (``<state>/cache/metrics`` in a flow); None = no cache.
    """

    config: MetricsConfig
    cache_dir: Path | None = None


def output_file(modality: str) -> str:
    """The file name of one output of ``modality`` (``generated.wav`` for ``speech``).

    Raises:
        ConfigError: the modality is not one of :class:`~omnieval.candidates.Modality`.
    """
    try:
        return OUTPUT_FILES[Modality(str(modality))]
    except ValueError:
        raise ConfigError(
            f"modality {modality!r} has no candidate output file (known: {', '.join(m.value for m in Modality)})"
        ) from None


def candidates_gate_frame(
    candidates_root: Path, n_rows: int, modalities: Sequence[Modality | str] = BASE_MODALITIES
) -> pd.DataFrame:
    """One row per (modality, dataset row) output plus one row per entry outside the layout.

    Columns: ``index`` (dataset row, -1 when the entry has none), ``modality``, ``entry`` (path
    relative to the folder), ``present`` (the output file exists), ``decodable`` (it decodes as its
    modality), ``status`` (``ok``, ``missing_output`` or ``structural``), ``in_layout``, ``problem``.

    Raises:
        ConfigError: a modality has no known output file.
    """
    import pandas as pd

    root = Path(candidates_root)
    names = [str(m) for m in modalities]
    files = {name: output_file(name) for name in names}  # ConfigError before any file is read
    records: list[dict[str, Any]] = []
    if not root.is_dir():
        records.append(_structural(".", -1, "", f"candidate folder {root} not found"))
        return pd.DataFrame(records, columns=list(CANDIDATE_COLUMNS))
    for name in names:
        for index in range(n_rows):
            path = root / name / str(index) / files[name]
            problem = read_candidate(root, Modality(name), index).problem
            records.append(
                {
                    "index": index,
                    "modality": name,
                    "entry": path.relative_to(root).as_posix(),
                    "present": path.is_file(),
                    "decodable": not problem,
                    "status": "missing_output" if problem else "ok",
                    "in_layout": True,
                    "problem": _relative(problem, root),
                }
            )
    records.extend(_stray_entries(root, n_rows, names))
    frame = pd.DataFrame(records, columns=list(CANDIDATE_COLUMNS))
    return frame.astype({"index": "int64", "present": bool, "decodable": bool, "in_layout": bool})


def gate_candidates(
    candidates_root: Path,
    n_rows: int,
    out_json: Path | None,
    *,
    modalities: Sequence[Modality | str] = BASE_MODALITIES,
    suite_file: Path | None = None,
    speech_check: SpeechCheck | None = None,
) -> GateResult:
    """Run ``expectations/candidates.json`` on a candidate folder for a dataset of ``n_rows`` rows.

    Args:
        candidates_root: the folder holding ``text/``, ``image/``, ``speech/`` (and ``raw/``).
        n_rows: number of dataset rows; valid indices are ``0 .. n_rows - 1``.
        out_json: where to save the result; None to skip.
        modalities: the modalities expected from this system (a benchmark's ``modalities``).
        suite_file: another suite to use instead of the repository's.
        speech_check: also analyse the speech outputs and note clips without speech (see the module
            docstring); None = decodability only.

    Returns:
        The result; its ``notes`` count missing outputs per modality and name clips without speech
        (never a failure by themselves).
    """
    frame = candidates_gate_frame(candidates_root, n_rows, modalities)
    notes = []
    missing = Counter(frame.loc[frame["status"] == "missing_output", "modality"])
    for name in (str(m) for m in modalities):
        if missing.get(name):
            notes.append(f"{name}: {missing[name]} of {n_rows} outputs missing (scored as missing_output)")
    if speech_check is not None and Modality.SPEECH.value in {str(m) for m in modalities}:
        notes.extend(_no_speech_notes(frame, Path(candidates_root), n_rows, speech_check))
    suite = suite_file or expectations_dir() / CANDIDATES_SUITE
    return validate_frame(frame, suite, artifact=str(candidates_root), out_json=out_json, notes=notes)


def _no_speech_notes(frame: pd.DataFrame, root: Path, n_rows: int, check: SpeechCheck) -> list[str]:
    """Notes for decodable speech outputs in which Whisper heard no speech."""
    from omnieval.metrics import MetricCache, default_analyzer, describe_cached

    rows = frame[(frame["modality"] == Modality.SPEECH.value) & (frame["status"] == "ok")]
    if rows.empty:
        return []
    entries = [str(e) for e in rows["entry"]]
    described = describe_cached(
        default_analyzer(check.config), [root / e for e in entries], MetricCache(check.cache_dir)
    ).attributes
    found = [
        (int(index), entry, attrs)
        for index, entry, attrs in zip(rows["index"], entries, described, strict=True)
        if attrs.no_speech
    ]
    if not found:
        return []
    notes = [
        f"speech: {len(found)} of {n_rows} outputs hold no speech (noise, music or silence; scored as "
        "missing_output)"
    ]
    for index, entry, attrs in found[:MAX_SPEECH_NOTES]:
        reason = _relative(attrs.message, root).replace(f"{entry}: ", "", 1)
        notes.append(f"speech {index}: {entry}: {reason}")
        log.warning("candidates gate: speech %d (%s) holds no speech", index, root / entry)
    if len(found) > MAX_SPEECH_NOTES:
        notes.append(f"speech: {len(found) - MAX_SPEECH_NOTES} more outputs without speech not listed")
    return notes


def _stray_entries(root: Path, n_rows: int, expected: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Entries that are not part of the candidate layout, as structural rows.

    The layout's folders are the expected modalities, the :data:`BASE_MODALITIES` and ``raw/``
    (``raw/<index>/`` holds ``generated_raw.json`` and may hold ``unscored/<modality>.<ext>``).
    """
    out: list[dict[str, Any]] = []
    modality_names = {*BASE_MODALITIES, *expected}
    for top in sorted(root.iterdir()):
        if top.name.startswith("."):
            continue
        if top.is_file():
            continue
        if top.name not in modality_names and top.name != _RAW:
            out.append(_structural(top.name, -1, top.name, f"{top.name}/: not part of the candidate layout"))
            continue
        allowed = {_RAW_FILE} if top.name == _RAW else {output_file(top.name), _MISSING_FILE}
        for sub in sorted(top.iterdir()):
            if sub.name.startswith("."):
                continue
            rel = f"{top.name}/{sub.name}"
            index = _index(sub.name)
            if not sub.is_dir():
                out.append(_structural(rel, -1, top.name, f"{rel}: a file where index folders belong"))
                continue
            if index is None or index >= n_rows:
                why = (
                    "not a row index"
                    if index is None
                    else f"index {index} is not a dataset row (0..{n_rows - 1})"
                )
                out.append(_structural(rel, -1 if index is None else index, top.name, f"{rel}/: {why}"))
                continue
            for leaf in sorted(sub.iterdir()):
                if leaf.name.startswith(".") or (leaf.name in allowed and leaf.is_file()):
                    continue
                leaf_rel = f"{rel}/{leaf.name}"
                if top.name == _RAW and leaf.name == _UNSCORED and leaf.is_dir() and not leaf.is_symlink():
                    out.extend(
                        _structural(
                            f"{leaf_rel}/{kept.name}",
                            index,
                            top.name,
                            f"{leaf_rel}/{kept.name}: not part of the candidate layout",
                        )
                        for kept in sorted(leaf.iterdir())
                        if not kept.name.startswith(".")
                        and not (kept.name in _UNSCORED_FILES and kept.is_file() and not kept.is_symlink())
                    )
                    continue
                out.append(
                    _structural(leaf_rel, index, top.name, f"{leaf_rel}: not part of the candidate layout")
                )
    return out


def _structural(entry: str, index: int, modality: str, problem: str) -> dict[str, Any]:
    return {
        "index": index,
        "modality": modality,
        "entry": entry,
        "present": False,
        "decodable": False,
        "status": "structural",
        "in_layout": False,
        "problem": problem,
    }


def _index(name: str) -> int | None:
    """The row index a folder name stands for; None unless it is a canonical decimal (``7``, not ``07``)."""
    if not name.isdigit() or not name.isascii():
        return None
    value = int(name)
    return value if str(value) == name else None


def _relative(problem: str, root: Path) -> str:
    return problem.replace(str(root.resolve()) + "/", "").replace(str(root) + "/", "")
