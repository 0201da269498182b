"""Compare two runs of one benchmark: paired deltas per (system, component), a verdict and the why.

The verdict (GO / NO-GO / INCONCLUSIVE) reads each (system, component) test:

- *worse*: the component moved in its bad direction (``Benchmark.lower_is_better``) by more than
  the suite's tolerance for it; *significant*: the paired 95 % CI lies entirely on the bad side of
  zero (and, with ``regression.require_holm``, the Holm-adjusted p-value is below 0.05);
- *unsafe*: something other than the systems changed under that test, so its delta is not a
  measurement of the systems: the dataset version or the instance set (every test); a judge's
  identity, decoding or availability, a judge prompt, judge drift (``drift.json`` with a status
  other than ``ok``), or a judge below its floor on the benchmark's known set (``health.json``'s
  ``meta_eval``) for components computed from judge rows; a metric model or setting for
  components computed from automatic rows; the test's own coverage (its valid-instance count moved
  by more than ``regression.coverage_share``, or the component exists in one run only).

``NO-GO`` when at least one test is worse, significant and not unsafe; otherwise ``INCONCLUSIVE``
when any test is unsafe (a worse-and-significant but unsafe test is listed as a possible
regression); otherwise ``GO``. So a drop of an automatic metric is a NO-GO even when a judge prompt
changed the same night, while a judge score's drop under a new prompt is only INCONCLUSIVE.

Each paired test also reports its minimum detectable effect ``mde``: the true change in the bad
direction that the significance rule catches with ``regression.power`` (default 0.8), from the
bootstrap SE at two-sided alpha 0.05 (``alpha / m`` over the comparison's m paired tests with
``regression.require_holm``: Bonferroni, the first step of Holm, so a conservative figure). Its
``rules_out`` adds the tolerance (see :func:`~omnieval.compare._paired.minimum_detectable_effect`).
A GO names, per component, the largest ``rules_out`` over the systems: the drop it excludes.
The power computation needs enough paired instances for the bootstrap SE and the normal
approximation to mean anything (:data:`MDE_MIN_PAIRED`): with fewer, ``mde`` and ``rules_out`` are
null and the test's ``mde_note`` says "not computable with n = <n>".

A run compared with itself (the same folder, or the same run id on both sides) measures nothing:
its verdict is INCONCLUSIVE with that reason, never GO. The document names each side's role
(``run_a.role`` = baseline, ``run_b.role`` = candidate) and, per component, the scale its values are
on (``scales``, declared by the benchmark: ``headline.scale``/``headline.scales`` in its
``benchmark.yaml``), since a component's per-instance scale need not be the one ``omnieval
aggregate`` prints.

Which components come from judge rows and which from automatic rows is found, benchmark-agnostically,
by recomputing the per-instance components on the scores table without judge rows (``judge == ""``
only) and without automatic rows: a component whose values survive unchanged does not depend on
the removed rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from omnieval.compare._changes import (
    describe_judge_changes,
    describe_metric_changes,
    describe_prompt_change,
    lineage_changes,
)
from omnieval.compare._load import RunFolder
from omnieval.compare._paired import bootstrap_indices, holm, minimum_detectable_effect, paired_bootstrap
from omnieval.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

    from omnieval.benchmarks import Benchmark
    from omnieval.config import RegressionConfig

GO, NO_GO, INCONCLUSIVE = "GO", "NO-GO", "INCONCLUSIVE"
VERDICTS: tuple[str, ...] = (GO, NO_GO, INCONCLUSIVE)
TOP_MOVERS = 10
ALPHA = 0.05
GO_LINE_COMPONENTS = 8
"""At most this many components are named in a GO's "no drop >= ..." line (the rest: regression.json)."""
MDE_MIN_PAIRED = 10
"""Fewest paired instances for which a test reports a minimum detectable effect. The MDE takes the
bootstrap SE as the true one and uses normal quantiles: with n instances the SE rests on n - 1
degrees of freedom, and the normal critical value understates Student's t by 15 % at n = 10 (2.26
vs 1.96), by 40 % at n = 5 and by a factor of 6.5 at n = 2, where the bootstrap has only three
distinct means (two identical differences give SE 0, hence an MDE of 0). Below it the power
statement is not made."""
UNDECLARED_SCALE = "not declared by the benchmark (its per-instance values, Benchmark.instance_components)"
"""The ``scales`` entry of a component whose benchmark declares no scale for it."""


@dataclass
class _Test:
    system: str
    component: str
    n_a: int
    n_b: int
    a: float = math.nan
    b: float = math.nan
    delta: float = math.nan
    ci95: tuple[float, float] = (math.nan, math.nan)
    se: float = math.nan
    p: float = math.nan
    p_holm: float = math.nan
    n_paired: int = 0
    tolerance: float = 0.0
    mde: float = math.nan
    rules_out: float = math.nan
    mde_note: str | None = None
    worse: bool = False
    significant: bool = False
    unsafe: list[str] = field(default_factory=list)

    @property
    def regression(self) -> bool:
        return self.worse and self.significant


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _components_frame(bench: Benchmark, scores: pd.DataFrame, where: str) -> pd.DataFrame:
    try:
        frame = bench.instance_components(scores)
    except NotImplementedError:
        raise DataError(
            f"benchmark {bench.name} does not report per-instance components; runs cannot be compared"
        ) from None
    except DataError as exc:
        raise DataError(f"{where}: {exc}") from None
    return frame


def _dependence(bench: Benchmark, scores: pd.DataFrame, full: pd.DataFrame) -> tuple[set[str], set[str]]:
    """Components that depend on judge rows and on automatic rows (see the module docstring)."""
    import numpy as np

    from omnieval.errors import OmnievalError

    def keyed(frame: pd.DataFrame) -> dict[str, dict[tuple[str, str], float]]:
        out: dict[str, dict[tuple[str, str], float]] = {}
        for system, instance, component, value in frame[
            ["system", "instance_id", "component", "value"]
        ].itertuples(index=False):
            out.setdefault(str(component), {})[(str(system), str(instance))] = float(value)
        return out

    reference = keyed(full)
    judge_rows = scores["judge"].astype(str) != "" if "judge" in scores.columns else None

    def unchanged_without(keep: Any) -> set[str]:
        if keep is None or not bool(np.any(keep)):
            return set()
        try:
            ablated = keyed(bench.instance_components(scores[keep]))
        except (OmnievalError, NotImplementedError, ValueError, KeyError):
            return set()
        same = set()
        for component, values in reference.items():
            other = ablated.get(component)
            if (
                other is not None
                and other.keys() == values.keys()
                and all(math.isclose(values[k], other[k], rel_tol=1e-12, abs_tol=1e-12) for k in values)
            ):
                same.add(component)
        return same

    if judge_rows is None:
        return set(), set(reference)
    no_judges = unchanged_without(~judge_rows)
    no_metrics = unchanged_without(judge_rows)
    judge_dependent = set(reference) - no_judges
    metric_dependent = set(reference) - no_metrics
    return judge_dependent, metric_dependent


def _drift_reason(drift: Mapping[str, Any] | None) -> str | None:
    if drift is None:
        return None
    status = str(drift.get("status", "unknown"))
    if status == "ok":
        return None
    reasons = drift.get("reasons") or []
    detail = "; ".join(str(r) for r in reasons) if isinstance(reasons, list) else str(reasons)
    return f"judge drift check: {status}" + (f" ({detail})" if detail else "")


def mde_note(n_paired: int) -> str | None:
    """Why a test with ``n_paired`` paired instances reports no MDE; None when it reports one.

    Example:
        >>> mde_note(2), mde_note(MDE_MIN_PAIRED)
        ('not computable with n = 2', None)
    """
    return None if n_paired >= MDE_MIN_PAIRED else f"not computable with n = {n_paired}"


def same_run(run_a: RunFolder, run_b: RunFolder) -> bool:
    """Whether both sides are one run: the same folder, or the same run id (a copied folder)."""
    return run_a.run_id == run_b.run_id or run_a.folder.resolve() == run_b.folder.resolve()


def _scales(bench: Benchmark, components: Sequence[str]) -> dict[str, str]:
    """Component -> the scale its values are on, as the benchmark declares it."""
    declared = bench.spec.headline_scales() if bench.spec is not None else {}
    return {c: declared.get(c, UNDECLARED_SCALE) for c in components}


def _order_components(bench: Benchmark, present: set[str]) -> list[str]:
    known = [c for c in bench.headline_components if c in present]
    return known + sorted(present - set(known))


def compare_runs(
    run_a: RunFolder,
    run_b: RunFolder,
    config: RegressionConfig,
    *,
    drift: Mapping[str, Any] | None = None,
    judge_checks: Sequence[str] = (),
) -> dict[str, Any]:
    """Compare run B (new) with run A (baseline); return the comparison document.

    Args:
        run_a: The baseline run.
        run_b: The new run.
        config: Tolerances, bootstrap draws and seed, coverage share.
        drift: Run B's judge drift check (``{"status", "reasons"}``); default ``run_b.drift``.
            None = not checked.
        judge_checks: Run B's failed judge checks, one reason each (a judge below its floor on
            the known set, :func:`omnieval.judges.meta_eval_failures`): unsafe for every
            judge-based test, as drift is.

    Returns:
        ``{"verdict", "reasons", "systems": {S: {C: {"a", "b", "delta", "ci95", "p_holm", "mde"}}},
        "changed", "top_movers", "run_a", "run_b", "scales", "benchmark", "tolerance",
        "n_shared_instances", "systems_only_in_a", "systems_only_in_b", "drift",
        "possible_regressions", "mde_power", "tests", "method"}``.
        ``a``/``b`` are means over the instances valid in both runs (so ``delta = b - a``), on the
        component's scale (``scales``); a component present in one run only has ``null`` where the
        other run has nothing. ``run_a``/``run_b`` carry ``role`` (baseline / candidate).

    Raises:
        DataError: The runs hold different benchmarks, or a scores table is invalid.
    """
    import numpy as np

    from omnieval.benchmarks import get_benchmark

    if run_a.benchmark != run_b.benchmark:
        raise DataError(
            f"cannot compare a {run_a.benchmark} run ({run_a.folder}) with a {run_b.benchmark} run ({run_b.folder})"
        )
    bench = get_benchmark(run_b.benchmark)
    drift = run_b.drift if drift is None else drift
    comp_a = _components_frame(bench, run_a.scores, str(run_a.folder / "scores.parquet"))
    comp_b = _components_frame(bench, run_b.scores, str(run_b.folder / "scores.parquet"))
    judge_dep_a, metric_dep_a = _dependence(bench, run_a.scores, comp_a)
    judge_dep_b, metric_dep_b = _dependence(bench, run_b.scores, comp_b)
    judge_dependent, metric_dependent = judge_dep_a | judge_dep_b, metric_dep_a | metric_dep_b

    ids_a = [str(i) for i in dict.fromkeys(run_a.scores["instance_id"].astype(str))]
    ids_b = [str(i) for i in dict.fromkeys(run_b.scores["instance_id"].astype(str))]
    set_a = set(ids_a)
    shared = [i for i in ids_b if i in set_a]
    position = {i: k for k, i in enumerate(shared)}
    systems_a = set(run_a.scores["system"].astype(str))
    systems_b = set(run_b.scores["system"].astype(str))
    systems = sorted(systems_a & systems_b)

    def table(frame: pd.DataFrame) -> dict[tuple[str, str], dict[str, float]]:
        out: dict[tuple[str, str], dict[str, float]] = {}
        for system, instance, component, value in frame[
            ["system", "instance_id", "component", "value"]
        ].itertuples(index=False):
            out.setdefault((str(system), str(component)), {})[str(instance)] = float(value)
        return out

    values_a, values_b = table(comp_a), table(comp_b)
    components = _order_components(bench, {c for _, c in values_a} | {c for _, c in values_b})

    changed = lineage_changes(
        run_a.lineage,
        run_b.lineage,
        folder_a=run_a.folder,
        folder_b=run_b.folder,
        ids_a=ids_a,
        ids_b=ids_b,
        systems=systems_a | systems_b,
        manifest_a=run_a.manifest,
        manifest_b=run_b.manifest,
    )

    # -- what makes tests unsafe ------------------------------------------------------------------
    global_unsafe: list[str] = []
    dataset = changed["dataset"]
    if "version" in dataset:
        global_unsafe.append(
            f"dataset version changed ({dataset['version']['a']} -> {dataset['version']['b']})"
        )
    if set(ids_a) != set(ids_b):
        global_unsafe.append(
            f"instance set changed: {len(set(ids_b) - set_a)} added, {len(set_a - set(ids_b))} removed "
            f"({len(shared)} shared)"
        )
    if "instances_changed" in dataset:
        global_unsafe.append(f"{len(dataset['instances_changed'])} instance(s) changed content")
    judge_unsafe = [describe_prompt_change(e) for e in changed["prompts"]]
    judge_unsafe += describe_judge_changes(changed["judges"])
    drift_reason = _drift_reason(drift)
    if drift_reason:
        judge_unsafe.append(drift_reason)
    judge_unsafe += list(judge_checks)
    metric_unsafe = describe_metric_changes(changed["metric_models"])

    # -- the paired tests ---------------------------------------------------------------------------
    tests: list[_Test] = []
    rows_a: list[Any] = []
    rows_b: list[Any] = []
    lower = bench.lower_is_better
    for system in systems:
        for component in components:
            va, vb = values_a.get((system, component)), values_b.get((system, component))
            if va is None and vb is None:
                continue
            test = _Test(
                system, component, len(va or {}), len(vb or {}), tolerance=config.tolerance_for(component)
            )
            test.unsafe += global_unsafe
            if component in judge_dependent:
                test.unsafe += judge_unsafe
            if component in metric_dependent:
                test.unsafe += metric_unsafe
            if va is None or vb is None:
                where = "run B" if va is None else "run A"
                test.unsafe.append(f"coverage: {system} / {component} exists only in {where}")
            else:
                bigger = max(test.n_a, test.n_b)
                if abs(test.n_b - test.n_a) > config.coverage_share * bigger:
                    test.unsafe.append(
                        f"coverage: {system} / {component} valid instances {test.n_a} -> {test.n_b}"
                    )
                row_a = np.full(len(shared), np.nan)
                row_b = np.full(len(shared), np.nan)
                for instance, value in va.items():
                    if instance in position:
                        row_a[position[instance]] = value
                for instance, value in vb.items():
                    if instance in position:
                        row_b[position[instance]] = value
                rows_a.append(row_a)
                rows_b.append(row_b)
            tests.append(test)

    paired_tests = [
        t for t in tests if (t.system, t.component) in values_a and (t.system, t.component) in values_b
    ]
    if paired_tests:
        indices = bootstrap_indices(len(shared), config.bootstrap_draws, config.seed)
        results = paired_bootstrap(np.vstack(rows_a), np.vstack(rows_b), indices)
        for test, result in zip(paired_tests, results, strict=True):
            test.a, test.b, test.delta, test.ci95 = result.a, result.b, result.delta, result.ci95
            test.se, test.p, test.n_paired = result.se, result.p, result.n
        for test, adjusted in zip(paired_tests, holm([t.p for t in paired_tests]), strict=True):
            test.p_holm = adjusted
    for test in paired_tests:
        if not math.isfinite(test.delta):
            continue
        sign = -1.0 if test.component in lower else 1.0
        drop = -sign * test.delta
        lo, hi = test.ci95
        test.worse = drop > test.tolerance
        bad_side = (hi < 0.0) if sign > 0 else (lo > 0.0)
        test.significant = bool(math.isfinite(lo) and math.isfinite(hi) and bad_side)
        if config.require_holm:
            test.significant = test.significant and math.isfinite(test.p_holm) and test.p_holm < ALPHA
    n_tests = sum(1 for t in paired_tests if math.isfinite(t.p))
    mde_alpha = ALPHA / max(n_tests, 1) if config.require_holm else ALPHA
    for test in paired_tests:
        test.mde_note = mde_note(test.n_paired)
        if test.mde_note is not None:
            continue
        test.mde = minimum_detectable_effect(test.se, alpha=mde_alpha, power=config.power)
        test.rules_out = minimum_detectable_effect(
            test.se, alpha=mde_alpha, power=config.power, tolerance=test.tolerance
        )

    # -- verdict --------------------------------------------------------------------------------
    def describe(t: _Test) -> str:
        lo, hi = t.ci95
        return (
            f"{t.system} / {t.component}: {t.a:.4g} -> {t.b:.4g} (delta {t.delta:+.4g}, 95% CI "
            f"[{lo:+.4g}, {hi:+.4g}], p_holm {t.p_holm:.3g}, n={t.n_paired}, tolerance {t.tolerance:g})"
        )

    regressions = [t for t in tests if t.regression and not t.unsafe]
    possible = [t for t in tests if t.regression and t.unsafe]
    unsafe_reasons = list(dict.fromkeys(r for t in tests for r in t.unsafe))
    if regressions:
        verdict = NO_GO
        reasons = [f"worse: {describe(t)}" for t in regressions]
        reasons += [f"also unsafe to compare: {r}" for r in unsafe_reasons]
    elif unsafe_reasons:
        verdict = INCONCLUSIVE
        reasons = list(unsafe_reasons)
        reasons += [f"possible regression (not trusted, see above): {describe(t)}" for t in possible]
    else:
        verdict = GO
        reasons = [
            f"no headline component got worse beyond its tolerance with a 95% CI excluding zero "
            f"({len(paired_tests)} paired tests over {len(shared)} shared instances)"
        ]
        ruled_out = _go_line(paired_tests, components, lower, power=config.power, alpha=mde_alpha)
        if ruled_out:
            reasons.append(ruled_out)
        uncomputed = sorted({t.n_paired for t in paired_tests if t.mde_note is not None})
        if uncomputed:
            reasons.append(
                f"GO rules out no drop size for {sum(t.mde_note is not None for t in paired_tests)} "
                f"test(s): their minimum detectable effect is not computable with "
                f"n = {', '.join(map(str, uncomputed))} (the power computation needs at least "
                f"{MDE_MIN_PAIRED} paired instances)"
            )
    if same_run(run_a, run_b):
        # Deltas of zero against itself say nothing about the systems: never a GO.
        verdict = INCONCLUSIVE
        reasons = [
            f"run A and run B are the same run ({run_b.run_id}, {run_b.folder}): a run compared "
            "with itself measures nothing; name two different runs"
        ]
    if drift is None and judge_dependent & set(components):
        reasons.append("judge drift not checked (no drift.json in run B)")

    # -- top movers -----------------------------------------------------------------------------
    movers: list[dict[str, Any]] = []
    for test in paired_tests:
        va, vb = values_a[(test.system, test.component)], values_b[(test.system, test.component)]
        for instance in shared:
            if instance in va and instance in vb and vb[instance] != va[instance]:
                movers.append(
                    {
                        "system": test.system,
                        "component": test.component,
                        "instance_id": instance,
                        "a": va[instance],
                        "b": vb[instance],
                        "delta": vb[instance] - va[instance],
                    }
                )
    movers.sort(key=lambda m: (-abs(m["delta"]), m["system"], m["component"], m["instance_id"]))

    systems_doc: dict[str, dict[str, Any]] = {}
    for test in tests:
        systems_doc.setdefault(test.system, {})[test.component] = {
            "a": _num(test.a)
            if test.n_paired
            else _mean_or_none(values_a.get((test.system, test.component))),
            "b": _num(test.b)
            if test.n_paired
            else _mean_or_none(values_b.get((test.system, test.component))),
            "delta": _num(test.delta),
            "ci95": None if not math.isfinite(test.ci95[0]) else [float(test.ci95[0]), float(test.ci95[1])],
            "p_holm": _num(test.p_holm),
            "mde": _num(test.mde),
        }
    return {
        "verdict": verdict,
        "reasons": reasons,
        "systems": systems_doc,
        "changed": changed,
        "top_movers": movers[:TOP_MOVERS],
        "benchmark": bench.name,
        "run_a": {**run_a.describe(), "role": "baseline"},
        "run_b": {**run_b.describe(), "role": "candidate"},
        "scales": _scales(bench, components),
        "n_shared_instances": len(shared),
        "systems_only_in_a": sorted(systems_a - systems_b),
        "systems_only_in_b": sorted(systems_b - systems_a),
        "drift": None
        if drift is None
        else {"status": drift.get("status"), "reasons": drift.get("reasons", [])},
        "possible_regressions": [f"{t.system} / {t.component}" for t in possible],
        "tolerance": {"default": config.tolerance, "components": dict(config.component_tolerance)},
        "mde_power": config.power,
        "tests": [
            {
                "system": t.system,
                "component": t.component,
                "n_a": t.n_a,
                "n_b": t.n_b,
                "n_paired": t.n_paired,
                "se": _num(t.se),
                "p": _num(t.p),
                "p_holm": _num(t.p_holm),
                "lower_is_better": t.component in lower,
                "tolerance": t.tolerance,
                "mde": _num(t.mde),
                "rules_out": _num(t.rules_out),
                "mde_note": t.mde_note,
                "worse": t.worse,
                "significant": t.significant,
                "unsafe": t.unsafe,
            }
            for t in tests
        ],
        "method": {
            "bootstrap_draws": config.bootstrap_draws,
            "seed": config.seed,
            "ci": "percentile 95% of the paired bootstrap over shared instances",
            "p": "two-sided normal approximation with the bootstrap SE; Holm over all paired tests",
            "require_holm": config.require_holm,
            "coverage_share": config.coverage_share,
            "mde": (
                f"(z_(1-alpha/2) + z_power) * se, power {config.power:g}, alpha {mde_alpha:.3g}"
                + (f" (0.05 / {n_tests} tests, Bonferroni bound of Holm)" if config.require_holm else "")
                + "; rules_out = max(tolerance, z_(1-alpha/2) * se) + z_power * se; "
                f"null (mde_note) below {MDE_MIN_PAIRED} paired instances"
            ),
        },
    }


def with_judge_checks(document: Mapping[str, Any], failures: Sequence[str]) -> dict[str, Any]:
    """``document`` with failed judge checks applied to the verdict, listed under ``judge_checks``.

    A judge below its floor on the known set cannot be trusted tonight: a GO becomes INCONCLUSIVE
    with the failures first among the reasons (the GO's own "rules out" line dropped, since it
    leaned on that judge), also when there was nothing to compare with. A NO-GO stays NO-GO (its
    trusted regressions are real; :func:`compare_runs` already marked judge-based tests unsafe) and
    an INCONCLUSIVE stays so; both list the failures among their reasons.

    >>> doc = with_judge_checks({"verdict": "GO", "reasons": ["no previous run to compare with"]},
    ...                         ["judge cpu/j below its floor on the known set: track text ..."])
    >>> doc["verdict"], doc["reasons"][0][:11]
    ('INCONCLUSIVE', 'judge cpu/j')
    """
    out = dict(document)
    if not failures:
        return out
    out["judge_checks"] = list(failures)
    reasons = [str(r) for r in out.get("reasons") or []]
    if out.get("verdict") == GO:
        out["verdict"] = INCONCLUSIVE
        reasons = [*failures, *(r for r in reasons if not r.startswith("GO:"))]
    else:
        reasons += [f for f in failures if not any(f in r for r in reasons)]
    out["reasons"] = reasons
    return out


def _go_line(
    tests: Sequence[_Test],
    components: Sequence[str],
    lower: frozenset[str] | set[str],
    *,
    power: float,
    alpha: float,
) -> str | None:
    """What a GO rules out: per component, the largest ``rules_out`` over the systems.

    The largest, because the sentence must hold for every system: a drop of that size in any one
    of them would have been caught with probability ``power``.
    """
    worst: dict[str, float] = {}
    systems: set[str] = set()
    for t in tests:
        if math.isfinite(t.rules_out):
            worst[t.component] = max(worst.get(t.component, 0.0), t.rules_out)
            systems.add(t.system)
    named = [c for c in components if c in worst]
    if not named:
        return None
    parts = [
        f"no {component} {'rise' if component in lower else 'drop'} >= {worst[component]:.2g}"
        for component in named[:GO_LINE_COMPONENTS]
    ]
    more = len(named) - GO_LINE_COMPONENTS
    tail = f", {more} more components in regression.json" if more > 0 else ""
    return (
        f"GO: {', '.join(parts)} points{tail} (any of {len(systems)} systems; "
        f"{power:.0%} power at alpha {alpha:.3g})"
    )


def _uncomputed_lines(tests: Sequence[Mapping[str, Any]]) -> list[str]:
    """``mde n/a: not computable with n = 2: alpha / wer, ...``, one line per note."""
    by_note: dict[str, list[str]] = {}
    for t in tests:
        if t.get("mde_note"):
            by_note.setdefault(str(t["mde_note"]), []).append(f"{t['system']} / {t['component']}")
    lines = []
    for note, names in by_note.items():
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        lines.append(
            f"mde n/a: {note} (the power computation needs at least {MDE_MIN_PAIRED} paired "
            f"instances): {shown}"
        )
    return lines


def _scale_lines(scales: Mapping[str, str]) -> list[str]:
    """The scale of every component the table (and the reasons and movers) show, components that
    share a scale on one line."""
    grouped: dict[str, list[str]] = {}
    for component, scale in scales.items():
        grouped.setdefault(str(scale), []).append(component)
    if not grouped:
        return []
    lines = ["scales (A, B, delta, CI, mde and the movers' values are on these):"]
    lines += [f"  {', '.join(components)}: {scale}" for scale, components in grouped.items()]
    return lines


def _mean_or_none(values: Mapping[str, float] | None) -> float | None:
    if not values:
        return None
    return float(sum(values.values()) / len(values))


def uncompared_document(verdict: str, reasons: list[str], *, error: str | None = None) -> dict[str, Any]:
    """The head of a comparison document that compares nothing: no systems, no changes, no movers.

    A first run and a comparison that failed both give one; their readers (the report's regression
    block, ``verdict_lines``, the notifier) then find every section present, only empty. The caller
    appends the run keys (``run_b``, and ``benchmark``/``run_a`` when known).

    Args:
        verdict: GO for a first run, INCONCLUSIVE when the comparison failed.
        reasons: Why, one line each.
        error: The failure's full message (kept after ``reasons``); None for no ``error`` key.
    """
    document: dict[str, Any] = {"verdict": verdict, "reasons": reasons}
    if error is not None:
        document["error"] = error
    document["systems"] = {}
    document["changed"] = {
        "dataset": {},
        "code": {},
        "judges": [],
        "prompts": [],
        "metric_models": [],
        "candidates": [],
    }
    document["top_movers"] = []
    return document


def first_run_document(run_b: RunFolder) -> dict[str, Any]:
    """The comparison document of a run with no earlier run of its suite to compare with."""
    return {
        **uncompared_document(GO, ["no previous run to compare with"]),
        "benchmark": run_b.benchmark,
        "run_a": None,
        "run_b": run_b.describe(),
    }


def verdict_lines(document: Mapping[str, Any]) -> Sequence[str]:
    """The terminal summary of a comparison document: verdict, which run is the baseline and which
    the candidate, the table, the scale of every component, changes, movers."""
    lines = [f"verdict: {document['verdict']}"]
    lines += [f"  - {r}" for r in document.get("reasons", [])]
    run_a, run_b = document.get("run_a"), document.get("run_b")
    rule = document.get("baseline_rule")
    if run_a:
        lines.append(f"baseline  (A): {run_a['run_id']}  {run_a['folder']}" + (f"  ({rule})" if rule else ""))
    if run_b:
        lines.append(f"candidate (B): {run_b['run_id']}  {run_b['folder']}")
    systems = document.get("systems") or {}
    if systems:
        width = max(len(c) for per in systems.values() for c in per)
        lines.append("")
        lines.append(
            f"{'system / component'.ljust(width + 20)} {'A':>9} {'B':>9} {'delta':>9}  {'95% CI':>21} {'p_holm':>7}"
            f" {'mde':>7}"
        )
        for system, per in systems.items():
            for component, cell in per.items():

                def fmt(x: Any, spec: str = ".3f") -> str:
                    return "n/a" if x is None else format(x, spec)

                ci = "n/a" if cell["ci95"] is None else f"[{cell['ci95'][0]:+.3f}, {cell['ci95'][1]:+.3f}]"
                label = f"{system} / {component}"
                lines.append(
                    f"{label.ljust(width + 20)} {fmt(cell['a']):>9} {fmt(cell['b']):>9} "
                    f"{fmt(cell['delta'], '+.3f'):>9}  {ci:>21} {fmt(cell['p_holm'], '.3g'):>7}"
                    f" {fmt(cell.get('mde'), '.3g'):>7}"
                )
        if document.get("mde_power") is not None:
            lines.append(
                f"mde: the smallest true worsening the test catches with {document['mde_power']:.0%} power "
                "(on the component's scale; bootstrap SE, normal approximation)"
            )
        lines += _uncomputed_lines(document.get("tests") or [])
        lines += _scale_lines(document.get("scales") or {})
    changed = document.get("changed") or {}
    lines.append("")
    if not any(changed.values()):
        lines.append(
            "changed: nothing (dataset, code, judges, prompts, metric models and candidates are the same)"
        )
    else:
        lines.append("changed:")
        for key, value in changed.items():
            if not value:
                continue
            if isinstance(value, dict):
                for sub, what in value.items():
                    shown = (
                        what
                        if not isinstance(what, list)
                        else f"{len(what)}: {', '.join(map(str, what[:5]))}"
                        + (" ..." if len(what) > 5 else "")
                    )
                    lines.append(f"  {key}.{sub}: {shown}")
            else:
                for entry in value:
                    lines.append(f"  {key}: " + ", ".join(f"{k}={v}" for k, v in entry.items()))
    movers = document.get("top_movers") or []
    if movers:
        lines.append("")
        lines.append("top movers (per instance, largest |delta| first):")
        for m in movers:
            lines.append(
                f"  {m['system']} / {m['component']} / {m['instance_id']}: {m['a']:.3f} -> {m['b']:.3f} ({m['delta']:+.3f})"
            )
    return lines
