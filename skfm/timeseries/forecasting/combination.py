"""The forecast combination of the Time-PEFT forecaster, and its rolling-origin evaluation.

The default base (``base="combination"``) is a weighted mean of classical
forecasters fitted by sktime (:data:`CANDIDATES`, see :func:`make_candidate`),
the classic winner of the forecasting competitions (M3, M4), with the fine-tuned
network as one more candidate (:mod:`.guard`). Their weights and the
prediction intervals come from one rolling-origin evaluation: at
:func:`rolling_origins` (one horizon apart, at the end of the series) every
candidate is refit on everything before the origin and forecasts the horizon
after it (expanding windows; every candidate on the same windows).

Shapes: ``O`` origins, ``C`` channels, ``H`` horizon.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from skfm.timeseries.forecasting.direct import direct_linear_forecast, fit_direct_linear

#: The forecasters combined (see :func:`make_candidate`).
CANDIDATES = ("autoets", "theta", "ridge", "seasonal_naive", "naive", "var", "linear")
#: The candidates with the lowest rolling-origin MSE that are averaged.
N_COMBINED = 2
#: A candidate is averaged with the best only where its rolling-origin MSE is below this
#: many times the best's (see :func:`combination_weights`).
POOL_RATIO = 3.0


def make_candidate(name: str, sp: int, positive: bool, n_jobs=None):
    """A candidate of the combination: an unfitted sktime forecaster with period ``sp``.

    * ``"autoets"``: sktime's ``AutoETS(auto=True)`` on the series
      deseasonalised by sktime's ``Deseasonalizer`` (multiplicative where
      ``positive``, else additive); a seasonal ``AutoETS`` costs 5 to 30 s a
      fit at periods 10 to 24 on two cores, too slow to refit at every origin;
    * ``"theta"``: ``ThetaForecaster(sp=sp)``, deseasonalising additively
      unless ``positive`` (its multiplicative default refuses values <= 0);
    * ``"ridge"``: ``make_reduction(Ridge(), window_length=ridge_lags(sp))``,
      a recursive ridge on the lags;
    * ``"seasonal_naive"``: ``NaiveForecaster(sp=sp)``;
    * ``"naive"``: ``NaiveForecaster()``, the last value;
    * ``"var"``: sktime's ``VAR(ic="aic")``, a vector autoregression (each
      channel from the lags of all) of the order AIC picks, on the series
      deseasonalised as for ``"autoets"``; multichannel series only.

    The direct linear map (``"linear"``, :mod:`.direct`) is fitted in closed form, not by
    sktime, and is not made here.

    Every one is set not to keep the data it is fitted on (sktime's ``remember_data``).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", FutureWarning)  # sktime's, at construction
    ...     candidate = make_candidate("theta", 12, positive=True)
    >>> type(candidate).__name__, candidate.get_config()["remember_data"]
    ('ThetaForecaster', False)
    """
    if name == "linear":
        raise ValueError("the direct linear map is fitted by fit_direct_linear, not by sktime")
    from sklearn.linear_model import Ridge
    from sktime.forecasting.compose import TransformedTargetForecaster, make_reduction
    from sktime.forecasting.ets import AutoETS
    from sktime.forecasting.naive import NaiveForecaster
    from sktime.forecasting.theta import ThetaForecaster
    from sktime.forecasting.var import VAR
    from sktime.transformations.series.detrend import Deseasonalizer

    model = "multiplicative" if positive else "additive"
    if name in ("autoets", "var"):
        forecaster = AutoETS(auto=True, n_jobs=n_jobs) if name == "autoets" else VAR(ic="aic")
        if sp > 1:
            forecaster = TransformedTargetForecaster(
                [("deseasonalize", Deseasonalizer(sp=sp, model=model)), ("forecast", forecaster)])
    elif name == "theta":
        forecaster = ThetaForecaster(sp=sp, deseasonalize_model=model)
    elif name == "ridge":
        forecaster = make_reduction(Ridge(), window_length=ridge_lags(sp))
    else:
        forecaster = NaiveForecaster(sp=sp if name == "seasonal_naive" else 1)
    # fitted once and dropped: no copy of the data (sktime's construction still warns of
    # this default's coming change; candidate_forecasts silences it)
    return forecaster.set_config(remember_data=False)


def ridge_lags(sp: int) -> int:
    """The lags of the ridge candidate: two seasons, at least 10.

    Examples
    --------
    >>> ridge_lags(1), ridge_lags(12)
    (10, 24)
    """
    return max(10, 2 * sp)


def _dropped(*args, **kwargs) -> None:
    """A ``warnings.showwarning`` that shows nothing."""


def candidate_forecasts(values: np.ndarray, names, sp: int, horizon: int,
                        n_jobs=None, fitted: dict | None = None,
                        lookbacks=None) -> dict[str, np.ndarray]:
    """Forecasts (C, H) of the candidates ``names`` fitted on ``values`` (T, C).

    ``fitted``: where given, each candidate that forecast is stored in it, fitted, by name
    (the direct linear map as its parameters). ``lookbacks``: the direct linear map's, an
    int or those it chooses from (:func:`~.direct.fit_direct_linear`); None leaves it out.

    A candidate that fails on this series (too short for its period, ...)
    is left out, and so are the seasonal naive where ``sp == 1`` (the naive),
    the vector autoregression of a single channel or of fewer than ``2 * (C + 1)``
    values (a first-order one's residual covariance would be singular: statsmodels'
    order selection then fails), and the ridge where it
    would have fewer training windows than lags (its recursive forecast then
    extrapolates wildly: 30 times the seasonal naive's MSE on 36 monthly
    values of USAccDeaths);
    the candidates' own warnings (statsmodels' notices of convergence) are
    silenced, since the guard measures them anyway. The direct linear map is left out
    where the series gives it too few windows (:func:`~.direct.fit_direct_linear`).
    """
    y = pd.DataFrame(values.astype(np.float64))
    fh = np.arange(1, horizon + 1)
    positive = bool((values > 0).all())
    forecasts = {}
    for name in names:
        if name == "linear":
            params = None if lookbacks is None else fit_direct_linear(values, lookbacks, horizon)
            if params is not None:
                forecasts[name] = direct_linear_forecast(values[None], params)[0]
                if fitted is not None:
                    fitted[name] = params
            continue
        if (name == "seasonal_naive" and sp == 1
                or name == "var" and (values.shape[1] == 1
                                      or len(values) < 2 * (values.shape[1] + 1))
                or name == "ridge" and len(values) < 2 * ridge_lags(sp)):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # sktime turns FutureWarnings back on inside fit (and warns of remember_data at
                # every per-channel clone's construction): drop whatever still reaches display
                warnings.showwarning = _dropped
                forecaster = make_candidate(name, sp, positive, n_jobs).fit(y, fh=fh)
                forecast = forecaster.predict().to_numpy(np.float64).T
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):
            continue
        if np.isfinite(forecast).all():
            forecasts[name] = forecast
            if fitted is not None:
                fitted[name] = forecaster
    return forecasts


def rolling_origins(n_timepoints: int, horizon: int, n_origins: int, min_train: int) -> np.ndarray:
    """Up to ``n_origins`` origins one horizon apart, the last one a horizon before the end.

    Each origin leaves at least ``min_train`` values before it (ascending order).

    Examples
    --------
    >>> rolling_origins(100, 10, 5, 50).tolist()
    [50, 60, 70, 80, 90]
    >>> rolling_origins(100, 10, 5, 75).tolist()
    [80, 90]
    """
    origins = n_timepoints - horizon * np.arange(1, n_origins + 1)
    return origins[origins >= min_train][::-1]


def combination_weights(errors: dict[str, np.ndarray]) -> dict[str, float]:
    """Equal weights on the :data:`N_COMBINED` candidates with the lowest mean error.

    ``errors``: each candidate's MSE per origin (O,). Averaging the few best
    rather than weighting by the errors of a few origins: weights estimated on
    few windows are noisy, and an equal mean of good forecasts is hard to beat.
    A candidate joins the best one only while its mean error is below
    :data:`POOL_RATIO` times the best's: the equal mean of two forecasts whose
    errors are uncorrelated, of MSEs ``a`` and ``b``, has MSE ``(a + b) / 4``,
    below ``a`` only where ``b < 3 a`` (correlated errors lower that bound),
    so a candidate three times worse than the best can only spoil the mean.

    Examples
    --------
    >>> import numpy as np
    >>> combination_weights({"a": np.array([0.5, 1.0]), "b": np.array([0.5, 0.5]),
    ...                      "c": np.array([3.0, 1.0])})
    {'a': 0.5, 'b': 0.5}
    >>> combination_weights({"a": np.array([0.1, 0.2]), "b": np.array([0.6, 0.8])})
    {'a': 1.0}
    """
    mean = {name: float(np.mean(error)) for name, error in errors.items()}
    best, *others = sorted(mean, key=mean.get)[:N_COMBINED]
    pooled = [best, *(name for name in others if mean[name] < POOL_RATIO * mean[best])]
    return {name: 1.0 / len(pooled) for name in sorted(pooled)}


def gaussian_quantiles(residuals: np.ndarray, alpha) -> np.ndarray:
    """Quantiles (len(alpha), C, H) of forecast errors from a few of them (O, C, H).

    Student's t with ``O`` degrees of freedom around 0, scaled by the root
    mean square error per step and channel, made non-decreasing over the steps
    (a later step is not forecast more surely than an earlier one): with a few
    origins, empirical quantiles would be the extreme errors seen.

    Examples
    --------
    >>> import numpy as np
    >>> q = gaussian_quantiles(np.array([[[1.0, 0.5]], [[-1.0, -0.5]]]), [0.5, 0.9])
    >>> q[0].tolist(), bool(q[1, 0, 1] == q[1, 0, 0] > 0)
    ([[0.0, 0.0]], True)
    """
    from scipy.stats import t

    rms = np.maximum.accumulate(np.sqrt(np.mean(residuals ** 2, axis=0)), axis=-1)
    factors = t.ppf(np.asarray(alpha, dtype=float), df=max(len(residuals), 1))
    return factors[:, None, None] * rms[None]
