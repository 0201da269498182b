"""Synthetic prism scores tables for the aggregation, stability, human and report tests.

Items get valid tag sets of their subset, so their active cells are what the protocol activates;
every system is judged beside the ground truth by every judge, with seeded invalid rows (parse
errors) and missing judges (no row at all) when asked.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pandas as pd

from omnieval.benchmarks.prism._tags import GROUND_TRUTH, SUBSETS, active_cells, valid_tag_sets


def row(
    system: str,
    instance_id: str,
    dimension: str,
    audio_type: str,
    value: float | None,
    *,
    paired_with: str = GROUND_TRUTH,
    subset: str = "off_screen",
    judge: str = "j",
    panel: str = "p",
    status: str | None = None,
    index: int = 0,
) -> dict[str, Any]:
    """One scores-table row (FORMATS.md section 3) for a prism judge score."""
    return {
        "benchmark": "prism",
        "system": system,
        "instance_id": instance_id,
        "index": index,
        "track": dimension,
        "component": "judge",
        "judge": judge,
        "criterion": audio_type,
        "value": value,
        "status": status or ("ok" if value is not None else "parse_error"),
        "panel": panel,
        "condition": "",
        "subset": subset,
        "paired_with": paired_with,
    }


def frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def make_prism_scores(
    *,
    seed: int = 0,
    systems: Sequence[str] = ("sys-a", "sys-b", "sys-c"),
    items_per_subset: int = 6,
    subsets: Sequence[str] = SUBSETS,
    judges: Sequence[tuple[str, str]] = (("panel-1", "j1"), ("panel-1", "j2")),
    invalid_rate: float = 0.0,
    missing_rate: float = 0.0,
    integer: bool = True,
) -> pd.DataFrame:
    """A seeded prism table: ``items_per_subset`` items per subset, each system and its ground truth
    judged by every (panel, judge); a system has a per-system quality offset so systems differ."""
    rng = random.Random(seed)
    quality = {s: rng.uniform(-2.5, 1.0) for s in systems}
    rows: list[dict[str, Any]] = []
    index = 0
    for subset in subsets:
        tag_sets = sorted(sorted(ts) for ts in valid_tag_sets(subset))
        for k in range(items_per_subset):
            iid = f"{subset}/{k:03d}"
            tags = tag_sets[rng.randrange(len(tag_sets))]
            base = {str(c): rng.uniform(5.0, 9.0) for c in active_cells(tags)}
            for system in systems:
                for cell in active_cells(tags):
                    for panel, judge in judges:
                        for who, paired in ((system, GROUND_TRUTH), (GROUND_TRUTH, system)):
                            if rng.random() < missing_rate:
                                continue
                            shift = quality[system] if who == system else rng.uniform(-0.6, 0.6)
                            raw = min(10.0, max(0.0, base[str(cell)] + shift + rng.gauss(0.0, 1.0)))
                            value: float | None = float(round(raw)) if integer else raw
                            if rng.random() < invalid_rate:
                                value = None
                            rows.append(
                                row(
                                    who,
                                    iid,
                                    cell.dimension,
                                    cell.audio_type,
                                    value,
                                    paired_with=paired,
                                    subset=subset,
                                    judge=judge,
                                    panel=panel,
                                    index=index,
                                )
                            )
            index += 1
    return frame(rows)
