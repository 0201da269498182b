"""A run folder's leaderboard.json against the independent aggregations of its scores.parquet."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from . import acbench, prism, storybench

REL_TOL = 1e-6
"""Relative tolerance of a headline value (FORMATS.md section 7: outside checks compare to 1e-6)."""
ABS_TOL = 1e-9
"""Absolute floor, for values that are 0 up to the summation order (a WER of 0, a delta-WPM near 0)."""


class HeadlineMismatch(AssertionError):
    """leaderboard.json disagrees with the independent aggregation; the message lists every difference."""


class _Comparison:
    """Collects differences between the leaderboard (``got``) and the reference (``want``)."""

    def __init__(self) -> None:
        self.compared = 0
        self.problems: list[str] = []

    def value(self, where: str, got: Any, want: Any) -> None:
        self.compared += 1
        if got is None or want is None:
            if got is not None or want is not None:
                self.problems.append(f"{where}: leaderboard {got!r}, reference {want!r}")
            return
        if not math.isclose(float(got), float(want), rel_tol=REL_TOL, abs_tol=ABS_TOL):
            self.problems.append(f"{where}: leaderboard {got!r}, reference {want!r}")

    def exact(self, where: str, got: Any, want: Any) -> None:
        self.compared += 1
        if got != want:
            self.problems.append(f"{where}: leaderboard {got!r}, reference {want!r}")

    def keys(self, where: str, got: Mapping[str, Any], want: Mapping[str, Any]) -> list[str]:
        """The keys both sides hold; a key on one side only is a difference."""
        if set(got) != set(want):
            self.problems.append(f"{where}: leaderboard has {sorted(got)}, reference {sorted(want)}")
        return sorted(set(got) & set(want))


def _storybench(folder: Path, board: Mapping[str, Any], scores: pd.DataFrame, out: _Comparison) -> None:
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


def _prism(folder: Path, board: Mapping[str, Any], scores: pd.DataFrame, out: _Comparison) -> None:
    # Which systems are diagnostic or the reference is the suite's say (its resolved config).
    config = yaml.safe_load((folder / "config.resolved.yaml").read_text(encoding="utf-8"))
    diagnostic, reference = prism.suite_roles(config["systems"])
    want = prism.reference_aggregate(scores.to_dict("records"), diagnostic=diagnostic, reference=reference)
    for system in out.keys("systems", board["systems"], want["systems"]):
        got, ref = board["systems"][system]["subsets"], want["systems"][system]
        for subset in out.keys(f"{system} subsets", got, ref):
            _entry(out, f"{system}/{subset}", got[subset], ref[subset])
    gt = board["ground_truth"]["subsets"]
    for subset in out.keys("ground_truth subsets", gt, want["ground_truth"]):
        _entry(out, f"ground_truth/{subset}", gt[subset], want["ground_truth"][subset])


def _acbench(folder: Path, board: Mapping[str, Any], scores: pd.DataFrame, out: _Comparison) -> None:
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


_CHECKS: dict[str, Callable[[Path, Mapping[str, Any], pd.DataFrame, _Comparison], None]] = {
    "storybench": _storybench,
    "prism": _prism,
    "acbench": _acbench,
}


def check_headline_values(run_folder: Path) -> int:
    """Recompute a run's headline values from its scores.parquet and compare with its leaderboard.json.

    Headline values: storybench, per system and policy, the seven components, ``total_average`` and
    what it covers; prism, per system (and the ground truth's global means) per subset, every
    calibrated cell, dimension total and final; acbench, per system and condition, the seven metrics,
    ``n`` and ``not_computed``. A value agrees within :data:`REL_TOL` relative (or :data:`ABS_TOL`);
    ``null`` agrees only with ``null``; a system, subset, condition or cell on one side only disagrees.

    Args:
        run_folder: ``runs/<suite>/<run_id>/`` (FORMATS.md section 4); prism also reads its
            ``config.resolved.yaml`` for the suite's diagnostic and reference systems.

    Returns:
        How many values were compared (so a caller can tell an empty check from a passing one).

    Raises:
        HeadlineMismatch: Any difference, all of them listed.
    """
    folder = Path(run_folder)
    board = json.loads((folder / "leaderboard.json").read_text(encoding="utf-8"))
    scores = pd.read_parquet(folder / "scores.parquet")
    out = _Comparison()
    _CHECKS[board["benchmark"]](folder, board, scores, out)
    if out.problems:
        raise HeadlineMismatch(
            f"{folder / 'leaderboard.json'} disagrees with the independent aggregation of its "
            f"scores.parquet in {len(out.problems)} of {out.compared} values:\n" + "\n".join(out.problems)
        )
    return out.compared
