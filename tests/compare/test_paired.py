"""The paired bootstrap and Holm against independent implementations and hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from omnieval.compare import (
    bootstrap_indices,
    holm,
    minimum_detectable_effect,
    normal_p_value,
    paired_bootstrap,
)


def _percentile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation percentile written out by hand (numpy's default method)."""
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _loop_bootstrap(a: list[float], b: list[float], indices: np.ndarray) -> tuple[float, float, float, float]:
    """mean(b - a) over valid pairs, per draw, with plain loops; returns (delta, lo, hi, se)."""
    pairs = [i for i in range(len(a)) if not math.isnan(a[i]) and not math.isnan(b[i])]
    delta = sum(b[i] for i in pairs) / len(pairs) - sum(a[i] for i in pairs) / len(pairs)
    draws = []
    for row in indices:
        total, count = 0.0, 0
        for i in row:
            i = int(i)
            if not math.isnan(a[i]) and not math.isnan(b[i]):
                total += b[i] - a[i]
                count += 1
        if count:
            draws.append(total / count)
    draws.sort()
    mean = sum(draws) / len(draws)
    se = math.sqrt(sum((d - mean) ** 2 for d in draws) / (len(draws) - 1))
    return delta, _percentile(draws, 2.5), _percentile(draws, 97.5), se


def test_paired_bootstrap_matches_plain_loops() -> None:
    rng = np.random.default_rng(7)
    n = 40
    a = rng.normal(5.0, 1.0, size=(3, n))
    b = a + rng.normal(0.3, 0.8, size=(3, n))
    a[1, [3, 9, 11]] = np.nan  # invalid in run A only
    b[2, [0, 5]] = np.nan
    indices = bootstrap_indices(n, 500, seed=3)
    results = paired_bootstrap(a, b, indices)
    for k, result in enumerate(results):
        delta, lo, hi, se = _loop_bootstrap(list(a[k]), list(b[k]), indices)
        assert result.delta == pytest.approx(delta, abs=1e-12)
        assert result.ci95[0] == pytest.approx(lo, abs=1e-12)
        assert result.ci95[1] == pytest.approx(hi, abs=1e-12)
        assert result.se == pytest.approx(se, rel=1e-10)
        assert result.n == int((~np.isnan(a[k]) & ~np.isnan(b[k])).sum())
        assert result.p == pytest.approx(math.erfc(abs(delta) / (se * math.sqrt(2))), rel=1e-10)


def test_known_cases() -> None:
    indices = bootstrap_indices(5, 300, seed=0)
    same = np.array([[1.0, 2.0, 3.0, 4.0, 5.0]])
    r = paired_bootstrap(same, same.copy(), indices)[0]
    assert (r.delta, r.ci95, r.se, r.p) == (0.0, (0.0, 0.0), 0.0, 1.0)
    shifted = paired_bootstrap(same, same - 2.0, indices)[0]
    assert shifted.delta == -2.0 and shifted.ci95 == (-2.0, -2.0) and shifted.p == 0.0
    nothing = paired_bootstrap(np.full((1, 5), np.nan), same, indices)[0]
    assert nothing.n == 0 and math.isnan(nothing.delta) and math.isnan(nothing.p)


def test_normal_p_value_matches_scipy() -> None:
    from scipy import stats

    for delta, se in [(0.3, 0.1), (-1.2, 0.9), (0.01, 2.0)]:
        assert normal_p_value(delta, se) == pytest.approx(2 * stats.norm.sf(abs(delta) / se), rel=1e-9)


def _loop_holm(p_values: list[float]) -> list[float]:
    """Holm as this module wrote it before statsmodels did the work: a plain step-down loop."""
    finite = [i for i, p in enumerate(p_values) if math.isfinite(p)]
    out = [math.nan] * len(p_values)
    running = 0.0
    for rank, i in enumerate(sorted(finite, key=lambda i: (p_values[i], i))):
        running = max(running, min(1.0, (len(finite) - rank) * p_values[i]))
        out[i] = running
    return out


def test_holm_hand_example_and_former_loop() -> None:
    # m = 4: sorted 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> max(0.06, 0.04) = 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # The same floats as the hand-written loop it replaced (stored p_holm values must not move),
    # with a tie, NaN and infinite entries (not tests), and values that cap at 1.
    p = list(np.random.default_rng(1).uniform(0, 0.6, size=17))
    p[4] = p[9]
    p[2], p[11] = math.nan, math.inf
    got, want = holm(p), _loop_holm(p)
    assert [x for x in got if not math.isnan(x)] == [x for x in want if not math.isnan(x)]
    assert [math.isnan(x) for x in got] == [math.isnan(x) for x in want] and 1.0 in got
    with_nan = holm([0.01, float("nan"), 0.02])
    assert (
        with_nan[0] == pytest.approx(0.02) and math.isnan(with_nan[1]) and with_nan[2] == pytest.approx(0.02)
    )
    assert holm([]) == [] and all(math.isnan(x) for x in holm([math.nan, math.nan]))


def test_mde_from_a_known_se_matches_scipy() -> None:
    """MDE = (z_(1-alpha/2) + z_power) * SE, the SE taken from a fixed sample's paired bootstrap."""
    from scipy.stats import norm

    rng = np.random.default_rng(7)
    a = rng.normal(5.0, 1.0, 40)
    b = a + rng.normal(-0.1, 0.5, 40)
    indices = bootstrap_indices(40, 2000, seed=3)
    (result,) = paired_bootstrap(a[None, :], b[None, :], indices)
    _, _, _, se = _loop_bootstrap(list(a), list(b), indices)
    assert result.se == pytest.approx(se, rel=1e-12)
    for alpha, power in [(0.05, 0.8), (0.01, 0.9), (0.05 / 6, 0.8)]:
        expected = (norm.ppf(1 - alpha / 2) + norm.ppf(power)) * se
        assert minimum_detectable_effect(result.se, alpha=alpha, power=power) == pytest.approx(expected)
    # 1.96 + 0.8416 at the defaults
    assert minimum_detectable_effect(se) == pytest.approx(2.8016 * se, rel=1e-4)
    # a tolerance larger than the critical value moves what the verdict catches, never below the MDE
    z_a, z_b = norm.ppf(0.975), norm.ppf(0.8)
    big = 3 * z_a * se
    assert minimum_detectable_effect(se, tolerance=big) == pytest.approx(big + z_b * se)
    assert minimum_detectable_effect(se, tolerance=0.1 * se) == pytest.approx(minimum_detectable_effect(se))
    assert math.isnan(minimum_detectable_effect(math.nan))
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        minimum_detectable_effect(se, power=1.0)


def test_mde_shrinks_with_more_instances() -> None:
    """The same per-instance noise over 4x the instances halves the SE, so it halves the MDE."""
    rng = np.random.default_rng(11)
    mdes = []
    for n in (25, 100, 400):
        diff = rng.normal(0.0, 1.0, n)
        (result,) = paired_bootstrap(np.zeros((1, n)), diff[None, :], bootstrap_indices(n, 4000, seed=n))
        mdes.append(minimum_detectable_effect(result.se))
    assert mdes[0] > mdes[1] > mdes[2]
    assert mdes[0] / mdes[2] == pytest.approx(4.0, rel=0.25)
