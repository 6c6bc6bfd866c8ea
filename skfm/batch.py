"""Batch inference with a fitted skfm estimator over Dask collections, partition by partition.

A fitted skfm estimator holds numpy arrays only (its torch module is rebuilt on demand), so
it pickles cheaply to every Dask worker, and each partition is predicted as an in-memory
``predict`` would predict those rows (the rows of a batch never see each other; float32 sums
in batches of other sizes agree to about 1e-6).
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

    if method not in METHODS or not hasattr(estimator, method):
        raise ValueError(
            f"method must be one of {METHODS} and exist on {type(estimator).__name__}, "
            f"got {method!r}"
        )
    bound = getattr(estimator, method)
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
