"""PRISM-Bench aggregation: the scores table -> GT-calibrated cells, dimension totals and Final.

:func:`aggregate_prism` computes FORMATS.md section 7's prism document. The steps, per subset:

1. **Cell** (:func:`judge_cells`): per (candidate, instance, dimension, audio type) the mean of the
   judges whose row is ``ok``/``repaired``; a ground-truth cell is kept per pairing (the system it
   was judged beside). With rows of several panels every (panel, judge) counts as one judge.
2. **Calibrated cell**: (mean of the system's cells over instances) / (mean of the ground-truth
   cells paired with that system) x (unweighted mean of the ground-truth cells of every (instance,
   pairing) with a system under test, of that subset, dimension and audio type). Each mean is over
   the cells that have a valid judge; an instance whose cell has none drops out of that mean only.
   *Diagnostic* systems (:data:`DEFAULT_DIAGNOSTIC`, or the ids a caller names) are calibrated with
   the same global mean but their pairings never enter it: a probe such as a muted reference is
   judged beside a ground truth that the judge may score differently from how it scores it beside a
   real candidate, and adding such a probe must not move any other system's score. The *reference
   system* (``ground-truth``, :data:`DEFAULT_REFERENCE`: the ground truth judged beside itself)
   stays out too. A subset with no system under test falls back to the reference system's
   pairings (the ground truth beside itself) and says so in ``calibration``; without those either,
   its cells are ``null``. Which pairings entered the mean is the document's ``calibration`` entry.
3. **Dimension total** = sum of the calibrated cells of the dimension's active audio types;
   **final** = sum of the dimension totals. All values on the judges' 0-10 scale per cell, unrounded.

A cell is *active* in a subset when the table has any row (any status) for that subset, dimension
and audio type; a dimension without active cells (AV coherence on ``off_screen``) is absent from the
system's entry, as the paper prints "/". A calibrated cell that cannot be computed is ``null`` and
its dimension total and final are ``null`` too (never a partial sum passed off as complete); each
such gap is listed with its reason in the top-level ``not_computed``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from omnieval.benchmarks._spec import declaration_error, package_spec
from omnieval.benchmarks.prism._tags import AUDIO_TYPES, DIMENSIONS, GROUND_TRUTH, ON_SCREEN_ONLY, SUBSETS
from omnieval.errors import DataError
from omnieval.scores import ALL_STATUSES, ROW_KEY, VALUED_STATUSES, duplicate_rows_problem

if TYPE_CHECKING:
    import pandas as pd

BENCHMARK = "prism"
COMPONENT = "judge"
SCORE_RANGE: tuple[float, float] = (0.0, 10.0)
"""Native range of a judge score (and of a cell)."""

CELL_KEYS: tuple[str, ...] = ("subset", "system", "paired_with", "instance_id", "dimension", "audio_type")
"""Columns identifying one judge-averaged cell (:func:`judge_cells`)."""

_MAX_SHOWN = 5

DEFAULT_REFERENCE: tuple[str, ...] = ("ground-truth",)
"""The reference system (its candidate is the reference clip itself, so its pairing is the ground
truth beside itself): as a system kind in a suite and as a system id in a bare scores table. Its
pairings never enter the calibration's global mean while a system under test exists."""

SOURCE_UNDER_TEST = "systems_under_test"
SOURCE_REFERENCE = "reference_beside_itself"
SOURCE_NONE = "none"

DEFAULT_DIAGNOSTIC: tuple[str, ...] = ("muted", "swapped-audio", "offset")
"""The reference probes, diagnostic by default: as system kinds in a suite (``diagnostic: false``
on a system overrides) and as system ids in a bare scores table (``omnieval aggregate`` options
override)."""


# -- checks ---------------------------------------------------------------------------------------


def _rows_problem(frame: pd.DataFrame, mask: Any, why: str) -> list[str]:
    """One problem line per offending row (the first few), naming row, system, instance and field."""
    hits = frame[mask]
    if not len(hits):
        return []
    lines = [
        f"row {int(pos)} (system {rec['system']!r}, instance {rec['instance_id']!r}, "
        f"track {rec['track']!r}, criterion {rec['criterion']!r}): {why}"
        for pos, rec in hits.head(_MAX_SHOWN).iterrows()
    ]
    if len(hits) > _MAX_SHOWN:
        lines.append(f"... {len(hits) - _MAX_SHOWN} more rows: {why}")
    return lines


def prism_scores(scores: pd.DataFrame, *, panel: str | None = None) -> pd.DataFrame:
    """The prism rows of a scores table, checked, optionally restricted to one judge panel.

    Args:
        scores: Scores table (FORMATS.md section 3); tables without the newer columns read as ``""``.
        panel: Keep only this panel's rows.

    Returns:
        The coerced frame (contract column order and dtypes), original row numbers as the index.

    Raises:
        DataError: Rows of another benchmark, an unknown status, subset, dimension (``track``),
            audio type (``criterion``) or component; a valued row without a finite 0-10 value or an
            unvalued row with one; a ground-truth row without the system it was paired with, or a
            system row not paired with ``ground_truth``; an instance in several subsets; duplicate
            rows; or an unknown ``panel``.
    """
    from omnieval.scores import coerce_scores

    try:
        frame = coerce_scores(scores)
    except (ValueError, TypeError) as exc:
        raise DataError(f"prism scores table: {exc}") from None
    others = sorted(set(frame["benchmark"]) - {BENCHMARK})
    if others:
        raise DataError(f"prism aggregation got rows of other benchmarks: {', '.join(others)}")
    valued = frame["status"].isin(VALUED_STATUSES)
    value = frame["value"]
    finite = value.map(math.isfinite)
    lo, hi = SCORE_RANGE
    is_gt = frame["system"] == GROUND_TRUTH
    checks = (
        (~frame["status"].isin(ALL_STATUSES), f"unknown status; known: {sorted(ALL_STATUSES)}"),
        (~frame["subset"].isin(SUBSETS), f"subset must be one of {', '.join(SUBSETS)}"),
        (~frame["track"].isin(DIMENSIONS), f"track must be a dimension ({', '.join(DIMENSIONS)})"),
        (
            ~frame["criterion"].isin(AUDIO_TYPES),
            f"criterion must be an audio type ({', '.join(AUDIO_TYPES)})",
        ),
        (frame["component"] != COMPONENT, f"component must be {COMPONENT!r}"),
        (valued & ~finite, "status ok/repaired needs a finite value"),
        (~valued & value.notna(), "only ok/repaired rows may carry a value"),
        (valued & finite & ((value < lo) | (value > hi)), f"value outside {lo:g}-{hi:g}"),
        (
            is_gt & frame["paired_with"].isin(["", GROUND_TRUTH]),
            "paired_with must name the system a ground-truth row was judged beside",
        ),
        (
            ~is_gt & (frame["paired_with"] != GROUND_TRUTH),
            f"paired_with of a system row must be {GROUND_TRUTH!r}",
        ),
    )
    problems = [line for mask, why in checks for line in _rows_problem(frame, mask, why)]
    subsets_per_instance = frame.groupby("instance_id")["subset"].nunique()
    for iid in list(subsets_per_instance[subsets_per_instance > 1].index)[:_MAX_SHOWN]:
        found = sorted(set(frame.loc[frame["instance_id"] == iid, "subset"]))
        problems.append(f"instance {iid!r} appears in several subsets {found}")
    problems += duplicate_rows_problem(
        frame,
        ROW_KEY,
        lambda first: (
            f"{first['track']}/{first['criterion']} panel {first['panel']!r} "
            f"judge {first['judge']!r} paired_with {first['paired_with']!r}"
        ),
    )
    if problems:
        raise DataError("invalid prism scores table", problems)
    if panel is not None:
        panels = sorted(set(frame["panel"]))
        if panel not in panels:
            raise DataError(
                f"prism scores table has no panel {panel!r}; panels: {', '.join(map(repr, panels))}"
            )
        frame = frame[frame["panel"] == panel]
    return frame


# -- cells ----------------------------------------------------------------------------------------


def judge_cells(scores: pd.DataFrame, *, panel: str | None = None, checked: bool = False) -> pd.DataFrame:
    """Judge-averaged cells: one row per (subset, system, paired_with, instance, dimension, audio type).

    Args:
        scores: Scores table (prism rows).
        panel: Only this panel's judges; default every (panel, judge) of the table.
        checked: ``scores`` already came from :func:`prism_scores` (skip the checks).

    Returns:
        Columns :data:`CELL_KEYS` + ``value`` (mean of the valid judges, NaN when none is valid) and
        ``n_judges`` (valid judges). Ground-truth cells have ``system`` = ``ground_truth`` and
        ``paired_with`` = the system; system cells ``paired_with`` = ``ground_truth``.
    """
    frame = scores if checked and panel is None else prism_scores(scores, panel=panel)
    renamed = frame.rename(columns={"track": "dimension", "criterion": "audio_type"})
    # Unvalued rows hold NaN, which mean/count skip: a cell is the mean of its valid judges only.
    grouped = renamed.groupby(list(CELL_KEYS), sort=True)["value"].agg(["mean", "count"])
    cells = grouped.reset_index().rename(columns={"mean": "value", "count": "n_judges"})
    cells["n_judges"] = cells["n_judges"].astype("int64")
    return cells


def item_totals(
    cells: pd.DataFrame, *, dimension: str | None = None, audio_type: str | None = None
) -> pd.DataFrame:
    """Per (subset, system, paired_with, instance) the sum of its judge-averaged cells (uncalibrated).

    Args:
        cells: :func:`judge_cells` output.
        dimension: Sum only this dimension's cells.
        audio_type: Sum only this audio type's cells.

    Returns:
        Columns ``subset, system, paired_with, instance_id, total``; ``total`` is NaN when any of the
        summed cells has no valid judge (a sum over fewer cells would not be comparable).
    """
    sel = cells
    if dimension is not None:
        sel = sel[sel["dimension"] == dimension]
    if audio_type is not None:
        sel = sel[sel["audio_type"] == audio_type]
    keys = ["subset", "system", "paired_with", "instance_id"]
    agg = sel.groupby(keys, sort=True)["value"].agg(["sum", "count", "size"]).reset_index()
    agg["total"] = agg["sum"].where(agg["count"] == agg["size"])
    return agg.loc[:, [*keys, "total"]]


# -- calibration ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Calibration:
    """One system's calibrated (subset, dimension, audio type) cell and what it is made of.

    Attributes:
        value: The calibrated score (0-10 scale, may exceed 10), None when not computable.
        system_mean: Mean of the system's valid cells over instances.
        gt_paired_mean: Mean of the valid ground-truth cells paired with the system.
        gt_global_mean: Mean of every valid ground-truth cell (every instance and pairing).
        why: Why ``value`` is None.
    """

    value: float | None
    system_mean: float | None
    gt_paired_mean: float | None
    gt_global_mean: float | None
    why: str | None = None


def _means(cells: pd.DataFrame, keys: list[str]) -> dict[tuple[str, ...], float]:
    valid = cells[cells["value"].notna()]
    out = valid.groupby(keys, sort=True)["value"].mean()
    return {
        tuple(str(k) for k in (key if isinstance(key, tuple) else (key,))): float(v) for key, v in out.items()
    }


def calibrate(
    system_mean: float | None, gt_paired_mean: float | None, gt_global_mean: float | None
) -> Calibration:
    """The section 7 formula for one cell, with the reason when it is undefined.

    Example:
        >>> calibrate(8.0, 7.5, 7.0).value
        7.466666666666667
        >>> calibrate(8.0, 0.0, 6.0).why
        'the ground truth paired with this system averaged 0, so the calibration ratio is undefined'
    """
    if system_mean is None:
        why = "no valid judge score for the system"
    elif gt_paired_mean is None:
        why = "no valid ground-truth score paired with this system"
    elif gt_global_mean is None:
        why = (
            "no valid ground-truth score beside a system under test (the global mean leaves out "
            "diagnostic systems and the ground truth beside itself; mark one as not diagnostic to "
            "calibrate against it)"
        )
    elif gt_paired_mean == 0.0:
        why = "the ground truth paired with this system averaged 0, so the calibration ratio is undefined"
    else:
        value = system_mean / gt_paired_mean * gt_global_mean
        return Calibration(value, system_mean, gt_paired_mean, gt_global_mean)
    return Calibration(None, system_mean, gt_paired_mean, gt_global_mean, why)


def _sum(values: Iterable[float | None]) -> float | None:
    vals = list(values)
    if not vals or any(v is None for v in vals):
        return None
    return float(sum(v for v in vals if v is not None))


def _unavailable(facts: Any) -> list[str]:
    """``not_computed`` lines for judges a panel could not run here (from the judge stage's lineage)."""
    if facts is None:
        return []
    lineage = (
        facts.get("judge_lineage") if isinstance(facts, Mapping) else getattr(facts, "judge_lineage", None)
    )
    out: list[str] = []
    for panel, entry in sorted((lineage or {}).items()):
        reason = entry.get("unavailable") if isinstance(entry, Mapping) else None
        if isinstance(reason, Mapping):
            out += [f"panel {panel} {track}: {why}" for track, why in sorted(reason.items()) if why]
        elif reason:
            out.append(f"panel {panel}: {reason}")
    return out


def _ids(facts: Any, given: Iterable[str] | None, key: str, default: tuple[str, ...]) -> frozenset[str]:
    """Role ids: ``given``, else the facts' ``key`` (mapping key or attribute), else ``default``."""
    if given is not None:
        return frozenset(given)
    found = facts.get(key) if isinstance(facts, Mapping) else getattr(facts, key, None)
    return frozenset(default if found is None else found)


def system_roles(
    facts: Any = None, *, diagnostic: Iterable[str] | None = None, reference: Iterable[str] | None = None
) -> tuple[frozenset[str], frozenset[str]]:
    """(diagnostic ids, reference ids) as :func:`aggregate_prism` resolves them: the arguments, else
    the facts' ``diagnostic`` / ``reference`` (a :class:`~omnieval.benchmarks.RunFacts`, a mapping or
    any object with those attributes), else :data:`DEFAULT_DIAGNOSTIC` / :data:`DEFAULT_REFERENCE`."""
    return (
        _ids(facts, diagnostic, "diagnostic", DEFAULT_DIAGNOSTIC),
        _ids(facts, reference, "reference", DEFAULT_REFERENCE),
    )


def under_test(systems: Iterable[str], probes: frozenset[str], references: frozenset[str]) -> frozenset[str]:
    """The systems under test among ``systems``: neither diagnostic nor the reference system.

    The one definition that the calibration's global mean and the stability statistics share.

    Example:
        >>> sorted(under_test(["a", "muted", "ground-truth"], frozenset({"muted"}), frozenset({"ground-truth"})))
        ['a']
    """
    return frozenset(systems) - probes - references


def _pairing_counts(gt_cells: pd.DataFrame, systems: Iterable[str]) -> dict[str, dict[str, int]]:
    """Per pairing system: instances and valid ground-truth cells beside it (sorted by system)."""
    out: dict[str, dict[str, int]] = {}
    for system in sorted(systems):
        own = gt_cells[gt_cells["paired_with"] == system]
        valid = own[own["value"].notna()]
        out[system] = {"instances": int(valid["instance_id"].nunique()), "cells": len(valid)}
    return out


def _calibration_sources(
    gt_cells: pd.DataFrame, probes: frozenset[str], references: frozenset[str]
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The ground-truth cells the global mean takes, per subset, and the ``calibration`` document.

    Per subset: the pairings with systems under test (neither diagnostic nor the reference system);
    when the subset has none, the reference system's (the ground truth beside itself); else none.
    """
    import pandas as pd

    taken: list[pd.DataFrame] = []
    doc: dict[str, Any] = {}
    for subset in _ordered(gt_cells["subset"], SUBSETS):
        in_subset = gt_cells[gt_cells["subset"] == subset]
        paired = set(in_subset["paired_with"])
        tested = under_test(paired, probes, references)
        selves = paired & references - probes
        if tested:
            source, chosen = SOURCE_UNDER_TEST, set(tested)
            note = "ground truth beside the systems under test only"
        elif selves:
            source, chosen = SOURCE_REFERENCE, selves
            note = (
                "no system under test in this subset: the global mean falls back to the ground truth "
                "judged beside itself (the reference system), so calibrated cells read against the "
                "reference's own pairing"
            )
        else:
            source, chosen = SOURCE_NONE, set()
            note = "no system under test and no reference system in this subset: no global mean"
        taken.append(in_subset[in_subset["paired_with"].isin(chosen)])
        doc[subset] = {
            "source": source,
            "pairings": _pairing_counts(in_subset, chosen),
            "left_out": {
                "diagnostic": sorted(paired & probes),
                "reference": sorted(paired & references - probes - chosen),
            },
            "note": note,
        }
    frame = pd.concat(taken, ignore_index=True) if taken else gt_cells.iloc[0:0]
    return frame, doc


def _ordered(values: Iterable[str], order: tuple[str, ...]) -> list[str]:
    present = set(values)
    return [v for v in order if v in present]


def aggregate_prism(
    scores: pd.DataFrame,
    facts: Any = None,
    *,
    panel: str | None = None,
    diagnostic: Iterable[str] | None = None,
    reference: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Aggregate a prism scores table into FORMATS.md section 7's document.

    ``systems`` lists every judged system; the ``ground_truth`` pseudo-system is not a system
    there. Its context-averaged reference (the paper's "Ground Truth" row: the global
    ground-truth mean per cell, with totals and final) is the extra top-level ``ground_truth`` entry.
    The global mean is taken over the pairings of the systems under test only; a diagnostic
    system's entry carries ``"diagnostic": true`` and is calibrated against that same mean, so
    adding or removing one leaves every other entry unchanged. The reference system (the ground
    truth beside itself, ``reference``) stays out of the mean too; a subset without any system
    under test falls back to its pairings, and one with diagnostic systems only has no global
    mean: its cells are ``null``, with the reason in ``not_computed``. ``calibration`` says per
    subset which pairings entered the mean (``source``, ``pairings`` with instances and valid cells
    per system, ``left_out``).
    With rows of several panels the cells average every (panel, judge) alike; ``panel`` restricts
    the aggregate to one panel's judges.

    Edge cases: an instance whose cell has no valid judge drops out of that mean (the system side
    and the ground-truth side are averaged separately, as the formula says); a calibrated cell is
    ``null`` when the system has no valid cell, no valid ground-truth cell is paired with it, or that
    paired mean is 0 (the ratio is undefined; a 0 mean is every item judged a complete failure);
    a dimension total or final with a ``null`` part is ``null``; each gap is listed in
    ``not_computed``.

    Args:
        scores: Scores table (FORMATS.md section 3) holding prism rows only.
        facts: :class:`~omnieval.benchmarks.RunFacts` (or a mapping with ``judge_lineage``); a
            panel's ``unavailable`` reasons go to ``not_computed``.
        panel: Only this panel's judges.
        diagnostic: Ids of the diagnostic systems; default the facts' ``diagnostic`` (a
            :class:`~omnieval.benchmarks.RunFacts` or mapping key), else :data:`DEFAULT_DIAGNOSTIC`.
        reference: Ids of the reference system (the ground truth as a candidate); default the
            facts' ``reference``, else :data:`DEFAULT_REFERENCE`.

    Returns:
        ``{"benchmark": "prism", "panel": str | None, "judges": ["<panel>/<judge>", ...],
        "systems": {SYSTEM: {"subsets": {SUBSET: {"cells": {DIMENSION: {AUDIO_TYPE: calibrated}},
        "dimensions": {DIMENSION: total}, "final": x}}, "diagnostic": true (diagnostic systems
        only)}}, "ground_truth": {"subsets": {...}},
        "calibration": {"subsets": {SUBSET: {"source", "pairings", "left_out", "note"}}},
        "coverage": {SYSTEM: {SUBSET: {"instances", "cells", "valid_cells"}}}, "not_computed": [...]}``;
        systems sorted by name, subsets, dimensions and audio types in the paper's order.

    Raises:
        DataError: See :func:`prism_scores`.

    Example:
        >>> import pandas as pd
        >>> def row(system, iid, value, paired):
        ...     return dict(benchmark="prism", system=system, instance_id=iid, index=0, track="audio_quality",
        ...                 component="judge", judge="j", criterion="speech", value=value, status="ok",
        ...                 panel="p", condition="", subset="off_screen", paired_with=paired)
        >>> frame = pd.DataFrame([row("a", "i1", 6.0, "ground_truth"), row("ground_truth", "i1", 8.0, "a"),
        ...                       row("b", "i1", 9.0, "ground_truth"), row("ground_truth", "i1", 6.0, "b")])
        >>> doc = aggregate_prism(frame)
        >>> doc["systems"]["a"]["subsets"]["off_screen"]["cells"]["audio_quality"]["speech"]
        5.25
        >>> doc["systems"]["b"]["subsets"]["off_screen"]["final"], doc["ground_truth"]["subsets"]["off_screen"]["final"]
        (10.5, 7.0)
    """
    frame = prism_scores(scores, panel=panel)
    probes, references = system_roles(facts, diagnostic=diagnostic, reference=reference)
    cells = judge_cells(frame, checked=True)
    is_gt = cells["system"] == GROUND_TRUTH
    sys_cells, gt_cells = cells[~is_gt], cells[is_gt]
    sys_mean = _means(sys_cells, ["subset", "system", "dimension", "audio_type"])
    gt_paired = _means(gt_cells, ["subset", "paired_with", "dimension", "audio_type"])
    global_cells, calibration = _calibration_sources(gt_cells, probes, references)
    gt_global = _means(global_cells, ["subset", "dimension", "audio_type"])

    systems_doc: dict[str, Any] = {}
    gt_doc: dict[str, Any] = {}
    coverage: dict[str, Any] = {}
    not_computed = _unavailable(facts)
    all_systems = sorted(set(sys_cells["system"]) | set(gt_cells["paired_with"]))
    for subset in _ordered(cells["subset"], SUBSETS):
        in_subset = cells[cells["subset"] == subset]
        active = {
            (str(d), str(t)) for d, t in zip(in_subset["dimension"], in_subset["audio_type"], strict=True)
        }
        dims = _ordered((d for d, _ in active), DIMENSIONS)
        layout = {d: _ordered((t for dd, t in active if dd == d), AUDIO_TYPES) for d in dims}

        gt_cells_doc = {d: {t: gt_global.get((subset, d, t)) for t in layout[d]} for d in dims}
        gt_dims = {d: _sum(gt_cells_doc[d].values()) for d in dims}
        gt_doc[subset] = {"cells": gt_cells_doc, "dimensions": gt_dims, "final": _sum(gt_dims.values())}

        present = set(in_subset.loc[in_subset["system"] != GROUND_TRUTH, "system"]) | set(
            in_subset.loc[in_subset["system"] == GROUND_TRUTH, "paired_with"]
        )
        for system in sorted(present):
            cal_cells: dict[str, dict[str, float | None]] = {}
            for d in dims:
                cal_cells[d] = {}
                for t in layout[d]:
                    cal = calibrate(
                        sys_mean.get((subset, system, d, t)),
                        gt_paired.get((subset, system, d, t)),
                        gt_global.get((subset, d, t)),
                    )
                    cal_cells[d][t] = cal.value
                    if cal.why:
                        not_computed.append(f"{system} {subset} {d}/{t}: {cal.why}")
            dim_totals = {d: _sum(cal_cells[d].values()) for d in dims}
            entry = {"cells": cal_cells, "dimensions": dim_totals, "final": _sum(dim_totals.values())}
            systems_doc.setdefault(system, {"subsets": {}})["subsets"][subset] = entry
            own = sys_cells[(sys_cells["subset"] == subset) & (sys_cells["system"] == system)]
            coverage.setdefault(system, {})[subset] = {
                "instances": int(own["instance_id"].nunique()),
                "cells": len(own),
                "valid_cells": int(own["value"].notna().sum()),
            }
    for system in probes & set(systems_doc):
        systems_doc[system]["diagnostic"] = True
    judges = sorted({f"{p}/{j}" for p, j in zip(frame["panel"], frame["judge"], strict=True)})
    return {
        "benchmark": BENCHMARK,
        "panel": panel,
        "judges": judges,
        "systems": {s: systems_doc[s] for s in all_systems if s in systems_doc},
        "ground_truth": {"subsets": gt_doc},
        "calibration": {"subsets": calibration},
        "coverage": {s: coverage[s] for s in all_systems if s in coverage},
        "not_computed": not_computed,
    }


# -- per-instance components ------------------------------------------------------------------------

HEADLINE_COMPONENTS: tuple[str, ...] = package_spec(__file__).headline_components()
"""Components :func:`instance_components` can report, in display order (all higher-is-better;
``benchmark.yaml``: ``headline.components``)."""

# What instance_components reports is code: per subset each dimension total, then final, with no
# on-screen-only dimension off screen. The declaration must list exactly those, in that order.
_REPORTED: tuple[str, ...] = tuple(
    f"{subset}.{part}"
    for subset in SUBSETS
    for part in (*DIMENSIONS, "final")
    if not (subset == "off_screen" and part in ON_SCREEN_ONLY)
)
if HEADLINE_COMPONENTS != _REPORTED:
    raise declaration_error(
        __file__, "headline.components", f"{__name__} reports {', '.join(_REPORTED)} in this order"
    )


def instance_components(scores: pd.DataFrame, *, panel: str | None = None) -> pd.DataFrame:
    """Per (system, instance) uncalibrated totals, for paired comparisons over instances.

    Calibration divides by means over instances, so it has no per-instance form; paired
    resampling (``omnieval compare``) works on these raw totals instead: for each system under test
    (not the ground truth) and instance, component ``<subset>.<dimension>`` = the sum of the item's
    judge-averaged cells of that dimension, and ``<subset>.final`` = the sum of all its cells (0-10
    per cell). An instance where one of the summed cells has no valid judge has no row for that
    component (valid instances only, as ``Benchmark.instance_components`` asks).

    Returns:
        Columns ``system, instance_id, component, value``, sorted by system, instance, component.
    """
    import pandas as pd

    cells = judge_cells(scores, panel=panel)
    cells = cells[cells["system"] != GROUND_TRUTH]
    parts: list[pd.DataFrame] = []
    for dimension in DIMENSIONS:
        per_dim = item_totals(cells, dimension=dimension)
        parts.append(per_dim.assign(component=per_dim["subset"] + "." + dimension))
    final = item_totals(cells)
    parts.append(final.assign(component=final["subset"] + ".final"))
    out = pd.concat(parts, ignore_index=True).rename(columns={"total": "value"})
    out = out.loc[out["value"].notna(), ["system", "instance_id", "component", "value"]]
    return out.sort_values(["system", "instance_id", "component"], kind="stable").reset_index(drop=True)


# -- rendering ------------------------------------------------------------------------------------


def mlflow_metrics(document: Mapping[str, Any], system: str) -> dict[str, float]:
    """MLflow metrics of one system (FORMATS.md section 5).

    Keys ``prism.<subset>.<dimension>`` (dimension totals), ``prism.<subset>.final`` and
    ``prism.<subset>.<dimension>.<audio_type>`` (calibrated cells); null values are left out.

    Example:
        >>> doc = {"systems": {"s": {"subsets": {"mixed": {"cells": {"audio_quality": {"speech": 8.0}},
        ...        "dimensions": {"audio_quality": 8.0}, "final": None}}}}}
        >>> mlflow_metrics(doc, "s")
        {'prism.mixed.audio_quality': 8.0, 'prism.mixed.audio_quality.speech': 8.0}
    """
    out: dict[str, float] = {}
    for subset, entry in document["systems"][system]["subsets"].items():
        for dim, total in entry["dimensions"].items():
            if total is not None:
                out[f"{BENCHMARK}.{subset}.{dim}"] = float(total)
            for audio_type, value in entry["cells"].get(dim, {}).items():
                if value is not None:
                    out[f"{BENCHMARK}.{subset}.{dim}.{audio_type}"] = float(value)
        if entry["final"] is not None:
            out[f"{BENCHMARK}.{subset}.final"] = float(entry["final"])
    return out


DIMENSION_LABELS: dict[str, str] = {
    "av_coherence": "AV Coh.",
    "audio_quality": "Quality",
    "expressiveness": "Express.",
    "prompt_following": "Prompt F.",
}
SUBSET_LABELS: dict[str, str] = {"on_screen": "On-screen", "off_screen": "Off-screen", "mixed": "Mixed"}


def ranked_systems(document: Mapping[str, Any], subset: str) -> list[str]:
    """Systems with an entry in ``subset``, by final descending (null finals last, then by name)."""
    entries = {s: e["subsets"][subset] for s, e in document["systems"].items() if subset in e["subsets"]}
    return sorted(entries, key=lambda s: (entries[s]["final"] is None, -(entries[s]["final"] or 0.0), s))


GT_LABEL = "Ground Truth"
"""The name of the ground-truth reference row of a leaderboard table."""


def board_rows(document: Mapping[str, Any], subset: str) -> list[tuple[str, Mapping[str, Any], bool]]:
    """A subset's leaderboard rows as (name, entry, diagnostic): the ground-truth reference when the
    document has it (:data:`GT_LABEL`), then every system by final (:func:`ranked_systems`)."""
    gt = document.get("ground_truth", {}).get("subsets", {}).get(subset)
    systems = document["systems"]
    ranked = [
        (s, systems[s]["subsets"][subset], bool(systems[s].get("diagnostic")))
        for s in ranked_systems(document, subset)
    ]
    return ([(GT_LABEL, gt, False)] if gt is not None else []) + ranked


def subsets_of(document: Mapping[str, Any]) -> list[str]:
    """The subsets the document holds, in the paper's order."""
    found = {sub for e in document["systems"].values() for sub in e["subsets"]}
    found |= set(document.get("ground_truth", {}).get("subsets", {}))
    return _ordered(found, SUBSETS)


_DIAGNOSTIC_MARK = " [diagnostic]"


def _fmt(value: Any, width: int) -> str:
    return ("n/a" if value is None else f"{value:.2f}").rjust(width)


def calibration_line(source: Mapping[str, Any]) -> str:
    """One line saying which pairings a subset's global ground-truth mean took (and left out).

    >>> calibration_line({"source": "systems_under_test", "pairings": {"a": {"instances": 3, "cells": 3}},
    ...                   "left_out": {"diagnostic": ["muted"], "reference": ["ground-truth"]}})
    'global GT mean: beside a (3 instances, 3 cells); left out: muted (diagnostic), ground-truth (reference)'
    """
    pairings = source.get("pairings", {})
    taken = ", ".join(f"{s} ({c['instances']} instances, {c['cells']} cells)" for s, c in pairings.items())
    left = source.get("left_out", {})
    out = [f"{s} (diagnostic)" for s in left.get("diagnostic", [])]
    out += [f"{s} (reference)" for s in left.get("reference", [])]
    if source.get("source") == SOURCE_REFERENCE:
        head = f"global GT mean: NO system under test, fell back to the ground truth beside itself: {taken}"
    elif source.get("source") == SOURCE_NONE:
        head = "global GT mean: none (no system under test, no reference system)"
    else:
        head = f"global GT mean: beside {taken}"
    return head + (f"; left out: {', '.join(out)}" if out else "")


def leaderboard_text(document: Mapping[str, Any]) -> str:
    """The leaderboard as terminal tables, one per subset: systems x dimension totals + final.

    Systems are sorted by final; the ground-truth reference row (context-averaged) comes first.
    Diagnostic systems carry a ``[diagnostic]`` mark and a footnote says what it means.
    """
    lines = [f"{BENCHMARK} leaderboard (GT-calibrated, 0-10 per cell; dimension = sum over audio types)"]
    gt = document.get("ground_truth", {}).get("subsets", {})
    for subset in subsets_of(document):
        dims = _ordered(
            {
                d
                for e in document["systems"].values()
                for d in e["subsets"].get(subset, {}).get("dimensions", {})
            }
            | set(gt.get(subset, {}).get("dimensions", {})),
            DIMENSIONS,
        )
        rows = [
            (name + (_DIAGNOSTIC_MARK if probe else ""), entry)
            for name, entry, probe in board_rows(document, subset)
        ]
        width = max([len(GT_LABEL), *(len(name) for name, _ in rows)]) + 1
        header = (
            "system".ljust(width)
            + "".join(f" {DIMENSION_LABELS[d].rjust(9)}" for d in dims)
            + f" {'Final'.rjust(9)}"
        )
        lines += ["", SUBSET_LABELS.get(subset, subset), header, "-" * len(header)]
        for name, entry in rows:
            cells = "".join(f" {_fmt(entry['dimensions'].get(d), 9)}" for d in dims)
            lines.append(f"{name.ljust(width)}{cells} {_fmt(entry['final'], 9)}")
        source = document.get("calibration", {}).get("subsets", {}).get(subset)
        if source:
            lines.append(calibration_line(source))
    if any(entry.get("diagnostic") for entry in document["systems"].values()):
        lines += [
            "",
            f"{_DIAGNOSTIC_MARK.strip()} = diagnostic probe: calibrated against the ground-truth mean of "
            "the systems under test, which leaves its own pairings out",
        ]
    if document.get("not_computed"):
        lines += ["", f"n/a = not computed ({len(document['not_computed'])} gaps; see not_computed)"]
    return "\n".join(lines) + "\n"
