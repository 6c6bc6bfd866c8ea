"""Predictive resampling: complete copies of the data, a block of imputed rows at a time.

:func:`predictive_resampling` runs the rollouts; it draws the imputed ``y`` through a
predictive sampler ``draw_y(rows, y, new, rng)``: :class:`ContextsPredictive` for a base
regressor with a batched ``sample_y_in_contexts`` (:class:`~skfm.TabSwiftRegressor`: all
rollouts share each model call), :class:`RefitPredictive` for any other regressor with
``sample_y`` (refitted per rollout and block). :func:`predictive_for` picks one.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
from sklearn.base import clone

from skfm._progress import progress_bar


class ContextsPredictive:
    """Predictive draws of a regressor with ``sample_y_in_contexts`` (a fitted
    :class:`~skfm.TabSwiftRegressor`): every rollout's context in the same batched calls."""

    def __init__(self, base):
        self.base = base

    def __call__(self, rows, y, new, rng: np.random.Generator) -> np.ndarray:
        """One draw of ``y`` for every row in ``new``, shape (B, k)."""
        return self.base.sample_y_in_contexts(rows, y, new, random_state=rng)


class RefitPredictive:
    """Predictive draws of any regressor with ``sample_y``: one refit per rollout and block."""

    def __init__(self, base, X):
        self.base = base
        self.X = X.reset_index(drop=True) if isinstance(X, pd.DataFrame) else np.asarray(X)

    def _rows(self, idx: np.ndarray):
        return self.X.iloc[idx] if isinstance(self.X, pd.DataFrame) else self.X[idx]

    def __call__(self, rows, y, new, rng: np.random.Generator) -> np.ndarray:
        seeds = rng.integers(2**31 - 1, size=len(rows))
        out = np.empty(new.shape)
        for b in range(len(rows)):
            model = clone(self.base).fit(self._rows(rows[b]), y[b])
            draw = model.sample_y(self._rows(new[b]), n_samples=1, random_state=int(seeds[b]))
            out[b] = np.asarray(draw).reshape(new.shape[1])
        return out


def predictive_for(estimator, X):
    """The predictive sampler of a fitted base regressor (fitted on ``X``)."""
    if hasattr(estimator, "sample_y_in_contexts"):
        return ContextsPredictive(estimator)
    return RefitPredictive(estimator, X)


def predictive_resampling(
    draw_y, y, n_rollouts: int, horizon: int, block_size, rng, verbose: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Complete ``n_rollouts`` copies of the data with ``horizon`` imputed rows each.

    Parameters
    ----------
    draw_y : callable
        ``draw_y(rows, y, new, rng) -> (B, k)`` draws targets for the observed-row indices
        ``new`` (B, k) given each rollout's context ``rows`` (B, m) and targets ``y`` (B, m).
    y : ndarray of shape (n,)
        Observed targets; row ``i`` of the observed data has index ``i``.
    n_rollouts, horizon : int
        ``B`` and ``N``.
    block_size : int or float
        Rows imputed per call of ``draw_y``: an int ``k``, or a fraction ``r`` in (0, 1) for
        ``max(1, floor(r * m))`` rows when the context has ``m`` rows. The last block may be
        shorter.
    rng : numpy.random.Generator
    verbose : bool, default=False
        Show a progress bar over the imputed rows.

    Returns
    -------
    rows : ndarray of shape (n_rollouts, n + horizon)
        Observed-row index of every row of every completed data set (the first ``n`` are
        ``0..n-1``).
    targets : ndarray of shape (n_rollouts, n + horizon)
        Their targets (observed, then imputed).
    """
    n = len(y)
    rows = np.empty((n_rollouts, n + horizon), dtype=np.int64)
    rows[:, :n] = np.arange(n)
    targets = np.empty((n_rollouts, n + horizon))
    targets[:, :n] = y
    relative = not isinstance(block_size, numbers.Integral)
    m = n
    with progress_bar(total=horizon, verbose=verbose, desc="TabMGP rollouts", unit="row") as bar:
        while m < n + horizon:
            k = max(1, int(block_size * m)) if relative else block_size
            k = min(k, n + horizon - m)
            urn = rng.integers(0, m, size=(n_rollouts, k))  # Polya urn over all rows so far
            new = np.take_along_axis(rows[:, :m], urn, 1)
            targets[:, m : m + k] = draw_y(rows[:, :m], targets[:, :m], new, rng)
            rows[:, m : m + k] = new
            m += k
            bar.update(k)
    return rows, targets

