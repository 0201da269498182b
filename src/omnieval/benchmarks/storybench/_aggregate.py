"""Storybench aggregation (appendix E.5 / F.4): valid-only and zero-filled, per component.

The maths is in :func:`policy_scores` (pure, on a :class:`StoryTable`); :class:`Aggregate` holds
both policies and renders them as the ``omnieval aggregate --json`` document and as MLflow metrics.

Both policies are implemented here once;
:func:`omnieval.benchmarks.storybench._speech_summary.summarize_speech_meta` is a view of this module's results.

Example (system ``b`` wrote no narration for the second transition):
    >>> from omnieval.scores import ScoreRow, scores_frame
    >>> rows = [
    ...     ScoreRow("storybench", system, f"book/p{i}", i, "text", "bertscore_f1", "", "value", value,
    ...              "ok" if value is not None else "missing_output")
    ...     for system, values in {"a": (0.9, 0.7), "b": (0.6, None)}.items()
    ...     for i, value in enumerate(values)
    ... ]
    >>> systems = aggregate(scores_frame(rows)).to_dict()["systems"]
    >>> sorted(systems)
    ['a', 'b']
    >>> [round(systems["b"][policy]["bertscore_f1"], 2) for policy in ("valid_only", "zero_filled")]
    [0.6, 0.3]
    >>> systems["a"]["valid_only"]["total_average_components"]
    ['bertscore_f1']
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pandas as pd

from omnieval.benchmarks._spec import declaration_error, package_spec
from omnieval.benchmarks.storybench._names import (
    COMPONENTS,
    JUDGE,
    MODALITY_COMPONENTS,
    POLICIES,
    Policy,
    scale,
)
from omnieval.benchmarks.storybench._table import FloatArray, StoryTable, _nanmean, build_table
from omnieval.errors import DataError

HEADLINE_COMPONENTS: Final[tuple[str, ...]] = package_spec(__file__).headline.components
"""The seven Total Average components in the paper's order, then the Total Average itself
(``benchmark.yaml``: ``headline.components``; what :func:`instance_values` computes)."""

# What instance_values computes is code: the Total Average's components, then the Total Average;
# the declaration must list exactly those.
if set(HEADLINE_COMPONENTS) != {*COMPONENTS, "total_average"}:
    raise declaration_error(
        __file__,
        "headline.components",
        f"{__name__} computes {', '.join((*COMPONENTS, 'total_average'))}; got {', '.join(HEADLINE_COMPONENTS)}",
    )


def _mean_over_instances(x: FloatArray, policy: Policy, n: int) -> FloatArray:
    """Reduce axis 1 (instances): valid-only ignores NaN, zero-filled counts NaN as 0 over ``n``."""
    if policy == "valid_only":
        return _nanmean(x, axis=1)
    out: FloatArray = np.where(np.isfinite(x), x, 0.0).sum(axis=1) / n
    return out


def _per_column(x: FloatArray, policy: Policy, n: int) -> FloatArray:
    """``(S, n, K)`` -> ``(S, K)``: :func:`_mean_over_instances` of each ``x[:, :, k]``."""
    return np.stack([_mean_over_instances(x[:, :, k], policy, n) for k in range(x.shape[2])], axis=1)


@dataclass(frozen=True)
class PolicyScores:
    """Every aggregate of one policy, per system (arrays are indexed like ``StoryTable.systems``).

    ``components`` maps the seven component names to ``(S,)`` arrays on their native scale
    (automatic 0-1, judges 1-10); a component that is not computed is absent, and a system with no
    valid example of a computed component has NaN there (valid-only only).
    """

    policy: Policy
    components: dict[str, FloatArray]
    per_judge: dict[str, FloatArray]
    per_criterion: dict[str, FloatArray]
    speech_per_field: FloatArray | None
    speech_exact: FloatArray | None
    n_systems: int
    """Systems aggregated (the arrays' length; kept apart so a table with no component has one)."""

    def scaled(self, names: tuple[str, ...] | None = None) -> FloatArray:
        """``(S, K)`` matrix of the named (default: computed) components on the 0-10 scale."""
        names = self.covered if names is None else names
        return np.stack([self.components[c] * scale(c) for c in names], axis=1)

    @property
    def covered(self) -> tuple[str, ...]:
        """Computed components in the paper's order."""
        return tuple(c for c in COMPONENTS if c in self.components)

    @property
    def total(self) -> FloatArray:
        """Total Average ``(S,)``: mean of each system's finite scaled components (NaN if none)."""
        return _nanmean(self.scaled(), axis=1) if self.covered else np.full(self.n_systems, np.nan)

    def total_components(self, s: int) -> list[str]:
        """Components that entered system ``s``'s Total Average."""
        return [c for c in self.covered if math.isfinite(float(self.components[c][s]))]

    def modality(self, m: str) -> FloatArray | None:
        """Modality score ``(S,)`` (appendix E.6): mean of the scaled automatic metric and the judge mean.

        When only one of the two is computed the modality score is that one; None when neither is.
        """
        parts = [self.components[c] * scale(c) for c in MODALITY_COMPONENTS[m] if c in self.components]
        if not parts:
            return None
        return _nanmean(np.stack(parts, axis=1), axis=1)


def policy_scores(table: StoryTable, policy: Policy) -> PolicyScores:
    """Aggregate ``table`` under ``policy`` (pure; see :class:`PolicyScores`).

    Judge components average, with equal weight, each judge's mean over its own valid examples
    (valid-only) or over all ``n`` instances with invalid examples as 0 (zero-filled). A judge with
    no valid example for a system drops out of that system's valid-only judge mean; a judge with no
    valid example at all is not in ``table`` (see :class:`~omnieval.benchmarks.storybench._table.JudgeCoverage`).
    """
    n = table.n_instances
    comps = {name: _mean_over_instances(values, policy, n) for name, values in table.automatic.items()}
    per_judge: dict[str, FloatArray] = {}
    per_criterion: dict[str, FloatArray] = {}
    for t, jt in table.judges.items():
        per_judge[t] = _per_column(jt.example, policy, n)
        comps[f"judge.{t}"] = _nanmean(per_judge[t], axis=1)
        # Per criterion: the judges' means of that criterion, averaged with equal weight.
        per_criterion[t] = np.stack(
            [_nanmean(_per_column(jt.scores[..., c], policy, n), axis=1) for c in range(len(jt.criteria))],
            axis=1,
        )
    per_field = exact = None
    if table.speech is not None:
        per_field = _per_column(table.speech.correct, policy, n)
        exact = _mean_over_instances(table.speech.exact, policy, n)
    return PolicyScores(policy, comps, per_judge, per_criterion, per_field, exact, table.n_systems)


def _num(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


_METRIC_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. :/]")


def _metric_key(*parts: str) -> str:
    return ".".join(_METRIC_UNSAFE.sub("_", p) for p in parts)


@dataclass(frozen=True)
class Aggregate:
    """Both policies of one benchmark's aggregate, with the table they came from."""

    table: StoryTable
    policies: Mapping[str, PolicyScores]

    @property
    def benchmark(self) -> str:
        return self.table.benchmark

    @property
    def systems(self) -> tuple[str, ...]:
        return self.table.systems

    def _system_index(self, system: str) -> int:
        try:
            return self.table.systems.index(system)
        except ValueError:
            raise DataError(f"unknown system {system!r}; known: {list(self.table.systems)}") from None

    def policy_dict(self, system: str, policy: Policy) -> dict[str, Any]:
        """One system's entry for one policy (see :meth:`to_dict`)."""
        s = self._system_index(system)
        ps = self.policies[policy]
        out: dict[str, Any] = {
            c: (_num(ps.components[c][s]) if c in ps.components else None) for c in COMPONENTS
        }
        out["total_average"] = _num(ps.total[s])
        out["total_average_components"] = ps.total_components(s)
        out["not_computed"] = self._not_computed(system, s, ps)
        out["judge_by_judge"] = {
            t: {j: _num(ps.per_judge[t][s, k]) for k, j in enumerate(self.table.judges[t].judges)}
            for t in ps.per_judge
        }
        out["criteria"] = {
            t: {c: _num(ps.per_criterion[t][s, k]) for k, c in enumerate(self.table.judges[t].criteria)}
            for t in ps.per_criterion
        }
        if self.table.speech is not None and ps.speech_per_field is not None and ps.speech_exact is not None:
            out["speech_meta_fields"] = list(self.table.speech.fields)
            out["speech_meta_per_field"] = {
                f: _num(ps.speech_per_field[s, k]) for k, f in enumerate(self.table.speech.fields)
            }
            out["speech_meta_exact_match"] = _num(ps.speech_exact[s])
        else:
            out["speech_meta_fields"] = []
        return out

    def _not_computed(self, system: str, s: int, ps: PolicyScores) -> list[str]:
        """What system ``s``'s entry lacks under ``ps``'s policy, with why (FORMATS.md section 7)."""
        t = self.table
        out = list(t.not_computed_reasons)
        # A computed component without a valid example of this system (valid-only only: zero-filled
        # counts the missing examples as 0, so it always has a value).
        out += [
            f"{c}: no valid record for this system"
            for c in ps.covered
            if not math.isfinite(float(ps.components[c][s]))
        ]
        if ps.policy == "valid_only":
            for tr, cov in t.judge_coverage.items():
                for key, why in cov.by_system.get(system, {}).items():
                    if key not in cov.missing:  # table-wide gaps are already listed above
                        out.append(f"judge.{tr}/{key}: {why}")
        return out

    def missing_judges(self, system: str) -> dict[str, dict[str, str]]:
        """Track -> judge key -> why, for every judge without a valid record for ``system``."""
        self._system_index(system)
        return {
            tr: dict(cov.by_system[system])
            for tr, cov in self.table.judge_coverage.items()
            if cov.by_system.get(system)
        }

    def completeness(self, system: str) -> dict[str, Any]:
        """Output availability per modality and record outcomes per component for one system."""
        s = self._system_index(system)
        t = self.table
        outputs = {
            m: {"n_instances": t.n_instances, "missing": int(t.missing[m][s].sum())}
            for m in ("text", "image", "speech")
        }
        records: dict[str, Any] = {name: a.counts.for_system(s) for name, a in t.auto.items()}
        if t.speech is not None:
            records["speech_meta_accuracy"] = t.speech.counts.for_system(s)
        for tr, jt in t.judges.items():
            counts = jt.counts
            records[f"judge.{tr}"] = {j: counts.for_system(s, k) for k, j in enumerate(jt.judges)}
        return {"outputs": outputs, "records": records}

    def to_dict(self) -> dict[str, Any]:
        """The ``omnieval aggregate --json`` document.

        ``{"benchmark", "n_instances", "components", "not_computed", "judges", "judges_configured",
        "missing_judges", "speech_meta_fields", "systems": {SYSTEM: {"valid_only": {...},
        "zero_filled": {...}, "missing_judges": {...}, "completeness": {...}}}}``; each policy holds
        the seven components (automatic 0-1, judges 1-10, null when not computed), ``total_average``
        (0-10) and ``total_average_components``, ``not_computed`` (what that entry lacks, with why),
        plus per-judge and per-criterion breakdowns and the speech fields.

        ``not_computed`` (top level) lists ``"<component>: <why>"`` for every component no system has
        and ``"judge.<track>/<judge key>: <why>"`` for every configured judge that produced no valid
        record (such a judge is left out of the track's mean); ``judges`` lists the judges that did,
        ``judges_configured`` all of them, ``missing_judges`` the others per track with why.
        """
        t = self.table
        return {
            "benchmark": t.benchmark,
            "n_instances": t.n_instances,
            "n_instances_scored": t.n_present,
            "components": [c for c in COMPONENTS if c not in t.not_computed],
            "not_computed": list(t.not_computed_reasons),
            "judges": {tr: list(jt.judges) for tr, jt in t.judges.items()},
            "judges_configured": {tr: list(cov.configured) for tr, cov in t.judge_coverage.items()},
            "missing_judges": {tr: dict(cov.missing) for tr, cov in t.judge_coverage.items() if cov.missing},
            "speech_meta_fields": [] if t.speech is None else list(t.speech.fields),
            "systems": {
                sys: {
                    "valid_only": self.policy_dict(sys, "valid_only"),
                    "zero_filled": self.policy_dict(sys, "zero_filled"),
                    "missing_judges": self.missing_judges(sys),
                    "completeness": self.completeness(sys),
                }
                for sys in t.systems
            },
            "notes": list(t.notes),
        }

    def mlflow_metrics(self, system: str) -> dict[str, float]:
        """MLflow metrics of one system (FORMATS.md section 5); components not computed are skipped.

        Keys (``<b>`` is the table's benchmark): ``<b>.<policy>.<component>``,
        ``<b>.<policy>.total_average``, ``<b>.<policy>.judge.<track>.<judge key>`` (the judge id; with
        several panels ``<panel>/<judge id>``), ``<b>.<policy>.speech_meta_accuracy.<field>``,
        ``<b>.<policy>.speech_meta_exact_match`` and ``<b>.missing_output.<modality>``.
        """
        s = self._system_index(system)
        b = self.benchmark
        out: dict[str, float] = {}
        for policy in POLICIES:
            # The policy's entry holds every value once, None where not computed or not finite.
            entry = self.policy_dict(system, policy)
            values: dict[tuple[str, ...], float | None] = {(c,): entry[c] for c in COMPONENTS}
            values[("total_average",)] = entry["total_average"]
            for tr, judges in entry["judge_by_judge"].items():
                values.update({("judge", tr, j): v for j, v in judges.items()})
            for f, v in entry.get("speech_meta_per_field", {}).items():
                values[("speech_meta_accuracy", f)] = v
            if "speech_meta_exact_match" in entry:
                values[("speech_meta_exact_match",)] = entry["speech_meta_exact_match"]
            out.update({_metric_key(b, policy, *k): v for k, v in values.items() if v is not None})
        for m, flags in self.table.missing.items():
            out[_metric_key(b, "missing_output", m)] = float(flags[s].sum())
        return out


def aggregate_table(table: StoryTable) -> Aggregate:
    """Both policies of an already built :class:`StoryTable`."""
    return Aggregate(table, {p: policy_scores(table, p) for p in POLICIES})


def aggregate(
    scores: pd.DataFrame,
    *,
    n_instances: int | None = None,
    benchmark: str | None = None,
    unavailable: Mapping[str, str] | None = None,
) -> Aggregate:
    """Aggregate a storybench-shaped scores table (FORMATS.md section 3) under both policies.

    Args:
        scores: the long scores table of one benchmark.
        n_instances: zero-filled denominator; default the number of distinct instance ids in the table.
        benchmark: the benchmark being aggregated (a table of another one is an error); default the
            one the table holds.
        unavailable: track -> why no judge could score it (a panel's ``unavailable`` reason), shown
            in ``not_computed``.

    Raises:
        DataError: the table is invalid, holds several benchmarks, another benchmark than
            ``benchmark``, or none of the components this aggregation reads.
    """
    return aggregate_table(
        build_table(scores, n_instances=n_instances, benchmark=benchmark, unavailable=unavailable)
    )


def instance_values(scores: pd.DataFrame) -> pd.DataFrame:
    """Per-(system, instance) values of the headline components on the Total Average's 0-10 scale:
    what ``omnieval compare`` pairs between two runs (the framework's
    :func:`~omnieval.benchmarks._leaderboard.components_frame` names and orders them).

    One scale for all eight components lets a single regression tolerance and one "top movers"
    ranking cover them all. Per instance:

    - ``bertscore_f1``, ``image_similarity``: the metric's value x 10 (valid rows only), exactly as
      it enters the Total Average (a leaderboard ``bertscore_f1`` of 0.32 is 3.2 here);
    - ``speech_meta_accuracy``: the fraction of the covered speech fields (emotion, speed, pitch,
      gender) predicted right, x 10 (instances without any valid field prediction are left out);
    - ``judge.<track>``: the mean, over the track's judges with a valid record for this instance, of
      the record's example score (the mean of its four criteria; valid only when all four are);
    - ``total_average``: the mean of the computed components, only where every computed component
      has a value for this instance (an instance missing one component has no total).

    The mean over instances of an automatic component equals its valid-only aggregate x 10. For a
    judge track with several judges the aggregate weighs judges equally over their own valid
    examples while this weighs instances equally; the two agree whenever the judges are valid on
    the same instances.

    Args:
        scores: A storybench scores table (FORMATS.md section 3).

    Returns:
        ``system, instance_id, component, value, index`` (``index``: the instance's position in
        the table's canonical order), one row per system, instance and component with a finite value.

    Raises:
        DataError: The scores table fails the aggregation's validation.

    Example:
        >>> rows = [dict(benchmark="storybench", system="s", instance_id=f"i{k}", index=k, track="text",
        ...              component="bertscore_f1", judge="", criterion="value", value=v, status="ok")
        ...         for k, v in enumerate([0.2, 0.4])]
        >>> instance_values(pd.DataFrame(rows))[["instance_id", "component", "value"]]
          instance_id      component  value
        0          i0   bertscore_f1    2.0
        1          i1   bertscore_f1    4.0
        2          i0  total_average    2.0
        3          i1  total_average    4.0
    """
    table = build_table(scores, benchmark="storybench")
    per_component = {name: values * scale(name) for name, values in table.automatic.items()}
    for track, judged in table.judges.items():
        per_component[f"judge.{track}"] = _nanmean(judged.example, axis=2)
    covered = [c for c in HEADLINE_COMPONENTS if c in per_component]
    if covered:
        stacked = np.stack([per_component[c] for c in covered], axis=2)  # (S, n, K)
        complete = np.isfinite(stacked).all(axis=2)
        per_component["total_average"] = np.where(complete, stacked.mean(axis=2), np.nan)

    frames = []
    for name in HEADLINE_COMPONENTS:
        if name not in per_component:
            continue
        values = per_component[name][:, : table.n_present]
        s_idx, i_idx = np.nonzero(np.isfinite(values))
        frames.append(
            pd.DataFrame(
                {
                    "system": [table.systems[k] for k in s_idx],
                    "instance_id": [table.instances[k] for k in i_idx],
                    "component": name,
                    "value": values[s_idx, i_idx].astype(np.float64),
                    "index": i_idx,
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


__all__ = [
    "JUDGE",
    "Aggregate",
    "PolicyScores",
    "aggregate",
    "aggregate_table",
    "instance_values",
    "policy_scores",
]
