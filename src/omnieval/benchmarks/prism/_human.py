"""PRISM-Bench human alignment: agreement in preference direction between human raters and the judges.

**Export format** (Label Studio "JSON" export of ``label_studio/two_stage.xml``, a list of tasks,
with the study's key applied: :func:`apply_key`). Each task is one blind GT-versus-system
comparison on one item:

- ``data``: ``instance_id`` (the scores table's id), ``subset`` (``on_screen``, ``off_screen``,
  ``mixed``), ``tags`` (the active tags, ``"SPEECH_A,MUSIC_B"`` or a list), ``system`` (the
  system's id), ``order`` (``gt_first``: video1 is the ground truth; ``system_first``: video1 is
  the system's clip); optional ``num`` (the number shown to raters), ``caption``, ``video1``,
  ``video2``. The tasks raters see carry neither ``system`` nor ``order``: those come from the key
  file ``omnieval human-tasks prism`` wrote beside them, matched on ``num``.
- each annotation's ``result``: one entry per score, ``from_name`` = ``v1_<dimension>_<audio type>``
  or ``v2_<dimension>_<audio type>`` (e.g. ``v2_audio_quality_speech``) and ``value`` =
  ``{"number": n}`` (also ``{"rating": n}`` or ``{"choices": ["n"]}``), n an integer 0..10; and
  ``from_name`` = ``discard`` with ``{"choices": ["true"]}`` to discard the case. Other controls
  (comments) are ignored; a score for a cell the tags do not activate is ignored and counted.

**Agreement.** Per (item, system, active cell) the human score of each side is the majority vote
of the annotations that scored that cell (cancelled and discarded annotations excluded), as the
paper's appendix D labels each scoring item: the score given by more raters than any other score.
Where no score has that lead (three raters who all differ, a 2-2 split, two raters who differ) the
paper adjudicates in a reconciliation step that an export does not record; the median of the
ratings stands in for it (for three raters, the middle score) and ``counts.labels_without_majority``
says how often. The judges' score is the judge-averaged cell of the scores table (FORMATS.md
section 7). GT-vs-model: the human direction
``sign(human_system - human_gt)`` against the judges' ``sign(judge_system - judge_gt)`` (the
ground-truth cell judged beside that system). Model-vs-model: for two systems rated on the same item,
``sign(human_a - human_b)`` against ``sign(judge_a - judge_b)``. The same at the item total (the
sum of the item's active cells, only where every active cell has both human and judge scores).

**Ties** are a direction of their own: a comparison agrees when both signs are equal, so a tie
agrees only with a tie. ``rate_untied`` gives the rate over the comparisons where neither side is
tied. Rates are per comparison (unweighted), overall and per subset, dimension (cells only), system
(GT-vs-model) or system pair (model-vs-model).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from statistics import fmean, median
from typing import TYPE_CHECKING, Any

from omnieval.benchmarks._human_tasks import annotator, export_items, load_json, rating, submitted_annotations
from omnieval.benchmarks.prism._aggregate import judge_cells
from omnieval.benchmarks.prism._tags import (
    AUDIO_TYPES,
    DIMENSIONS,
    GROUND_TRUTH,
    Cell,
    active_cells,
    tag_set_problem,
)
from omnieval.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

ORDERS: dict[str, tuple[str, str]] = {
    "gt_first": (GROUND_TRUTH, "system"),
    "system_first": ("system", GROUND_TRUTH),
}
"""``data.order`` -> what video1 and video2 show."""

_SCORE_NAME = re.compile(r"^v([12])_([a-z_]+)_([a-z]+)$")
TIE_TOLERANCE = 1e-9
"""Differences this small are ties (means of integer scores are exact; this only absorbs float noise)."""


@dataclass(frozen=True)
class HumanComparison:
    """One annotator's scores of one blind GT-vs-system task.

    Attributes:
        annotator: Who annotated.
        instance_id: The item.
        subset: Its subset.
        system: The system compared with the ground truth.
        cells: Active cells scored for both clips -> (system score, ground-truth score), 0-10.
    """

    annotator: str
    instance_id: str
    subset: str
    system: str
    cells: Mapping[Cell, tuple[float, float]]


@dataclass(frozen=True)
class HumanExport:
    """A parsed export: the scored comparisons, the active cells per item and what was left out."""

    comparisons: tuple[HumanComparison, ...]
    active: Mapping[str, tuple[Cell, ...]]
    counts: dict[str, int] = field(default_factory=dict)


def _score(value: Any, where: str) -> float | None:
    if not isinstance(value, Mapping):
        raise DataError(f"{where}: value must be an object like {{'number': n}}")
    return rating(value, where, keys=("number", "rating"), noun="score", low=0, high=10)


def _discarded(value: Any, where: str) -> bool:
    choices = value.get("choices") if isinstance(value, Mapping) else None
    if not isinstance(choices, list) or len(choices) != 1:
        raise DataError(f"{where}: discard needs exactly one choice, true or false")
    text = str(choices[0]).strip().lower()
    if text not in {"true", "false", "yes", "no"}:
        raise DataError(f"{where}: discard choice {choices[0]!r} is not true/false")
    return text in {"true", "yes"}


def _tags(raw: Any) -> list[str] | None:
    if isinstance(raw, str):
        return [t.strip() for t in raw.split(",") if t.strip()]
    if isinstance(raw, list) and all(isinstance(t, str) for t in raw):
        return [t.strip() for t in raw]
    return None


def parse_two_stage_export(tasks: Any, source: str = "export") -> HumanExport:
    """Parse a two-stage Label Studio export (see the module docstring).

    Args:
        tasks: The decoded JSON (a list of tasks).
        source: Name used in messages (the file path).

    Raises:
        DataError: Naming the task (and annotation) and field: not a list of tasks, a missing or
            invalid ``data`` field (instance_id, subset, tags, system, order), tags invalid for the
            subset, one item given different subsets or tags, a malformed score name or score, or a
            malformed discard choice.
    """
    comparisons: list[HumanComparison] = []
    active: dict[str, tuple[Cell, ...]] = {}
    subset_of: dict[str, str] = {}
    counts = dict.fromkeys(
        ("tasks", "annotations", "scored", "skipped", "discarded", "incomplete", "inactive_scores_ignored"), 0
    )
    for task, where, data in export_items(tasks, source, counts):
        if "system" not in data and "order" not in data:
            raise DataError(
                f"{where}: field data.system: missing: a blind export; apply the study's key first "
                f"({_KEY_HINT})"
            )
        for key in ("instance_id", "system"):
            if not isinstance(data.get(key), str) or not data[key]:
                raise DataError(f"{where}: field data.{key}: missing or not a non-empty string")
        instance_id, system = str(data["instance_id"]), str(data["system"])
        if system == GROUND_TRUTH:
            raise DataError(
                f"{where}: field data.system: must name the system compared with the ground truth"
            )
        subset = data.get("subset")
        tags = _tags(data.get("tags"))
        if tags is None:
            raise DataError(f"{where}: field data.tags: expected 'SPEECH_A,MUSIC_B' or a list of tags")
        problem = tag_set_problem(str(subset), tags)
        if problem:
            raise DataError(f"{where}: field data.subset/data.tags: {problem}")
        assert isinstance(subset, str)
        order = data.get("order")
        if order not in ORDERS:
            raise DataError(f"{where}: field data.order: {order!r} must be one of {', '.join(ORDERS)}")
        cells = tuple(active_cells(tags))
        if (
            active.setdefault(instance_id, cells) != cells
            or subset_of.setdefault(instance_id, subset) != subset
        ):
            raise DataError(
                f"{where}: field data.tags/data.subset: item {instance_id!r} was given other tags or subset by another task"
            )
        sides = ORDERS[str(order)]
        for ann, a_where, results in submitted_annotations(task, where, counts):
            by_video: dict[str, dict[Cell, float]] = {"1": {}, "2": {}}
            discard = False
            for res in results:
                name = res.get("from_name") if isinstance(res, Mapping) else None
                if not isinstance(name, str):
                    raise DataError(f"{a_where}: field result.from_name: missing")
                r_where = f"{a_where} field {name}"
                if name == "discard":
                    discard = _discarded(res.get("value"), r_where)
                    continue
                if not name.startswith(("v1_", "v2_")):
                    continue  # comments and other controls
                match = _SCORE_NAME.match(name)
                if not match or match.group(2) not in DIMENSIONS or match.group(3) not in AUDIO_TYPES:
                    raise DataError(
                        f"{r_where}: not a score name v1_/v2_<dimension>_<audio type> "
                        f"(dimensions {', '.join(DIMENSIONS)}; audio types {', '.join(AUDIO_TYPES)})"
                    )
                score = _score(res.get("value"), r_where)
                if score is None:
                    continue
                cell = Cell(match.group(2), match.group(3))
                if cell not in cells:
                    counts["inactive_scores_ignored"] += 1
                    continue
                by_video[match.group(1)][cell] = score
            if discard:
                counts["discarded"] += 1
                continue
            side = {sides[0]: by_video["1"], sides[1]: by_video["2"]}
            pairs = {
                c: (side["system"][c], side[GROUND_TRUTH][c])
                for c in cells
                if c in side["system"] and c in side[GROUND_TRUTH]
            }
            counts["scored" if len(pairs) == len(cells) else "incomplete"] += 1
            if pairs:
                comparisons.append(
                    HumanComparison(annotator(ann, a_where), instance_id, subset, system, pairs)
                )
    return HumanExport(tuple(comparisons), active, counts)


_KEY_HINT = "omnieval human-tasks prism labels EXPORT.json --key KEY.json --out LABELS.json"


def apply_key(
    tasks: Any, key: Any, *, source: str = "export", key_source: str = "key"
) -> list[dict[str, Any]]:
    """The export's tasks with each one's ``data.system`` and ``data.order`` from the study's key.

    Tasks are matched to key entries on ``data.num``; the entry's ``instance_id`` must be the task's
    (a key of another draw is refused, not applied). The tasks are copied, not changed.

    Args:
        tasks: A decoded Label Studio JSON export (a list of tasks).
        key: The decoded key file (``{"study": "prism-human-preference", "tasks": {"<num>":
            {"instance_id", "system", "order"}}}``).
        source: The export's name in messages.
        key_source: The key's name in messages.

    Raises:
        DataError: Naming the file, task and field: not an export or not this study's key, a task
            without a ``num`` the key holds, or an ``instance_id`` other than the key's.

    Example:
        >>> key = {"study": "prism-human-preference",
        ...        "tasks": {"1": {"instance_id": "on-01", "system": "s", "order": "gt_first"}}}
        >>> apply_key([{"id": 9, "data": {"num": 1, "instance_id": "on-01"}}], key)[0]["data"]
        {'num': 1, 'instance_id': 'on-01', 'system': 's', 'order': 'gt_first'}
    """
    from omnieval.benchmarks.prism._human_sample import STUDY

    if not isinstance(key, Mapping) or key.get("study") != STUDY or not isinstance(key.get("tasks"), Mapping):
        raise DataError(
            f"{key_source}: not the key of a PRISM-Bench human study (a JSON object with study "
            f"{STUDY!r} and tasks, as omnieval human-tasks prism writes it)"
        )
    entries: Mapping[str, Any] = key["tasks"]
    keyed: list[dict[str, Any]] = []
    for task, where, data in export_items(tasks, source):
        entry = entries.get(str(data.get("num")))
        if not isinstance(entry, Mapping):
            raise DataError(
                f"{where}: field data.num: {data.get('num')!r} is not a task of {key_source} "
                "(a key of another draw, or tasks not written by omnieval human-tasks prism)"
            )
        if data.get("instance_id") != entry.get("instance_id"):
            raise DataError(
                f"{where}: field data.instance_id: {data.get('instance_id')!r}, but {key_source} has "
                f"{entry.get('instance_id')!r} as task {data.get('num')} (a key of another draw)"
            )
        keyed.append({**task, "data": {**data, "system": entry.get("system"), "order": entry.get("order")}})
    return keyed


def read_keyed_exports(exports: Sequence[Path], key: Path) -> list[dict[str, Any]]:
    """Read Label Studio export files and the study's key file; :func:`apply_key` to each export.

    Raises:
        DataError: a file that cannot be read or is not JSON, and everything :func:`apply_key` raises.
    """
    decoded_key = load_json(key, "the key file")
    keyed: list[dict[str, Any]] = []
    for path in exports:
        keyed += apply_key(
            load_json(path, "Label Studio export"), decoded_key, source=str(path), key_source=str(key)
        )
    return keyed


def read_two_stage_export(path: Path) -> HumanExport:
    """Read and parse a two-stage Label Studio JSON export file (see :func:`parse_two_stage_export`)."""
    return parse_two_stage_export(load_json(path, "Label Studio export"), str(path))


# -- agreement ------------------------------------------------------------------------------------


def direction(diff: float) -> int:
    """-1, 0 (tie) or 1.

    Example:
        >>> direction(0.5), direction(-2.0), direction(0.0)
        (1, -1, 0)
    """
    if abs(diff) <= TIE_TOLERANCE:
        return 0
    return 1 if diff > 0 else -1


@dataclass
class _Tally:
    n: int = 0
    agree: int = 0
    n_untied: int = 0
    agree_untied: int = 0

    def add(self, human: int, judge: int) -> None:
        self.n += 1
        self.agree += human == judge
        if human != 0 and judge != 0:
            self.n_untied += 1
            self.agree_untied += human == judge

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "agree": self.agree,
            "rate": self.agree / self.n if self.n else None,
            "n_untied": self.n_untied,
            "agree_untied": self.agree_untied,
            "rate_untied": self.agree_untied / self.n_untied if self.n_untied else None,
        }


class _Block:
    """Tallies of one kind of comparison: overall and by each grouping."""

    def __init__(self, groupings: Sequence[str]) -> None:
        self.overall = _Tally()
        self.groups: dict[str, dict[str, _Tally]] = {g: defaultdict(_Tally) for g in groupings}

    def add(self, human: float, judge: float, **keys: str) -> None:
        h, j = direction(human), direction(judge)
        self.overall.add(h, j)
        for grouping, key in keys.items():
            self.groups[grouping][key].add(h, j)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"overall": self.overall.as_dict()}
        for grouping, tallies in self.groups.items():
            order = _GROUP_ORDERS.get(grouping)
            keys = [k for k in order if k in tallies] if order else sorted(tallies)
            out[grouping] = {k: tallies[k].as_dict() for k in keys}
        return out


_Score = tuple[str, str, str, Cell]
"""(item, system, side, cell): side ``"system"``, or the ground truth judged beside that system."""

_GROUP_ORDERS: dict[str, Sequence[str]] = {
    "by_subset": ("on_screen", "off_screen", "mixed"),
    "by_dimension": DIMENSIONS,
}
"""Groupings shown in a fixed order (any other: sorted)."""


class _Comparisons:
    """Tallies of one kind of comparison (GT-vs-model or model-vs-model): per cell and per item total."""

    def __init__(self, by: str) -> None:
        self.cells = _Block(("by_subset", "by_dimension", by))
        self.totals = _Block(("by_subset", by))

    def add_item(self, gaps: Sequence[tuple[Cell, tuple[float, float] | None]], **keys: str) -> None:
        """Tally one rated item (a system against the truth, or two systems): each cell, then the whole.

        ``gaps`` holds each active cell's (human, judge) score difference, None where either side
        lacks a score. The item's totals (sums over its active cells) count only when no cell lacks
        one, since a partial sum would compare unlike quantities.
        """
        scored = [(cell, gap) for cell, gap in gaps if gap is not None]
        for cell, (human, judge) in scored:
            self.cells.add(human, judge, by_dimension=cell.dimension, **keys)
        if len(scored) == len(gaps):
            self.totals.add(sum(g[0] for _, g in scored), sum(g[1] for _, g in scored), **keys)

    def as_dict(self) -> dict[str, Any]:
        return {"cells": self.cells.as_dict(), "totals": self.totals.as_dict()}


def majority_label(ratings: Sequence[float]) -> tuple[float, bool]:
    """The raters' label of one clip's cell: the majority vote, with the median when there is none.

    Returns ``(label, voted)``; ``voted`` is False when no score was given more often than every
    other one, and the median of the ratings stands in for the paper's reconciliation step.

    Example:
        >>> majority_label([8, 8, 2]), majority_label([3, 9, 5]), majority_label([4, 6]), majority_label([7])
        ((8, True), (5, False), (5.0, False), (7, True))
    """
    if not ratings:
        raise ValueError("majority_label needs at least one rating")
    ranked = Counter(ratings).most_common()
    if len(ranked) == 1 or ranked[0][1] > ranked[1][1]:
        return ranked[0][0], True
    return median(ratings), False


def preference_agreement(
    export: HumanExport, scores: pd.DataFrame, *, panel: str | None = None
) -> dict[str, Any]:
    """Agreement in preference direction between the export's raters and the table's judges.

    Args:
        export: A parsed export (:func:`read_two_stage_export`).
        scores: The prism scores table.
        panel: Only this panel's judges; default every (panel, judge), averaged.

    Returns:
        ``{"counts", "tie_rule", "rater_rule", "gt_vs_model": {"cells": B, "totals": B}, "model_vs_model":
        {"cells": B, "totals": B}, "mean_dimension_agreement"}`` where B = ``{"overall": A,
        "by_subset": {...}, "by_dimension": {...} (cells only), "by_system" | "by_pair": {...}}`` and
        A = ``{"n", "agree", "rate", "n_untied", "agree_untied", "rate_untied"}``;
        ``mean_dimension_agreement`` is the unweighted mean of the GT-vs-model per-dimension rates.
    """
    cells = judge_cells(scores, panel=panel)
    valid = cells[cells["value"].notna()]
    judge: dict[_Score, float] = {}
    for system, paired, iid, dim, atype, value in zip(
        valid["system"],
        valid["paired_with"],
        valid["instance_id"],
        valid["dimension"],
        valid["audio_type"],
        valid["value"],
        strict=True,
    ):
        side = (str(paired), GROUND_TRUTH) if system == GROUND_TRUTH else (str(system), "system")
        judge[(str(iid), *side, Cell(str(dim), str(atype)))] = float(value)

    # Human score of each side: the majority vote of the annotations that scored it.
    votes: dict[_Score, list[float]] = defaultdict(list)
    subset_of: dict[str, str] = {}
    for comp in export.comparisons:
        subset_of[comp.instance_id] = comp.subset
        for cell, (own, ref) in comp.cells.items():
            votes[(comp.instance_id, comp.system, "system", cell)].append(own)
            votes[(comp.instance_id, comp.system, GROUND_TRUTH, cell)].append(ref)
    human: dict[_Score, float] = {}
    without_majority = 0
    for key, ratings in votes.items():
        human[key], voted = majority_label(ratings)
        without_majority += not voted
    rated = sorted({(iid, system) for iid, system, _, _ in human})
    counts = dict(export.counts)
    counts["labels"] = len(human)
    counts["labels_without_majority"] = without_majority
    counts["items_rated"] = len(rated)
    counts["items_without_judge"] = sum(
        1 for iid, system in rated if not any((iid, system, "system", c) in judge for c in export.active[iid])
    )

    def gaps(
        iid: str, a: tuple[str, str], b: tuple[str, str]
    ) -> list[tuple[Cell, tuple[float, float] | None]]:
        """Per active cell of the item: (human, judge) score of side ``a`` minus that of side ``b``."""
        out: list[tuple[Cell, tuple[float, float] | None]] = []
        for cell in export.active[iid]:
            ha, hb = (human.get((iid, *side, cell)) for side in (a, b))
            ja, jb = (judge.get((iid, *side, cell)) for side in (a, b))
            if ha is None or hb is None or ja is None or jb is None:
                out.append((cell, None))
            else:
                out.append((cell, (ha - hb, ja - jb)))
        return out

    gt, mm = _Comparisons("by_system"), _Comparisons("by_pair")
    systems_of: dict[str, list[str]] = defaultdict(list)
    for iid, system in rated:
        gt.add_item(
            gaps(iid, (system, "system"), (system, GROUND_TRUTH)), by_subset=subset_of[iid], by_system=system
        )
        systems_of[iid].append(system)
    for iid, systems in sorted(systems_of.items()):
        for a, b in combinations(sorted(systems), 2):
            mm.add_item(
                gaps(iid, (a, "system"), (b, "system")), by_subset=subset_of[iid], by_pair=f"{a} vs {b}"
            )

    gt_doc = gt.as_dict()
    dim_rates = [v["rate"] for v in gt_doc["cells"]["by_dimension"].values() if v["rate"] is not None]
    return {
        "counts": counts,
        "tie_rule": "a tie is its own direction: it agrees only with a tie; rate_untied leaves out comparisons where either side is tied",
        "rater_rule": "each clip's cell is labelled by the raters' majority vote; without a majority "
        "(all raters differ, or an even split) by the median of their ratings",
        "gt_vs_model": gt_doc,
        "model_vs_model": mm.as_dict(),
        "mean_dimension_agreement": fmean(dim_rates) if dim_rates else None,
    }
