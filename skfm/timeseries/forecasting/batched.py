"""The combination's candidates forecast many windows at once, from parameters fitted once.

What ``forecast_windows`` runs with ``base="combination"``: the candidates of
:mod:`.combination` are fitted once, on the series given to ``fit``, and
:func:`window_parameters` keeps their fitted parameters as plain arrays. Each window then
only conditions on its own values, as sktime's ``update_predict`` with
``update_params=False`` conditions on new values (the parameters stay, the states follow
the data):

* the naive and the seasonal naive repeat the window's last value, its last season;
* the ridge runs its fitted coefficients recursively from the window's last lags, the
  level it reverts to moved by the window's mean minus the fitted series' (the level is
  a state of the window; a drift stays as fitted);
* the direct linear map (:mod:`.direct`) maps the window's last values, relative to its
  last one, to the horizon;
* Theta filters the window by simple exponential smoothing with its fitted smoothing
  level (from the window's first value) and adds its fitted drift;
* AutoETS filters the window with its fitted model, smoothing parameters and initial
  trend, from the window's first value (statsmodels' ``ETSModel.smooth``): nothing is
  estimated again;
* the vector autoregression runs its fitted coefficients from the window's last lags,
  its level moved with the window's mean as the ridge's.

A window carries no calendar, so the seasonal profile that AutoETS, Theta and the vector
autoregression forecast around is the window's own (statsmodels' ``seasonal_decompose``,
as sktime's ``Deseasonalizer`` computes it): a statistic of the window, like the seasonal
naive's last season, not an estimated parameter.

Shapes: ``n`` windows, ``T`` time points, ``C`` channels, ``H`` horizon.
"""

from __future__ import annotations

import warnings

import numpy as np

from skfm.timeseries.forecasting.direct import direct_linear_forecast

#: Fitted-parameter names of statsmodels' ETS that its smoothing (``ETSModel.smooth``) takes.
ETS_SMOOTHING = ("smoothing_level", "smoothing_trend", "damping_trend")


def _per_channel(forecaster, n_channels: int) -> list:
    """The fitted univariate forecaster of each channel (sktime vectorises over columns)."""
    if hasattr(forecaster, "forecasters_"):
        return [forecaster.forecasters_.iloc[0, c] for c in range(n_channels)]
    return [forecaster]


def _split(forecaster):
    """``(inner forecaster, deseasonalising model or None)`` of a candidate."""
    if not hasattr(forecaster, "steps_"):
        return forecaster, None
    deseasonalizer = forecaster.steps_[0][1]
    model = getattr(deseasonalizer, "model", None) or deseasonalizer.get_params()["model"]
    return forecaster.steps_[-1][1], model


def window_parameters(name: str, forecaster, values: np.ndarray, sp: int) -> dict:
    """The parameters of candidate ``name``, a sktime forecaster fitted on ``values`` (T, C).

    Plain values: the ridge's and the vector autoregression's coefficients, intercepts
    and the mean of the series they were fitted on; Theta's smoothing level and drift;
    AutoETS's model, smoothing parameters and initial trend; the deseasonalising model.

    Examples
    --------
    >>> import numpy as np, pandas as pd, warnings
    >>> from skfm.timeseries.forecasting.combination import make_candidate
    >>> y = pd.DataFrame(np.arange(40.0))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", FutureWarning)
    ...     ridge = make_candidate("ridge", 1, positive=False).fit(y, fh=[1])
    >>> params = window_parameters("ridge", ridge, y.to_numpy(), 1)
    >>> sorted(params), params["mean"].tolist(), window_parameters("naive", None, None, 1)
    (['coef', 'intercept', 'mean'], [19.5], {})
    """
    n_channels = 0 if values is None else values.shape[1]
    if name in ("naive", "seasonal_naive"):
        return {}
    if name == "linear":  # fitted as its parameters (:mod:`.direct`)
        return forecaster
    if name == "ridge":
        estimators = [f.estimator_ for f in _per_channel(forecaster, n_channels)]
        return {"coef": np.stack([e.coef_ for e in estimators]),
                "intercept": np.array([e.intercept_ for e in estimators]),
                "mean": values.mean(0).astype(np.float64)}
    if name == "theta":
        channels = _per_channel(forecaster, n_channels)
        return {"alpha": np.array([f.initial_level_ for f in channels], dtype=float),
                "drift": np.array([f.trend_ for f in channels], dtype=float),
                "model": channels[0].deseasonalize_model}
    inner, model = _split(forecaster)
    if name == "var":
        result = inner._fitted_forecaster
        adjusted = _deseasonalise(values.T.astype(np.float64), sp, model, 1)[0]
        return {"coefs": np.asarray(result.coefs, dtype=float),
                "intercept": np.asarray(result.intercept, dtype=float), "model": model,
                "mean": adjusted.mean(1)}
    specs = []
    for channel in _per_channel(inner, n_channels):  # autoets
        result = channel._fitted_forecaster
        params = dict(zip(result.model.param_names, np.asarray(result.params, dtype=float),
                          strict=True))
        specs.append({"error": result.model.error, "trend": result.model.trend,
                      "damped_trend": bool(result.model.damped_trend),
                      "smoothing": np.array([params[k] for k in ETS_SMOOTHING if k in params]),
                      "initial_trend": params.get("initial_trend")})
    return {"channels": specs, "model": model}


def _deseasonalise(series: np.ndarray, sp: int, model, horizon: int):
    """Each row of ``series`` (m, T) without its own seasonal profile, and the profile over
    the ``horizon`` after it (m, H); rows it cannot decompose are NaN (statsmodels'
    ``seasonal_decompose``: two full seasons, positive values for a multiplicative one)."""
    from statsmodels.tsa.seasonal import seasonal_decompose

    m, length = series.shape
    neutral = 0.0 if model in (None, "additive") else 1.0
    future = np.full((m, horizon), neutral)
    if model is None or sp == 1:
        return series, future
    adjusted = np.full_like(series, np.nan)
    rows = np.ones(m, bool) if model == "additive" else (series > 0).all(1)
    if length < 2 * sp or not rows.any():
        return adjusted, future
    seasonal = np.asarray(seasonal_decompose(series[rows].T, model=model, period=sp).seasonal
                          ).reshape(length, -1).T  # (rows, T)
    profile = seasonal[:, (length - 1 + np.arange(1, horizon + 1)) % sp]
    adjusted[rows] = series[rows] - seasonal if model == "additive" else series[rows] / seasonal
    future[rows] = profile
    return adjusted, future


def _reseasonalise(forecast: np.ndarray, future: np.ndarray, model) -> np.ndarray:
    return forecast * future if model == "multiplicative" else forecast + future


def _ridge(windows: np.ndarray, params: dict, horizon: int) -> np.ndarray:
    coef = params["coef"]  # (C, lags); the level it reverts to moves with the window's mean
    if windows.shape[1] < coef.shape[1]:  # fewer values than lags: no forecast
        return np.full((len(windows), windows.shape[2], horizon), np.nan)
    intercept = params["intercept"] + (windows.mean(1) - params["mean"]) * (1 - coef.sum(1))
    history = list(windows.transpose(0, 2, 1)[..., -coef.shape[1]:].transpose(2, 0, 1))
    for _ in range(horizon):  # history: lags of (n, C), oldest first
        lags = np.stack(history[-coef.shape[1]:], axis=-1)  # (n, C, lags)
        history.append(np.einsum("ncl,cl->nc", lags, coef) + intercept)
    return np.stack(history[-horizon:], axis=-1)  # (n, C, H)


def _theta(windows: np.ndarray, params: dict, sp: int, horizon: int) -> np.ndarray:
    n, length, n_channels = windows.shape
    series = windows.transpose(0, 2, 1).reshape(n * n_channels, length)
    adjusted, future = _deseasonalise(series, sp, params["model"], horizon)
    alpha = np.tile(params["alpha"], n)[:, None]  # (n C, 1)
    level = adjusted[:, 0]
    for t in range(1, length):  # simple exponential smoothing from the first value
        level = alpha[:, 0] * adjusted[:, t] + (1 - alpha[:, 0]) * level
    steps = np.arange(1, horizon + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ramp = np.where(np.isclose(alpha, 0.0), steps,
                        steps + (1 - (1 - alpha) ** length) / alpha)
    forecast = level[:, None] + np.tile(params["drift"], n)[:, None] * ramp
    return _reseasonalise(forecast, future, params["model"]).reshape(n, n_channels, horizon)


def _autoets(windows: np.ndarray, params: dict, sp: int, horizon: int) -> np.ndarray:
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    n, length, n_channels = windows.shape
    series = windows.transpose(0, 2, 1).reshape(n * n_channels, length)
    adjusted, future = _deseasonalise(series, sp, params["model"], horizon)
    forecast = np.full((n * n_channels, horizon), np.nan)
    for row, values in enumerate(adjusted):
        spec = params["channels"][row % n_channels]
        if not np.isfinite(values).all():
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = ETSModel(values, error=spec["error"], trend=spec["trend"],
                                 damped_trend=spec["damped_trend"],
                                 initialization_method="known", initial_level=values[0],
                                 initial_trend=spec["initial_trend"])
                forecast[row] = model.smooth(spec["smoothing"]).forecast(horizon)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):
            continue
    return _reseasonalise(forecast, future, params["model"]).reshape(n, n_channels, horizon)


def _var(windows: np.ndarray, params: dict, sp: int, horizon: int) -> np.ndarray:
    n, length, n_channels = windows.shape
    coefs = params["coefs"]  # (p, C, C); the level it reverts to moves with the window's mean
    if length < len(coefs):  # fewer values than lags: no forecast
        return np.full((n, n_channels, horizon), np.nan)
    series = windows.transpose(0, 2, 1).reshape(n * n_channels, length)
    adjusted, future = _deseasonalise(series, sp, params["model"], horizon)
    adjusted = adjusted.reshape(n, n_channels, length)
    intercept = params["intercept"] + (adjusted.mean(-1) - params["mean"]) @ (
        np.eye(n_channels) - coefs.sum(0)).T  # (n, C)
    history = list(adjusted.transpose(2, 0, 1)[length - len(coefs):])  # (n, C) each
    for _ in range(horizon):
        step = intercept + sum(history[-1 - i] @ coefs[i].T for i in range(len(coefs)))
        history.append(step)
    forecast = np.stack(history[-horizon:], axis=-1).reshape(n * n_channels, horizon)
    return _reseasonalise(forecast, future, params["model"]).reshape(n, n_channels, horizon)


def batched_forecasts(windows: np.ndarray, parameters: dict[str, dict], sp: int,
                      horizon: int) -> dict[str, np.ndarray]:
    """Each candidate's forecasts (n, C, H) after windows (n, T, C), from its fitted ``parameters``.

    A window a candidate cannot forecast (fewer values than the ridge's or the vector
    autoregression's lags, too short to deseasonalise, not positive for a multiplicative
    profile, a failed filter) gets NaN there.

    Examples
    --------
    >>> import numpy as np
    >>> windows = np.arange(12.0).reshape(1, 12, 1)
    >>> out = batched_forecasts(windows, {"naive": {}, "seasonal_naive": {}}, sp=4, horizon=2)
    >>> out["naive"].ravel().tolist(), out["seasonal_naive"].ravel().tolist()
    ([11.0, 11.0], [8.0, 9.0])
    """
    windows = windows.astype(np.float64)
    n, length, n_channels = windows.shape
    steps = np.arange(horizon)
    out = {}
    for name, params in parameters.items():
        if name == "naive":
            out[name] = np.repeat(windows[:, -1, :, None], horizon, axis=-1)
        elif name == "seasonal_naive":
            out[name] = windows[:, length - sp + steps % sp].transpose(0, 2, 1)
        elif name == "ridge":
            out[name] = _ridge(windows, params, horizon)
        elif name == "linear":
            out[name] = direct_linear_forecast(windows, params)
        else:
            forecast = {"theta": _theta, "autoets": _autoets, "var": _var}[name]
            out[name] = forecast(windows, params, sp, horizon)
    return out
