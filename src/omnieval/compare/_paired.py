"""Paired bootstrap over shared instances (vectorised numpy) and Holm's step-down correction.

Two runs are compared per (system, component) on the instances both runs share. Every test of one
comparison uses the same resamples of instance positions (drawn once by :func:`bootstrap_indices`),
so the tests are as correlated as the underlying scores and a rerun with the same seed is exact.

For one test, with ``a_i`` and ``b_i`` the per-instance values of the two runs (NaN = no valid
value) and P the instances valid in both:

- ``a``, ``b``: means over P; ``delta = b - a``;
- one bootstrap draw resamples instance positions with replacement and averages ``b_i - a_i`` over
  the drawn positions that are in P (a position drawn twice counts twice; a draw holding no position
  of P is dropped);
- ``ci95``: the 2.5th and 97.5th percentiles of the draws (linear interpolation, numpy's default);
- ``se``: the sample standard deviation of the draws;
- ``p``: two-sided normal approximation, ``erfc(|delta| / (se * sqrt 2))``; with ``se == 0`` every
  draw equals ``delta``, so ``p`` is 1 when ``delta`` is 0 and 0 otherwise.

The minimum detectable effect (:func:`minimum_detectable_effect`) turns the same ``se`` into the
smallest true change a test finds with a given power: ``(z_{1-alpha/2} + z_power) * se``. The
critical value is the two-sided one because a drop is called significant when the two-sided CI
lies entirely below zero, i.e. (in the normal approximation) when the drop exceeds
``z_{1-alpha/2} * se``; only the bad side counts, so the power term is one-sided.

The bootstrap stays written out in numpy: one matrix product per comparison over every draw is
what keeps a nightly comparison of many (system, component) tests fast. Holm is not ours: it is
``omnieval.analysis``' adjustment (statsmodels' ``multipletests``), shared with the analyses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from omnieval.analysis import holm as _holm_array

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class PairedResult:
    """One paired comparison (see the module docstring); NaN where undefined (no paired instance)."""

    a: float
    b: float
    delta: float
    ci95: tuple[float, float]
    se: float
    p: float
    n: int
    """Instances valid in both runs."""


def bootstrap_indices(n: int, draws: int, seed: int) -> IntArray:
    """Resampled instance positions, ``(draws, n)``, shared by every test of a comparison.

    Example:
        >>> bootstrap_indices(3, 2, seed=0).shape
        (2, 3)
    """
    rng = np.random.default_rng(seed)
    out: IntArray = (
        rng.integers(0, n, size=(draws, n), dtype=np.int64) if n else np.zeros((draws, 0), np.int64)
    )
    return out


def normal_p_value(delta: float, se: float) -> float:
    """Two-sided p-value of ``delta`` under a normal with standard deviation ``se``.

    Example:
        >>> round(normal_p_value(1.96, 1.0), 4)
        0.05
        >>> normal_p_value(0.0, 0.0), normal_p_value(0.5, 0.0)
        (1.0, 0.0)
    """
    if not math.isfinite(delta) or not math.isfinite(se):
        return math.nan
    if se == 0.0:
        return 1.0 if delta == 0.0 else 0.0
    return math.erfc(abs(delta) / (se * math.sqrt(2.0)))


def minimum_detectable_effect(
    se: float, *, alpha: float = 0.05, power: float = 0.8, tolerance: float = 0.0
) -> float:
    """Smallest true change in the bad direction a paired test detects with probability ``power``.

    With ``tolerance`` 0 this is ``(z_{1-alpha/2} + z_power) * se``, in the units of ``se`` (the
    component's own scale): the test rejects when the observed change exceeds ``z_{1-alpha/2} * se``
    (two-sided level ``alpha``, only the bad side counted), and a true change of that size lands
    beyond the critical value with probability ``power`` under the normal approximation.

    A verdict that also lets drops up to ``tolerance`` pass flags an observed drop only beyond
    ``max(tolerance, z_{1-alpha/2} * se)``, so what it catches with that power is
    ``max(tolerance, z_{1-alpha/2} * se) + z_power * se``: never less than the plain MDE.

    NaN when ``se`` is not finite (no paired instance, or fewer than two usable draws).

    Example:
        >>> round(minimum_detectable_effect(1.0), 4)
        2.8016
        >>> round(minimum_detectable_effect(1.0, tolerance=3.0), 4)
        3.8416
        >>> minimum_detectable_effect(0.0)
        0.0
    """
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"alpha and power must lie strictly between 0 and 1; got {alpha} and {power}")
    if not math.isfinite(se):
        return math.nan
    unit = NormalDist()
    return max(tolerance, unit.inv_cdf(1.0 - alpha / 2.0) * se) + unit.inv_cdf(power) * se


def paired_bootstrap(a: FloatArray, b: FloatArray, indices: IntArray) -> list[PairedResult]:
    """Paired bootstrap of ``mean(b - a)`` for K tests at once.

    Args:
        a: ``(K, n)`` per-instance values of run A (NaN = no valid value).
        b: ``(K, n)`` the same instances in run B.
        indices: ``(draws, n)`` resampled positions from :func:`bootstrap_indices`.

    Returns:
        One :class:`PairedResult` per row.

    Example:
        >>> a = np.array([[1.0, 2.0, 3.0, np.nan]])
        >>> b = np.array([[2.0, 3.0, 4.0, 9.0]])
        >>> r = paired_bootstrap(a, b, bootstrap_indices(4, 200, seed=1))[0]
        >>> r.a, r.b, r.delta, r.ci95, r.p, r.n
        (2.0, 3.0, 1.0, (1.0, 1.0), 0.0, 3)
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"a and b must be (K, n) arrays of one shape; got {a.shape} and {b.shape}")
    k, n = a.shape
    if indices.ndim != 2 or indices.shape[1] != n:
        raise ValueError(f"indices must be (draws, {n}); got {indices.shape}")
    paired = np.isfinite(a) & np.isfinite(b)
    diff = np.where(paired, b - a, 0.0)
    draws = indices.shape[0]
    # counts[r, i] = how often draw r picked position i; one matrix product then gives every test's
    # resampled sums and paired counts.
    counts = np.zeros((draws, n), dtype=np.float64)
    if n:
        np.add.at(counts, (np.repeat(np.arange(draws), n), indices.ravel()), 1.0)
    sums = counts @ diff.T  # (draws, K)
    used = counts @ paired.T.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(used > 0, sums / np.maximum(used, 1.0), np.nan)
    out: list[PairedResult] = []
    for t in range(k):
        m = int(paired[t].sum())
        if m == 0:
            out.append(
                PairedResult(math.nan, math.nan, math.nan, (math.nan, math.nan), math.nan, math.nan, 0)
            )
            continue
        mean_a = float(a[t, paired[t]].mean())
        mean_b = float(b[t, paired[t]].mean())
        delta = mean_b - mean_a
        finite = means[:, t][np.isfinite(means[:, t])]
        if finite.size >= 2:
            lo, hi = (float(x) for x in np.percentile(finite, [2.5, 97.5]))
            se = float(finite.std(ddof=1))
        else:
            lo = hi = se = math.nan
        out.append(PairedResult(mean_a, mean_b, delta, (lo, hi), se, normal_p_value(delta, se), m))
    return out


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values as a list; NaN entries stay NaN and do not count as tests.

    With the m finite p-values sorted ascending, the j-th (1-based) gets
    ``max over i <= j of min(1, (m - i + 1) * p_(i))``. The computation is the analyses' Holm
    (statsmodels); this wrapper keeps the list-of-floats shape the verdict code stores per test.

    Example:
        >>> [round(p, 4) for p in holm([0.01, 0.04, 0.03, 0.005])]
        [0.03, 0.06, 0.06, 0.02]
    """
    return [float(p) for p in _holm_array(np.asarray(p_values, dtype=np.float64))]
