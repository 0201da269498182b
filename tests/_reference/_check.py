"""A run folder's numbers against the independent aggregations of its scores.parquet.

Two comparisons: the run's ``leaderboard.json`` against the reference aggregation of the run's
table; and the package's aggregation (the ``leaderboard()`` the report stage writes that file with)
against the reference on the same table *with gaps* (:func:`with_gaps`). The second exists because
a real run on the sample is often complete: with every record valid, valid-only and zero-filled
coincide and nothing exercises how a missing output or a failed judgment is counted, so an
aggregation bug there would pass the first comparison. Only :mod:`._check` imports the package,
and only for that second comparison; the reference modules import nothing of it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from . import acbench, prism, storybench

VALUED = ("ok", "repaired")

REL_TOL = 1e-6
"""Relative tolerance of a headline value (FORMATS.md section 7: outside checks compare to 1e-6)."""
ABS_TOL = 1e-9
"""Absolute floor, for values that are 0 up to the summation order (a WER of 0, a delta-WPM near 0)."""


class HeadlineMismatch(AssertionError):
    """leaderboard.json disagrees with the independent aggregation; the message lists every difference."""


class _Comparison:
    """Collects differences between a package document (``got``) and the reference (``want``)."""

    def __init__(self) -> None:
        self.compared = 0
        self.problems: list[str] = []
        self.label = "leaderboard.json"
        """Which document is compared; every difference line starts with it."""
        self.got = "leaderboard"
        """What the compared values are called in a difference line."""

    def _differs(self, text: str) -> None:
        self.problems.append(f"{self.label}: {text}")

    def value(self, where: str, got: Any, want: Any) -> None:
        self.compared += 1
        if got is None or want is None:
            if got is not None or want is not None:
                self._differs(f"{where}: {self.got} {got!r}, reference {want!r}")
            return
        if not math.isclose(float(got), float(want), rel_tol=REL_TOL, abs_tol=ABS_TOL):
            self._differs(f"{where}: {self.got} {got!r}, reference {want!r}")

    def exact(self, where: str, got: Any, want: Any) -> None:
        self.compared += 1
        if got != want:
            self._differs(f"{where}: {self.got} {got!r}, reference {want!r}")

    def keys(self, where: str, got: Mapping[str, Any], want: Mapping[str, Any]) -> list[str]:
        """The keys both sides hold; a key on one side only is a difference."""
        if set(got) != set(want):
            self._differs(f"{where}: {self.got} has {sorted(got)}, reference {sorted(want)}")
        return sorted(set(got) & set(want))


Roles = tuple[frozenset[str], frozenset[str]]
"""(diagnostic ids, reference ids) of the run's suite; only prism reads them."""


def _storybench(board: Mapping[str, Any], scores: pd.DataFrame, roles: Roles, out: _Comparison) -> None:
    want = storybench.reference_aggregate(scores)
    out.exact("n_instances", board["n_instances"], int(scores["instance_id"].nunique()))
    for system in out.keys("systems", board["systems"], want):
        for policy in storybench.POLICIES:
            got, ref = board["systems"][system][policy], want[system][policy]
            for key in storybench.HEADLINE:
                out.value(f"{system}/{policy}/{key}", got[key], ref[key])
            out.exact(
                f"{system}/{policy}/total_average_components",
                got["total_average_components"],
                ref["total_average_components"],
            )


def _entry(out: _Comparison, where: str, got: Mapping[str, Any], ref: Mapping[str, Any]) -> None:
    """One prism entry: every calibrated cell, every dimension total and the final."""
    for dim in out.keys(f"{where} dimensions", got["cells"], ref["cells"]):
        for atype in out.keys(f"{where}/{dim} audio types", got["cells"][dim], ref["cells"][dim]):
            out.value(f"{where}/cells/{dim}/{atype}", got["cells"][dim][atype], ref["cells"][dim][atype])
        out.value(f"{where}/dimensions/{dim}", got["dimensions"].get(dim), ref["dimensions"][dim])
    out.value(f"{where}/final", got["final"], ref["final"])


def _prism(board: Mapping[str, Any], scores: pd.DataFrame, roles: Roles, out: _Comparison) -> None:
    diagnostic, reference = roles
    want = prism.reference_aggregate(scores.to_dict("records"), diagnostic=diagnostic, reference=reference)
    for system in out.keys("systems", board["systems"], want["systems"]):
        got, ref = board["systems"][system]["subsets"], want["systems"][system]
        for subset in out.keys(f"{system} subsets", got, ref):
            _entry(out, f"{system}/{subset}", got[subset], ref[subset])
    gt = board["ground_truth"]["subsets"]
    for subset in out.keys("ground_truth subsets", gt, want["ground_truth"]):
        _entry(out, f"ground_truth/{subset}", gt[subset], want["ground_truth"][subset])


def _acbench(board: Mapping[str, Any], scores: pd.DataFrame, roles: Roles, out: _Comparison) -> None:
    want = acbench.reference_aggregate(scores)
    for system in out.keys("systems", board["systems"], want):
        got, ref = board["systems"][system]["conditions"], want[system]
        for condition in out.keys(f"{system} conditions", got, ref):
            for key in acbench.METRICS:
                out.value(f"{system}/{condition}/{key}", got[condition][key], ref[condition][key])
            out.exact(f"{system}/{condition}/n", got[condition]["n"], ref[condition]["n"])
            out.exact(
                f"{system}/{condition}/not_computed",
                got[condition]["not_computed"],
                ref[condition]["not_computed"],
            )


_CHECKS: dict[str, Callable[[Mapping[str, Any], pd.DataFrame, Roles, _Comparison], None]] = {
    "storybench": _storybench,
    "prism": _prism,
    "acbench": _acbench,
}


GT = "ground_truth"


def with_gaps(scores: pd.DataFrame) -> pd.DataFrame:
    """A copy of a scores table with outputs lost and judgments failed, the same way every time.

    The first system under test (by id; the ground truth's pseudo-system excluded) loses every
    output of its first instance (lowest ``index``): its valued rows become ``missing_output``. On
    the last system's last instance, the first valued judge row of each (track, panel, judge) fails
    to parse (``parse_error``): a storybench record with one criterion missing, a prism cell
    without its judge. Conditions, subsets and pairings are left as they are.
    """
    out = scores.copy()
    valued = out["status"].isin(VALUED)
    systems = sorted(set(out["system"]) - {GT})
    of_first = out["system"] == systems[0]
    lost = valued & of_first & (out["index"] == out.loc[of_first, "index"].min())
    of_last = out["system"] == systems[-1]
    judged = valued & of_last & (out["component"] == "judge")
    judged &= out["index"] == out.loc[of_last, "index"].max()
    failed = out[judged & ~lost].groupby(["track", "panel", "judge"]).head(1).index
    out.loc[lost, "status"] = "missing_output"
    out.loc[failed, "status"] = "parse_error"
    out.loc[lost | out.index.isin(failed), "value"] = float("nan")
    return out


def _package_document(benchmark: str, scores: pd.DataFrame, roles: Roles) -> dict[str, Any]:
    """The document the report stage would write for ``scores`` (the package's own code path)."""
    from omnieval.benchmarks import RunFacts, get_benchmark

    diagnostic, reference = roles
    facts = RunFacts(
        n_instances=int(scores["instance_id"].nunique()), diagnostic=diagnostic, reference=reference
    )
    document: dict[str, Any] = get_benchmark(benchmark).leaderboard(scores, facts).document
    return document


def check_headline_values(run_folder: Path, *, gaps: bool = True) -> int:
    """Recompute a run's headline values from its scores.parquet and compare with its leaderboard.json.

    Headline values: storybench, per system and policy, the seven components, ``total_average`` and
    what it covers; prism, per system (and the ground truth's global means) per subset, every
    calibrated cell, dimension total and final; acbench, per system and condition, the seven metrics,
    ``n`` and ``not_computed``. A value agrees within :data:`REL_TOL` relative (or :data:`ABS_TOL`);
    ``null`` agrees only with ``null``; a system, subset, condition or cell on one side only disagrees.

    With ``gaps`` (the default) the package's aggregation of the run's table with gaps
    (:func:`with_gaps`) is compared with the reference's the same way, so the rules for missing
    outputs and failed judgments are checked on real data even when the run had none.

    Args:
        run_folder: ``runs/<suite>/<run_id>/`` (FORMATS.md section 4); prism also reads its
            ``config.resolved.yaml`` for the suite's diagnostic and reference systems.
        gaps: Also compare the package's aggregation of the table with gaps.

    Returns:
        How many values were compared (so a caller can tell an empty check from a passing one).

    Raises:
        HeadlineMismatch: Any difference, all of them listed.
    """
    folder = Path(run_folder)
    board = json.loads((folder / "leaderboard.json").read_text(encoding="utf-8"))
    scores = pd.read_parquet(folder / "scores.parquet")
    benchmark = board["benchmark"]
    roles: Roles = (frozenset(), frozenset())
    if benchmark == "prism":  # which systems are diagnostic or the reference is the suite's say
        config = yaml.safe_load((folder / "config.resolved.yaml").read_text(encoding="utf-8"))
        roles = prism.suite_roles(config["systems"])
    out = _Comparison()
    _CHECKS[benchmark](board, scores, roles, out)
    if gaps:
        holed = with_gaps(scores)
        out.label, out.got = "the package's aggregation of the table with gaps", "package"
        _CHECKS[benchmark](_package_document(benchmark, holed, roles), holed, roles, out)
    if out.problems:
        raise HeadlineMismatch(
            f"{folder}: the package's numbers disagree with the independent aggregation of "
            f"scores.parquet in {len(out.problems)} of {out.compared} values:\n" + "\n".join(out.problems)
        )
    return out.compared
