"""Yeo-Johnson power transforms of an ensemble's columns, each column's lambda fitted once.

The members of a TabSwift ensemble that normalise by a power transform (see
:mod:`skfm.tabular.ensemble`) read the same context rows, and a column's
maximum-likelihood lambda depends only on its values on those rows. Fitted
per member by :class:`~sklearn.preprocessing.PowerTransformer`, the same
lambdas were found four times over, each by SciPy's Brent search calling the
log-likelihood about 18 times per column: on a table of 500 rows and 20
columns the searches took 0.71 s of a 0.80 s fit of the network alone. Here
each lambda is found once per set of rows (:class:`LambdaCache`), and the
columns are searched together (:func:`search_lambdas`: a golden-section
search of the same likelihood in SciPy's interval, to its tolerance; the
lambdas agree with SciPy's to about 1e-5). They are applied by
:func:`scipy.stats.yeojohnson`, as ``PowerTransformer(standardize=False)``
applies them.

A constant column keeps lambda 1, the identity, as scikit-learn leaves it (by
its test, under which a column whose variance overflows is constant too), and
so does a column of values near float64's limit that the search cannot bound.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
from scipy import stats

#: The golden ratio's conjugate, the shrink of a golden-section interval per step.
GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0
#: The width at which the search stops: SciPy's ``xtol`` for ``yeojohnson_normmax``.
TOLERANCE = 1.48e-8
#: Golden-section steps at most: enough to narrow float64's widest interval (1e308 wide)
#: to ``TOLERANCE`` (about 1,500 steps); a safety bound, the width test ends the search.
MAX_STEPS = 2_000


class LambdaCache:
    """Fitted lambdas by (rows, column) key, shared by the members of one ensemble.

    Examples
    --------
    >>> import numpy as np
    >>> from skfm.tabular.power import LambdaCache, yeo_johnson
    >>> rng = np.random.default_rng(0)
    >>> x = rng.lognormal(size=(200, 2))
    >>> cache = LambdaCache()
    >>> lambdas = cache.lambdas(x, ["a", "b"])
    >>> cache.lambdas(x, ["a", "b"]) is not lambdas, cache.n_fitted  # the second call reuses
    (True, 2)
    >>> bool(abs(yeo_johnson(x, lambdas)[:, 0].mean()) < abs(x[:, 0].mean()))
    True
    """

    def __init__(self):
        self._fitted: dict[Hashable, float] = {}
        self.n_fitted = 0  # lambdas found by a search (constant columns excluded)

    def lambdas(self, x: np.ndarray, keys: list[Hashable]) -> np.ndarray:
        """Lambdas of the columns of ``x`` (n_rows, n_columns), one per key; NaN ignored.

        A key names a column's values on a set of rows: equal keys must mean equal
        columns. The columns not seen before are searched together.
        """
        new = [j for j, key in enumerate(keys) if key not in self._fitted]
        unique = list({keys[j]: j for j in new}.values())
        searched = [j for j in unique if not _is_constant(x[:, j])]
        found = dict.fromkeys(unique, 1.0)  # constant: the identity, as scikit-learn leaves it
        if searched:
            found.update(zip(searched, search_lambdas(x[:, searched]), strict=True))
            self.n_fitted += len(searched)
        self._fitted.update((keys[j], float(found[j])) for j in unique)
        return np.array([self._fitted[key] for key in keys])


def _is_constant(column: np.ndarray) -> bool:
    """Constant up to rounding, by scikit-learn's test: its variance within the error bound
    of computing it (``var <= n eps var + (n mean eps)^2``; an overflowing variance too).
    Missing values are left out; a column of none is constant."""
    values = column[~np.isnan(column)]
    with np.errstate(over="ignore", invalid="ignore"):
        n, mean, var = len(values), np.mean(values) if len(values) else 0.0, np.var(values)
        eps = np.finfo(np.float64).eps
        return n == 0 or bool(var <= n * eps * var + (n * mean * eps) ** 2)


def _bounds(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SciPy's search interval of every column (``yeojohnson_normmax``): the lambdas whose
    transform of values up to 20 times the largest stays within half float64's exponents."""
    finfo = np.finfo(np.float64)
    log_tiny = (np.log(finfo.tiny) - np.log(finfo.eps)) / 2
    log_max = (np.log(finfo.max) + np.log(finfo.eps)) / 2
    with np.errstate(over="ignore"):
        log1p_max = np.log1p(20 * np.nanmax(np.abs(x), axis=0))  # (F,)
    low, high = log_tiny / log1p_max, log_max / log1p_max
    all_negative, any_negative = np.nanmax(x, axis=0) < 0, np.nanmin(x, axis=0) < 0
    return (np.where(all_negative, 2 - high, np.where(any_negative, np.maximum(2 - high, low), low)),
            np.where(all_negative, 2 - low, np.where(any_negative, np.minimum(2 - low, high), high)))


def _transform(x: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """Yeo-Johnson of every column of ``x`` (n, F) by its lambda, as SciPy computes it."""
    eps = np.finfo(np.float64).eps
    positive = np.log1p(np.abs(x))  # (n, F): log1p(x) where x >= 0, log1p(-x) below
    up = np.where(np.abs(lambdas) < eps, positive, np.expm1(lambdas * positive) / lambdas)
    mirrored = 2 - lambdas
    down = np.where(np.abs(mirrored) < eps, -positive, -np.expm1(mirrored * positive) / mirrored)
    return np.where(x >= 0, up, down)


def _log_likelihood(x: np.ndarray, lambdas: np.ndarray, n: np.ndarray,
                    log_sum: np.ndarray) -> np.ndarray:
    """The Yeo-Johnson log-likelihood of every column at its lambda: (F,); an infinite one
    (a transform of no variance) counts as the worst, as SciPy rejects it."""
    variance = np.nanvar(_transform(x, lambdas), axis=0)
    log_variance = np.log(np.maximum(variance, np.finfo(np.float64).smallest_normal))
    log_variance[~(variance >= np.finfo(np.float64).smallest_normal)] = -np.inf
    likelihood = -n / 2 * log_variance + (lambdas - 1) * log_sum
    return np.where(np.isfinite(likelihood), likelihood, -np.inf)


def search_lambdas(x: np.ndarray, tolerance: float = TOLERANCE) -> np.ndarray:
    """Maximum-likelihood Yeo-Johnson lambdas of the columns of ``x`` (n, F), NaN ignored.

    One golden-section search for all columns at once, in SciPy's interval of each
    (:func:`scipy.stats.yeojohnson_normmax` searches it by Brent's method, one column and
    one log-likelihood call at a time) and to its tolerance, or to a few units in the
    last place where float64 cannot resolve it (tiny values: lambdas beyond 1e8). A
    column whose values leave no finite interval (near float64's limit, or all zero)
    gets 1, the identity.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> x = np.random.default_rng(0).lognormal(size=(500, 1))
    >>> bool(abs(search_lambdas(x)[0] - stats.yeojohnson(x[:, 0])[1]) < 1e-6)
    True
    """
    with np.errstate(all="ignore"):
        low, high = _bounds(x)
        valid = np.isfinite(low) & np.isfinite(high) & (low <= high)  # zeros: infinite
        low, high = np.where(valid, low, 0.0), np.where(valid, high, 2.0)
        present = ~np.isnan(x)
        n = present.sum(axis=0)
        log_sum = np.nansum(np.sign(x) * np.log1p(np.abs(x)), axis=0)
        inner = high - GOLDEN * (high - low)  # (F,) the two inner points
        outer = low + GOLDEN * (high - low)
        f_inner = _log_likelihood(x, inner, n, log_sum)
        f_outer = _log_likelihood(x, outer, n, log_sum)
        for _ in range(MAX_STEPS):
            # at |lambda| > 1e8 (columns of values below 1e-8) float64 cannot resolve
            # ``tolerance``: there the interval ends at a few of its units in the last place
            resolvable = np.maximum(tolerance, 4 * np.spacing(np.maximum(abs(low), abs(high))))
            if not np.any(high - low > resolvable):
                break
            left = f_inner >= f_outer  # the maximum lies left of ``outer``
            high, low = np.where(left, outer, high), np.where(left, low, inner)
            inner, outer = (np.where(left, high - GOLDEN * (high - low), outer),
                            np.where(left, inner, low + GOLDEN * (high - low)))
            probe = np.where(left, inner, outer)
            f_probe = _log_likelihood(x, probe, n, log_sum)
            f_inner, f_outer = np.where(left, f_probe, f_outer), np.where(left, f_inner, f_probe)
        return np.where(valid, (low + high) / 2, 1.0)


def yeo_johnson(x: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """``x`` (n, F) with column ``j`` Yeo-Johnson transformed by ``lambdas[j]`` (NaN kept)."""
    out = np.array(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        for j, lmbda in enumerate(lambdas):
            if lmbda != 1.0:  # 1: the identity
                out[:, j] = stats.yeojohnson(out[:, j], lmbda)
    return out
