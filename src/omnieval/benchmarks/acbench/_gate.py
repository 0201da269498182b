"""The OmniACBench dataset gate: the manifest as a table plus check columns, through Great Expectations.

``expectations/acbench_dataset.json`` checks that every line parses, ids are non-null and unique,
features and (feature, target value) pairs are known, scripts and instruction texts are non-empty,
keywords and heteronym objects are well formed, and (through helper columns computed here, since GX
only sees the table) that every media file is inside the folder, present and decodable.

The per-line checks are :func:`~omnieval.benchmarks.acbench._loader.check_lines`, the same the
loader runs; ``<field>__problem`` and ``problem`` columns hold their messages so that the report
names the failing line, id and field.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.benchmarks.acbench._loader import (
    MEDIA_FIELDS,
    REQUIRED_FIELDS,
    LineCheck,
    check_lines,
)
from omnieval.gates import GateResult, expectations_dir, gate_manifest_frame

if TYPE_CHECKING:
    import pandas as pd

#: Name of the suite file under ``expectations/``.
ACBENCH_SUITE = "acbench_dataset.json"

#: Boolean helper columns that hold when a field's checks pass (each with a ``<field>__problem``).
_FIELD_CHECKS: dict[str, str] = {
    "record": "parses",
    "script": "nonempty",
    "instruction_text": "nonempty",
    "image_keywords": "valid",
    "heteronym": "valid",
}


def helper_columns() -> list[str]:
    """The derived columns :func:`acbench_gate_frame` adds besides the manifest fields."""
    cols = ["feature_target", "problem"]
    for name, check in _FIELD_CHECKS.items():
        cols += [f"{name}__{check}", f"{name}__problem"]
    for name in MEDIA_FIELDS:
        cols += [f"{name}__present", f"{name}__decodable", f"{name}__problem"]
    return cols


def acbench_gate_frame(root: Path) -> tuple[pd.DataFrame, list[str]]:
    """The manifest as a table (one row per non-blank line, in order) with helper columns.

    Manifest fields hold the line's values: ``feature`` and ``target_value`` in canonical spelling
    when recognised, else as written; keywords joined with ``"; "``; the heteronym object as JSON.
    ``feature_target`` is ``<feature>=<target_value>``. Lines that are not JSON objects give rows
    of nulls with ``record__parses`` false.

    Returns:
        The table (no rows when there is no manifest) and the problems of the folder as a whole
        (no folder, no manifest, an empty manifest).
    """
    import pandas as pd

    lines, whole = check_lines(Path(root))
    columns = [*REQUIRED_FIELDS, "heteronym", *helper_columns()]
    frame = pd.DataFrame([_row(line) for line in lines], columns=columns)
    for name in columns:
        if name.endswith(("__parses", "__nonempty", "__valid", "__present", "__decodable")):
            frame[name] = frame[name].astype(bool)
    return frame, whole


def _row(line: LineCheck) -> dict[str, Any]:
    record = line.record or {}
    row = line.gate_row((*REQUIRED_FIELDS, "heteronym"))
    keywords = record.get("image_keywords")
    feature = line.feature if line.feature is not None else row["feature"]
    target = line.target_value if line.target_value is not None else row["target_value"]
    row["feature"], row["target_value"] = feature, target
    if isinstance(keywords, list) and all(isinstance(k, str) for k in keywords):
        row["image_keywords"] = "; ".join(keywords)
    parsed = line.record is not None
    row["feature_target"] = f"{feature}={target}" if parsed else None
    for name, check in _FIELD_CHECKS.items():
        if name == "record":
            continue
        problem = line.gate_reason(name)
        row[f"{name}__{check}"] = parsed and not problem
        row[f"{name}__problem"] = problem if parsed else row["record__problem"]
    for name in MEDIA_FIELDS:
        media = line.media.get(name)
        row[f"{name}__present"] = media is not None and media.present
        row[f"{name}__decodable"] = media is not None and media.decodable
        row[f"{name}__problem"] = line.gate_reason(name) if parsed else row["record__problem"]
    return row


def gate_acbench_dataset(root: Path, out: Path | None, *, suite_file: Path | None = None) -> GateResult:
    """Run the dataset gate (``expectations/acbench_dataset.json``) on an OmniACBench folder.

    Args:
        root: The dataset folder (holding ``manifest.jsonl``).
        out: Where to save the result (written whether the gate passes or fails); None to skip.
        suite_file: Another suite to use instead of the repository's.

    Returns:
        The result; :func:`~omnieval.gates.enforce` raises ``GateFailed`` (exit 2) when it failed.
        Failing rows are labelled with their row number, id and the line/field reason.
    """
    frame, whole = acbench_gate_frame(Path(root))
    return gate_manifest_frame(frame, whole, suite_file or expectations_dir() / ACBENCH_SUITE, root, out)
