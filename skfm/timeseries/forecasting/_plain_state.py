"""Pandas objects in an sktime forecaster's state <-> plain python and numpy values.

``skops.io`` serialises numpy arrays, python containers and scalars, but no
pandas object (their Cython internals have no default ``__reduce__``), and every
fitted sktime forecaster holds some (``_y``, ``_cutoff``, the horizon's index).
:func:`to_plain` turns the indexes, series, frames and forecasting horizons in
a state into tagged dicts of plain values; :func:`from_plain` rebuilds them
exactly (dtype, frequency, time zone and names included).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TAG = "__skfm_pandas__"


def _array(values: np.ndarray):
    """A numpy array skops can store: object arrays become lists of python scalars."""
    return values.tolist() if values.dtype == object else values


def _index_to_plain(index: pd.Index) -> dict:
    base = {TAG: "index", "name": index.name}
    if isinstance(index, pd.RangeIndex):
        return {**base, "kind": "range", "start": index.start, "stop": index.stop,
                "step": index.step}
    if isinstance(index, pd.DatetimeIndex):
        return {**base, "kind": "datetime", "i8": index.asi8, "unit": index.unit,
                "tz": None if index.tz is None else str(index.tz), "freq": index.freqstr}
    if isinstance(index, pd.PeriodIndex):
        return {**base, "kind": "period", "i8": index.asi8, "freq": index.freqstr}
    return {**base, "kind": "plain", "values": _array(index.to_numpy()), "dtype": str(index.dtype)}


def _index_from_plain(state: dict) -> pd.Index:
    kind, name = state["kind"], state["name"]
    if kind == "range":
        return pd.RangeIndex(state["start"], state["stop"], state["step"], name=name)
    if kind == "datetime":
        index = pd.DatetimeIndex(np.asarray(state["i8"]).view(f"datetime64[{state['unit']}]"),
                                 name=name)
        if state["tz"] is not None:
            index = index.tz_localize("UTC").tz_convert(state["tz"])
        return pd.DatetimeIndex(index, freq=state["freq"]) if state["freq"] else index
    if kind == "period":
        return pd.PeriodIndex.from_ordinals(np.asarray(state["i8"]), freq=state["freq"], name=name)
    return pd.Index(state["values"], dtype=state["dtype"], name=name)


def to_plain(value):
    """``value`` with every pandas index, series, frame and ForecastingHorizon made plain.

    Examples
    --------
    >>> import pandas as pd
    >>> y = pd.Series([1.0, 2.0], index=pd.period_range("2020-01", periods=2, freq="M"))
    >>> from_plain(to_plain({"y": y}))["y"].equals(y)
    True
    """
    from sktime.forecasting.base import ForecastingHorizon

    if isinstance(value, ForecastingHorizon):
        return {TAG: "fh", "values": to_plain(value.to_pandas()),
                "is_relative": value.is_relative, "freq": value.freq}
    if isinstance(value, pd.Index):
        return _index_to_plain(value)
    if isinstance(value, pd.Series):
        return {TAG: "series", "values": _array(value.to_numpy()), "dtype": str(value.dtype),
                "index": _index_to_plain(value.index), "name": value.name}
    if isinstance(value, pd.DataFrame):
        return {TAG: "frame", "index": _index_to_plain(value.index),
                "columns": _index_to_plain(value.columns),
                "data": [to_plain(value.iloc[:, j]) for j in range(value.shape[1])]}
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(to_plain(v) for v in value)
    return value


def from_plain(value):
    """Inverse of :func:`to_plain`."""
    if isinstance(value, dict) and TAG in value:
        kind = value[TAG]
        if kind == "index":
            return _index_from_plain(value)
        if kind == "series":
            return pd.Series(value["values"], index=_index_from_plain(value["index"]),
                             dtype=value["dtype"], name=value["name"])
        if kind == "frame":
            columns = [from_plain(c) for c in value["data"]]
            frame = pd.concat(columns, axis=1) if columns else pd.DataFrame(
                index=_index_from_plain(value["index"]))
            frame.columns = _index_from_plain(value["columns"])
            return frame
        from sktime.forecasting.base import ForecastingHorizon

        return ForecastingHorizon(from_plain(value["values"]), is_relative=value["is_relative"],
                                  freq=value["freq"])
    if isinstance(value, dict):
        return {k: from_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(from_plain(v) for v in value)
    return value
