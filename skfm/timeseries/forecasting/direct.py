"""The direct linear candidate of the combination: one ridge map from a window to the horizon.

After Zeng et al. (2023, "Are Transformers Effective for Time Series Forecasting?"), whose
NLinear forecasts the whole horizon at once by a linear map of the lookback taken relative
to its last value. Here the map is shared by the channels (each channel a series of its
own, as the network treats them), every channel scaled by its standard deviation, and
fitted by ridge in closed form on the sliding windows of the series: the regularisation is
the one of :data:`ALPHAS` that forecasts the last :data:`HELD_OUT` of the windows best
(their targets after the others'), then the map is refit on every window.

A long series makes this candidate strong: on ETTh1 and ETTh2 at a lookback of 512 it
forecasts below the published errors of DLinear and MOMENT-LP
(``docs/benchmarks/timepeft_ltsf.md``). A short one gives it too few windows for its
lags, so it only runs from :data:`MIN_ROWS_PER_LAG` windows (times channels) per lag.

Shapes: ``T`` time points, ``C`` channels, ``L`` lookback, ``H`` horizon, ``n`` windows.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

#: Ridge penalties per window (the penalty is ``alpha`` times the rows fitted), on
#: windows scaled by each channel's standard deviation.
ALPHAS = np.logspace(-4, 0, 5)
#: Share of the windows, the last ones, on which the penalty is chosen.
HELD_OUT = 0.1
#: Windows times channels per lag needed to fit the map at all.
MIN_ROWS_PER_LAG = 4
#: At most this many windows times channels are fitted, evenly spread over the series
#: (consecutive windows overlap in all but one value).
MAX_ROWS = 20_000


def _relative_windows(scaled: np.ndarray, lookback: int, horizon: int,
                      starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (rows, L) and targets (rows, H) of the windows at ``starts``, every channel,
    minus each window's last input value."""
    span = sliding_window_view(scaled, lookback + horizon, axis=0)[starts]  # (n, C, L + H)
    span = span.reshape(-1, lookback + horizon)
    span = span - span[:, lookback - 1:lookback]
    return span[:, :lookback], span[:, lookback:]


def _solve(inputs: np.ndarray, targets: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Ridge ``(coef (L, H), intercept (H,))`` with the penalty ``alpha`` per row."""
    x_mean, y_mean = inputs.mean(0), targets.mean(0)
    x, y = inputs - x_mean, targets - y_mean
    gram = x.T @ x + alpha * len(x) * np.eye(x.shape[1])
    coef = np.linalg.solve(gram, x.T @ y)
    return coef, y_mean - x_mean @ coef


def fit_direct_linear(values: np.ndarray, lookback: int, horizon: int) -> dict | None:
    """The direct linear map fitted on ``values`` (T, C), or None where the series is too short.

    Parameters
    ----------
    values : ndarray of shape (T, C)
    lookback, horizon : int

    Returns
    -------
    dict or None
        ``coef`` (L, H), ``intercept`` (H,), ``scale`` (C,) and the chosen ``alpha``.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(600.0)
    >>> values = np.stack([np.sin(t / 4), np.cos(t / 6)], axis=1)
    >>> params = fit_direct_linear(values, lookback=48, horizon=6)
    >>> params["coef"].shape, params["intercept"].shape
    ((48, 6), (6,))
    >>> forecast = direct_linear_forecast(values[None, :-6], params)[0]  # (C, H)
    >>> bool(np.abs(forecast - values[-6:].T).max() < 0.05)
    True
    >>> fit_direct_linear(values[:100], lookback=48, horizon=6) is None
    True
    """
    values = np.asarray(values, dtype=np.float64)
    n_windows = len(values) - lookback - horizon + 1
    n_channels = values.shape[1]
    if n_windows * n_channels < MIN_ROWS_PER_LAG * lookback:
        return None
    scale = values.std(0)
    scale = np.where(scale > 0, scale, 1.0)
    starts = np.unique(np.linspace(0, n_windows - 1, min(n_windows, max(2, MAX_ROWS // n_channels)))
                       .round().astype(int))
    inputs, targets = _relative_windows(values / scale, lookback, horizon, starts)
    # the last windows (their targets after every training window's) choose the penalty
    first_held_out = starts[int(len(starts) * (1 - HELD_OUT))]
    train = np.repeat(starts + horizon <= first_held_out, n_channels)
    held_out = np.repeat(starts >= first_held_out, n_channels)
    if train.sum() < lookback or not held_out.any():
        return None
    errors = []
    for alpha in ALPHAS:
        coef, intercept = _solve(inputs[train], targets[train], alpha)
        errors.append(np.mean((inputs[held_out] @ coef + intercept - targets[held_out]) ** 2))
    alpha = float(ALPHAS[int(np.argmin(errors))])
    coef, intercept = _solve(inputs, targets, alpha)
    return {"coef": coef, "intercept": intercept, "scale": scale, "alpha": alpha}


def direct_linear_forecast(windows: np.ndarray, params: dict) -> np.ndarray:
    """Forecasts (n, C, H) after windows (n, T, C) by the fitted map (NaN where T < L)."""
    coef, scale = params["coef"], params["scale"]
    lookback = coef.shape[0]
    n, length, n_channels = windows.shape
    if length < lookback:
        return np.full((n, n_channels, coef.shape[1]), np.nan)
    recent = windows[:, -lookback:].transpose(0, 2, 1) / scale[:, None]  # (n, C, L)
    last = recent[..., -1:]
    forecast = (recent - last) @ coef + params["intercept"] + last  # (n, C, H)
    return forecast * scale[:, None]
