"""RDBEncoder: a relational database into one fixed-length numeric row per entity.

The scikit-learn glue only: parameters, ``fit``/``transform`` and the output names. Reading
``X`` lives in :mod:`skfm.relational.inputs`, planning and computing the features in
:mod:`skfm.relational.features`.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

from skfm._progress import progress_enabled
from skfm.relational.database import Database
from skfm.relational.engines import get_runner
from skfm.relational.features import compute_features, plan_features
from skfm.relational.inputs import (
    column_position,
    cutoff_seconds,
    entity_keys,
    fit_passthrough,
    is_int,
    passthrough_columns,
)
from skfm.relational.kinds import AGGREGATIONS
from skfm.relational.schema import validate_database
from skfm.relational.sql import CUTOFF, EID, KEY

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
        Prepend the other columns of ``X`` to the output, as floats: numbers
        as they are, booleans as 0/1, times as Unix seconds (naive ones read
        as UTC), categoricals and text as the rank of their text among the
        values seen by ``fit``; missing values and categories ``fit`` did not
        see become NaN. False: they are ignored.
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
    _parameter_constraints: dict = {
        "database": [Database],
        "entity_table": [str],
        "key_column": [str, Interval(Integral, 0, None, closed="left"), None],
        "cutoff_column": [str, Interval(Integral, 0, None, closed="left"), None],
        "max_depth": [Interval(Integral, 0, None, closed="left")],
        "aggregations": ["array-like"],
        "n_top_categories": [Interval(Integral, 0, None, closed="left")],
        "time_windows": ["array-like", None],
        "entity_columns": ["boolean"],
        "passthrough": ["boolean"],
        "engine": [StrOptions(set(ENGINES))],
        "verbose": ["verbose"],
    }

    def _check_param_values(self) -> None:
        """What the constraints above cannot say: the entity table is in the database and has
        a primary key, the aggregations are known, the windows positive ints of days that
        count back from a cutoff."""
        if self.database.table(self.entity_table).primary_key is None:  # ValueError if unknown
            raise ValueError(
                f"entity_table {self.entity_table!r} has no primary key; entities are named by it"
            )
        unknown = sorted({repr(a) for a in self.aggregations
                          if not (isinstance(a, str) and a in AGGREGATIONS)})
        if unknown:
            raise ValueError(
                f"unknown aggregations [{', '.join(unknown)}]; choose from {list(AGGREGATIONS)}"
            )
        windows = () if self.time_windows is None else self.time_windows
        if not all(is_int(w) and w > 0 for w in windows):
            raise ValueError(
                f"time_windows must be None or a tuple of positive ints (days), "
                f"got {self.time_windows!r}"
            )
        if len(windows) and self.cutoff_column is None:
            raise ValueError("time_windows count back from a cutoff: set cutoff_column too")

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
        key = column_position(frame, default if self.key_column is None else self.key_column,
                              "key_column")
        cutoff = None
        if self.cutoff_column is not None:
            cutoff = column_position(frame, self.cutoff_column, "cutoff_column")
            if cutoff == key:
                raise ValueError("key_column and cutoff_column name the same column of X")
        return frame, key, cutoff

    def _keys(self, frame: pd.DataFrame, position: int) -> np.ndarray:
        pk = f"{self.entity_table}.{self.database.table(self.entity_table).primary_key}"
        return entity_keys(frame, position, self._key_kind, pk)

    def _passthrough(self, frame: pd.DataFrame) -> np.ndarray:
        return passthrough_columns(frame, self._passthrough_positions, self._passthrough_kinds,
                                   self._passthrough_encoders)

    # ------------------------------------------------------------------- fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Read the schema and fix the feature list; ``y`` is ignored.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            Entity keys (``key_column``), cutoff times (``cutoff_column``,
            datetime64) and, with ``passthrough``, other columns of numbers,
            booleans, times, categories or text (missing values allowed).
        y : None
            Ignored.

        Returns
        -------
        self : RDBEncoder
        """
        self._check_param_values()
        frame, key, cutoff = self._columns_of(X, reset=True)
        runner = get_runner(self.database, self.engine, progress_enabled(self.verbose))
        validate_database(self.database, runner, self.engine)
        pk = self.database.table(self.entity_table).primary_key
        self._key_kind = runner.columns(self.entity_table)[pk][0]
        self._keys(frame, key)
        before = None
        if cutoff is not None:
            before = float(cutoff_seconds(frame, cutoff).max())
        used = [key] if cutoff is None else [key, cutoff]
        if not self.passthrough:
            used = list(range(frame.shape[1]))
        (self._passthrough_positions, self._passthrough_kinds,
         self._passthrough_encoders) = fit_passthrough(frame, used)
        self._passthrough(frame)  # refuses inf and values that are no numbers, flags or times
        self.plan_ = plan_features(
            self.database,
            runner,
            self.entity_table,
            max_depth=self.max_depth,
            aggregations=tuple(self.aggregations),
            n_top_categories=self.n_top_categories,
            time_windows=() if self.time_windows is None else tuple(self.time_windows),
            entity_columns=self.entity_columns,
            before=before,
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
        keys = self._keys(frame, key)
        entities = pd.DataFrame({KEY: keys})
        if self.plan_.temporal:
            entities[CUTOFF] = cutoff_seconds(frame, cutoff)
        passthrough = self._passthrough(frame)
        row_entity = entities.groupby(list(entities.columns), sort=False).ngroup().to_numpy()
        unique = entities.drop_duplicates().reset_index(drop=True)
        unique.insert(0, EID, np.arange(len(unique), dtype=np.int64))
        features = np.empty((len(unique), 0))
        if self.plan_.features:  # only passthrough columns: no engine needed
            runner = get_runner(self.database, self.engine, progress_enabled(self.verbose))
            features = compute_features(self.plan_, runner, unique)
        return np.hstack([passthrough, features[row_entity]])

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

