"""The direct linear candidate of the combination (skfm.timeseries.forecasting.direct):
one ridge map from a window's last values, relative to its last one, to the horizon
(issue 51: on ETTh1/ETTh2 at a lookback of 512 it forecasts below DLinear's published
errors, where the recursive candidates fell behind at the long horizons)."""

import numpy as np
import pandas as pd

from skfm.timeseries.forecasting import direct
from skfm.timeseries.forecasting.combination import candidate_forecasts
from skfm.timeseries.forecasting.direct import direct_linear_forecast, fit_direct_linear


def _cycles(n: int = 1500, noise: float = 0.1, seed: int = 0) -> np.ndarray:
    """Two channels of a daily (24) and a weekly (168) cycle plus noise: (n, 2)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    base = np.sin(2 * np.pi * t / 24) + 0.5 * np.sin(2 * np.pi * t / 168)
    return np.stack([base, 2 * base + 5], axis=1) + noise * rng.normal(size=(n, 2))


def test_the_map_forecasts_both_cycles_from_one_lookback():
    """A lookback longer than the weekly cycle sees both: the map's error on the next
    day is near the noise's, far below the daily seasonal naive's."""
    values = _cycles()
    train, truth = values[:-24], values[-24:]
    params = fit_direct_linear(train, lookbacks=336, horizon=24)
    forecast = direct_linear_forecast(train[None], params)[0].T  # (H, C)
    seasonal_naive = train[-24:]
    error = np.mean((forecast - truth) ** 2)
    assert error < 0.25 * np.mean((seasonal_naive - truth) ** 2)
    assert params["alpha"] in direct.ALPHAS


def test_the_penalty_is_the_held_out_windows_choice():
    """Noise alone asks for the largest penalty; a clean cycle for a small one."""
    rng = np.random.default_rng(1)
    noise = fit_direct_linear(rng.normal(size=(1500, 1)), lookbacks=96, horizon=12)
    clean = fit_direct_linear(_cycles(noise=0.0)[:, :1], lookbacks=96, horizon=12)
    assert noise["alpha"] == direct.ALPHAS.max() > clean["alpha"]


def test_every_channel_is_scaled_and_shares_the_map():
    """A channel multiplied by 1000 is forecast multiplied by 1000 (each channel is scaled
    by its standard deviation), and the same map forecasts every channel."""
    values = _cycles()
    params = fit_direct_linear(values, lookbacks=168, horizon=12)
    scaled = values * np.array([1.0, 1000.0])
    params_scaled = fit_direct_linear(scaled, lookbacks=168, horizon=12)
    np.testing.assert_allclose(params_scaled["coef"], params["coef"], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(direct_linear_forecast(scaled[None], params_scaled)[0, 1],
                               1000 * direct_linear_forecast(values[None], params)[0, 1],
                               rtol=1e-8)
    assert params["coef"].shape == (168, 12)


def test_too_few_windows_leave_the_candidate_out():
    """Under MIN_ROWS_PER_LAG windows (times channels) per lag there is no map, and the
    combination leaves the candidate out; without a lookback it is never fitted; a window
    shorter than the lookback gets NaN."""
    values = _cycles(n=200)
    assert fit_direct_linear(values, lookbacks=96, horizon=12) is None
    assert "linear" not in candidate_forecasts(values, ["linear", "naive"], 24, 12,
                                                   lookbacks=96)
    assert "linear" not in candidate_forecasts(_cycles(), ["linear"], 24, 12)
    params = fit_direct_linear(_cycles(), lookbacks=96, horizon=12)
    assert np.isnan(direct_linear_forecast(np.ones((2, 50, 2)), params)).all()


def test_rows_fitted_are_bounded(monkeypatch):
    """A long series is fitted on at most MAX_ROWS windows times channels, evenly spread:
    the penalties on the training windows, then the chosen one on all."""
    rows = []
    ridge = direct._Ridge
    monkeypatch.setattr(direct, "_Ridge", lambda x, y: rows.append(len(x)) or ridge(x, y))
    monkeypatch.setattr(direct, "MAX_ROWS", 400)
    fit_direct_linear(_cycles(n=3000), lookbacks=48, horizon=6)
    assert max(rows) <= 400 and len(rows) == 2


def _weekdays(n: int = 3000, seed: int = 0) -> np.ndarray:
    """A daily cycle (24) whose amplitude drops on two days of every week (168): (n, 1)."""
    t = np.arange(n)
    weekend = (t // 24) % 7 >= 5
    daily = np.sin(2 * np.pi * t / 24) * np.where(weekend, 0.3, 1.0)
    return (daily + 0.05 * np.random.default_rng(seed).normal(size=n))[:, None]


def test_a_longer_lookback_is_chosen_where_it_sees_the_week():
    """Offered 2 and 4 days of lookback besides 1, the held-out windows choose 4 (the
    weekly cycle), and its forecast of the day after a weekend beats the 1-day map's."""
    values = _weekdays()
    chosen = fit_direct_linear(values, lookbacks=(24, 48, 96), horizon=24)
    assert chosen["coef"].shape == (96, 24)
    # the series ends on a Sunday: the next day is a weekday, unlike the last one
    end = len(values) - len(values) % 168
    short = fit_direct_linear(values[:end], lookbacks=24, horizon=24)
    longer = fit_direct_linear(values[:end], lookbacks=(24, 48, 96), horizon=24)
    truth = np.sin(2 * np.pi * np.arange(end, end + 24) / 24)
    errors = [np.mean((direct_linear_forecast(values[None, :end], p)[0, 0] - truth) ** 2)
              for p in (short, longer)]
    assert errors[1] < 0.5 * errors[0]


def test_the_forecaster_offers_longer_lookbacks_only_when_it_chose_its_own():
    from skfm import TimePEFTForecaster

    y = pd.DataFrame(_weekdays(1500))
    auto = TimePEFTForecaster(finetune=False).fit(y, fh=range(1, 25))
    assert auto._linear_lookbacks() == tuple(
        f * auto.context_length_ for f in direct.LONGER_LOOKBACKS)
    given = TimePEFTForecaster(context_length=96, finetune=False).fit(y, fh=range(1, 25))
    assert given._linear_lookbacks() == (96,)


def test_the_default_forecaster_weighs_the_map_on_a_long_series():
    """On a long series the rolling origins score the map; where it is combined,
    predict and forecast_windows of the same window agree."""
    from skfm import TimePEFTForecaster

    y = pd.DataFrame(_cycles(n=1200))
    forecaster = TimePEFTForecaster(context_length=168, finetune=False).fit(y, fh=range(1, 25))
    assert "linear" in forecaster.validation_scores_
    assert forecaster.combination_weights_.get("linear", 0) > 0
    assert "linear" in forecaster.combination_parameters_
    window = y.to_numpy()[None]
    np.testing.assert_allclose(forecaster.forecast_windows(window)[0],
                               forecaster.predict().to_numpy(), rtol=1e-6, atol=1e-8)
