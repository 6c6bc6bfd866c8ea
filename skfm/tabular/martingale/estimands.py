"""Estimands of TabMGPRegressor: ``theta`` minimised on a (completed) data set.

A built-in estimand (``"linear"``, ``"quantile"``, ``"mean"``) or a user's callable becomes a
function ``theta(rows, y)`` of observed-row indices and their targets, which is how predictive
resampling describes a completed data set (every imputed ``x`` is an observed row).
"""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pandas as pd
from sklearn.linear_model import QuantileRegressor

from skfm.tabular.encoding import TabularEncoder

ESTIMANDS = ("linear", "quantile", "mean")


def least_squares(Z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares coefficients of ``y`` on the design ``Z`` (intercept column included)."""
    return np.linalg.lstsq(Z, y, rcond=None)[0]


def quantile_regression(Z: np.ndarray, y: np.ndarray, q: float) -> np.ndarray:
    """Linear quantile-regression coefficients (exact pinball-loss minimiser, HiGHS)."""
    reg = QuantileRegressor(quantile=q, alpha=0.0, fit_intercept=False, solver="highs")
    return reg.fit(Z, y).coef_


def one_hot_design(X_enc: np.ndarray, encoder: TabularEncoder, names: list[str]):
    """Numeric columns as they are, categorical codes one-hot without their first category.

    Returns the design with a leading intercept column, shape (n, 1 + q), and its column names.
    """
    columns, out_names = [np.ones(len(X_enc))], ["intercept"]
    for j, name in enumerate(names):
        if j not in encoder.categories_:
            columns.append(X_enc[:, j])
            out_names.append(name)
            continue
        for code, category in enumerate(encoder.categories_[j][1:], start=1):
            columns.append((X_enc[:, j] == code).astype(float))
            out_names.append(f"{name}={category}")
    return np.column_stack(columns), out_names


def theta_function(estimand, quantile, X, X_enc: np.ndarray, encoder: TabularEncoder,
                   feature_names: list[str]):
    """``theta(rows, y)`` on observed-row indices, and the components' names.

    Parameters
    ----------
    estimand : {"linear", "quantile", "mean"} or callable
    quantile : float
        Level of the ``"quantile"`` estimand.
    X : array-like or DataFrame
        The observed rows, as given to ``fit`` (a callable gets them, as a DataFrame).
    X_enc : ndarray of shape (n, n_features)
        ``X`` encoded by ``encoder`` (the linear estimands' design).
    encoder : TabularEncoder
    feature_names : list of str

    Returns
    -------
    theta : callable
        ``theta(rows, y)``: the estimand on the rows ``rows`` (indices of observed rows) with
        targets ``y``.
    names : list of str or None
        Names of the components; None for a callable (known from its first value).
    """
    if callable(estimand):
        frame = X.reset_index(drop=True) if isinstance(X, pd.DataFrame) else None

        def theta(rows, y):
            data = frame.iloc[rows].reset_index(drop=True) if frame is not None else X_enc[rows]
            return estimand(data, y)

        return theta, None
    if estimand == "mean":
        return (lambda rows, y: np.array([y.mean()])), ["mean"]
    Z, names = one_hot_design(X_enc, encoder, feature_names)
    complete = ~np.isnan(Z).any(1)
    if not complete.all():
        warnings.warn(
            f"{(~complete).sum()} of {len(Z)} rows have missing features; estimand "
            f"{estimand!r} uses the complete rows only (the base model uses all rows)",
            UserWarning,
            stacklevel=4,
        )
        Z[~complete] = 0.0  # never used: those rows are left out below
    if complete.sum() < Z.shape[1]:
        raise ValueError(
            f"estimand {estimand!r} has {Z.shape[1]} coefficients (intercept included) "
            f"and needs at least as many complete rows, got n_samples={complete.sum()}"
        )
    rank = np.linalg.matrix_rank(Z[complete])
    if rank < Z.shape[1]:
        warnings.warn(
            f"the training rows identify only {rank} of the {Z.shape[1]} coefficients of "
            f"estimand {estimand!r} (constant or collinear columns): every draw is one "
            "minimiser among many, and the non-identified directions mean nothing",
            UserWarning,
            stacklevel=4,
        )
    solve = least_squares if estimand == "linear" else partial(quantile_regression, q=quantile)

    def theta(rows, y):
        keep = complete[rows]
        return solve(Z[rows[keep]], y[keep])

    return theta, names


def check_draw(value, size: int | None, estimand) -> np.ndarray:
    """An estimand's value checked: finite, 0-d or 1-d, ``size`` values when given."""
    theta = np.atleast_1d(np.asarray(value, dtype=float))
    if theta.ndim != 1 or theta.size == 0 or (size is not None and theta.size != size):
        expected = "a scalar or non-empty 1-d array" if size is None else f"{size} values"
        raise ValueError(
            f"estimand callable must return {expected} every time, "
            f"got an array of shape {theta.shape}"
        )
    if not np.isfinite(theta).all():
        if callable(estimand):
            raise ValueError("estimand callable returned non-finite values")
        raise ValueError(
            f"estimand {estimand!r} is not finite on these data: X or y hold values too "
            "large for float64 least squares; rescale them (e.g. divide by a constant)"
        )
    return theta


def component_names(names: list[str] | None, first, size: int) -> np.ndarray:
    """The components' names: ``names``, else a callable's pandas index, else theta0...."""
    if names is None:
        index = getattr(first, "index", None)
        names = [f"theta{j}" for j in range(size)] if index is None else [str(i) for i in index]
    return np.asarray(names, dtype=str)
