"""Yeo-Johnson power transforms of an ensemble's columns, each column's lambda fitted once.

The members of a TabSwift ensemble that normalise by a power transform (see
:mod:`skfm.tabular.ensemble`) read the same context rows, and a column's
maximum-likelihood lambda depends only on its values on those rows. Fitted
per member by :class:`~sklearn.preprocessing.PowerTransformer`, the same
lambdas were found four times over: on a table of 500 rows and 20 columns
the Brent searches took 0.71 s of a 0.80 s fit of the network alone. Here
each lambda is found once per set of rows (:class:`LambdaCache`), by the same
:func:`scipy.stats.yeojohnson` call, and applied by it as
``PowerTransformer(standardize=False)`` applies it, so the transformed
values are the same bits.

A constant column keeps lambda 1, the identity, as scikit-learn leaves it (by
its test, under which a column whose variance overflows is constant too), and
so does a column of values near float64's limit that the search cannot bound.
(Two-valued columns are searched too: a z-scored binary column reads the same
under any increasing map, but a query row can hold a third value.)
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
from scipy import stats


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
        columns.
        """
        out = np.empty(x.shape[1])
        for j, key in enumerate(keys):
            if key not in self._fitted:
                self._fitted[key] = self._fit(x[:, j])
            out[j] = self._fitted[key]
        return out

    def _fit(self, column: np.ndarray) -> float:
        missing = np.isnan(column)
        if not missing.any() and _is_constant(column):
            return 1.0
        self.n_fitted += 1
        with np.errstate(all="ignore"):
            try:
                return float(stats.yeojohnson(column[~missing], lmbda=None)[1])
            except ValueError:  # values near float64's limit leave the search no bounds:
                return 1.0  # the identity, as scikit-learn keeps a column whose variance overflows


def _is_constant(column: np.ndarray) -> bool:
    """Constant up to rounding, by scikit-learn's test: its variance within the error bound
    of computing it (``var <= n eps var + (n mean eps)^2``; an overflowing variance too)."""
    with np.errstate(over="ignore"):
        n, mean, var = len(column), np.mean(column), np.var(column)
        eps = np.finfo(np.float64).eps
        return bool(var <= n * eps * var + (n * mean * eps) ** 2)


def yeo_johnson(x: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """``x`` (n, F) with column ``j`` Yeo-Johnson transformed by ``lambdas[j]`` (NaN kept)."""
    out = np.array(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        for j, lmbda in enumerate(lambdas):
            if lmbda != 1.0:  # 1: the identity
                out[:, j] = stats.yeojohnson(out[:, j], lmbda)
    return out
