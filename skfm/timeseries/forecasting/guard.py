"""The rolling-origin guard of the default Time-PEFT forecaster (``base="combination"``).

At the rolling origins (:func:`~.combination.rolling_origins`: up to ``n_origins``, one
horizon apart at the end of the series) every candidate of the combination is refit on
the values before the origin and forecasts the horizon after it. Their errors there give,
in one evaluation:

* the combination's weights (:func:`~.combination.combination_weights`);
* the choice between the combination and the network's correction of it: the correction
  is kept only where a one-sided paired t-test of the MSEs per origin at 5 % says it errs
  less (:func:`~skfm._selection.significantly_better`; with 4 origins the mean gain must
  exceed 2.35 of its standard errors);
* the errors of the kept forecast, in units of each window's scale, that the prediction
  intervals come from (:func:`~.combination.gaussian_quantiles`).

Shapes: ``O`` origins, ``C`` channels, ``L`` context length, ``H`` horizon.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from skfm._selection import significantly_better
from skfm.timeseries.forecasting.base import normalise
from skfm.timeseries.forecasting.combination import (
    CANDIDATES,
    candidate_forecasts,
    combination_weights,
)

#: At most this many windows' errors are kept for the prediction intervals (the last ones).
MAX_CALIBRATION_WINDOWS = 500


@dataclass(frozen=True)
class GuardOutcome:
    """What the rolling origins decided.

    Attributes
    ----------
    weights : dict of str to float
        The combination's weight of each candidate combined.
    selected : {"combination", "network"}
        The forecast kept.
    scores : dict of str to float
        MSE at the origins of every candidate that forecast at all of them, of the
        combination and (fine-tuned) of the network, in units of the series' standard
        deviation per channel (empty where nothing was measured).
    residuals : ndarray of shape (O, C, H) or None
        Errors of the kept forecast at the origins divided by each window's scale; None
        where nothing was measured.
    """

    weights: dict[str, float]
    selected: str
    scores: dict[str, float]
    residuals: np.ndarray | None


def candidate_errors(values: np.ndarray, origins: np.ndarray, sp: int, horizon: int,
                     std: np.ndarray, n_jobs=None,
                     lookbacks=None) -> tuple[dict[str, np.ndarray], list]:
    """Each candidate's MSE per origin (O,), and their forecasts (C, H) at every origin.

    Only the candidates that forecast at every origin are scored; errors are in units of
    ``std`` (C, 1), the series' standard deviation per channel. ``lookbacks``: the direct
    linear map's (None: left out).
    """
    at_origins = [candidate_forecasts(values[:o], CANDIDATES, sp, horizon, n_jobs,
                                      lookbacks=lookbacks) for o in origins]
    errors = {}
    if at_origins:
        truths = np.stack([values[o:o + horizon].T for o in origins])
        for name in CANDIDATES:
            if all(name in f for f in at_origins):
                forecasts = np.stack([f[name] for f in at_origins])
                errors[name] = np.mean(((forecasts - truths) / std) ** 2, axis=(1, 2))
    return errors, at_origins


def guard_at_origins(values: np.ndarray, origins: np.ndarray, forecast: Callable, *, sp: int,
                     horizon: int, context_length: int, std: np.ndarray, finetuned: bool,
                     revin: bool, lookbacks: tuple[int, ...], n_jobs=None) -> GuardOutcome:
    """Weigh the candidates and keep the correction only where it beats the combination.

    Parameters
    ----------
    values : ndarray of shape (T, C)
        The series.
    origins : ndarray of int
        The rolling origins, ascending.
    forecast : callable
        ``forecast(contexts, kind, combination)``: the forecaster's forecast (n, C, H) of
        the ``kind`` ``"combination"`` or ``"network"`` from windows (n, C, L), given the
        combination's forecasts (n, C, H) after them.
    sp, horizon, context_length : int
    std : ndarray of shape (C,)
        The series' standard deviation per channel (1 where constant).
    finetuned : bool
        Whether the correction was fine-tuned (else the combination is kept).
    revin : bool
        Errors in units of each window's own scale (else of ``std``).
    lookbacks : tuple of int
        Those the direct linear map chooses from (:func:`~.direct.fit_direct_linear`).
    n_jobs : int or None

    Returns
    -------
    GuardOutcome
        Without origins, or where no candidate forecasts at all of them, nothing is
        measured: the seasonal naive alone (the naive where ``sp == 1``), the baseline a
        forecaster must not lose to, and the network where fine-tuned.
    """
    std = std[:, None]
    errors, at_origins = candidate_errors(values, origins, sp, horizon, std, n_jobs,
                                          lookbacks=lookbacks)
    if not errors:
        return GuardOutcome({"seasonal_naive" if sp > 1 else "naive": 1.0},
                            "network" if finetuned else "combination", {}, None)
    weights = combination_weights(errors)
    scores = {name: float(e.mean()) for name, e in errors.items()}
    truths = np.stack([values[o:o + horizon].T for o in origins])
    combined = np.stack([sum(w * f[name] for name, w in weights.items()) for f in at_origins])
    contexts = np.stack([values[o - context_length:o].T for o in origins]).astype(np.float32)
    kinds = ("combination", "network")[:2 if finetuned else 1]
    forecasts = {kind: forecast(contexts, kind, combined) for kind in kinds}
    by_origin = {kind: np.mean(((f - truths) / std) ** 2, axis=(1, 2))
                 for kind, f in forecasts.items()}
    scores.update({kind: float(e.mean()) for kind, e in by_origin.items()})
    selected = ("network" if finetuned and significantly_better(
        by_origin["combination"], by_origin["network"]) else "combination")
    window_scale = normalise(contexts.astype(np.float64))[2] if revin else std[None]
    return GuardOutcome(weights, selected, scores, (truths - forecasts[selected]) / window_scale)
