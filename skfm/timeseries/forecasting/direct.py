"""The direct linear candidate of the combination: one ridge map from a window to the horizon.

After Zeng et al. (2023, "Are Transformers Effective for Time Series Forecasting?"), whose
NLinear forecasts the whole horizon at once by a linear map of the lookback taken relative
to its last value. Here the map is shared by the channels (each channel a series of its
own, as the network treats them), every channel scaled by its standard deviation, and
fitted by ridge in closed form on the sliding windows of the series: the lookback (of those
offered) and the regularisation (of :data:`ALPHAS`) are the ones that forecast the last
:data:`HELD_OUT` of the windows best (their targets after the others'), then the map is
refit on every window. The forecaster offers its own lookback, and where it chose that
itself (``context_length="auto"``) also twice and four times that
(:data:`LONGER_LOOKBACKS`): four seasons of a half-hourly series are four days, too few
to see a weekly cycle.

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
#: With an automatic context length, the lookbacks offered as multiples of it.
LONGER_LOOKBACKS = (1, 2, 4)
#: At most this many windows times channels are fitted, evenly spread over the series
#: (consecutive windows overlap in all but one value).
MAX_ROWS = 20_000


def _relative_windows(scaled: np.ndarray, lookback: int, horizon: int,
                      origins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (rows, L) and targets (rows, H) of the windows forecasting from ``origins``
    (first forecast steps), every channel, minus each window's last input value."""
    span = sliding_window_view(scaled, lookback + horizon, axis=0)[origins - lookback]
    span = span.reshape(-1, lookback + horizon)  # (n * C, L + H)
    span = span - span[:, lookback - 1:lookback]
    return span[:, :lookback], span[:, lookback:]


class _Ridge:
    """Ridge maps of one design for any penalty: the Gram matrix's eigenvectors are found
    once, then each penalty costs two matrix products."""

    def __init__(self, inputs: np.ndarray, targets: np.ndarray):
        self.x_mean, self.y_mean = inputs.mean(0), targets.mean(0)
        x = inputs - self.x_mean
        self.eigenvalues, self.eigenvectors = np.linalg.eigh(x.T @ x)
        self.projected = self.eigenvectors.T @ (x.T @ (targets - self.y_mean))  # (L, H)
        self.rows = len(x)

    def solve(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """``(coef (L, H), intercept (H,))`` with the penalty ``alpha`` per row."""
        shrink = 1 / (np.maximum(self.eigenvalues, 0) + alpha * self.rows)
        coef = self.eigenvectors @ (shrink[:, None] * self.projected)
        return coef, self.y_mean - self.x_mean @ coef


def fit_direct_linear(values: np.ndarray, lookbacks, horizon: int) -> dict | None:
    """The direct linear map fitted on ``values`` (T, C), or None where the series is too short.

    Parameters
    ----------
    values : ndarray of shape (T, C)
    lookbacks : int or sequence of int
        The lookbacks tried; the one that forecasts the held-out windows best is kept,
        with its penalty. Those with fewer than :data:`MIN_ROWS_PER_LAG` windows (times
        channels) per lag are not tried.
    horizon : int

    Returns
    -------
    dict or None
        ``coef`` (L, H), ``intercept`` (H,), ``scale`` (C,) and the chosen ``alpha``.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(600.0)
    >>> values = np.stack([np.sin(t / 4), np.cos(t / 6)], axis=1)
    >>> params = fit_direct_linear(values, lookbacks=48, horizon=6)
    >>> params["coef"].shape, params["intercept"].shape
    ((48, 6), (6,))
    >>> forecast = direct_linear_forecast(values[None, :-6], params)[0]  # (C, H)
    >>> bool(np.abs(forecast - values[-6:].T).max() < 0.05)
    True
    >>> fit_direct_linear(values[:100], lookbacks=48, horizon=6) is None
    True
    """
    values = np.asarray(values, dtype=np.float64)
    n_timepoints, n_channels = values.shape
    lookbacks = [int(lookback) for lookback in np.atleast_1d(lookbacks)
                 if (n_timepoints - lookback - horizon + 1) * n_channels
                 >= MIN_ROWS_PER_LAG * lookback]
    if not lookbacks:
        return None
    scale = values.std(0)
    scale = np.where(scale > 0, scale, 1.0)
    scaled = values / scale
    # every lookback is scored on the same held-out origins, the last ones of the longest
    first, last = max(lookbacks), n_timepoints - horizon
    held_out_from = last - int(HELD_OUT * (last - first))
    best = None
    for lookback in lookbacks:
        origins = np.arange(lookback, last + 1)
        origins = np.unique(origins[np.linspace(0, len(origins) - 1, min(
            len(origins), max(2, MAX_ROWS // n_channels))).round().astype(int)])
        inputs, targets = _relative_windows(scaled, lookback, horizon, origins)
        rows = np.repeat(origins, n_channels)
        train, held_out = rows + horizon <= held_out_from, rows >= held_out_from
        if train.sum() < lookback or not held_out.any():
            continue
        ridge = _Ridge(inputs[train], targets[train])
        for alpha in ALPHAS:
            coef, intercept = ridge.solve(alpha)
            error = np.mean((inputs[held_out] @ coef + intercept - targets[held_out]) ** 2)
            if best is None or error < best[0]:
                best = (error, alpha, inputs, targets)
    if best is None:
        return None
    _, alpha, inputs, targets = best
    coef, intercept = _Ridge(inputs, targets).solve(alpha)
    return {"coef": coef, "intercept": intercept, "scale": scale, "alpha": float(alpha)}


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
