"""RDBEncoder: a relational database into one fixed-length numeric row per entity."""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

from skfm._progress import progress_enabled
from skfm._validation import float_values
from skfm.relational.database import Database
from skfm.relational.engines import get_runner
from skfm.relational.kinds import AGGREGATIONS
from skfm.relational.plan import build_plan, enumerate_paths
from skfm.relational.schema import profile_columns, validate_database
from skfm.relational.sql import CUTOFF, EID, KEY, feature_query

ENGINES = ("duckdb", "spark")


class RDBEncoder(TransformerMixin, BaseEstimator):
    """Summarise each entity's neighbourhood in a relational database as one numeric row.

    The rows of ``X`` are the entities to predict for: a key of the entity
    table and, for temporal tasks, a cutoff time. ``transform`` follows every
    foreign-key path of 1..``max_depth`` hops from the entity and aggregates
    each column it reaches on its own (count, mean, std, min, max, frequencies
    of the frequent categories, days since the first and the last event,
    optional look-back windows). Only rows strictly before an entity's cutoff
    time enter its features. There are no trainable parameters: ``fit`` reads
    the schema and the column statistics that fix the feature list (never
    ``y``), and the features are computed by SQL, generated once and run on
    DuckDB in-process or on Apache Spark.

    Parameters
    ----------
    database : Database
        The tables, keys and time columns (see :class:`Database`). Clones of
        the encoder share it.
    entity_table : str
        Table whose rows are the entities; it needs a primary key.
    key_column : str, int or None, default=None
        Column of ``X`` holding entity keys: a name, or a position (needed for
        arrays). None: the entity table's primary-key name.
    cutoff_column : str, int or None, default=None
        Column of ``X`` holding each row's cutoff time (datetime64). None: no
        time filter, every row of the database is used.
    max_depth : int, default=2
        Longest foreign-key path, in hops. 0 keeps only the entity's own
        columns.
    aggregations : tuple of str, default=("count", "mean", "std", "min", "max", "frac")
        Any of ``"count"`` (rows on a path), ``"sum"``, ``"mean"``, ``"std"``,
        ``"min"``, ``"max"`` (of numbers, and of times as days before the
        cutoff: ``min`` is the time since the last event), ``"frac"`` (share
        of rows with each frequent category), ``"mode"`` (index of the most
        frequent of those categories, ``n_top_categories`` if none occurs)
        and ``"nunique"`` (distinct categories).
    n_top_categories : int, default=5
        Categories per categorical column that ``frac``/``mode`` and the
        single-row indicators refer to: the most frequent ones in the database
        (before the latest cutoff seen by ``fit``).
    time_windows : tuple of int or None, default=None
        Look-back windows in days; each adds ``count`` and ``mean`` features
        over the events of the last ``w`` days before the cutoff. Needs
        ``cutoff_column``.
    entity_columns : bool, default=True
        Include the columns of the entity's own row (always visible, whatever
        the cutoff: ignore leaking columns in the :class:`Database`).
    passthrough : bool, default=True
        Prepend the other (numeric) columns of ``X`` to the output. False:
        they are ignored.
    engine : {"duckdb", "spark"}, default="duckdb"
        Where the SQL runs. ``"spark"`` uses the active ``SparkSession``
        (``pip install 'skfm[spark]'`` and Java 17+).
    verbose : bool, default=False
        Let DuckDB draw its progress bar for queries longer than two seconds
        (large databases); never when the environment variable
        ``SKFM_PROGRESS`` is ``0``. Spark shows its own console progress.

    Attributes
    ----------
    plan_ : FeaturePlan
        The features, the tables and keys they use; ``plan_.to_sql(dialect)``
        shows the query.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.

    See Also
    --------
    Database : the description of tables and keys.

    Notes
    -----
    Output: float64 of shape (n_samples, n_passthrough + n_features); see
    :meth:`get_feature_names_out` for the names. An entity with no rows on a
    path (or a key that is not in the entity table) gets 0 for ``count``,
    ``sum`` and ``nunique`` and NaN for the rest: missing values, not an
    error. A parent row whose time column is at or after the cutoff counts as
    missing. Statistics that fix the feature list (category vocabularies,
    which columns hold values) use only rows before the latest cutoff in the
    ``X`` given to ``fit``, so later rows cannot change the output.

    Examples
    --------
    >>> import pandas as pd
    >>> from skfm.relational import Database, RDBEncoder
    >>> users = pd.DataFrame({"user_id": [1, 2, 3], "country": ["FR", "DE", "FR"]})
    >>> orders = pd.DataFrame({
    ...     "order_id": [10, 11, 12, 13],
    ...     "user_id": [1, 1, 2, 1],
    ...     "amount": [5.0, 7.5, 3.0, 100.0],
    ...     "time": pd.to_datetime(["2024-01-02", "2024-02-01", "2024-01-15", "2024-06-01"]),
    ... })
    >>> db = (Database()
    ...       .add_table("users", users, primary_key="user_id")
    ...       .add_table("orders", orders, primary_key="order_id",
    ...                  foreign_keys={"user_id": "users"}, time_column="time"))
    >>> X = pd.DataFrame({"user_id": [1, 2, 3],
    ...                   "cutoff": pd.to_datetime(["2024-03-01"] * 3)})
    >>> enc = RDBEncoder(db, "users", cutoff_column="cutoff",
    ...                  aggregations=("count", "mean", "max")).set_output(transform="pandas")
    >>> out = enc.fit_transform(X)
    >>> out.shape
    (3, 7)
    >>> out[["count(orders)", "mean(orders.amount)", "max(orders.time:days_ago)"]]
       count(orders)  mean(orders.amount)  max(orders.time:days_ago)
    0            2.0                 6.25                       59.0
    1            1.0                 3.00                       46.0
    2            0.0                  NaN                        NaN
    """

    def __init__(
        self,
        database,
        entity_table,
        *,
        key_column=None,
        cutoff_column=None,
        max_depth=2,
        aggregations=("count", "mean", "std", "min", "max", "frac"),
        n_top_categories=5,
        time_windows=None,
        entity_columns=True,
        passthrough=True,
        engine="duckdb",
        verbose=False,
    ):
        self.database = database
        self.entity_table = entity_table
        self.key_column = key_column
        self.cutoff_column = cutoff_column
        self.max_depth = max_depth
        self.aggregations = aggregations
        self.n_top_categories = n_top_categories
        self.time_windows = time_windows
        self.entity_columns = entity_columns
        self.passthrough = passthrough
        self.engine = engine
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # NaN passes through in the passthrough columns, but a key may never be missing:
        # allow_nan stays False so that the checks send NaN and inf keys and expect errors.
        tags.requires_fit = True
        return tags

    # ------------------------------------------------------------ parameters
    def _check_params(self) -> None:
        if not isinstance(self.database, Database):
            raise TypeError(
                f"database must be a skfm.relational.Database, got {type(self.database).__name__}"
            )
        self.database.table(self.entity_table)  # ValueError if unknown
        if self.database.table(self.entity_table).primary_key is None:
            raise ValueError(
                f"entity_table {self.entity_table!r} has no primary key; entities are named by it"
            )
        if not _is_int(self.max_depth) or self.max_depth < 0:
            raise ValueError(f"max_depth must be an int >= 0, got {self.max_depth!r}")
        if isinstance(self.aggregations, str) or not all(
            isinstance(a, str) for a in self.aggregations
        ):
            raise TypeError(f"aggregations must be a tuple of str, got {self.aggregations!r}")
        unknown = sorted(set(self.aggregations) - set(AGGREGATIONS))
        if unknown:
            raise ValueError(f"unknown aggregations {unknown}; choose from {list(AGGREGATIONS)}")
        if not _is_int(self.n_top_categories) or self.n_top_categories < 0:
            raise ValueError(
                f"n_top_categories must be an int >= 0, got {self.n_top_categories!r}"
            )
        windows = self.time_windows or ()
        if isinstance(windows, numbers.Number) or not all(
            _is_int(w) and w > 0 for w in windows
        ):
            raise ValueError(
                f"time_windows must be None or a tuple of positive ints (days), "
                f"got {self.time_windows!r}"
            )
        if windows and self.cutoff_column is None:
            raise ValueError("time_windows count back from a cutoff: set cutoff_column too")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")

    # ------------------------------------------------------------------ input
    def _columns_of(self, X, reset: bool):
        """Validate ``X``; return it as a DataFrame plus the key and cutoff positions."""
        if isinstance(X, pd.DataFrame):
            validate_data(self, X, reset=reset, skip_check_array=True)
            if X.shape[0] == 0:
                raise ValueError(
                    f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is "
                    f"required by {type(self).__name__}."
                )
            frame = X
        else:
            array = validate_data(self, X, reset=reset, dtype=None, ensure_all_finite=False)
            frame = pd.DataFrame(array)
        default = self.database.table(self.entity_table).primary_key
        key = self._position(frame, default if self.key_column is None else self.key_column,
                             "key_column")
        cutoff = None
        if self.cutoff_column is not None:
            cutoff = self._position(frame, self.cutoff_column, "cutoff_column")
            if cutoff == key:
                raise ValueError("key_column and cutoff_column name the same column of X")
        return frame, key, cutoff

    @staticmethod
    def _position(frame: pd.DataFrame, column, what: str) -> int:
        if _is_int(column):
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

    def _keys(self, frame: pd.DataFrame, position: int, key_kind: str) -> np.ndarray:
        values = frame.iloc[:, position]
        name = frame.columns[position]
        pk = f"{self.entity_table}.{self.database.table(self.entity_table).primary_key}"
        if key_kind == "string":
            bad = [v for v in values if not isinstance(v, str)]
            if any(pd.isna(v) for v in bad):
                raise ValueError(f"key column {name!r} has NaN (missing) keys")
            if bad:
                raise ValueError(
                    f"key column {name!r} must hold text like {pk}, got {type(bad[0]).__name__} "
                    f"values such as {bad[0]!r}"
                )
            return values.astype(object).to_numpy()
        if pd.api.types.is_datetime64_any_dtype(values):
            raise ValueError(f"key column {name!r} holds times; {pk} holds numbers")
        try:
            keys = float_values(values)
        except (TypeError, ValueError) as err:
            raise type(err)(f"key column {name!r} must hold numbers like {pk}: {err}") from None
        if np.isnan(keys).any():
            raise ValueError(f"key column {name!r} has NaN (missing) keys")
        if np.isinf(keys).any():
            raise ValueError(f"key column {name!r} has inf keys")
        if np.all(keys == np.round(keys)) and np.abs(keys).max() < 2**53:
            return keys.astype(np.int64)
        return keys

    @staticmethod
    def _cutoffs(frame: pd.DataFrame, position: int) -> np.ndarray:
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

    def _passthrough(self, frame: pd.DataFrame, used: list[int]) -> tuple[list[int], np.ndarray]:
        if not self.passthrough:
            return [], np.empty((len(frame), 0))
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

    # ------------------------------------------------------------------- fit
    def fit(self, X, y=None):
        """Read the schema and fix the feature list; ``y`` is ignored.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            Entity keys (``key_column``), cutoff times (``cutoff_column``,
            datetime64) and, with ``passthrough``, numeric columns.
        y : None
            Ignored.

        Returns
        -------
        self : RDBEncoder
        """
        self._check_params()
        frame, key, cutoff = self._columns_of(X, reset=True)
        runner = get_runner(self.database, self.engine, progress_enabled(self.verbose))
        validate_database(self.database, runner, self.engine)
        pk = self.database.table(self.entity_table).primary_key
        self._key_kind = runner.columns(self.entity_table)[pk][0]
        self._keys(frame, key, self._key_kind)
        before = None
        if cutoff is not None:
            before = float(self._cutoffs(frame, cutoff).max())
        used = [key] if cutoff is None else [key, cutoff]
        self._passthrough_positions, _ = self._passthrough(frame, used)

        paths = enumerate_paths(self.database, self.entity_table, self.max_depth)
        tables = dict.fromkeys([self.entity_table] + [h.target for p in paths for h in p])
        columns = {
            table: profile_columns(self.database, runner, table, before=before,
                                   n_top_categories=self.n_top_categories)
            for table in tables
        }
        self.plan_ = build_plan(
            self.database,
            self.entity_table,
            columns,
            max_depth=self.max_depth,
            aggregations=tuple(self.aggregations),
            time_windows=tuple(self.time_windows or ()),
            entity_columns=self.entity_columns,
            temporal=cutoff is not None,
        )
        if not self.plan_.output_names and not self._passthrough_positions:
            raise ValueError(
                f"no features: table {self.entity_table!r} has no usable columns within "
                f"max_depth={self.max_depth} hops and X has no passthrough columns"
            )
        return self

    # -------------------------------------------------------------- transform
    def transform(self, X):
        """Compute the features of every row of ``X``.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            Same columns as in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, n_features_out)
            float64; passthrough columns first, then the relational features
            (names: :meth:`get_feature_names_out`). A DataFrame after
            ``set_output(transform="pandas")``.
        """
        check_is_fitted(self)
        frame, key, cutoff = self._columns_of(X, reset=False)
        keys = self._keys(frame, key, self._key_kind)
        entities = pd.DataFrame({KEY: keys})
        if self.plan_.temporal:
            entities[CUTOFF] = self._cutoffs(frame, cutoff)
        used = [key] if cutoff is None else [key, cutoff]
        _, passthrough = self._passthrough(frame, used)
        row_entity = entities.groupby(list(entities.columns), sort=False).ngroup().to_numpy()
        unique = entities.drop_duplicates().reset_index(drop=True)
        unique.insert(0, EID, np.arange(len(unique), dtype=np.int64))
        features = self._compute(unique)
        return np.hstack([passthrough, features[row_entity]])

    def _compute(self, unique: pd.DataFrame) -> np.ndarray:
        """Run the plan for the distinct entities; rows in ``EID`` order, output columns only."""
        plan = self.plan_
        if not plan.features:
            return np.empty((len(unique), 0))
        runner = get_runner(self.database, self.engine, progress_enabled(self.verbose))
        result = runner.features(lambda entities: feature_query(plan, runner.ref, entities),
                                 unique)
        result = result.set_index(EID).reindex(np.arange(len(unique)))
        matrix = np.full((len(unique), len(plan.features)), np.nan)
        for i, feature in enumerate(plan.features):
            if feature.agg != "mode":
                matrix[:, i] = result[f"f{i}"].to_numpy(dtype=np.float64, na_value=np.nan)
        for i, feature in enumerate(plan.features):
            if feature.agg == "mode":
                helpers = [j for j, f in enumerate(plan.features)
                           if f.agg == "frac" and f.path == feature.path
                           and f.column == feature.column]
                matrix[:, i] = _mode(matrix[:, helpers])
        matrix = matrix[:, [i for i, f in enumerate(plan.features) if f.output]]
        overflowed = np.isinf(matrix).any(axis=0)
        if overflowed.any():
            names = [name for name, bad in zip(plan.output_names, overflowed, strict=True) if bad]
            raise ValueError(
                f"features {names[:5]} overflowed float64 to infinity: the columns they "
                "aggregate hold values too large in magnitude for their sums or variances; "
                "rescale those columns (e.g. to other units)"
            )
        return matrix

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns: passthrough names, then path-and-aggregation names.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Input column names; only checked against ``feature_names_in_``.

        Returns
        -------
        ndarray of str, shape (n_features_out,)
        """
        check_is_fitted(self)
        names = _check_feature_names_in(self, input_features)
        passthrough = [str(names[j]) for j in self._passthrough_positions]
        return np.asarray(passthrough + self.plan_.output_names, dtype=object)


def _mode(fractions: np.ndarray) -> np.ndarray:
    """Index of the largest share (first on ties); k when all are 0; NaN without rows."""
    k = fractions.shape[1]
    out = np.argmax(fractions, axis=1).astype(np.float64)
    out[np.nanmax(fractions, axis=1, initial=-1.0) <= 0] = k
    out[np.isnan(fractions).all(axis=1)] = np.nan
    return out


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
