"""Batch inference with a fitted skfm estimator over Dask or Spark data, partition by partition.

A fitted skfm estimator holds numpy arrays only (its torch module is rebuilt on demand), so
it pickles cheaply to every Dask worker or Spark executor, and each partition is predicted as
an in-memory ``predict`` would predict those rows (the rows of a batch never see each other;
float32 sums in batches of other sizes agree to about 1e-6).
This is the scale-out path for predictions on data that does not fit one machine's memory
(fit on a sample, predict everywhere).
"""

from __future__ import annotations

import numpy as np

METHODS = ("predict", "predict_proba", "transform", "decision_function")


def predict_partitions(estimator, X, method: str = "predict"):
    """Apply ``estimator.<method>`` to every partition of a Dask DataFrame or Array, lazily.

    Parameters
    ----------
    estimator : fitted estimator
        Any fitted skfm (or scikit-learn) estimator.
    X : dask.dataframe.DataFrame or dask.array.Array
        Rows to predict. A Dask array must be chunked along rows only (one chunk across its
        columns): each block is one batch of whole rows.
    method : {"predict", "predict_proba", "transform", "decision_function"}, default="predict"
        The estimator method to run on each partition.

    Returns
    -------
    dask.array.Array
        Lazy result, one block per partition of ``X``: 1-D for ``predict`` (and a binary
        ``decision_function``), 2-D otherwise. Call ``.compute()`` (on a
        ``dask.distributed.Client`` to use its workers).

    Raises
    ------
    ValueError
        If ``method`` is unknown or missing on the estimator, or a Dask array is chunked
        across its columns.
    TypeError
        If ``X`` is not a Dask DataFrame or Array.

    Examples
    --------
    >>> import dask.array as da
    >>> from sklearn.datasets import load_iris
    >>> from skfm import TabSwiftClassifier
    >>> from skfm.batch import predict_partitions
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = TabSwiftClassifier(n_estimators=1).fit(X, y)
    >>> lazy = predict_partitions(clf, da.from_array(X, chunks=(50, 4)), "predict_proba")
    >>> lazy.numblocks
    (3, 1)
    >>> bool(abs(lazy.compute() - clf.predict_proba(X)).max() < 1e-5)  # float32, other batches
    True
    """
    import dask.array as da
    import dask.dataframe as dd

    bound = _bound_method(estimator, method)
    if isinstance(X, dd.DataFrame):  # pandas partitions keep their dtypes and column names
        return _frame_partitions(bound, X)
    if not isinstance(X, da.Array):
        raise TypeError(f"X must be a dask DataFrame or Array, got {type(X).__name__}")
    if X.ndim != 2 or X.numblocks[1] != 1:
        raise ValueError(
            f"X must be 2-D and chunked along rows only, got shape {X.shape} with chunks "
            f"{X.chunks}; rechunk with X.rechunk({{1: -1}})"
        )
    first = next((i for i, rows in enumerate(X.chunks[0]) if rows), None)
    if first is None:
        raise ValueError("X has no rows")
    sample = bound(X.blocks[first, 0][:1].compute())  # output width and dtype
    if sample.ndim == 1:
        return X.map_blocks(bound, drop_axis=1, dtype=sample.dtype, meta=np.empty(0, sample.dtype))
    return X.map_blocks(bound, chunks=(X.chunks[0], (sample.shape[1],)), dtype=sample.dtype,
                        meta=np.empty((0, 0), sample.dtype))


def _bound_method(estimator, method: str):
    """``estimator.<method>``, one of ``METHODS``; a ValueError naming both otherwise."""
    if method not in METHODS or not hasattr(estimator, method):
        raise ValueError(
            f"method must be one of {METHODS} and exist on {type(estimator).__name__}, "
            f"got {method!r}"
        )
    return getattr(estimator, method)


def _frame_partitions(bound, X):
    """``bound`` over the pandas partitions of a Dask DataFrame, as one lazy Dask array."""
    import dask
    import dask.array as da

    lengths = X.map_partitions(len).compute()
    if not sum(lengths):
        raise ValueError("X has no rows")
    sample = np.asarray(bound(X.head(1, npartitions=-1)))  # output width and dtype
    blocks = [
        da.from_delayed(dask.delayed(bound)(part), shape=(n, *sample.shape[1:]), dtype=sample.dtype)
        for part, n in zip(X.to_delayed(), lengths, strict=True)
    ]
    return da.concatenate(blocks)


#: Name of the column :func:`predict_spark` adds, per method (Spark ML's own names).
SPARK_OUTPUT = {
    "predict": "prediction",
    "predict_proba": "probability",
    "transform": "features",
    "decision_function": "rawPrediction",
}


def predict_spark(estimator, frame, method: str = "predict", *, columns=None, output=None):
    """Add ``estimator.<method>`` of every row of a Spark DataFrame as a new column, lazily.

    The rows reach the estimator as pandas batches through ``DataFrame.mapInPandas`` (Arrow),
    on the executors; the estimator travels pickled with the task.

    Parameters
    ----------
    estimator : fitted estimator
        Any fitted skfm (or scikit-learn) estimator; set ``n_jobs`` to the cores per Spark task.
    frame : pyspark.sql.DataFrame
        Rows to predict, with the feature columns and any others (kept in the output).
    method : {"predict", "predict_proba", "transform", "decision_function"}, default="predict"
        The estimator method to run on each batch.
    columns : list of str or None, default=None
        Feature columns, in the order the estimator was fitted on. ``None`` means the
        estimator's ``feature_names_in_`` when it has them, else every column of ``frame``.
    output : str or None, default=None
        Name of the new column; ``None`` means Spark ML's name for the method
        (``"prediction"``, ``"probability"``, ``"features"``, ``"rawPrediction"``).

    Returns
    -------
    pyspark.sql.DataFrame
        ``frame``'s columns and the new one: a scalar column for 1-D outputs (double, long,
        boolean or string after the output's dtype), ``array<double>`` for 2-D outputs (one
        entry per class for ``predict_proba``, in ``estimator.classes_`` order).

    Raises
    ------
    ValueError
        If ``method`` is unknown or missing on the estimator, a feature column is missing
        from ``frame``, or ``output`` names an existing column.
    TypeError
        If ``frame`` is not a Spark DataFrame.

    Examples
    --------
    >>> # needs pyspark and a Java runtime (it starts a JVM): not run by the doctests
    >>> from pyspark.sql import SparkSession  # doctest: +SKIP
    >>> from sklearn.datasets import load_iris  # doctest: +SKIP
    >>> from skfm import TabSwiftClassifier  # doctest: +SKIP
    >>> from skfm.batch import predict_spark  # doctest: +SKIP
    >>> X, y = load_iris(return_X_y=True, as_frame=True)  # doctest: +SKIP
    >>> clf = TabSwiftClassifier(n_estimators=1, n_jobs=1).fit(X, y)  # doctest: +SKIP
    >>> spark = SparkSession.builder.master("local[2]").getOrCreate()  # doctest: +SKIP
    >>> scored = predict_spark(clf, spark.createDataFrame(X), "predict_proba")  # doctest: +SKIP
    >>> scored.columns[-1], scored.count()  # doctest: +SKIP
    ('probability', 150)
    """
    from pyspark.sql import DataFrame, types

    bound = _bound_method(estimator, method)
    if not isinstance(frame, DataFrame):
        raise TypeError(f"frame must be a pyspark.sql.DataFrame, got {type(frame).__name__}")
    fitted_names = getattr(estimator, "feature_names_in_", None)
    features = list(columns if columns is not None else
                    fitted_names if fitted_names is not None else frame.columns)
    missing = [c for c in features if c not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks the feature column(s) {missing}; it has {frame.columns}")
    output = SPARK_OUTPUT[method] if output is None else output
    if output in frame.columns:
        raise ValueError(f"frame already has a column {output!r}; choose another `output`")
    head = frame.select(features).limit(1).toPandas()
    if head.empty:
        raise ValueError("frame has no rows")
    sample = np.asarray(bound(head))  # output width and dtype
    schema = types.StructType([*frame.schema.fields, types.StructField(output, _spark_type(sample))])

    def predict_batches(batches):
        for part in batches:
            values = np.asarray(bound(part[features]))
            yield part.assign(**{output: list(values.astype(float)) if values.ndim == 2 else values})

    return frame.mapInPandas(predict_batches, schema)


def _spark_type(sample: np.ndarray):
    """The Spark SQL type of one row of ``sample`` (a method's output on one row)."""
    from pyspark.sql import types

    if sample.ndim == 2:
        return types.ArrayType(types.DoubleType(), containsNull=False)
    kind = sample.dtype.kind
    if kind == "f":
        return types.DoubleType()
    if kind in "iu":
        return types.LongType()
    if kind == "b":
        return types.BooleanType()
    return types.StringType()
