"""The dataset gate of a ``manifest.jsonl`` folder (OmniACBench, PRISM-Bench).

Both JSONL benchmarks build a one-row-per-line table of their manifest and validate it against their
own Great Expectations suite. What they share is how problems of the folder as a whole (no folder, no
manifest, an empty one) are reported: the table is empty then, so the suite alone would fail for an
unhelpful reason. The shared step lives here, in the gates package, so that :mod:`omnieval.data`
(which reads and checks the manifest) never needs the gate machinery.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from omnieval.gates._core import FailedExpectation, GateResult, validate_frame, write_result

if TYPE_CHECKING:
    import pandas as pd


def gate_manifest_frame(
    frame: pd.DataFrame, whole: list[str], suite: Path, root: Path, out_json: Path | None
) -> GateResult:
    """Validate a manifest gate table against ``suite``; folder-level problems fail it first.

    ``whole`` holds the problems of the folder as a whole (no folder, no manifest, an empty one):
    the table is then empty, so a ``manifest_is_readable`` failure says why before the suite's own.
    The result is written to ``out_json`` (pass or fail) unless it is None.
    """
    result = validate_frame(frame, suite, artifact=str(root), out_json=None, id_column="id", notes=whole)
    if whole:
        head = FailedExpectation("manifest_is_readable", detail="; ".join(whole))
        result = replace(result, success=False, failed=[head, *result.failed])
    if out_json is not None:
        write_result(result, out_json)
    return result


__all__ = ["gate_manifest_frame"]
