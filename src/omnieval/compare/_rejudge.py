"""Counterfactual re-judging: split a judge-based delta into a judge effect and a system effect.

When a judge, its prompt or its decoding changed between run A (baseline) and run B (new), the
plain comparison cannot say whether the systems moved: ``delta = B - A`` mixes the new judge with
the new candidates, and the verdict is INCONCLUSIVE. Re-judging fixes one of the two. Run A's
candidates (kept in A's run folder, FORMATS.md section 4) are judged again with run B's panels,
through the benchmark's own judge path and the shared content-keyed judge cache, giving the
counterfactual run A' (A's candidates, B's judges). Then, per (system, judge-based component):

- *judge effect* ``A' - A``: the new judge against the old one on the same (A's) candidates;
- *system effect* ``B - A'``: A's candidates against B's under the same (B's) judges.

Both come from :func:`~omnieval.compare.compare_runs` (paired bootstrap over the shared instances,
95 % percentile CI), and the verdict is the one ``compare_runs`` gives A' against B: the same rule
as a plain comparison, now without the judge change that made it unsafe. The two effects add up
to the plain delta when every instance is valid in all three runs (each paired test drops the
instances invalid in one of its two runs, so the sum can differ by the instances that differ).

A' is judged once per pair of runs: every verdict B's judges already gave to the same candidate
bytes (the common case when a system did not change) is a cache hit, so the cost is only the
candidates that changed. The cost is reported in the ``rejudge`` block.

When run A's folder was fetched from the tracking server (team mode, another machine's run), its
candidates are the ones that run logged: those copied into its folder come with the fetched folder,
an ``import`` system's are fetched from the run's artifacts (``omnieval.tracking.candidates``), and
all are checked against the run's manifest (:func:`locate_candidates`); the ``rejudge`` block's
``candidates`` says so. What the server does not hold is named as missing, never replaced by
whatever this machine has at the path the other machine imported from.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.compare._load import RunFolder
from omnieval.compare._verdict import _components_frame, _dependence, compare_runs
from omnieval.errors import DataError, OmnievalError

if TYPE_CHECKING:
    import pandas as pd

    from omnieval.config import RegressionConfig, SuiteConfig

VERDICT_BASIS = "system_effect"
"""What the verdict of a re-judged comparison is about (``rejudge.verdict_basis``)."""


@dataclass(frozen=True)
class RejudgeCost:
    """Judge calls spent on re-judging run A's candidates.

    Attributes:
        model_calls: Verdicts the judge models computed now.
        cache_hits: Verdicts read from the content-keyed judge cache.
        panels: Per panel, ``{"model_calls", "cache_hits"}``.
    """

    model_calls: int = 0
    cache_hits: int = 0
    panels: dict[str, dict[str, int]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "model_calls": self.model_calls,
            "cache_hits": self.cache_hits,
            "judge_calls": self.model_calls + self.cache_hits,
            "panels": {name: dict(counts) for name, counts in self.panels.items()},
        }


def judge_changes(document: Mapping[str, Any]) -> bool:
    """Whether a comparison document lists a changed judge, judge setting or judge prompt."""
    changed = document.get("changed") or {}
    return bool(changed.get("judges") or changed.get("prompts"))


def suite_of_run(run: RunFolder) -> SuiteConfig:
    """The suite config run ``run`` was made with, read from its ``config.resolved.yaml``.

    The saved config is the suite's full dump plus the ``resolved`` facts the track stage adds;
    webhook headers are masked in it, so the notifiers are left out (re-judging needs none).

    Raises:
        DataError: The folder has no readable resolved config.
    """
    from pydantic import ValidationError

    from omnieval.config import SuiteConfig

    saved = run.resolved_config
    if not saved:
        raise DataError(
            f"run {run.folder} has no config.resolved.yaml, so its judges are unknown; "
            "pass --suite SUITE.yaml (the suite run B was made with)"
        )
    raw = {k: v for k, v in saved.items() if k != "resolved"}
    regression = raw.get("regression")
    if isinstance(regression, dict):
        raw["regression"] = {k: v for k, v in regression.items() if k != "notify"}
    try:
        return SuiteConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise DataError(
            f"{run.folder / 'config.resolved.yaml'}: not a valid suite config ({where}: {first['msg']}); "
            "pass --suite SUITE.yaml"
        ) from None


def candidate_roots(run: RunFolder, systems: Sequence[str]) -> dict[str, Path]:
    """Where run ``run`` keeps each system's candidates (its run folder, or the imported folder).

    Raises:
        DataError: Naming every missing candidate folder (none is judged when one is missing).
    """
    from omnieval.systems import resolve_candidates_root

    roots: dict[str, Path] = {}
    missing: list[str] = []
    for system in systems:
        kept = run.folder / "candidates" / system
        if not kept.is_dir():
            missing.append(str(kept))
            continue
        try:
            root = resolve_candidates_root(kept)
        except (OSError, ValueError, KeyError) as exc:
            missing.append(f"{kept / 'IMPORTED.json'} (unreadable: {exc})")
            continue
        if not root.is_dir():
            missing.append(f"{root} (imported by {kept / 'IMPORTED.json'})")
            continue
        roots[system] = root
    if missing:
        raise DataError(
            f"cannot re-judge run A ({run.folder}): its candidates are missing:\n"
            + "\n".join(f"  - {m}" for m in missing)
        )
    return roots


def locate_candidates(
    run: RunFolder, systems: Sequence[str]
) -> tuple[dict[str, Path], dict[str, Any] | None]:
    """Where run ``run``'s candidates of ``systems`` are judged from, and, for a run folder fetched
    from the tracking server, the ``rejudge.candidates`` block saying how they were fetched.

    A local run: :func:`candidate_roots` (its folder, or the folder an ``import`` system names).
    A fetched run (``fetched.json``): :func:`~omnieval.compare._mlflow.fetch_candidates`, the copied
    candidates of the fetched folder and the imported ones fetched from the server, checked against
    the run's manifest; an ``import`` pointer is never followed to this machine's files.

    Raises:
        DataError: Naming every missing candidate folder (none is judged when one is missing).
    """
    from omnieval.compare._mlflow import fetch_candidates, fetched_from

    if fetched_from(run.folder) is None:
        return candidate_roots(run, systems), None
    found = fetch_candidates(run.folder, systems)
    return found.roots, found.as_dict()


def _is_judge_row(scores: pd.DataFrame) -> Any:
    """Rows the judge stage wrote (a judge or a panel named); the rest are automatic metrics."""
    mask = scores["judge"].astype(str) != ""
    if "panel" in scores.columns:
        mask |= scores["panel"].astype(str) != ""
    return mask


def rejudged_scores(
    run_a: RunFolder,
    config: SuiteConfig,
    systems: Sequence[str],
    *,
    roots: Mapping[str, Path] | None = None,
) -> tuple[Any, RejudgeCost]:
    """Run A's scores table with its judge rows replaced by ``config``'s panels judging A's candidates.

    Automatic rows are kept as they are (they do not depend on the judges). The judging goes
    through the benchmark's :meth:`~omnieval.benchmarks.Benchmark.judge`, as the judge stage does,
    with the suite's judge cache (``<state>/../.cache/judges``), so verdicts already given to the
    same bytes are not paid again.

    Args:
        run_a: The baseline run.
        config: Run B's suite (its panels, metrics config, dataset and state folder).
        systems: The systems to re-judge (those of both runs).
        roots: Where each system's candidates are (:func:`locate_candidates`); found when None.

    Returns:
        ``(A' scores, cost)``.

    Raises:
        DataError: A's candidates are missing, or A's instances are not in the suite's dataset.
    """
    import pandas as pd

    from omnieval.benchmarks import JudgeJob
    from omnieval.paths import StatePaths
    from omnieval.progress import note
    from omnieval.scores import coerce_scores

    roots = dict(roots) if roots is not None else locate_candidates(run_a, systems)[0]
    bench = config.bench
    wanted = set(run_a.scores["instance_id"].astype(str))
    instances = [i for i in bench.instances(bench.load(config.dataset_path)) if str(i.id) in wanted]
    absent = wanted - {str(i.id) for i in instances}
    if absent:
        shown = ", ".join(sorted(absent)[:5]) + (" ..." if len(absent) > 5 else "")
        raise DataError(
            f"cannot re-judge run A ({run_a.folder}): {len(absent)} of its instances are not in the "
            f"dataset {config.dataset_path}: {shown}"
        )
    cache = StatePaths(config.state).cache / "judges"
    frames = [run_a.scores.loc[~_is_judge_row(run_a.scores)]]
    panels: dict[str, dict[str, int]] = {}
    for panel in config.panels:
        result = bench.judge(JudgeJob(instances, roots, panel, config.metrics, cache))
        frames.append(result.scores)
        panels[panel] = {"model_calls": int(result.model_calls), "cache_hits": int(result.cache_hits)}
        note(
            f"[rejudge] panel {panel} on run A's candidates: {result.model_calls} model calls, "
            f"{result.cache_hits} cache hits"
        )
    scores = coerce_scores(pd.concat(frames, ignore_index=True))
    cost = RejudgeCost(
        sum(p["model_calls"] for p in panels.values()), sum(p["cache_hits"] for p in panels.values()), panels
    )
    return scores, cost


def counterfactual_run(run_a: RunFolder, run_b: RunFolder, scores: Any) -> RunFolder:
    """Run A' as a :class:`RunFolder`: A's folder, candidates and dataset, B's judges, ``scores``.

    Its lineage takes B's ``judges`` section, so comparing A' with B sees no judge change, and
    comparing A with A' sees exactly the judge change.
    """
    lineage = json.loads(json.dumps(run_a.lineage))
    lineage["judges"] = json.loads(json.dumps(run_b.lineage.get("judges") or {}))
    return replace(run_a, run_id=f"{run_a.run_id}+rejudged", lineage=lineage, scores=scores)


def _effect(cell: Mapping[str, Any] | None) -> dict[str, float | None]:
    """``{"delta", "ci_low", "ci_high"}`` of one comparison cell (None where undefined)."""
    cell = cell or {}
    ci = cell.get("ci95") or [None, None]
    return {"delta": cell.get("delta"), "ci_low": ci[0], "ci_high": ci[1]}


def judge_based_components(*runs: RunFolder) -> set[str]:
    """Components computed from judge rows in any of ``runs`` (as the verdict decides them)."""
    from omnieval.benchmarks import get_benchmark

    found: set[str] = set()
    for run in runs:
        bench = get_benchmark(run.benchmark)
        frame = _components_frame(bench, run.scores, str(run.folder / "scores.parquet"))
        found |= _dependence(bench, run.scores, frame)[0]
    return found


def split_effects(
    run_a: RunFolder,
    run_a_rejudged: RunFolder,
    run_b: RunFolder,
    config: RegressionConfig,
    *,
    drift: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Judge and system effects per (system, judge-based component), and the system-effect comparison.

    Args:
        run_a: The baseline run (old judges on A's candidates).
        run_a_rejudged: A' (new judges on A's candidates), see :func:`counterfactual_run`.
        run_b: The new run (new judges on B's candidates).
        config: Bootstrap draws, seed and tolerances (the same as the plain comparison's).
        drift: Run B's judge drift check, as for :func:`~omnieval.compare.compare_runs`.

    Returns:
        ``(effects, system_document)``: ``effects[system][component]`` is ``{"judge_effect",
        "system_effect"}``, each ``{"delta", "ci_low", "ci_high"}``; ``system_document`` is the
        :func:`~omnieval.compare.compare_runs` document of A' against B, whose verdict is the
        verdict on the system effect.
    """
    judge_doc = compare_runs(run_a, run_a_rejudged, config, drift={"status": "ok"})
    system_doc = compare_runs(run_a_rejudged, run_b, config, drift=drift)
    wanted = judge_based_components(run_a, run_a_rejudged, run_b)
    effects: dict[str, dict[str, Any]] = {}
    for system, per in system_doc["systems"].items():
        for component, cell in per.items():
            if component not in wanted:
                continue
            effects.setdefault(system, {})[component] = {
                "judge_effect": _effect((judge_doc["systems"].get(system) or {}).get(component)),
                "system_effect": _effect(cell),
            }
    return effects, system_doc


def rejudge_comparison(
    document: dict[str, Any],
    run_a: RunFolder,
    run_b: RunFolder,
    suite: SuiteConfig,
    config: RegressionConfig,
    *,
    drift: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The plain comparison ``document`` of A and B, re-judged when a judge changed between them.

    With a judge, judge setting or judge prompt change, A's candidates are judged with ``suite``'s
    panels (run B's), the verdict and its reasons become those of the system effect, and the
    ``rejudge`` block holds both effects, the plain verdict and the cost. Without one, nothing is
    judged and the block says why (``performed: false``).

    Raises:
        DataError: A's candidates are missing (naming them), or A's instances are not in the dataset.
    """
    if not judge_changes(document):
        document["rejudge"] = {
            "performed": False,
            "reason": "no judge, judge setting or judge prompt changed between the runs; nothing to re-judge",
        }
        return document
    systems = sorted(set(run_a.scores["system"].astype(str)) & set(run_b.scores["system"].astype(str)))
    roots, fetched = locate_candidates(run_a, systems)
    scores, cost = rejudged_scores(run_a, suite, systems, roots=roots)
    rejudged = counterfactual_run(run_a, run_b, scores)
    effects, system_doc = split_effects(run_a, rejudged, run_b, config, drift=drift)
    plain_verdict, plain_reasons = document["verdict"], list(document.get("reasons") or [])
    document["verdict"] = system_doc["verdict"]
    document["reasons"] = [
        f"verdict on the system effect: run A's candidates re-judged with run B's judges "
        f"({cost.model_calls} judge model calls, {cost.cache_hits} cache hits); the plain verdict "
        f"was {plain_verdict}",
        *system_doc["reasons"],
    ]
    document["possible_regressions"] = system_doc.get("possible_regressions", [])
    document["rejudge"] = {
        "performed": True,
        "verdict_basis": VERDICT_BASIS,
        "verdict": system_doc["verdict"],
        "plain_verdict": plain_verdict,
        "plain_reasons": plain_reasons,
        "panels": list(suite.panels),
        "systems": effects,
        "cost": cost.as_dict(),
        "method": (
            "judge_effect = A' - A and system_effect = B - A', where A' is run A's candidates judged "
            "with run B's panels; paired bootstrap over the shared instances as for the plain delta"
        ),
    }
    if fetched is not None:  # run A came from the tracking server: say where its candidates came from
        document["rejudge"]["candidates"] = fetched
    return document


def rejudge_failed(document: dict[str, Any], error: OmnievalError) -> dict[str, Any]:
    """Record a re-judging that could not run; the plain verdict stands."""
    first = str(error).splitlines()[0]
    document["rejudge"] = {"performed": False, "error": str(error)}
    document.setdefault("reasons", []).append(f"re-judging failed, the plain verdict stands: {first}")
    return document


def rejudge_lines(document: Mapping[str, Any]) -> list[str]:
    """The terminal lines of a comparison's ``rejudge`` block (empty without one)."""
    block = document.get("rejudge")
    if not isinstance(block, Mapping):
        return []
    if not block.get("performed"):
        why = block.get("reason") or str(block.get("error", "")).splitlines()[0]
        return ["", f"re-judging: not performed ({why})"]
    cost = block.get("cost") or {}
    lines = [
        "",
        f"re-judging (verdict on the {block.get('verdict_basis')}; plain verdict {block.get('plain_verdict')}): "
        f"{cost.get('judge_calls', 0)} judge calls, {cost.get('model_calls', 0)} made, "
        f"{cost.get('cache_hits', 0)} cached; effects on each component's scale (scales above)",
    ]

    def fmt(effect: Mapping[str, Any]) -> str:
        delta, low, high = effect.get("delta"), effect.get("ci_low"), effect.get("ci_high")
        if delta is None or (isinstance(delta, float) and math.isnan(delta)):
            return "n/a"
        ci = "" if low is None or high is None else f" [{low:+.3f}, {high:+.3f}]"
        return f"{delta:+.3f}{ci}"

    fetched = block.get("candidates")
    if isinstance(fetched, Mapping):
        origin = fetched.get("fetched_from") or {}
        counts = [
            f"{system} {entry.get('files', 0)} files ({entry.get('source')}, "
            f"{'verified' if entry.get('verified') else 'not verified'})"
            for system, entry in (fetched.get("systems") or {}).items()
        ]
        lines.append(
            f"  run A's candidates from run {origin.get('run_id')} on {origin.get('tracking_uri')}: "
            + ", ".join(counts)
            + (f"; {fetched['note']}" if fetched.get("note") else "")
        )
    for system, per in (block.get("systems") or {}).items():
        for component, cell in per.items():
            lines.append(
                f"  {system} / {component}: judge effect {fmt(cell['judge_effect'])}, "
                f"system effect {fmt(cell['system_effect'])}"
            )
    return lines


def rejudge_document(
    document: dict[str, Any],
    run_a: RunFolder,
    run_b: RunFolder,
    suite: SuiteConfig,
    config: RegressionConfig,
    *,
    drift: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """:func:`rejudge_comparison` for the nightly: a failure is recorded, never raised."""
    try:
        return rejudge_comparison(document, run_a, run_b, suite, config, drift=drift)
    except OmnievalError as exc:
        return rejudge_failed(document, exc)
