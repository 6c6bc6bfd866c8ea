"""Input conversion shared by the estimators: values to floats, missing values to NaN."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, column_or_1d


def float_values(values) -> np.ndarray:
    """``values`` as a float64 array, with every missing value as NaN.

    Missing values are ``None``, ``NaN``, ``pd.NA`` and ``NaT``, whether in an
    object array or a pandas nullable (``Int64``, ``Float64``, ``boolean``)
    column. Numeric strings such as ``"1.5"`` are read as numbers.

    Parameters
    ----------
    values : array-like
        A column, a table or a panel of values.

    Returns
    -------
    ndarray of float64, same shape as ``np.asarray(values)``

    Raises
    ------
    ValueError
        If a value is text that is not a number; the message shows it.
    TypeError
        If a value is another object that is not a real number (complex
        numbers, containers); the message shows it.

    Examples
    --------
    >>> import pandas as pd
    >>> from skfm._validation import float_values
    >>> float_values(pd.Series([1, None, pd.NA], dtype=object)).tolist()
    [1.0, nan, nan]
    >>> float_values(pd.Series(["1.5", "x"], dtype=object))
    Traceback (most recent call last):
    ...
    ValueError: not a real number: 'x' (could not convert string to float: 'x')
    """
    array = np.asarray(values)
    if array.dtype.kind == "c":
        raise TypeError(f"not a real number: complex values such as {array.flat[0]!r}")
    if array.dtype.kind == "O":
        array = np.where(pd.isna(array), np.nan, array)
    try:
        return array.astype(np.float64)
    except (TypeError, ValueError) as err:
        raise type(err)(f"not a real number: {_first_non_real(array)!r} ({err})") from None


def _first_non_real(array: np.ndarray):
    """The first value of ``array`` that ``float`` refuses."""
    for value in array.flat:
        try:
            float(value)
        except (TypeError, ValueError):
            return value.item() if isinstance(value, np.generic) else value
    return None


def class_labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted classes of the labels ``y`` and each label's index among them.

    ``np.unique(y, return_inverse=True)``, after refusing missing labels (which
    it cannot sort among strings) and, with scikit-learn's
    ``check_classification_targets``, targets that are not classes.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        Class labels.

    Returns
    -------
    classes : ndarray of shape (n_classes,)
    codes : ndarray of shape (n_samples,)

    Raises
    ------
    ValueError
        If a label is missing (``None``, ``NaN``, ``pd.NA``) or ``y`` holds
        continuous or multi-output targets.

    Examples
    --------
    >>> from skfm._validation import class_labels
    >>> classes, codes = class_labels(np.array(["b", "a", "b"]))
    >>> classes.tolist(), codes.tolist()
    (['a', 'b'], [1, 0, 1])
    """
    missing = np.flatnonzero(pd.isna(y))
    if missing.size:
        raise ValueError(
            f"Input y contains NaN or other missing labels (None, pd.NA): {missing.size}, "
            f"e.g. at position {missing[0]}; drop those rows or give them a class"
        )
    check_classification_targets(y)
    return np.unique(y, return_inverse=True)


def check_target(estimator, y, *, numeric: bool = False) -> np.ndarray:
    """The target ``y`` passed to ``estimator.fit``, as a 1-d array.

    Parameters
    ----------
    estimator : estimator
        The estimator being fitted (its class names it in the error).
    y : array-like of shape (n_samples,) or (n_samples, 1), or None
        The target; a column vector is raveled with scikit-learn's
        ``DataConversionWarning``.
    numeric : bool, default=False
        Convert ``y`` to finite float64 (regression) rather than keep its labels.

    Returns
    -------
    ndarray of shape (n_samples,)

    Raises
    ------
    ValueError
        If ``y`` is None (the estimator requires it), is not 1-d, or, with
        ``numeric=True``, holds missing, infinite or non-numeric values.

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> from skfm._validation import check_target
    >>> check_target(LinearRegression(), [1, 2.5], numeric=True).tolist()
    [1.0, 2.5]
    >>> check_target(LinearRegression(), None)
    Traceback (most recent call last):
    ...
    ValueError: LinearRegression requires y to be passed, but the target y is None
    """
    if y is None:
        raise ValueError(
            f"{type(estimator).__name__} requires y to be passed, but the target y is None"
        )
    if numeric:
        y = check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
    return column_or_1d(y, warn=True)


def probability_rows(proba) -> np.ndarray:
    """Class probabilities as float64 rows that sum to 1.

    Every skfm classifier's ``predict_proba`` ends here: probabilities computed
    in float32 sum to 1 only within ~1e-7, and are renormalised in float64.

    Parameters
    ----------
    proba : array-like of shape (n_samples, n_classes)
        Non-negative scores, each row with a positive sum.

    Returns
    -------
    ndarray of shape (n_samples, n_classes), float64

    Examples
    --------
    >>> from skfm._validation import probability_rows
    >>> rows = probability_rows(np.array([[0.2, 0.3000001], [1.0, 3.0]], dtype=np.float32))
    >>> rows.dtype, bool(np.abs(rows.sum(1) - 1).max() < 1e-15)
    (dtype('float64'), True)
    """
    proba = np.asarray(proba, dtype=np.float64)
    return proba / proba.sum(axis=1, keepdims=True)
