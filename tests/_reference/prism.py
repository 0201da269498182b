"""PRISM-Bench aggregation written again from FORMATS.md section 7, with plain dicts and loops.

- A cell is the mean of the judges whose row is ``ok``/``repaired``, per (subset, system, pairing,
  instance, dimension, audio type); a ground-truth row's pairing is the system it was judged beside.
- calibrated = (mean of the system's cells over instances) / (mean of the ground-truth cells paired
  with it) x (the global ground-truth mean: the unweighted mean of the ground-truth cells of every
  pairing with a system under test in that subset, dimension and audio type). Pairings with a
  diagnostic system or of the ground truth beside itself (the reference system) stay out of it;
  docs/prism.md ("Reference systems"): a subset without any system under test falls back to the
  reference system's pairings, and one with neither has no global mean. A cell is ``None`` when a
  mean is missing or the paired mean is 0.
- dimension total = sum over its active audio types; final = sum of dimension totals; ``None`` as
  soon as a part is. A (dimension, audio type) is active in a subset when it has any row there.

Nothing here imports the package's aggregation code.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

GT = "ground_truth"
VALUED = ("ok", "repaired")
DEFAULT_DIAGNOSTIC = frozenset({"muted", "swapped-audio", "offset"})
"""The reference probes, diagnostic unless a suite says ``diagnostic: false`` (docs/prism.md)."""
DEFAULT_REFERENCE = frozenset({"ground-truth"})
"""The ground truth as a candidate: its pairing is the ground truth beside itself (docs/prism.md)."""

CellKey = tuple[str, str, str, str, str, str]
"""(subset, system, paired_with, instance_id, dimension, audio type)."""


def _avg(xs: list[float]) -> float:
    total = 0.0
    for x in xs:
        total += x
    return total / len(xs)


def _totals(cells: dict[str, dict[str, float | None]]) -> tuple[dict[str, float | None], float | None]:
    """Dimension totals and final of one entry's cells; None as soon as a part is."""
    dimensions: dict[str, float | None] = {}
    final: float | None = 0.0
    for dim, per_type in cells.items():
        total: float | None = 0.0
        for v in per_type.values():
            total = None if (total is None or v is None) else total + v
        dimensions[dim] = total
        final = None if (final is None or total is None) else final + total
    return dimensions, final


def reference_aggregate(
    records: Iterable[Mapping[str, Any]],
    *,
    diagnostic: Iterable[str] = DEFAULT_DIAGNOSTIC,
    reference: Iterable[str] = DEFAULT_REFERENCE,
) -> dict[str, Any]:
    """``{"systems": {SYSTEM: {SUBSET: entry}}, "ground_truth": {SUBSET: entry}}``.

    An entry is ``{"cells": {DIMENSION: {AUDIO_TYPE: value}}, "dimensions": {DIMENSION: total},
    "final": x}``; the ground truth's cells are the global means.

    Args:
        records: the rows of a prism scores table (FORMATS.md section 3) as mappings.
        diagnostic: ids of the diagnostic systems.
        reference: ids of the reference system (the ground truth as a candidate).
    """
    probes, selves = frozenset(diagnostic), frozenset(reference)
    judged: dict[CellKey, list[float]] = defaultdict(list)
    seen_cells: set[CellKey] = set()
    for r in records:
        key = (r["subset"], r["system"], r["paired_with"], r["instance_id"], r["track"], r["criterion"])
        seen_cells.add(key)
        if r["status"] in VALUED:
            judged[key].append(float(r["value"]))
    cell = {k: _avg(v) for k, v in judged.items()}
    active: dict[str, set[tuple[str, str]]] = defaultdict(set)
    systems_in: dict[str, set[str]] = defaultdict(set)
    pairings_in: dict[str, set[str]] = defaultdict(set)
    for subset, system, paired, _iid, dim, atype in seen_cells:
        active[subset].add((dim, atype))
        systems_in[subset].add(paired if system == GT else system)
        if system == GT:
            pairings_in[subset].add(paired)
    systems_out: dict[str, Any] = {}
    gt_out: dict[str, Any] = {}
    for subset, cells in active.items():
        under_test = pairings_in[subset] - probes - selves
        beside_itself = pairings_in[subset] & selves - probes
        calibrating = under_test or beside_itself
        global_mean: dict[tuple[str, str], float | None] = {}
        for dim, atype in cells:
            every_gt = [
                v
                for k, v in cell.items()
                if k[0] == subset and k[1] == GT and k[2] in calibrating and k[4] == dim and k[5] == atype
            ]
            global_mean[(dim, atype)] = _avg(every_gt) if every_gt else None
        gt_cells: dict[str, dict[str, float | None]] = {}
        for dim, atype in cells:
            gt_cells.setdefault(dim, {})[atype] = global_mean[(dim, atype)]
        gt_dims, gt_final = _totals(gt_cells)
        gt_out[subset] = {"cells": gt_cells, "dimensions": gt_dims, "final": gt_final}
        for system in systems_in[subset]:
            sys_cells: dict[str, dict[str, float | None]] = {}
            for dim, atype in cells:
                mine = [
                    v
                    for k, v in cell.items()
                    if k[0] == subset and k[1] == system and k[4] == dim and k[5] == atype
                ]
                beside = [
                    v
                    for k, v in cell.items()
                    if k[0] == subset and k[1] == GT and k[2] == system and k[4] == dim and k[5] == atype
                ]
                every = global_mean[(dim, atype)]
                if mine and beside and every is not None and _avg(beside) != 0.0:
                    value: float | None = _avg(mine) / _avg(beside) * every
                else:
                    value = None
                sys_cells.setdefault(dim, {})[atype] = value
            dims, final = _totals(sys_cells)
            systems_out.setdefault(system, {})[subset] = {
                "cells": sys_cells,
                "dimensions": dims,
                "final": final,
            }
    return {"systems": systems_out, "ground_truth": gt_out}


def suite_roles(systems: Mapping[str, Mapping[str, Any]]) -> tuple[frozenset[str], frozenset[str]]:
    """(diagnostic ids, reference ids) of a suite's ``systems:`` block (docs/prism.md).

    A system is diagnostic when its entry says ``diagnostic: true``, or says nothing and its kind is
    one of the probes; the reference system is the one of kind ``ground-truth``.
    """
    diagnostic = frozenset(
        sid
        for sid, spec in systems.items()
        if (
            spec.get("diagnostic")
            if spec.get("diagnostic") is not None
            else spec["kind"] in DEFAULT_DIAGNOSTIC
        )
    )
    reference = frozenset(sid for sid, spec in systems.items() if spec["kind"] in DEFAULT_REFERENCE)
    return diagnostic, reference
