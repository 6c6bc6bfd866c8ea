"""Data shared by the asv suites: random tables of a given size, and small real data sets.

``make_data`` feeds the timing and memory entries (sizes are parameters); the ``track_``
entries score on real data that ships with scikit-learn or sktime (``real_split``,
``standardised``), so their numbers mean the same on every machine.
"""

import numpy as np


def make_data(n_ctx, n_test, n_features, task="classification", seed=0):
    """Random features with a linear signal in half of them.

    Parameters
    ----------
    n_ctx, n_test, n_features : int
        Training rows, test rows and columns.
    task : {"classification", "regression"}, default="classification"
        Binary labels or a continuous target.
    seed : int, default=0
        Seed of the generator.

    Returns
    -------
    X_ctx : ndarray of shape (n_ctx, n_features)
    y_ctx : ndarray of shape (n_ctx,)
    X_test : ndarray of shape (n_test, n_features)
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_ctx + n_test, n_features)).astype(np.float32)
    k = max(1, n_features // 2)
    y = X[:, :k] @ rng.standard_normal(k) + 0.5 * rng.standard_normal(len(X))
    if task == "classification":
        y = (y > 0).astype(np.int64)
    return X[:n_ctx], y[:n_ctx], X[n_ctx:]


def real_split(name, n_train=None, seed=0):
    """A scikit-learn data set split 50/50 (stratified for classification).

    Parameters
    ----------
    name : {"breast_cancer", "diabetes"}
        Binary classification (569 rows, 30 features) or regression (442 rows, 10).
    n_train : int or None, default=None
        Keep this many training rows (and as many test rows); None keeps the halves.
    seed : int, default=0
        Seed of the split.

    Returns
    -------
    X_train, X_test, y_train, y_test : ndarray
    """
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    stratify = y if name == "breast_cancer" else None
    split = train_test_split(X, y, test_size=0.5, random_state=seed, stratify=stratify)
    if n_train is not None:
        split = [part[:n_train] for part in split]
    return split


def standardised(X_train, X_test):
    """Both scaled by the training mean and standard deviation (budgets are in these units)."""
    mean, std = X_train.mean(0), X_train.std(0) + 1e-12
    return (X_train - mean) / std, (X_test - mean) / std
