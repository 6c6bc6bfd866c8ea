"""The relational part of ``skfm demo``: RDBEncoder on a real database."""

from __future__ import annotations

import time


def run_rdb_demo(f1_data=None, quick: bool = False) -> list[dict]:
    """Predict RelBench's rel-f1 ``driver-top3`` from the database; the scores.

    The Formula-1 database (nine tables, 1950-2024; by default the copy that
    ships with skfm, see :func:`~skfm.relational.datasets.load_f1_tables`) is encoded by
    :class:`~skfm.relational.RDBEncoder` into one row per (driver, cutoff date);
    TabSwift and HistGradientBoosting are trained on the pre-2005 rows and
    scored (ROC-AUC) on RelBench's test rows from 2010 on. TabSwift is given a
    compact encoding (one hop, counts and means, a one-year window), the trees
    the full depth-2 encoding.

    Parameters
    ----------
    f1_data : path-like or None, default=None
        None: the packaged tables. A folder: read by
        :func:`~skfm.relational.datasets.load_f1_tables` (Ergast CSV files such
        as ``../shared/data/f1``).
    quick : bool, default=False
        Two TabSwift ensemble members instead of eight.

    Returns
    -------
    list of dict
        One row per model: ``model``, ``features``, ``roc_auc``, ``seconds``,
        ``train_rows`` and ``test_rows``.

    Examples
    --------
    >>> from skfm.relational.demo import run_rdb_demo
    >>> rows = run_rdb_demo(quick=True)  # doctest: +SKIP
    >>> [(r["model"], r["train_rows"], r["test_rows"]) for r in rows]  # doctest: +SKIP
    [('RDBEncoder(compact) + TabSwift', 1353, 726), ('RDBEncoder + HistGradientBoosting', 1353, 726)]
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    from skfm.relational import datasets
    from skfm.relational.encoder import RDBEncoder
    from skfm.tabular.classifier import TabSwiftClassifier

    tables = datasets.load_f1_tables(f1_data)
    db = datasets.f1_database(tables)
    train, test = (datasets.f1_task(tables, "driver-top3", s) for s in ("train", "test"))
    X_train, X_test = train[["driverId", "date"]], test[["driverId", "date"]]
    setups = [
        ("RDBEncoder(compact) + TabSwift",
         RDBEncoder(db, "drivers", cutoff_column="date", max_depth=1,
                    aggregations=("count", "mean"), time_windows=(365,)),
         TabSwiftClassifier(n_estimators=2 if quick else 8)),
        ("RDBEncoder + HistGradientBoosting",
         RDBEncoder(db, "drivers", cutoff_column="date", time_windows=(90, 365)),
         HistGradientBoostingClassifier(random_state=0)),
    ]
    rows = []
    for name, encoder, model in setups:
        start = time.perf_counter()
        Z_train = encoder.fit_transform(X_train)
        model.fit(Z_train, train["qualifying"])
        proba = model.predict_proba(encoder.transform(X_test))[:, 1]
        rows.append({"model": name, "features": Z_train.shape[1],
                     "roc_auc": roc_auc_score(test["qualifying"], proba),
                     "seconds": time.perf_counter() - start,
                     "train_rows": len(train), "test_rows": len(test)})
    return rows
