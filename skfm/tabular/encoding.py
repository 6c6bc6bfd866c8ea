"""Turn user tables (numpy or pandas, mixed types, missing values) into floats.

Numeric columns become float with NaN for missing values (``None``, ``pd.NA``,
``NaN``). Categorical columns (pandas ``category``/``object``/``string``/
``bool`` dtypes, or numpy object columns whose values are not numbers) become
ordinal codes of the categories seen during ``fit``; missing values and
categories never seen during ``fit`` become NaN, which the model treats as
missing. Infinite values are refused.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils.validation import _check_feature_names, _check_n_features, check_array


def is_categorical(column: pd.Series) -> bool:
    if isinstance(column.dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(column.dtype):
        return True
    if pd.api.types.is_numeric_dtype(column.dtype):
        return False
    present = column.dropna()
    if present.empty and isinstance(column.dtype, pd.StringDtype):
        return True  # declared text, nothing seen yet: later values are (unseen) categories
    try:  # object columns holding numbers (and missing values) stay numeric
        pd.to_numeric(present, errors="raise")
    except (TypeError, ValueError):
        return True
    return False


def as_frame(X, copy: bool = True) -> pd.DataFrame:
    """``X`` as a DataFrame; ``copy=False`` may share an array's memory (to read only)."""
    if isinstance(X, pd.DataFrame):
        if X.shape[1] == 0:  # check_array's message, which arrays get below
            raise ValueError(
                f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                "required."
            )
        return X.reset_index(drop=True)
    array = check_array(
        X, dtype=None, ensure_all_finite=False, ensure_2d=True, ensure_min_samples=1
    )
    return pd.DataFrame(array, copy=copy)


def _plain_numeric(dtype) -> bool:
    """Whether a column of ``dtype`` converts to float64 as it is (NA to NaN): real numbers.

    Examples
    --------
    >>> [_plain_numeric(t) for t in (np.dtype("int8"), pd.Float64Dtype(), np.dtype(object))]
    [True, True, False]
    """
    return (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
            and not pd.api.types.is_complex_dtype(dtype))


def _missing(column: pd.Series) -> np.ndarray:
    return np.asarray(column.isna(), dtype=bool)


def _match_by_value(codes: np.ndarray, column: pd.Series, categories: np.ndarray) -> np.ndarray:
    """``codes`` with the numbers of ``column`` that matched no category by their text matched
    by value: 1.0 is the category ``"1"``, 1 and 0 are ``"True"`` and ``"False"``.

    A categorical column comes back as floats from a round trip through a float array, as
    shap's maskers do with every column; without this, its categories would all be unseen.

    Examples
    --------
    >>> numbers = np.array(["1", "2", "a"], dtype=object)
    >>> _match_by_value(np.array([-1, -1, -1, 2]), pd.Series([2.0, 1.0, 3.0, 0.0]), numbers)
    array([ 1,  0, -1,  2])
    >>> flags = np.array(["False", "True"], dtype=object)
    >>> _match_by_value(np.array([-1, -1]), pd.Series([1.0, 0.0]), flags)
    array([1, 0])
    """
    unmatched = codes < 0
    if not unmatched.any():
        return codes
    values = pd.to_numeric(
        pd.Series(categories).replace({"True": "1", "False": "0"}), errors="coerce"
    )
    code_of = {value: code for code, value in enumerate(values) if not np.isnan(value)}
    found = pd.Series(column.to_numpy()[unmatched]).map(code_of).fillna(-1)
    codes = codes.copy()
    codes[unmatched] = found.to_numpy(dtype=codes.dtype)
    return codes


def tabular_tags(tags):
    """Set the scikit-learn tags of an estimator whose ``X`` goes through :class:`TabularEncoder`.

    Missing values, categorical and text columns are accepted, and a fixed
    ``random_state`` gives the same predictions.

    Parameters
    ----------
    tags : sklearn.utils.Tags
        The tags from ``super().__sklearn_tags__()``, changed in place.

    Returns
    -------
    sklearn.utils.Tags

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> tags = tabular_tags(LinearRegression().__sklearn_tags__())
    >>> tags.input_tags.allow_nan, tags.input_tags.string
    (True, True)
    """
    tags.input_tags.allow_nan = True
    tags.input_tags.categorical = True
    tags.input_tags.string = True
    tags.non_deterministic = False
    return tags


class TabularEncoder:
    """Fit-once encoder of mixed-type tables into float arrays with NaN.

    Attributes
    ----------
    categories_ : dict of int -> ndarray
        For each categorical column index, its categories in code order.
    """

    def fit(self, X, estimator) -> TabularEncoder:
        """Learn column kinds and categories; sets ``n_features_in_`` (and
        ``feature_names_in_`` for DataFrames) on ``estimator``."""
        _check_feature_names(estimator, X, reset=True)
        frame = as_frame(X)
        _check_n_features(estimator, frame, reset=True)
        self.categories_ = {}
        for j in range(frame.shape[1]):
            column = frame.iloc[:, j]
            if is_categorical(column):
                present = column[~_missing(column)]
                self.categories_[j] = np.array(sorted(set(present.astype(str))), dtype=object)
        return self

    def transform(self, X, estimator) -> np.ndarray:
        """Encode ``X`` with the fitted kinds, shape (n_samples, n_features), float64."""
        return self.encode(self.check(X, estimator))

    def check(self, X, estimator) -> pd.DataFrame:
        """``X`` as a DataFrame with the fitted columns (names and count checked).

        It shares the memory of a numpy ``X``; :meth:`encode` encodes it, or any
        slice of its rows (each row is encoded on its own).
        """
        _check_feature_names(estimator, X, reset=False)
        frame = as_frame(X, copy=False)
        _check_n_features(estimator, frame, reset=False)
        if frame.shape[0] == 0:
            raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required.")
        return frame

    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        """Floats of the rows of a :meth:`check`-ed frame, shape (n_rows, n_features)."""
        out = np.empty(frame.shape, dtype=np.float64)
        plain = [j for j, dtype in enumerate(frame.dtypes)
                 if j not in self.categories_ and _plain_numeric(dtype)]
        if plain:  # one conversion for every plain numeric column (the common case)
            out[:, plain] = frame.iloc[:, plain].to_numpy(dtype=np.float64, na_value=np.nan)
        for j in sorted(set(range(frame.shape[1])) - set(plain)):
            column = frame.iloc[:, j]
            missing = _missing(column)
            if j in self.categories_:
                codes = pd.Index(self.categories_[j]).get_indexer(column.astype(str))
                if pd.api.types.is_numeric_dtype(column.dtype):
                    codes = _match_by_value(codes, column, self.categories_[j])
                out[:, j] = np.where((codes < 0) | missing, np.nan, codes)
                continue
            try:
                values = pd.to_numeric(column.where(~missing, np.nan), errors="raise")
            except (TypeError, ValueError) as err:
                name = frame.columns[j]
                raise ValueError(
                    f"column {name!r} was numeric during fit but holds non-numeric values now: {err}"
                ) from None
            out[:, j] = np.asarray(values, dtype=np.float64)
        if np.isinf(out).any():
            bad = [frame.columns[j] for j in np.flatnonzero(np.isinf(out).any(0))]
            raise ValueError(
                f"Input X contains infinity in column(s) {bad[:5]}; replace it by a finite "
                "value or NaN (NaN is treated as missing)."
            )
        return out
