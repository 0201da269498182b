"""Statistics used by the analyses, written out in numpy so they vectorise over bootstrap draws.

Only distribution tails come from scipy (``scipy.special.stdtr`` / ``ndtr``, far cheaper to import
than ``scipy.stats``). Tests compare every function
with an independent implementation (scipy, pingouin, statsmodels, krippendorff) on seeded inputs.

Example:
    >>> import numpy as np
    >>> round(pearson(np.array([1.0, 2, 3, 4]), np.array([1.0, 3, 2, 4])).r, 3)
    0.8
    >>> rankdata(np.array([3.0, 1.0, 3.0]))
    array([2.5, 1. , 2.5])
    >>> holm(np.array([0.01, 0.04, 0.03]))
    array([0.03, 0.06, 0.06])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


class Correlation(NamedTuple):
    """A correlation coefficient with its two-sided p-value and the number of paired observations."""

    r: float
    p: float
    n: int


def rankdata(a: npt.ArrayLike, method: Literal["average", "min", "max"] = "average") -> FloatArray:
    """Ranks (1 = smallest) along the last axis; ties share the average, min or max rank.

    Args:
        a: array of any shape; ranking is independent per row of the last axis. Must be finite.
        method: how tied values are ranked.
    """
    x = np.asarray(a, dtype=np.float64)
    shape = x.shape
    if x.size == 0:
        return x.copy()
    rows = x.reshape(-1, shape[-1])
    n_rows, n = rows.shape
    order = np.argsort(rows, axis=1, kind="mergesort")
    sorted_ = np.take_along_axis(rows, order, axis=1)
    new_group = np.ones_like(sorted_, dtype=bool)
    new_group[:, 1:] = sorted_[:, 1:] != sorted_[:, :-1]
    group = np.cumsum(new_group.ravel()).reshape(n_rows, n) - 1  # unique across rows
    pos = np.tile(np.arange(1, n + 1, dtype=np.float64), n_rows)
    n_groups = int(group.max()) + 1
    first = np.full(n_groups, np.inf)
    np.minimum.at(first, group.ravel(), pos)
    last = np.zeros(n_groups)
    np.maximum.at(last, group.ravel(), pos)
    if method == "average":
        per_group = (first + last) / 2.0
    elif method == "min":
        per_group = first
    else:
        per_group = last
    ranks_sorted = per_group[group]
    out = np.empty_like(ranks_sorted)
    np.put_along_axis(out, order, ranks_sorted, axis=1)
    result: FloatArray = out.reshape(shape)
    return result


def _t_two_sided(t: FloatArray | float, df: float) -> FloatArray:
    from scipy.special import stdtr

    return np.asarray(2.0 * stdtr(df, -np.abs(t)), dtype=np.float64)


def normal_two_sided(z: float) -> float:
    """Two-sided p-value of a standard-normal statistic."""
    from scipy.special import ndtr

    return float(2.0 * ndtr(-abs(z)))


def r_pvalue(r: float, n: int, k: int = 0) -> float:
    """Two-sided p-value of a (partial) correlation ``r`` from ``n`` pairs with ``k`` controls.

    Uses Student's t with ``n - 2 - k`` degrees of freedom; NaN when that is below 1.
    """
    df = n - 2 - k
    if df < 1 or not math.isfinite(r):
        return math.nan
    if abs(r) >= 1.0:
        return 0.0
    t = r * math.sqrt(df / (1.0 - r * r))
    return float(_t_two_sided(t, df))


def pearson(x: npt.ArrayLike, y: npt.ArrayLike) -> Correlation:
    """Pearson's r and its two-sided p-value (t test, ``n - 2`` df); NaN when undefined."""
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = int(xa.size)
    if n < 2:
        return Correlation(math.nan, math.nan, n)
    dx, dy = xa - xa.mean(), ya - ya.mean()
    den = math.sqrt(float(dx @ dx) * float(dy @ dy))
    if den == 0.0:
        return Correlation(math.nan, math.nan, n)
    r = max(-1.0, min(1.0, float(dx @ dy) / den))
    return Correlation(r, r_pvalue(r, n), n)


def spearman(x: npt.ArrayLike, y: npt.ArrayLike) -> Correlation:
    """Spearman's rho (Pearson on average ranks) with the t-approximation p-value."""
    return pearson(rankdata(x), rankdata(y))


def _tie_sums(a: FloatArray) -> tuple[float, float, float]:
    _, counts = np.unique(a, return_counts=True)
    t = counts[counts > 1].astype(np.float64)
    return (
        float((t * (t - 1) / 2).sum()),
        float((t * (t - 1) * (t - 2)).sum()),
        float((t * (t - 1) * (2 * t + 5)).sum()),
    )


def _inversions_cdf(n: int, c: int) -> float:
    """P(#inversions <= c) of a uniform random permutation of ``n`` items (exact, Mahonian numbers)."""
    counts = [1]  # permutations of 1 item
    for m in range(2, n + 1):
        width = min(len(counts) + m - 1, c + 1)
        nxt = [0] * width
        prefix = [0]
        for v in counts:
            prefix.append(prefix[-1] + v)
        for k in range(width):
            lo = max(0, k - (m - 1))
            hi = min(k, len(counts) - 1)
            nxt[k] = prefix[hi + 1] - prefix[lo] if hi >= lo else 0
        counts = nxt
    return sum(counts[: c + 1]) / math.factorial(n)


def kendall_tau_b(
    x: npt.ArrayLike, y: npt.ArrayLike, method: Literal["auto", "exact", "asymptotic"] = "auto"
) -> Correlation:
    """Kendall's tau-b with a two-sided p-value.

    ``auto`` uses the exact permutation distribution when neither variable has ties and ``n <= 33``
    and the tie-corrected normal approximation otherwise (the same rule as ``scipy.stats.kendalltau``).
    """
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = int(xa.size)
    if n < 2:
        return Correlation(math.nan, math.nan, n)
    iu = np.triu_indices(n, k=1)
    sx = np.sign(xa[:, None] - xa[None, :])[iu]
    sy = np.sign(ya[:, None] - ya[None, :])[iu]
    prod = sx * sy
    con, dis = int((prod > 0).sum()), int((prod < 0).sum())
    xtie, x0, x1 = _tie_sums(xa)
    ytie, y0, y1 = _tie_sums(ya)
    tot = n * (n - 1) / 2
    if tot - xtie == 0 or tot - ytie == 0:
        return Correlation(math.nan, math.nan, n)
    tau = (con - dis) / math.sqrt(tot - xtie) / math.sqrt(tot - ytie)
    tau = max(-1.0, min(1.0, tau))
    if method == "auto":
        method = (
            "exact" if xtie == 0 and ytie == 0 and (n <= 33 or min(dis, tot - dis) <= 1) else "asymptotic"
        )
    if method == "exact":
        if xtie or ytie:
            raise ValueError("the exact Kendall p-value needs untied data")
        c = int(min(dis, tot - dis))
        p = 1.0 if 4 * c == n * (n - 1) else min(1.0, 2.0 * _inversions_cdf(n, c))
        return Correlation(tau, p, n)
    m = n * (n - 1.0)
    var = (m * (2 * n + 5) - x1 - y1) / 18 + (2 * xtie * ytie) / m + x0 * y0 / (9 * m * (n - 2))
    if var <= 0:
        return Correlation(tau, math.nan, n)
    z = (con - dis) / math.sqrt(var)
    return Correlation(tau, normal_two_sided(z), n)


def residualize(y: FloatArray, controls: FloatArray) -> FloatArray:
    """Residuals of ``y`` (``(n,)``) after least squares on ``controls`` (``(n, k)``) with an intercept."""
    design = np.column_stack([np.ones(y.shape[0]), controls])
    beta, *_ = np.linalg.lstsq(design, y, rcond=None)
    out: FloatArray = y - design @ beta
    return out


def partial_correlation(x: npt.ArrayLike, y: npt.ArrayLike, controls: npt.ArrayLike) -> Correlation:
    """Partial correlation of ``x`` and ``y`` given ``controls`` (``(n, k)``, or ``(n,)`` for one).

    Pearson correlation of the residuals after regressing each on the controls with an intercept
    (appendix F.4); the p-value uses ``n - 2 - k`` degrees of freedom.
    """
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    z = np.asarray(controls, dtype=np.float64)
    z = z.reshape(xa.size, -1) if z.size else np.empty((xa.size, 0))
    k = z.shape[1]
    if k == 0:
        return pearson(xa, ya)
    base = pearson(residualize(xa, z), residualize(ya, z))
    return Correlation(base.r, r_pvalue(base.r, xa.size, k), xa.size)


def pearson_rows(x: FloatArray, y: FloatArray) -> FloatArray:
    """Pearson r along the last axis for stacks of paired vectors (e.g. ``(B, S)`` draws)."""
    dx = x - x.mean(axis=-1, keepdims=True)
    dy = y - y.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r: FloatArray = (dx * dy).sum(-1) / np.sqrt((dx * dx).sum(-1) * (dy * dy).sum(-1))
    return r


def partial_rows(data: FloatArray, i: int, j: int, controls: Sequence[int]) -> FloatArray:
    """Partial correlations of columns ``i`` and ``j`` given ``controls`` for stacks ``(B, S, V)``.

    Uses the inverse of each draw's correlation matrix over the variables involved, which equals
    the residual-regression definition of :func:`partial_correlation`.
    """
    cols = [i, j, *controls]
    sub = data[..., cols]
    r: FloatArray = np.full(sub.shape[:-2], np.nan)
    # Draws with a missing value have no defined correlation (and would break the SVD).
    finite = np.isfinite(sub).all(axis=(-2, -1))
    if not finite.any():
        return r
    ok = sub[finite]
    centered = ok - ok.mean(axis=-2, keepdims=True)
    cov = np.einsum("...si,...sj->...ij", centered, centered)
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = np.linalg.pinv(cov)
        r[finite] = -prec[..., 0, 1] / np.sqrt(prec[..., 0, 0] * prec[..., 1, 1])
    return r


def holm(p: npt.ArrayLike) -> FloatArray:
    """Holm step-down adjusted p-values (family = the finite p-values given; NaN entries stay NaN).

    The adjustment itself is statsmodels' ``multipletests(method="holm")``, the one Holm in the
    project (``omnieval.compare.holm`` calls this too). statsmodels has no notion of a missing test,
    so the NaN entries (a comparison that could not be made) are taken out before the call and put
    back after it: they neither count towards the family size nor get a value. statsmodels is
    imported here, not at module level, because its import costs seconds and most users of this
    module never adjust a p-value.
    """
    pa = np.asarray(p, dtype=np.float64)
    out = np.full(pa.shape, np.nan)
    ok = np.isfinite(pa)
    if not ok.any():
        return out
    from statsmodels.stats.multitest import multipletests

    out[ok] = multipletests(pa[ok], method="holm")[1]
    return out


def krippendorff_alpha_ordinal(reliability: npt.ArrayLike) -> float:
    """Krippendorff's alpha with the ordinal metric.

    Args:
        reliability: ``(coders, units)`` array of ratings with NaN for "not rated"; units rated by
            fewer than two coders are not pairable and are ignored.

    Returns:
        ``1 - D_o / D_e``; NaN when there is no pairable unit or no variation.
    """
    data = np.asarray(reliability, dtype=np.float64)
    values = np.unique(data[np.isfinite(data)])
    v = values.size
    if v == 0:
        return math.nan
    code = {float(x): k for k, x in enumerate(values)}
    coincidence = np.zeros((v, v))
    for unit in data.T:
        vals = unit[np.isfinite(unit)]
        m = vals.size
        if m < 2:
            continue
        counts = np.zeros(v)
        for x in vals:
            counts[code[float(x)]] += 1
        pairs = np.outer(counts, counts) - np.diag(counts)
        coincidence += pairs / (m - 1)
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    if n <= 1:
        return math.nan
    cum = np.cumsum(n_c)
    # Ordinal distance between values c <= k: (sum_{g=c..k} n_g - (n_c + n_k)/2)^2.
    lo = np.minimum.outer(np.arange(v), np.arange(v))
    hi = np.maximum.outer(np.arange(v), np.arange(v))
    between = cum[hi] - np.where(lo > 0, cum[np.maximum(lo - 1, 0)], 0.0)
    delta = (between - (n_c[lo] + n_c[hi]) / 2.0) ** 2
    d_o = (coincidence * delta).sum()
    d_e = (np.outer(n_c, n_c) * delta).sum() / (n - 1)
    if d_e == 0:
        return math.nan
    return float(1.0 - d_o / d_e)


def percentile_interval(draws: FloatArray, level: float = 0.95, axis: int = 0) -> FloatArray:
    """Percentile interval ``[lo, hi]`` of bootstrap ``draws`` along ``axis`` (NaN draws ignored)."""
    tail = (1.0 - level) / 2.0 * 100.0
    out: FloatArray = np.nanpercentile(draws, [tail, 100.0 - tail], axis=axis)
    return out


def rank_desc(scores: FloatArray, method: Literal["average", "min", "max"] = "min") -> FloatArray:
    """Ranks along the last axis with 1 = highest score; NaN scores rank last."""
    filled = np.where(np.isfinite(scores), -scores, np.inf)
    return rankdata(filled, method)
