"""Time-series panels in, float32 arrays of one length out.

Accepted forms of ``X`` (``n`` series, ``C`` channels, ``T`` time points):

* 2-D array-like ``(n, T)`` (numpy, pandas, lists): univariate, validated by
  scikit-learn's ``validate_data`` (so ``n_features_in_`` is ``T``);
* 3-D numpy ``(n, C, T)``;
* sktime's ``pd-multiindex`` (rows indexed by (instance, time), one column
  per channel) and ``nested_univ`` (one ``pd.Series`` per cell) frames;
* a list of arrays ``(T_i,)`` or ``(C, T_i)`` (``df-list``: ``(T_i, C)`` frames).

Lengths may differ between series (they are resized to a common length);
channels of one series must have the same length. Values must be real numbers
(numeric strings are read as numbers), finite, and at most
:data:`MAX_MAGNITUDE` in absolute value: the models compute in float32.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from sklearn.utils.validation import validate_data

from skfm._validation import float_values

MIN_LENGTH = 2
MAX_MAGNITUDE = 1e12
"""Largest absolute value accepted: float32 statistics of larger series (variances, layer
norms of the scaled patch statistics) overflow to inf and the embeddings to NaN."""


def _numeric(values, where: str) -> np.ndarray:
    try:
        return float_values(values)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"time series values must be numeric; {where} is not: {exc}") from None


def _numeric_frame(X: pd.DataFrame) -> pd.DataFrame:
    """A 2-D (one series per row) frame with float64 columns, missing values as NaN."""
    if all(pd.api.types.is_float_dtype(dtype) and isinstance(dtype, np.dtype)
           for dtype in X.dtypes):
        return X
    frame = X.copy()
    for j in range(frame.shape[1]):
        frame.isetitem(j, _numeric(frame.iloc[:, j], f"column {frame.columns[j]!r}"))
    return frame


def _check_series(series: list[np.ndarray]) -> None:
    for i, s in enumerate(series):
        if not np.isfinite(s).all():
            kind = "NaN" if np.isnan(s).any() else "inf"
            raise ValueError(
                f"Input X contains {kind} in series {i}; impute or drop missing values first "
                "(e.g. pandas interpolate)."
            )
        if np.abs(s).max(initial=0.0) > MAX_MAGNITUDE:
            raise ValueError(
                f"Input X has values up to {np.abs(s).max():.3g} in absolute value in series "
                f"{i}; the model computes in float32 and accepts at most {MAX_MAGNITUDE:.0e}: "
                "rescale the series (e.g. divide by a constant)."
            )
        if s.shape[-1] < MIN_LENGTH:
            raise ValueError(
                f"series {i} has length {s.shape[-1]} (n_features = {s.shape[-1]}); time series "
                f"need at least {MIN_LENGTH} time points."
            )


def _from_frame(X: pd.DataFrame) -> list[np.ndarray] | None:
    """sktime ``pd-multiindex`` / ``nested_univ`` frames as (C, T_i) arrays; None otherwise."""
    if isinstance(X.index, pd.MultiIndex) and X.index.nlevels == 2:
        return [
            _numeric(group.to_numpy().T, f"instance {key!r}")
            for key, group in X.groupby(level=0, sort=False)
        ]
    if len(X) and X.shape[1] and isinstance(X.iloc[0, 0], pd.Series):
        out = []
        for i, row in enumerate(X.itertuples(index=False)):
            lengths = {len(cell) for cell in row}
            if len(lengths) != 1:
                raise ValueError(
                    f"instance {i} has channels of different lengths {sorted(lengths)}; "
                    "ragged channels within one series are not supported."
                )
            out.append(_numeric(np.stack([np.asarray(c) for c in row]), f"instance {i}"))
        return out
    return None


def _from_list(X: list) -> list[np.ndarray]:
    out = []
    for i, item in enumerate(X):
        if isinstance(item, pd.DataFrame):  # sktime df-list: (T_i, C)
            item = item.to_numpy().T
        if isinstance(item, list | tuple) and len({np.shape(ch) for ch in item}) > 1:
            raise ValueError(
                f"series {i}: channels must have equal lengths, got "
                f"{sorted({len(ch) for ch in item})}; ragged channels are not supported."
            )
        array = _numeric(item, f"series {i}")
        if array.ndim == 1:
            array = array[None]
        if array.ndim != 2:
            raise ValueError(f"series {i} must be 1-D (T,) or 2-D (channels, T), got {array.shape}")
        out.append(array)
    return out


def _is_panel_list(X: list) -> bool:
    """A list of series (2-D items, frames or unequal lengths), not rows of a 2-D table."""
    if isinstance(X[0], pd.DataFrame):
        return True
    try:
        shapes = {np.shape(x) for x in X}
    except ValueError:  # an item with channels of unequal lengths
        return True
    return len(shapes) > 1 or len(next(iter(shapes))) == 2


def as_panel(estimator, X, reset: bool) -> list[np.ndarray] | np.ndarray:
    """Validate ``X`` into a 3-D float array ``(n, C, T)`` or a list of ``(C, T_i)`` arrays.

    Parameters
    ----------
    estimator : BaseEstimator
        Owner of ``n_features_in_``/``feature_names_in_`` (2-D input) and
        ``n_channels_in_`` (all input).
    X : array-like or list
        See the module docstring.
    reset : bool
        True in ``fit``: record the number of channels (and features for 2-D
        input); False elsewhere: check them.

    Returns
    -------
    ndarray of shape (n, C, T) or list of ndarray of shape (C, T_i)
        The validated values, not copied (a numeric array keeps its dtype):
        :func:`resize_panel` casts them to float32, one chunk of series at a
        time, so validating does not hold a second copy of a large panel.
    """
    panel: list[np.ndarray] | np.ndarray | None = None
    if isinstance(X, pd.DataFrame):
        panel = _from_frame(X)
    elif isinstance(X, list) and X and _is_panel_list(X):
        panel = _from_list(X)
    elif isinstance(X, np.ndarray) and X.ndim == 3:
        panel = X if X.dtype.kind in "biuf" else _numeric(X, "X")
    elif isinstance(X, np.ndarray) and X.ndim > 3:
        raise ValueError(
            f"X must be 2-D (n_series, n_timepoints) or 3-D (n_series, n_channels, "
            f"n_timepoints), got an array of shape {X.shape}"
        )
    if panel is None:  # tabular 2-D input: scikit-learn's own checks and messages
        if isinstance(X, pd.DataFrame):
            if X.shape[1] < MIN_LENGTH:  # scikit-learn's checks fail on a frame without columns
                raise ValueError(
                    f"X has {X.shape[1]} column(s) (time points); time series need at least "
                    f"{MIN_LENGTH} time points."
                )
            X = _numeric_frame(X)
        elif isinstance(X, np.ndarray | list) and np.asarray(X).dtype.kind in "OUS":
            X = _numeric(X, "X")
        panel = validate_data(estimator, X, reset=reset, dtype=[np.float64, np.float32],
                              ensure_all_finite=False)[:, None, :]
    elif reset:
        for name in ("n_features_in_", "feature_names_in_"):
            estimator.__dict__.pop(name, None)
    if len(panel) == 0:
        raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required.")
    _check_series(panel)  # on the given values: a cast to float32 would turn 1e300 into inf
    channels = {s.shape[0] for s in panel}
    if len(channels) > 1:
        raise ValueError(f"all series must have the same number of channels, got {sorted(channels)}")
    (n_channels,) = channels
    if reset:
        estimator.n_channels_in_ = n_channels
    elif n_channels != estimator.n_channels_in_:
        raise ValueError(
            f"X has {n_channels} channel(s), but {type(estimator).__name__} was fitted with "
            f"{estimator.n_channels_in_} channel(s)."
        )
    return panel


def resize_panel(panel: list[np.ndarray] | np.ndarray, length: int) -> np.ndarray:
    """Linearly interpolate every series to ``length``; returns (n, C, length) float32."""
    if isinstance(panel, np.ndarray):
        groups = {panel.shape[-1]: np.arange(len(panel))}
    else:
        groups: dict[int, list[int]] = {}
        for i, s in enumerate(panel):
            groups.setdefault(s.shape[-1], []).append(i)
    out = np.empty((len(panel), panel[0].shape[0], length), dtype=np.float32)
    for t, rows in groups.items():
        block = np.stack([panel[i] for i in rows]) if not isinstance(panel, np.ndarray) else panel
        x = torch.from_numpy(np.ascontiguousarray(block, dtype=np.float32))
        if t != length:
            n, c, _ = x.shape
            x = torch.nn.functional.interpolate(
                x.reshape(n * c, 1, t), size=length, mode="linear", align_corners=False
            ).reshape(n, c, length)
        out[rows] = x.numpy()
    return out
