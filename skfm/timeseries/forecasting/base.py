"""The linear base of the Time-PEFT forecaster, its seasonal period and lookback.

With ``base="seasonal_ridge"`` the forecaster predicts ``base + correction``: the
base is an affine map of the raw window, and the correction is what the adapted
backbone learns on top of it (see :class:`~.adapters.ForecastNet`). The base is a seasonal
autoregression: a ridge from the last lags of the standardised series to what
the seasonal naive forecast (repeat the last season) misses one step ahead,
run recursively over the horizon (:func:`unroll` writes that recursion as one
affine map). Its regularisation is the one that forecasts the held-out tail of
the windows best (:func:`choose_alpha`); strong regularisation gives the
seasonal naive back. With ``base="seasonal_ridge"`` the forecaster's guard
compares, on that tail, the seasonal naive, the base and (when fine-tuned)
the network, and keeps the best; the same tail calibrates the prediction
intervals (:func:`residual_quantiles`). With ``base="combination"`` no base is
fitted: the network forecasts alone, as one candidate of :mod:`.combination`.

Shapes: ``W`` windows, ``C`` channels, ``L`` context length, ``H`` horizon.
"""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pandas as pd
from pandas.tseries.frequencies import to_offset
from pandas.tseries.offsets import Tick
from sklearn.linear_model import Ridge, RidgeCV

from skfm.timeseries.forecasting.backbone import EPS

#: Regularisation strengths ``RidgeCV`` chooses from (inputs are standardised windows).
RIDGE_ALPHAS = tuple(np.logspace(-2, 5, 15))
#: The seasonal period is detected on at most this many of the last values.
DETECTION_LENGTH = 3000
#: Fewest lags of the base's one-step model.
MIN_LAGS = 10
#: The automatic lookback: this many seasons, at least ``MIN_CONTEXT`` values.
SEASONS_IN_CONTEXT, MIN_CONTEXT = 4, 96


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


def index_period(index: pd.Index) -> int:
    """The seasonal period the frequency of a time index implies; 1 where it gives none.

    statsmodels' ``freq_to_period`` (yearly 1, quarterly 4, monthly 12, weekly 52,
    daily 7, business-daily 5), divided by the frequency's multiple where that divides
    it (every two months: 6); below a day, the steps in one day (hourly 24, half-hourly
    48). A ``DatetimeIndex`` without a ``freq`` gets the one pandas infers; other indexes
    (integers) give 1.

    Examples
    --------
    >>> import pandas as pd
    >>> [index_period(pd.date_range("2000", periods=4, freq=f)) for f in ("MS", "D", "30min")]
    [12, 7, 48]
    >>> index_period(pd.period_range("2000Q1", periods=4, freq="Q")), index_period(pd.RangeIndex(9))
    (4, 1)
    """
    from statsmodels.tsa.tsatools import freq_to_period

    freq = getattr(index, "freq", None)
    if freq is None and isinstance(index, pd.DatetimeIndex) and len(index) >= 3:
        freq = pd.infer_freq(index)
    if freq is None:
        return 1
    offset = to_offset(freq)
    if isinstance(offset, Tick):  # below a day: the steps in one day
        per_day = pd.Timedelta(days=1) / pd.Timedelta(offset)
        return int(per_day) if per_day >= 1 and per_day == int(per_day) else 1
    try:
        period = freq_to_period(offset)
    except ValueError:  # a frequency it does not know
        return 1
    return period // offset.n if period % offset.n == 0 else 1


def auto_context_length(sp: int, n_timepoints: int, horizon: int, patch_len: int,
                        max_context: int) -> int:
    """The automatic lookback: :data:`SEASONS_IN_CONTEXT` seasons, at least :data:`MIN_CONTEXT`.

    Rounded up to a multiple of ``patch_len``, at most ``max_context`` and at
    most half of what the series leaves after one horizon (so that at least
    half of it starts training windows) unless one season needs more and the
    series holds it before a horizon (the seasonal naive needs the last season),
    never below ``patch_len``.

    Examples
    --------
    >>> auto_context_length(24, 10_000, 24, 8, 512), auto_context_length(12, 130, 12, 8, 512)
    (96, 56)
    >>> auto_context_length(12, 36, 12, 8, 512)  # half of 24 is 12 -> 8 values; a season: 16
    16
    """
    wanted = -(-max(MIN_CONTEXT, SEASONS_IN_CONTEXT * sp) // patch_len) * patch_len
    room = (n_timepoints - horizon) // 2 // patch_len * patch_len
    season = -(-sp // patch_len) * patch_len
    if season <= n_timepoints - horizon:  # one season, where the series holds one
        room = max(room, season)
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


def n_lags(sp: int, context_length: int) -> int:
    """Lags of the base's one-step model: two seasons, at least :data:`MIN_LAGS`, within the context."""
    return min(context_length, max(MIN_LAGS, 2 * sp))


def one_step_data(series: np.ndarray, lags: int, sp: int) -> tuple[np.ndarray, np.ndarray]:
    """Lags (n, lags) and the step after them minus the value ``sp`` before it, channels pooled."""
    rows = np.arange(lags, len(series))
    x = series[rows[:, None] - lags + np.arange(lags)].transpose(1, 0, 2)  # (C, n, lags)
    y = (series[rows] - series[rows - sp]).T  # (C, n)
    return x.reshape(-1, lags), y.reshape(-1)


def unroll(coef: np.ndarray, intercept: float, sp: int, context_length: int,
           horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """The one-step model ``s_t = s_{t-sp} + coef @ s_{t-lags..t-1} + intercept`` run
    ``horizon`` steps on its own forecasts, as an affine map: weights (L, H), intercept (H,).

    Examples
    --------
    >>> import numpy as np
    >>> weights, intercept = unroll(np.zeros(2), 0.0, sp=2, context_length=4, horizon=3)
    >>> weights.argmax(0).tolist(), intercept.tolist()  # the seasonal naive
    ([2, 3, 2], [0.0, 0.0, 0.0])
    """
    lags = len(coef)
    windows = np.vstack([np.eye(context_length), np.zeros(context_length)])  # basis, then 0
    for _ in range(horizon):
        step = windows[:, -sp] + windows[:, -lags:] @ coef + intercept
        windows = np.column_stack([windows, step])
    forecasts = windows[:, context_length:]
    return forecasts[:-1] - forecasts[-1], forecasts[-1]


def ar_base(series: np.ndarray, sp: int, context_length: int, horizon: int,
            alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The base as an affine map of a standardised window: weights (L, H), intercept (H,).

    A ridge (scikit-learn's ``Ridge``, shared by the channels) from the last
    lags to what the seasonal naive misses one step ahead, on the standardised
    ``series`` (T, C), run recursively over the horizon; strong
    regularisation gives the seasonal naive back.
    """
    x, y = one_step_data(series, n_lags(sp, context_length), sp)
    ridge = Ridge(alpha=alpha).fit(x, y)
    return unroll(ridge.coef_, float(ridge.intercept_), sp, context_length, horizon)


def choose_alpha(series: np.ndarray, sp: int, contexts: np.ndarray, targets: np.ndarray,
                 train_end: int) -> tuple[float, float | None]:
    """The base's regularisation and its MSE on held-out windows (W, C, L) -> (W, C, H).

    Each of :data:`RIDGE_ALPHAS` is fit on ``series[:train_end]`` and scored
    on the windows (all standardised); without windows, ``RidgeCV``'s
    leave-one-out choice on the one-step data (its MSE is then None).
    """
    context_length, horizon = contexts.shape[-1], targets.shape[-1]
    if not len(contexts):
        x, y = one_step_data(series[:train_end], n_lags(sp, context_length), sp)
        return float(RidgeCV(alphas=RIDGE_ALPHAS).fit(x, y).alpha_), None
    scores = {}
    for alpha in RIDGE_ALPHAS:
        weights, intercept = ar_base(series[:train_end], sp, context_length, horizon, alpha)
        scores[alpha] = float(np.mean((contexts @ weights + intercept - targets) ** 2))
    alpha = min(scores, key=scores.get)
    return float(alpha), scores[alpha]


def to_raw(weights: np.ndarray, intercept: np.ndarray, mean: np.ndarray,
           std: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A map of standardised windows as one of raw windows: weights (L, H), intercept (C, H)."""
    return weights, mean[:, None] * (1 - weights.sum(0)) + std[:, None] * intercept


def residual_quantiles(residuals: np.ndarray, alpha) -> np.ndarray:
    """Empirical quantiles (len(alpha), C, H) of normalised residuals (W, C, H), per step and channel."""
    return np.quantile(residuals, np.asarray(alpha, dtype=float), axis=0)
