"""Our statistics against independent implementations on seeded inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from omnieval.analysis import _stats as S


@pytest.fixture(params=[0, 1, 2, 3])
def seeded(request: pytest.FixtureRequest) -> np.random.Generator:
    return np.random.default_rng(request.param)


def test_rankdata_matches_scipy(seeded: np.random.Generator) -> None:
    a = seeded.integers(0, 6, size=(7, 15)).astype(float)  # many ties
    for method in ("average", "min", "max"):
        np.testing.assert_array_equal(S.rankdata(a, method), stats.rankdata(a, method=method, axis=1))


def test_rank_desc_puts_nan_last() -> None:
    np.testing.assert_array_equal(S.rank_desc(np.array([1.0, np.nan, 3.0, 3.0])), [3, 4, 1, 1])


def test_pearson_spearman_match_scipy(seeded: np.random.Generator) -> None:
    x = seeded.normal(size=32)
    y = 0.5 * x + seeded.normal(size=32)
    y[:5] = np.round(y[:5])
    ours = S.pearson(x, y)
    ref = stats.pearsonr(x, y)
    assert ours.r == pytest.approx(ref.statistic, abs=1e-12)
    assert ours.p == pytest.approx(ref.pvalue, rel=1e-9)
    ours = S.spearman(x, np.round(y))
    ref = stats.spearmanr(x, np.round(y))
    assert ours.r == pytest.approx(ref.statistic, abs=1e-12)
    assert ours.p == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("n", [5, 12, 32, 40])
def test_kendall_tau_b_matches_scipy_without_ties(seeded: np.random.Generator, n: int) -> None:
    x = seeded.normal(size=n)
    y = 0.3 * x + seeded.normal(size=n)
    ours = S.kendall_tau_b(x, y)
    ref = stats.kendalltau(x, y)
    assert ours.r == pytest.approx(ref.statistic, abs=1e-12)
    assert ours.p == pytest.approx(ref.pvalue, rel=1e-9)


def test_kendall_tau_b_matches_scipy_with_ties(seeded: np.random.Generator) -> None:
    x = seeded.integers(0, 5, size=30).astype(float)
    y = x + seeded.integers(0, 4, size=30)
    ours = S.kendall_tau_b(x, y)
    ref = stats.kendalltau(x, y, variant="b")
    assert ours.r == pytest.approx(ref.statistic, abs=1e-12)
    assert ours.p == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("k", [1, 2])
def test_partial_correlation_matches_pingouin(seeded: np.random.Generator, k: int) -> None:
    import pingouin as pg

    n = 32
    z = seeded.normal(size=(n, k))
    x = z.sum(1) + seeded.normal(size=n)
    y = 0.5 * z[:, 0] + 0.3 * x + seeded.normal(size=n)
    frame = pd.DataFrame({"x": x, "y": y, **{f"z{i}": z[:, i] for i in range(k)}})
    ref = pg.partial_corr(frame, x="x", y="y", covar=[f"z{i}" for i in range(k)])
    ours = S.partial_correlation(x, y, z)
    assert ours.r == pytest.approx(float(ref["r"].iloc[0]), abs=1e-10)
    assert ours.p == pytest.approx(float(ref["p_val" if "p_val" in ref else "p-val"].iloc[0]), rel=1e-7)
    # The batched precision-matrix form agrees with the residual form.
    data = np.column_stack([x, y, z])[None]
    assert S.partial_rows(data, 0, 1, list(range(2, 2 + k)))[0] == pytest.approx(ours.r, abs=1e-10)


def test_pearson_rows_matches_loop(seeded: np.random.Generator) -> None:
    x, y = seeded.normal(size=(4, 9)), seeded.normal(size=(4, 9))
    np.testing.assert_allclose(S.pearson_rows(x, y), [S.pearson(a, b).r for a, b in zip(x, y, strict=True)])


def test_holm_gives_the_former_numpy_values(seeded: np.random.Generator) -> None:
    """statsmodels does the adjustment now; the stored p_holm values must be the same floats as the
    numpy step-down this module computed before (written out here), ties and NaN included."""
    p = seeded.uniform(0, 0.5, size=50)
    p[3] = p[7]  # a tie
    p[[5, 20]] = np.nan  # not tests
    ok = np.flatnonzero(np.isfinite(p))
    order = ok[np.argsort(p[ok], kind="mergesort")]
    want = np.full(p.shape, np.nan)
    want[order] = np.maximum.accumulate(np.minimum(1.0, (ok.size - np.arange(ok.size)) * p[order]))
    np.testing.assert_array_equal(S.holm(p), want)
    assert np.isnan(S.holm([np.nan, np.nan])).all() and S.holm([]).shape == (0,)


def test_holm_by_hand() -> None:
    # m = 3: sorted 0.01, 0.03, 0.04 -> 0.03, 0.06, max(0.06, 0.04) = 0.06
    np.testing.assert_allclose(S.holm([0.04, 0.01, 0.03, np.nan]), [0.06, 0.03, 0.06, np.nan])


def test_krippendorff_ordinal_matches_reference(seeded: np.random.Generator) -> None:
    import krippendorff as kd

    truth = seeded.integers(1, 11, size=40)
    data = np.vstack([np.clip(truth + seeded.integers(-2, 3, size=40), 1, 10) for _ in range(3)]).astype(
        float
    )
    data[seeded.random(data.shape) < 0.3] = np.nan
    ref = kd.alpha(reliability_data=data, level_of_measurement="ordinal")
    assert S.krippendorff_alpha_ordinal(data) == pytest.approx(ref, abs=1e-10)


def test_krippendorff_textbook_example() -> None:
    # Krippendorff's (2011) worked example with 4 coders, 12 units; ordinal alpha = 0.815.
    nan = np.nan
    data = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
            [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
        ]
    )
    assert S.krippendorff_alpha_ordinal(data) == pytest.approx(0.815, abs=5e-4)
