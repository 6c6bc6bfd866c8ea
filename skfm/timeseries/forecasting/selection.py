"""The held-out guard of the Time-PEFT forecaster with ``base="seasonal_ridge"``.

The last ``validation_fraction`` of the sliding windows is held out
(:func:`~.training.temporal_split`); the seasonal naive, the seasonal ridge base and
(when fine-tuned) the network forecast them, and the one with the lowest MSE is kept. The
errors of the kept forecast on those windows (on all windows for the seasonal naive or
where too few are held out) give the prediction intervals
(:func:`~.base.residual_quantiles`).

Shapes: ``W`` windows, ``C`` channels, ``L`` context length, ``H`` horizon.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from skfm.timeseries.forecasting.guard import MAX_CALIBRATION_WINDOWS

#: The intervals come from the held-out windows' errors only where there are this many of
#: them (else from all windows', partly in-sample).
MIN_CALIBRATION_WINDOWS = 30


def select_on_held_out(inputs: np.ndarray, targets: np.ndarray, val_idx: np.ndarray,
                       kinds: tuple[str, ...], fallback: str, std: np.ndarray,
                       forecast: Callable) -> tuple[str, dict[str, float], np.ndarray]:
    """The kind that forecasts the held-out windows best, the scores, the calibration rows.

    Parameters
    ----------
    inputs, targets : ndarray of shape (W, C, L) and (W, C, H)
        All sliding windows of the series.
    val_idx : ndarray of int
        The held-out windows (may be empty).
    kinds : tuple of str
        The kinds compared (``"seasonal_naive"``, ``"base"``, ``"network"``); empty: none.
    fallback : str
        The kind kept where nothing is compared.
    std : ndarray of shape (C, 1)
        The series' standard deviation per channel: the unit of the scores.
    forecast : callable
        ``forecast(contexts, kind)``: the forecast (n, C, H) of ``kind`` from windows
        (n, C, L).

    Returns
    -------
    selected : str
    scores : dict of str to float
        MSE of each kind on the held-out windows (empty where nothing was compared).
    rows : ndarray of int
        The windows whose errors calibrate the intervals (the last
        :data:`~.guard.MAX_CALIBRATION_WINDOWS` at most).

    Examples
    --------
    >>> import numpy as np
    >>> inputs, targets = np.zeros((40, 1, 4)), np.ones((40, 1, 2))
    >>> def forecast(contexts, kind):
    ...     return np.full((len(contexts), 1, 2), 1.0 if kind == "base" else 0.0)
    >>> selected, scores, rows = select_on_held_out(
    ...     inputs, targets, np.arange(5, 40), ("seasonal_naive", "base"), "base",
    ...     np.ones((1, 1)), forecast)
    >>> selected, scores, rows.tolist() == list(range(5, 40))
    ('base', {'seasonal_naive': 1.0, 'base': 0.0}, True)
    """
    scores = {}
    if kinds and len(val_idx):
        contexts = inputs[val_idx].astype(np.float32)
        scores = {kind: float(np.mean(((forecast(contexts, kind) - targets[val_idx]) / std) ** 2))
                  for kind in kinds}
    selected = min(scores, key=scores.get) if scores else fallback
    held_out = selected != "seasonal_naive" and len(val_idx) >= MIN_CALIBRATION_WINDOWS
    rows = (val_idx if held_out else np.arange(len(inputs)))[-MAX_CALIBRATION_WINDOWS:]
    return selected, scores, rows
