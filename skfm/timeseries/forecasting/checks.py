"""Checks of the parameters, series, horizons and windows given to the Time-PEFT forecaster.

Each raises a ``ValueError`` or ``TypeError`` that names what is wrong and how to
fix it, before any torch code runs. The estimator's own parameters are checked
declaratively (:data:`PARAMETER_CONSTRAINTS`, by scikit-learn at the start of
``fit``); the functions here check what depends on the data or on the backbone.
"""

from __future__ import annotations

import os
import warnings
from numbers import Integral, Real

import numpy as np
import pandas as pd
import torch
from sklearn.utils._param_validation import Interval, StrOptions

from skfm.timeseries._panel import MAX_MAGNITUDE
from skfm.timeseries.forecasting.adapters import FORMS
from skfm.timeseries.forecasting.backbone import BackboneConfig
from skfm.timeseries.forecasting.network import ADAPTERS
from skfm.timeseries.forecasting.training import SCHEDULES

#: Head length used when neither ``horizon`` nor an ``fh`` in ``fit`` gives one.
DEFAULT_HORIZON = 24
#: Largest head length (``horizon``) accepted.
MAX_HORIZON = 720
#: Bases of the forecast (``base`` parameter); None: the network alone, as in the paper.
BASES = ("combination", "seasonal_ridge")

#: ``TimePEFTForecaster``'s parameters, as scikit-learn's validation takes them; an int
#: ``context_length`` is checked against the backbone by :func:`check_context_length`.
PARAMETER_CONSTRAINTS: dict = {
    "adapter": [StrOptions(set(ADAPTERS))],
    "adapter_form": [StrOptions(set(FORMS))],
    "checkpoint": [str, os.PathLike],
    "sp": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
    "context_length": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
    "horizon": [Interval(Integral, 1, MAX_HORIZON, closed="both"), None],
    "base": [StrOptions(set(BASES)), None],
    "finetune": [StrOptions({"auto"}), "boolean"],
    "n_origins": [Interval(Integral, 1, None, closed="left")],
    "top_k": [Interval(Integral, 1, None, closed="left")],
    "lora_rank": [Interval(Integral, 1, None, closed="left")],
    "lora_alpha": [Interval(Real, 0, None, closed="neither")],
    "max_epochs": [Interval(Integral, 1, None, closed="left")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "learning_rate": [Interval(Real, 0, None, closed="neither")],
    "backbone_learning_rate": [Interval(Real, 0, None, closed="neither")],
    "learning_rate_schedule": [StrOptions(set(SCHEDULES))],
    "window_stride": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
    "validation_fraction": [Interval(Real, 0, 1, closed="left")],
    "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
    "revin": ["boolean"],
    "verbose": ["verbose"],
    "device": [str, torch.device, None],
    "n_jobs": [Integral, None],
    "random_state": ["random_state"],
}


def warn_if_x_given(X) -> None:
    """A ``UserWarning`` naming ``X`` where it is given: the forecaster does not use it.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_x_given(None), warn_if_x_given([[1.0]])
    (None, None)
    >>> [w.category.__name__ for w in caught], "the X passed is not used" in str(caught[0].message)
    (['UserWarning'], True)
    """
    if X is not None:
        warnings.warn(
            "TimePEFTForecaster ignores exogenous data: the X passed is not used, the forecast "
            "depends on y alone (drop X to silence this warning)", UserWarning, stacklevel=4)


def refuse_text_columns(y) -> None:
    """TypeError naming the columns of a pandas ``y`` that do not hold numbers (booleans neither)."""
    frame = y.to_frame() if isinstance(y, pd.Series) else y
    if not isinstance(frame, pd.DataFrame):
        return
    bad = {str(c): str(t) for c, t in frame.dtypes.items()
           if not pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t)}
    if bad:
        raise TypeError(
            "TimePEFTForecaster forecasts numeric series; y has non-numeric (categorical, text "
            "or boolean) column(s) " + ", ".join(f"{c!r} ({t})" for c, t in bad.items())
            + ": convert them to numbers (pd.to_numeric) or drop them"
        )


def regular_index(index: pd.Index) -> bool:
    """Whether ``index`` has equal steps (a period index, a frequency, or equal differences)."""
    if isinstance(index, pd.PeriodIndex) or len(index) < 3:
        return True
    if isinstance(index, pd.DatetimeIndex):
        return index.freq is not None or pd.infer_freq(index) is not None
    steps = np.diff(np.asarray(index, dtype=float))
    return bool(np.all(steps == steps[0]))


def check_series(y: pd.DataFrame) -> np.ndarray:
    """The values of ``y`` as float32 (T, C): finite, of a magnitude float32 holds, regular index."""
    values = y.to_numpy(dtype=np.float64)
    if not np.isfinite(values).all():
        raise ValueError("y contains NaN or infinite values; impute them first")
    if np.abs(values).max(initial=0.0) > MAX_MAGNITUDE:  # checked before the float32 cast
        raise ValueError(
            f"y has values up to {np.abs(values).max():.3g} in absolute value; the model "
            f"computes in float32 and accepts at most {MAX_MAGNITUDE:.0e}: rescale y "
            "(e.g. divide by a constant)"
        )
    if not regular_index(y.index):
        raise ValueError(
            "y has an irregular time index (unequal steps); resample it to a regular "
            "frequency first, e.g. y.asfreq(...) and interpolate"
        )
    return values.astype(np.float32)


def check_context_length(context_length: int, config: BackboneConfig) -> None:
    """``context_length`` must be a multiple of the backbone's patch length, within its reach."""
    if context_length % config.patch_len or context_length > config.max_context:
        raise ValueError(
            f"context_length must be a multiple of the backbone's patch length "
            f"{config.patch_len} and at most {config.max_context}, got {context_length}"
        )


def resolve_horizon(horizon: int | None, steps: np.ndarray | None) -> int:
    """The head length: ``horizon``, else the largest of the relative ``steps`` of ``fh``."""
    if horizon is not None:
        horizon = int(horizon)
    elif steps is not None:
        horizon = int(max(steps))
        if horizon < 1:
            raise ValueError("TimePEFTForecaster forecasts only future steps (fh >= 1)")
    else:
        horizon = DEFAULT_HORIZON
    if horizon > MAX_HORIZON:
        raise ValueError(f"horizon must be at most {MAX_HORIZON}, got {horizon}")
    return horizon


def check_length(n_timepoints: int, context_length: int, horizon: int) -> None:
    """A series must hold at least one training window: ``context_length + horizon`` values."""
    needed = context_length + horizon
    if n_timepoints < needed:
        raise ValueError(
            f"y has {n_timepoints} time points; TimePEFTForecaster needs at least "
            f"context_length + horizon = {context_length} + {horizon} = {needed} "
            "(lower context_length or the horizon)"
        )


def check_steps(steps: np.ndarray, horizon: int) -> None:
    """The relative steps of a prediction's ``fh`` lie in ``1..horizon``."""
    if steps.min() < 1:
        raise ValueError("TimePEFTForecaster forecasts only future steps (fh >= 1)")
    if steps.max() > horizon:
        raise ValueError(
            f"fh reaches {steps.max()} steps ahead, beyond the trained horizon "
            f"{horizon}; refit with horizon >= {steps.max()} (or pass that fh to fit)"
        )


def check_windows(windows, context_length: int, n_channels: int) -> np.ndarray:
    """``windows`` as float32 (n, T >= context_length, n_channels), all finite."""
    windows = np.asarray(windows, dtype=np.float32)
    if windows.ndim != 3 or windows.shape[1] < context_length or (
            windows.shape[2] != n_channels):
        raise ValueError(
            f"windows must have shape (n_windows, >= {context_length}, "
            f"{n_channels}), got {windows.shape}"
        )
    if not np.isfinite(windows).all():
        raise ValueError("windows contain NaN or infinite values")
    return windows
