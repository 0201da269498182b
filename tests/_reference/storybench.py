"""Omni-StoryBench aggregation written again from its definitions, for checking the package's numbers.

The rules are FORMATS.md section 3 and docs/analysis.md ("Aggregation rules"), read as plain pandas
group-bys over the long scores table; nothing here imports the package's aggregation code, so a bug
there cannot hide behind the same bug here:

- only ``ok``/``repaired`` rows carry a value; a component whose rows are all ``not_applicable`` (or
  that has no row) is not computed: ``None``, and outside the Total Average;
- BERTScore F1 and image similarity: per system the mean over valid rows (valid-only), or their sum
  over the fixed number of instances, the distinct instance ids in the table (zero-filled);
- speech-metadata accuracy: a field is covered when some row of it is valued anywhere; per sample the
  mean of its valued covered fields (a sample without one is invalid); then as above;
- a judge record (system, instance, track, judge) is valid when all four of its criteria are valued;
  its example score is their mean. A judge is keyed by its id, or ``<panel>/<judge id>`` when the
  judge rows hold several panels; the placeholder judge ``unavailable`` is not a judge. A judge
  without a valid record anywhere is left out of the track under both policies; a track score is the
  equal-weight mean over the remaining judges of each judge's valid-only mean (a judge with nothing
  valid for this system drops out) or zero-filled mean (it counts 0 there);
- Total Average: the mean of the computed components this system has a value for, the three
  automatic ones times 10.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

VALUED = ("ok", "repaired")
POLICIES = ("valid_only", "zero_filled")
AUTOMATIC = ("bertscore_f1", "image_similarity", "speech_meta_accuracy")
"""The automatic components, on 0-1; the Total Average takes them times 10."""
TRACKS = ("text", "image", "speech", "integrated")
COMPONENTS = (*AUTOMATIC, *(f"judge.{t}" for t in TRACKS))
"""The seven Total Average components in the paper's order."""
PLACEHOLDER_JUDGE = "unavailable"
"""Judge id of the rows a panel writes for a track it has no judge for (docs/analysis.md)."""
CRITERIA_PER_RECORD = 4

Entry = dict[str, Any]
"""One system under one policy: component -> value or None, ``total_average`` (0-10 or None) and
``total_average_components`` (list)."""


def _num(x: Any) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


def _policy_means(per_example: pd.Series, systems: list[str], n: int) -> dict[str, dict[str, float | None]]:
    """Valid-only and zero-filled means per system of valid examples (index level ``system``)."""
    by_system = per_example.groupby(level="system")
    mean, total = by_system.mean(), by_system.sum()
    return {
        "valid_only": {s: _num(mean.get(s)) for s in systems},
        "zero_filled": {s: float(total.get(s, 0.0)) / n for s in systems},
    }


def _not_computed(rows: pd.DataFrame) -> bool:
    return rows.empty or bool((rows["status"] == "not_applicable").all())


def reference_aggregate(
    scores: pd.DataFrame, *, n_instances: int | None = None
) -> dict[str, dict[str, Entry]]:
    """Both policies of every system of a storybench scores table: ``{system: {policy: Entry}}``.

    Args:
        scores: the long table (FORMATS.md section 3), storybench rows.
        n_instances: the zero-filled denominator; default the distinct instance ids in the table.
    """
    frame = scores[scores["benchmark"] == "storybench"]
    n = n_instances if n_instances is not None else int(frame["instance_id"].nunique())
    systems = sorted(str(s) for s in frame["system"].unique())
    valued = frame[frame["status"].isin(VALUED)]
    values: dict[str, dict[str, dict[str, float | None]]] = {}

    for name in ("bertscore_f1", "image_similarity"):
        if _not_computed(frame[frame["component"] == name]):
            continue
        rows = valued[valued["component"] == name]
        values[name] = _policy_means(rows.set_index(["system", "instance_id"])["value"], systems, n)

    speech = valued[valued["component"] == "speech_meta"]
    if not speech.empty:  # covered fields are those valued somewhere; the others are not counted
        per_sample = speech.groupby(["system", "instance_id"])["value"].mean()
        values["speech_meta_accuracy"] = _policy_means(per_sample, systems, n)

    judge_rows = frame[frame["component"] == "judge"]
    several_panels = judge_rows["panel"].nunique() > 1
    key = judge_rows["judge"].where(
        ~(several_panels & (judge_rows["panel"] != "")), judge_rows["panel"] + "/" + judge_rows["judge"]
    )
    judge_rows = judge_rows.assign(key=key)
    for track in TRACKS:
        rows = judge_rows[(judge_rows["track"] == track) & (judge_rows["judge"] != PLACEHOLDER_JUDGE)]
        ok = rows[rows["status"].isin(VALUED)]
        records = ok.groupby(["system", "instance_id", "key"])["value"].agg(["count", "mean"])
        example = records.loc[records["count"] == CRITERIA_PER_RECORD, "mean"]
        judges = sorted(example.index.get_level_values("key").unique())
        if not judges:  # no rows, placeholder rows only, or no judge with a valid record anywhere
            continue
        per_judge = [_policy_means(example.xs(j, level="key"), systems, n) for j in judges]
        values[f"judge.{track}"] = {
            policy: {s: _mean([p[policy][s] for p in per_judge if p[policy][s] is not None]) for s in systems}
            for policy in POLICIES
        }

    out: dict[str, dict[str, Entry]] = {}
    for s in systems:
        out[s] = {}
        for policy in POLICIES:
            entry: Entry = {c: values[c][policy][s] if c in values else None for c in COMPONENTS}
            covered = [c for c in COMPONENTS if entry[c] is not None]
            scaled = [entry[c] * (10.0 if c in AUTOMATIC else 1.0) for c in covered]
            entry["total_average"] = _mean(scaled)
            entry["total_average_components"] = covered
            out[s][policy] = entry
    return out


def _mean(xs: list[Any]) -> float | None:
    return sum(xs) / len(xs) if xs else None


HEADLINE = (*COMPONENTS, "total_average")
"""The headline values of one system and policy (``total_average_components`` is compared too)."""
