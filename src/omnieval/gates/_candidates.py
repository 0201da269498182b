"""The candidate-folder gate (FORMATS.md section 2), run after generation and before scoring.

Missing or undecodable outputs are *not* gate failures: they become ``missing_output`` rows of the
scores table (and are listed as notes in the result). The gate fails only on structure: an index
folder that is not a dataset row, a file or folder outside the layout, or no candidate folder at all.
Hidden entries (names starting with ``.``) are ignored; loose files at the top level (for example a
system's pointer or manifest JSON) are allowed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.candidates import OUTPUT_FILES, Modality, output_path, read_candidate
from omnieval.gates._core import GateResult, expectations_dir, validate_frame

if TYPE_CHECKING:
    import pandas as pd

CANDIDATES_SUITE = "candidates.json"
CANDIDATE_COLUMNS = ("index", "modality", "entry", "present", "decodable", "status", "in_layout", "problem")

_RAW = "raw"
_RAW_FILE = "generated_raw.json"
_MISSING_FILE = "missing.txt"


def candidates_gate_frame(
    candidates_root: Path, n_rows: int, modalities: Sequence[Modality] = tuple(Modality)
) -> pd.DataFrame:
    """One row per (modality, dataset row) output plus one row per entry outside the layout.

    Columns: ``index`` (dataset row, -1 when the entry has none), ``modality``, ``entry`` (path
    relative to the folder), ``present`` (the output file exists), ``decodable`` (it decodes as its
    modality), ``status`` (``ok``, ``missing_output`` or ``structural``), ``in_layout``, ``problem``.
    """
    import pandas as pd

    root = Path(candidates_root)
    records: list[dict[str, Any]] = []
    if not root.is_dir():
        records.append(_structural(".", -1, "", f"candidate folder {root} not found"))
        return pd.DataFrame(records, columns=list(CANDIDATE_COLUMNS))
    for modality in modalities:
        for index in range(n_rows):
            path = output_path(root, modality, index)
            found = read_candidate(root, modality, index)
            records.append(
                {
                    "index": index,
                    "modality": modality.value,
                    "entry": path.relative_to(root).as_posix(),
                    "present": path.is_file(),
                    "decodable": found.present,
                    "status": "ok" if found.present else "missing_output",
                    "in_layout": True,
                    "problem": "" if found.present else _relative(found.problem, root),
                }
            )
    records.extend(_stray_entries(root, n_rows))
    frame = pd.DataFrame(records, columns=list(CANDIDATE_COLUMNS))
    return frame.astype({"index": "int64", "present": bool, "decodable": bool, "in_layout": bool})


def gate_candidates(
    candidates_root: Path,
    n_rows: int,
    out_json: Path | None,
    *,
    modalities: Sequence[Modality] = tuple(Modality),
    suite_file: Path | None = None,
) -> GateResult:
    """Run ``expectations/candidates.json`` on a candidate folder for a dataset of ``n_rows`` rows.

    Args:
        candidates_root: the folder holding ``text/``, ``image/``, ``speech/`` (and ``raw/``).
        n_rows: number of dataset rows; valid indices are ``0 .. n_rows - 1``.
        out_json: where to save the result; None to skip.
        modalities: the modalities expected from this system.
        suite_file: another suite to use instead of the repository's.

    Returns:
        The result; its ``notes`` count missing outputs per modality (never a failure by themselves).
    """
    frame = candidates_gate_frame(candidates_root, n_rows, modalities)
    notes = []
    missing = Counter(frame.loc[frame["status"] == "missing_output", "modality"])
    for modality in modalities:
        if missing.get(modality.value):
            notes.append(
                f"{modality.value}: {missing[modality.value]} of {n_rows} outputs missing "
                "(scored as missing_output)"
            )
    suite = suite_file or expectations_dir() / CANDIDATES_SUITE
    return validate_frame(frame, suite, artifact=str(candidates_root), out_json=out_json, notes=notes)


def _stray_entries(root: Path, n_rows: int) -> list[dict[str, Any]]:
    """Entries that are not part of the candidate layout, as structural rows."""
    out: list[dict[str, Any]] = []
    modality_names = {m.value for m in Modality}
    for top in sorted(root.iterdir()):
        if top.name.startswith("."):
            continue
        if top.is_file():
            continue
        if top.name not in modality_names and top.name != _RAW:
            out.append(_structural(top.name, -1, top.name, f"{top.name}/: not part of the candidate layout"))
            continue
        allowed = {_RAW_FILE} if top.name == _RAW else {OUTPUT_FILES[Modality(top.name)], _MISSING_FILE}
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
