"""OmniACBench aggregation written again from FORMATS.md section 7, as a plain loop over the records.

Per system and condition, valid rows only (status ``ok``/``repaired``): ``wer`` = mean per-instance
WER in percent; ``delta_wpm`` = mean WPM of the ``fast`` instances minus that of the ``slow`` ones
(``None`` unless both exist); ``per`` = mean per-instance PER in percent; ``vfr_at_0_3`` = percent of
the ``whisper`` instances whose voiced-frame ratio is at most 0.3; the three accuracies = percent of
evaluator hits on their feature's instances; ``n`` = instances of that system and condition, whatever
their status. A metric without a valid row is ``None`` and listed in ``not_computed``, never 0.
Nothing here imports the package's aggregation code.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pandas as pd

VALUED = ("ok", "repaired")
METRICS = (
    "wer",
    "delta_wpm",
    "per",
    "vfr_at_0_3",
    "emotion_accuracy",
    "accent_accuracy",
    "timbre_accuracy",
)
"""The paper's Table 2 columns, in its order."""
HEADLINE = (*METRICS, "n")
WHISPER_LIKE = 0.3
"""A voiced-frame ratio at or below this counts as whispered (PROTOCOLS.md)."""


def reference_aggregate(frame: pd.DataFrame) -> dict[str, dict[str, dict[str, Any]]]:
    """``{system: {condition: M}}`` with M holding :data:`METRICS`, ``n`` and ``not_computed``."""
    sums: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    ids: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in frame.to_dict("records"):
        key = (r["system"], r["condition"])
        ids[key].add(r["instance_id"])
        if r["status"] not in VALUED:
            continue
        comp, v = r["component"], float(r["value"])
        if comp == "wer":
            sums[key]["wer"].append(v)
        elif comp == "wpm":
            sums[key][r["criterion"]].append(v)
        elif comp == "per":
            sums[key]["per"].append(v)
        elif comp == "vfr" and r["criterion"] == "whisper":
            sums[key]["vfr"].append(1.0 if v <= WHISPER_LIKE else 0.0)
        elif comp == "attribute_accuracy":
            sums[key][r["track"]].append(v)

    def avg(xs: list[float], scale: float = 100.0) -> float | None:
        return scale * sum(xs) / len(xs) if xs else None

    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for (system, condition), instances in ids.items():
        acc = sums[(system, condition)]
        fast, slow = avg(acc["fast"], 1.0), avg(acc["slow"], 1.0)
        m: dict[str, Any] = {
            "wer": avg(acc["wer"]),
            "delta_wpm": None if fast is None or slow is None else fast - slow,
            "per": avg(acc["per"]),
            "vfr_at_0_3": avg(acc["vfr"]),
            "emotion_accuracy": avg(acc["emotion"]),
            "accent_accuracy": avg(acc["accent"]),
            "timbre_accuracy": avg(acc["timbre"]),
            "n": len(instances),
        }
        m["not_computed"] = [k for k in METRICS if m[k] is None]
        out[system][condition] = m
    return dict(out)
