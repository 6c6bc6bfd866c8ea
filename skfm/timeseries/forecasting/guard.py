"""The rolling-origin guard of the default Time-PEFT forecaster (``base="combination"``).

At the rolling origins (:func:`~.combination.rolling_origins`: up to ``n_origins``, one
horizon apart at the end of the series) every classical candidate of the combination is
refit on the values before the origin and forecasts the horizon after it; the fine-tuned
network, trained once on the values before the first origin, forecasts from the window
before each origin. Their errors there give, in one evaluation:

* the combination's weights (:func:`~.combination.combination_weights`), the network a
  candidate like the others: it is averaged in where its error is among the lowest;
* the errors of the combination, in units of each window's scale, that the prediction
  intervals come from (:func:`~.combination.gaussian_quantiles`).

On a long series (:func:`guard_on_stretch`) the candidates are instead fitted once before the
origins' stretch and scored on every ``horizon // 8``-th window in it: a few origins a horizon
apart are a small sample there, and refitting at each costs minutes.

Shapes: ``O`` origins, ``C`` channels, ``L`` context length, ``H`` horizon.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from skfm.timeseries.forecasting.base import normalise
from skfm.timeseries.forecasting.batched import batched_forecasts, window_parameters
from skfm.timeseries.forecasting.combination import (
    CANDIDATES,
    candidate_forecasts,
    combination_weights,
)

#: At most this many windows' errors are kept for the prediction intervals (the last ones).
MAX_CALIBRATION_WINDOWS = 500


@dataclass(frozen=True)
class GuardOutcome:
    """What the rolling origins (or the windows of a long series' stretch) decided.

    Attributes
    ----------
    weights : dict of str to float
        The combination's weight of each candidate combined (``"network"``: the
        fine-tuned network's).
    scores : dict of str to float
        MSE at the origins (windows) of every candidate that forecast at all of them (the
        fine-tuned network included) and of the combination, in units of the series'
        standard deviation per channel (empty where nothing was measured).
    residuals : ndarray of shape (O, C, H) or None
        Errors of the combination there, divided by each window's scale; None
        where nothing was measured.
    """

    weights: dict[str, float]
    scores: dict[str, float]
    residuals: np.ndarray | None


def forecasts_at_origins(values: np.ndarray, origins: np.ndarray, sp: int, horizon: int,
                         n_jobs=None, lookbacks=None) -> dict[str, np.ndarray]:
    """The forecasts (O, C, H) of every candidate that forecasts at every origin, each refit
    on the values before it. ``lookbacks``: the direct linear map's (None: left out)."""
    at_origins = [candidate_forecasts(values[:o], CANDIDATES, sp, horizon, n_jobs,
                                      lookbacks=lookbacks) for o in origins]
    return {name: np.stack([f[name] for f in at_origins]) for name in CANDIDATES
            if at_origins and all(name in f for f in at_origins)}


def guard_at_origins(values: np.ndarray, origins: np.ndarray, network: Callable | None, *,
                     sp: int, horizon: int, context_length: int, std: np.ndarray, revin: bool,
                     lookbacks: tuple[int, ...], n_jobs=None) -> GuardOutcome:
    """Weigh the candidates, the fine-tuned network among them, by their errors at the origins.

    Parameters
    ----------
    values : ndarray of shape (T, C)
        The series.
    origins : ndarray of int
        The rolling origins, ascending.
    network : callable or None
        ``network(contexts)``: the fine-tuned network's forecasts (n, C, H) from windows
        (n, C, L), trained on the values before the first origin; None where the network
        was not fine-tuned.
    sp, horizon, context_length : int
    std : ndarray of shape (C,)
        The series' standard deviation per channel (1 where constant).
    revin : bool
        Errors in units of each window's own scale (else of ``std``).
    lookbacks : tuple of int
        Those the direct linear map chooses from (:func:`~.direct.fit_direct_linear`).
    n_jobs : int or None

    Returns
    -------
    GuardOutcome
        Without origins, or where no classical candidate forecasts at all of them,
        nothing is measured: the fine-tuned network alone, else the seasonal naive (the
        naive where ``sp == 1``), the baseline a forecaster must not lose to.
    """
    forecasts = forecasts_at_origins(values, origins, sp, horizon, n_jobs, lookbacks)
    if not forecasts:
        return _nothing_measured(network is not None, sp)
    contexts = np.stack([values[o - context_length:o].T for o in origins]).astype(
        np.float32)  # (O, C, L)
    if network is not None:
        forecasts["network"] = network(contexts)
    return _outcome(forecasts, values, origins, horizon, contexts, std, revin)


def guard_on_stretch(values: np.ndarray, start: int, network: Callable | None, *, sp: int,
                     horizon: int, context_length: int, std: np.ndarray, revin: bool,
                     lookbacks: tuple[int, ...], n_jobs=None) -> GuardOutcome:
    """Weigh the candidates by their errors on the windows of the stretch after ``start``.

    The guard of a long series: every classical candidate is fitted once, on
    ``values[:start]``, and forecasts after every ``horizon // 8``-th window whose
    target lies in the stretch from its fitted parameters, as ``forecast_windows``
    forecasts (:func:`~.batched.batched_forecasts`); the network trained on
    ``values[:start]`` forecasts from the same windows. Hundreds of windows rather
    than a few origins, and no refit per origin. Parameters and the outcome as
    :func:`guard_at_origins`; a candidate that cannot forecast every window is left out.
    """
    fitted = {}
    candidate_forecasts(values[:start], CANDIDATES, sp, horizon, n_jobs, fitted,
                        lookbacks=lookbacks)
    parameters = {name: window_parameters(name, forecaster, values[:start], sp)
                  for name, forecaster in fitted.items()}
    origins = np.arange(start, len(values) - horizon + 1, max(1, horizon // 8))
    history = min(start, max((context_length, *lookbacks)))
    windows = np.stack([values[o - history:o] for o in origins])  # (O, history, C)
    contexts = windows[:, -context_length:].transpose(0, 2, 1).astype(np.float32)  # (O, C, L)
    forecasts = {name: f for name, f in batched_forecasts(windows, parameters, sp, horizon).items()
                 if np.isfinite(f).all()}  # each (O, C, H)
    if not forecasts:
        return _nothing_measured(network is not None, sp)
    if network is not None:
        forecasts["network"] = network(contexts)
    return _outcome(forecasts, values, origins, horizon, contexts, std, revin)


def _nothing_measured(finetuned: bool, sp: int) -> GuardOutcome:
    """The fine-tuned network alone, else the seasonal naive (the naive where ``sp == 1``)."""
    return GuardOutcome({"network" if finetuned else (
        "seasonal_naive" if sp > 1 else "naive"): 1.0}, {}, None)


def _outcome(forecasts: dict[str, np.ndarray], values: np.ndarray, origins: np.ndarray,
             horizon: int, contexts: np.ndarray, std: np.ndarray, revin: bool) -> GuardOutcome:
    """Weights, scores and the combination's scaled errors from each candidate's forecasts
    (O, C, H) after ``contexts`` (O, C, L), the windows before ``origins`` of ``values``;
    errors in units of ``std`` (C,)."""
    std = std[:, None]
    truths = np.stack([values[o:o + horizon].T for o in origins])  # (O, C, H)
    errors = {name: np.mean(((f - truths) / std) ** 2, axis=(1, 2))  # (O,) each
              for name, f in forecasts.items()}
    weights = combination_weights(errors)
    scores = {name: float(e.mean()) for name, e in errors.items()}
    combined = sum(w * forecasts[name] for name, w in weights.items())
    scores["combination"] = float(np.mean(((combined - truths) / std) ** 2))
    window_scale = normalise(contexts.astype(np.float64))[2] if revin else std[None]
    return GuardOutcome(weights, scores, (truths - combined) / window_scale)
