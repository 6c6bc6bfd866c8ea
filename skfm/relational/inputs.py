"""What an :class:`~skfm.relational.RDBEncoder` reads from ``X``: the position of a column,
the entity keys, the cutoff times and the numeric passthrough columns.

Each function takes ``X`` as a DataFrame (an array becomes one with integer column names)
and raises a ``ValueError`` (``TypeError`` for a wrong kind of argument) that names the
column at fault.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from skfm._validation import float_values


def is_int(value) -> bool:
    """Whether `value` is an integer, ``bool`` excluded."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def column_position(frame: pd.DataFrame, column, what: str) -> int:
    """The position in `frame` of `column` (a name, or a position for any `frame`); `what`
    names the parameter in the error messages."""
    if is_int(column):
        if not 0 <= column < frame.shape[1]:
            raise ValueError(
                f"{what}={column} is out of range for X with {frame.shape[1]} columns"
            )
        return int(column)
    if isinstance(column, str):
        names = [str(c) for c in frame.columns]
        if column in names and isinstance(frame.columns[names.index(column)], str):
            return names.index(column)
        hint = "" if any(isinstance(c, str) for c in frame.columns) else (
            "; X has no column names: give the position instead"
        )
        raise ValueError(f"{what} {column!r} is not a column of X{hint}; X has {names}")
    raise TypeError(f"{what} must be a column name (str) or position (int), got {column!r}")


def entity_keys(frame: pd.DataFrame, position: int, key_kind: str,
                primary_key: str) -> np.ndarray:
    """The keys in column `position`: text (``key_kind == "string"``) as objects, numbers
    as int64 when they are whole (else float64). `primary_key` (``"table.column"``) is what
    the messages compare them with."""
    values = frame.iloc[:, position]
    name = frame.columns[position]
    if key_kind == "string":
        bad = [v for v in values if not isinstance(v, str)]
        if any(pd.isna(v) for v in bad):
            raise ValueError(f"key column {name!r} has NaN (missing) keys")
        if bad:
            raise ValueError(
                f"key column {name!r} must hold text like {primary_key}, got "
                f"{type(bad[0]).__name__} values such as {bad[0]!r}"
            )
        return values.astype(object).to_numpy()
    if pd.api.types.is_datetime64_any_dtype(values):
        raise ValueError(f"key column {name!r} holds times; {primary_key} holds numbers")
    try:
        keys = float_values(values)
    except (TypeError, ValueError) as err:
        raise type(err)(
            f"key column {name!r} must hold numbers like {primary_key}: {err}"
        ) from None
    if np.isnan(keys).any():
        raise ValueError(f"key column {name!r} has NaN (missing) keys")
    if np.isinf(keys).any():
        raise ValueError(f"key column {name!r} has inf keys")
    if np.all(keys == np.round(keys)) and np.abs(keys).max() < 2**53:
        return keys.astype(np.int64)
    return keys


def cutoff_seconds(frame: pd.DataFrame, position: int) -> np.ndarray:
    """Cutoff times as whole Unix seconds (int64); naive times are read as UTC."""
    values = frame.iloc[:, position]
    name = frame.columns[position]
    if not pd.api.types.is_datetime64_any_dtype(values):
        if values.dtype == object and values.map(
            lambda v: isinstance(v, (pd.Timestamp, np.datetime64))
            or hasattr(v, "isoformat")
        ).all():
            values = pd.to_datetime(values)
        else:
            raise ValueError(
                f"cutoff column {name!r} is not a time (dtype {values.dtype}); give datetime64 "
                f"values, e.g. X[{name!r}] = pandas.to_datetime(X[{name!r}])"
            )
    times = pd.DatetimeIndex(values)
    if times.tz is not None:
        times = times.tz_convert("UTC").tz_localize(None)
    if times.isna().any():
        raise ValueError(f"cutoff column {name!r} has missing times (NaT)")
    return ((times.floor("s") - pd.Timestamp(0)) // pd.Timedelta(seconds=1)).to_numpy()


def passthrough_columns(frame: pd.DataFrame, used: list[int]) -> tuple[list[int], np.ndarray]:
    """The positions of the columns of `frame` not in `used` and their values as float64
    (missing values as NaN); a column of times, categories or text is refused."""
    positions = [j for j in range(frame.shape[1]) if j not in used]
    columns = []
    for j in positions:
        values = frame.iloc[:, j]
        name = frame.columns[j]
        if pd.api.types.is_datetime64_any_dtype(values):
            raise ValueError(
                f"X column {name!r} holds times; pass it as cutoff_column or drop it "
                "(passthrough columns must be numeric)"
            )
        if isinstance(values.dtype, pd.CategoricalDtype):
            raise ValueError(
                f"X column {name!r} is categorical; passthrough columns must be numeric "
                "(encode it, or set passthrough=False)"
            )
        try:
            column = float_values(values)
        except (TypeError, ValueError) as err:
            raise type(err)(
                f"X column {name!r} is not numeric ({err}); passthrough columns must be "
                "numeric (encode it, or set passthrough=False)"
            ) from None
        if np.isinf(column).any():
            raise ValueError(f"X column {name!r} contains inf")
        columns.append(column)
    matrix = np.column_stack(columns) if columns else np.empty((len(frame), 0))
    return positions, matrix
