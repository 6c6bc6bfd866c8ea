"""The linear base of the Time-PEFT forecaster, its seasonal period and lookback, and the guard.

The forecaster predicts ``base + correction``: the base is linear in the
normalised window (each window standardised by its own mean and standard
deviation, RevIN, or by the series' statistics), and the correction is what
the adapted backbone learns on top of it (see
:class:`~.adapters.ForecastNet`). The base is the seasonal naive forecast
(repeat the last season) plus a ridge from the window to what the seasonal
naive misses, fit in closed form (scikit-learn's ``Ridge``) with the
regularisation that forecasts the held-out tail of the windows best
(:func:`choose_alpha`); strong shrinkage gives the seasonal naive back.

The forecaster's guard compares, on that held-out tail, the seasonal naive,
the base and (when fine-tuned) the network, and keeps the best. The same
tail calibrates the prediction intervals (:func:`residual_quantiles`).

Shapes: ``W`` windows, ``C`` channels, ``L`` context length, ``H`` horizon.
"""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pandas as pd
from sklearn.linear_model import Ridge, RidgeCV

from skfm.timeseries.forecasting.backbone import EPS

#: Regularisation strengths ``RidgeCV`` chooses from (inputs are standardised windows).
RIDGE_ALPHAS = tuple(np.logspace(-1, 6, 15))
#: The seasonal period is detected on at most this many of the last values.
DETECTION_LENGTH = 3000
#: The automatic lookback: this many seasons, at least ``MIN_CONTEXT`` values.
SEASONS_IN_CONTEXT, MIN_CONTEXT = 4, 96
#: Candidates of the guard, simplest first (ties keep the simpler one).
CANDIDATES = ("seasonal_naive", "base", "network")


def detect_period(values: np.ndarray, max_period: int) -> int:
    """The seasonal period of a series (T, C): sktime's ``SeasonalityACF`` on each channel.

    Each channel's first differences (a trend would otherwise dominate the
    autocorrelation) over the last :data:`DETECTION_LENGTH` values get the
    period with the most significant autocorrelation among the lags
    ``2..max_period`` (at most a third of the length) where the
    autocorrelation peaks (on a smooth series the short lags would win
    otherwise); the most common period over the channels wins (ties: the
    shortest). 1 when none is significant.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(600)
    >>> rng = np.random.default_rng(0)
    >>> detect_period(np.sin(2 * np.pi * t / 12)[:, None] + 0.1 * rng.normal(size=(600, 1)), 48)
    12
    """
    from sktime.param_est.seasonality import SeasonalityACF

    diffs = np.diff(values[-DETECTION_LENGTH:], axis=0)
    n_lags = min(int(max_period), len(diffs) // 3)
    if n_lags < 2:
        return 1
    periods = []
    with warnings.catch_warnings():  # statsmodels' notice of a future return type
        warnings.simplefilter("ignore", FutureWarning)
        for column in diffs.T:
            if column.std() == 0:
                continue
            acf = SeasonalityACF(nlags=n_lags).fit(pd.Series(column)).acf_
            peaks = [k for k in range(2, n_lags) if acf[k - 1] < acf[k] >= acf[k + 1]]
            if peaks:
                periods.append(int(SeasonalityACF(candidate_sp=peaks, nlags=n_lags)
                                   .fit(pd.Series(column)).sp_))
    if not periods:
        return 1
    counts = Counter(periods)
    return min(counts, key=lambda p: (-counts[p], p))


def auto_context_length(sp: int, n_timepoints: int, horizon: int, patch_len: int,
                        max_context: int) -> int:
    """The automatic lookback: :data:`SEASONS_IN_CONTEXT` seasons, at least :data:`MIN_CONTEXT`.

    Rounded up to a multiple of ``patch_len``, at most ``max_context`` and at
    most half of what the series leaves after one horizon (so that at least
    half of it starts training windows), never below ``patch_len``.

    Examples
    --------
    >>> auto_context_length(24, 10_000, 24, 8, 512), auto_context_length(12, 130, 12, 8, 512)
    (96, 56)
    """
    wanted = -(-max(MIN_CONTEXT, SEASONS_IN_CONTEXT * sp) // patch_len) * patch_len
    room = (n_timepoints - horizon) // 2 // patch_len * patch_len
    return max(patch_len, min(wanted, max_context, room))


def normalise(contexts: np.ndarray, loc=None, scale=None):
    """``(z, loc, scale)`` of windows (W, C, L): RevIN's statistics, or the given ones (C,).

    The same units as :meth:`~.adapters.ForecastNet.normalise`.
    """
    if loc is None:
        loc = contexts.mean(-1, keepdims=True)
        scale = np.sqrt(contexts.var(-1, keepdims=True) + EPS)
    else:
        loc, scale = np.reshape(loc, (-1, 1)), np.reshape(scale, (-1, 1))
    return (contexts - loc) / scale, loc, scale


def seasonal_naive_weights(context_length: int, horizon: int, sp: int) -> np.ndarray:
    """The (L, H) matrix that repeats the last ``sp`` values of a window over the horizon.

    Examples
    --------
    >>> seasonal_naive_weights(4, 3, 2).argmax(0).tolist()  # steps 1, 2, 3 repeat values 2, 3, 2
    [2, 3, 2]
    """
    weights = np.zeros((context_length, horizon))
    steps = np.arange(horizon)
    weights[context_length - sp + steps % sp, steps] = 1.0
    return weights


def seasonal_period(z: np.ndarray, target: np.ndarray, sp: int, horizon: int) -> int:
    """``sp`` or 1, whichever seasonal naive forecast errs less on normalised windows (W, C, L)."""
    candidates = sorted({1, sp})
    errors = [np.mean((z @ seasonal_naive_weights(z.shape[-1], horizon, p) - target) ** 2)
              for p in candidates]
    return candidates[int(np.argmin(errors))]


def ridge_base(z: np.ndarray, target: np.ndarray, naive: np.ndarray,
               alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The base's weights (L, H) and intercept (H,): the seasonal naive plus a ridge correction.

    ``z`` (W, C, L) are normalised windows and ``target`` (W, C, H) what follows
    them in the same units; the ridge, shared by the channels, maps ``z`` to the
    error of the seasonal naive ``naive`` (L, H).
    """
    x = z.reshape(-1, z.shape[-1])
    residual = target.reshape(-1, target.shape[-1]) - x @ naive
    ridge = Ridge(alpha=alpha).fit(x, residual)
    return naive + ridge.coef_.T, np.asarray(ridge.intercept_, dtype=float).reshape(-1)


def mean_squared_error(z: np.ndarray, target: np.ndarray, weights: np.ndarray,
                       intercept=0.0) -> float:
    """MSE of the linear forecast ``z @ weights + intercept`` of normalised windows."""
    return float(np.mean((z @ weights + intercept - target) ** 2))


def choose_alpha(z: np.ndarray, target: np.ndarray, naive: np.ndarray, train: np.ndarray,
                 held_out: np.ndarray) -> tuple[float, float | None]:
    """The ridge's regularisation and its held-out MSE: fit on ``train``, scored on ``held_out``.

    Among :data:`RIDGE_ALPHAS`; without held-out windows, by ``RidgeCV``'s
    leave-one-out error on the training windows (its MSE is then None). Windows
    overlap, so the leave-one-out error favours too little regularisation: the
    temporal hold-out is the one that counts.
    """
    if not len(held_out):
        x = z[train].reshape(-1, z.shape[-1])
        residual = target[train].reshape(-1, target.shape[-1]) - x @ naive
        return float(RidgeCV(alphas=RIDGE_ALPHAS).fit(x, residual).alpha_), None
    scores = {alpha: mean_squared_error(z[held_out], target[held_out],
                                        *ridge_base(z[train], target[train], naive, alpha))
              for alpha in RIDGE_ALPHAS}
    alpha = min(scores, key=scores.get)
    return float(alpha), scores[alpha]


def residual_quantiles(residuals: np.ndarray, alpha) -> np.ndarray:
    """Empirical quantiles (len(alpha), C, H) of normalised residuals (W, C, H), per step and channel."""
    return np.quantile(residuals, np.asarray(alpha, dtype=float), axis=0)
