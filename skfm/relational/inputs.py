"""What an :class:`~skfm.relational.RDBEncoder` reads from ``X``: the position of a column,
the entity keys, the cutoff times and the passthrough columns (numbers, flags, times,
categories and text, encoded as floats).

Each function takes ``X`` as a DataFrame (an array becomes one with integer column names)
and raises a ``ValueError`` (``TypeError`` for a wrong kind of argument) that names the
column at fault.
"""

from __future__ import annotations

import datetime
import numbers

import numpy as np
import pandas as pd
from sklearn.preprocessing import OrdinalEncoder

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


def _is_time_value(value) -> bool:
    """Whether `value` is a point in time: a date or datetime (pandas, numpy or Python); a
    time of day or a duration is not."""
    return isinstance(value, (pd.Timestamp, np.datetime64, datetime.date))


def cutoff_seconds(frame: pd.DataFrame, position: int) -> np.ndarray:
    """Cutoff times as whole Unix seconds (int64); naive times are read as UTC."""
    values = frame.iloc[:, position]
    name = frame.columns[position]
    if not pd.api.types.is_datetime64_any_dtype(values):
        if values.dtype == object and values.map(_is_time_value).all():
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


#: What a passthrough column holds, and so how it becomes floats.
PASSTHROUGH_KINDS = ("number", "flag", "time", "category")


def _is_time(values: pd.Series) -> bool:
    """Whether `values` are datetime64, or objects that are all times (missing values aside)."""
    if pd.api.types.is_datetime64_any_dtype(values):
        return True
    present = values[~values.isna()]
    return values.dtype == object and len(present) > 0 and present.map(_is_time_value).all()


def passthrough_kind(values: pd.Series) -> str:
    """The kind of a passthrough column, one of :data:`PASSTHROUGH_KINDS`.

    Booleans (``bool``, ``boolean``, or objects that are all ``True``/``False``) are flags,
    times are times, categoricals and text are categories, numbers (numeric text
    included) are numbers.

    Examples
    --------
    >>> [passthrough_kind(pd.Series(v)) for v in ([1, 2], ["1.5", None], [True, None],
    ...                                           pd.to_datetime(["2024-01-01"]), ["a", None])]
    ['number', 'number', 'flag', 'time', 'category']
    """
    if _is_time(values):
        return "time"
    if isinstance(values.dtype, pd.CategoricalDtype):
        return "category"
    present = values[~values.isna()]
    if pd.api.types.is_bool_dtype(values.dtype) or (
        values.dtype == object and len(present) > 0
        and present.map(lambda v: isinstance(v, (bool, np.bool_))).all()
    ):
        return "flag"
    if pd.api.types.is_numeric_dtype(values.dtype):
        return "number"  # complex numbers included: float_values refuses them by name
    try:
        float_values(present)
    except ValueError:
        return "category"  # text
    except TypeError as err:
        raise TypeError(
            f"X column {values.name!r} is not numeric ({err}); passthrough columns hold "
            "numbers, flags, times, categories or text"
        ) from None
    return "number"


def _category_strings(values: pd.Series, name) -> np.ndarray:
    """`values` as a column of text (one per row, NaN where missing), for an OrdinalEncoder."""
    missing = np.asarray(values.isna(), dtype=bool)
    bad = [v for v in values[~missing]
           if not isinstance(v, (str, numbers.Real, np.bool_, pd.Timestamp))]
    if bad:
        raise TypeError(
            f"X column {name!r} holds {type(bad[0]).__name__} values such as {bad[0]!r}; "
            "passthrough columns hold numbers, flags, times, categories or text"
        )
    text = values.astype(str).to_numpy(dtype=object)
    text[missing] = np.nan
    return text.reshape(-1, 1)


def fit_passthrough(frame: pd.DataFrame, used: list[int]) -> tuple[list[int], list[str], list]:
    """The positions of the columns of `frame` not in `used`, their kinds and, for each
    category column, its fitted OrdinalEncoder (None for the other kinds).

    A category's code is its rank among the sorted texts seen here; a missing value and a
    category not seen here become NaN.
    """
    positions = [j for j in range(frame.shape[1]) if j not in used]
    kinds, encoders = [], []
    for j in positions:
        values = frame.iloc[:, j]
        kind = passthrough_kind(values)
        encoder = None
        if kind == "category":
            encoder = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan,
                                     encoded_missing_value=np.nan, dtype=np.float64)
            encoder.fit(_category_strings(values, frame.columns[j]))
        kinds.append(kind)
        encoders.append(encoder)
    return positions, kinds, encoders


def _time_seconds(values: pd.Series, name) -> np.ndarray:
    """Times as Unix seconds (float64, NaN where missing); naive times are read as UTC."""
    if not (_is_time(values) or values.isna().all()):
        raise ValueError(
            f"X column {name!r} held times during fit but holds {values.dtype} values now"
        )
    times = pd.DatetimeIndex(pd.to_datetime(values))
    if times.tz is not None:
        times = times.tz_convert("UTC").tz_localize(None)
    seconds = (times - pd.Timestamp(0)) / pd.Timedelta(seconds=1)
    return np.asarray(seconds, dtype=np.float64)


def passthrough_columns(frame: pd.DataFrame, positions: list[int], kinds: list[str],
                        encoders: list) -> np.ndarray:
    """The passthrough columns of `frame` as float64, shape (n_rows, len(positions)), from
    what :func:`fit_passthrough` found: numbers as they are, flags as 0/1, times as Unix
    seconds, categories as codes; missing values (and unseen categories) as NaN.

    Examples
    --------
    >>> X = pd.DataFrame({"id": [1, 2], "city": ["Oslo", "Rome"], "vip": [True, None],
    ...                   "since": pd.to_datetime(["1970-01-02", None])})
    >>> fitted = fit_passthrough(X, used=[0])
    >>> fitted[1]
    ['category', 'flag', 'time']
    >>> new = pd.DataFrame({"id": [3], "city": ["Paris"], "vip": [False],
    ...                     "since": pd.to_datetime(["1970-01-01"])})
    >>> passthrough_columns(pd.concat([X, new]), *fitted).tolist()
    [[0.0, 1.0, 86400.0], [1.0, nan, nan], [nan, 0.0, 0.0]]
    """
    columns = []
    for j, kind, encoder in zip(positions, kinds, encoders, strict=True):
        values = frame.iloc[:, j]
        name = frame.columns[j]
        if kind == "time":
            columns.append(_time_seconds(values, name))
            continue
        if kind == "category":
            columns.append(encoder.transform(_category_strings(values, name))[:, 0])
            continue
        try:
            column = float_values(values)
        except (TypeError, ValueError) as err:
            raise type(err)(
                f"X column {name!r} is not numeric ({err}); it was "
                f"{'boolean' if kind == 'flag' else 'numeric'} during fit"
            ) from None
        if np.isinf(column).any():
            raise ValueError(f"X column {name!r} contains inf")
        columns.append(column)
    return np.column_stack(columns) if columns else np.empty((len(frame), 0))
