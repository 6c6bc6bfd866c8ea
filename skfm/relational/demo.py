"""The relational part of ``skfm demo``: RDBEncoder on a real database."""

from __future__ import annotations

import time
import warnings

N_TRAIN, N_TEST = 3000, 1500


def run_rdb_demo(quick: bool = False) -> list[dict]:
    """Predict which nycflights13 flights leave late from the database; the scores.

    The nycflights13 database that ships with skfm (flights from New York City in
    January to March 2013, with planes, airlines, airports and hourly weather; see
    :func:`~skfm.relational.datasets.load_nycflights13_tables`) is encoded by
    :class:`~skfm.relational.RDBEncoder` into one row per flight, from what is known at
    its scheduled departure: the local hour (passed through), the plane, airline,
    airports and weather it points to, and the flights that left before it (depth 2,
    counts and means, a one-day window). TabSwift and HistGradientBoosting are trained
    on 3,000 February flights and scored (ROC-AUC) on 1,500 March flights: will the
    flight leave at least 15 minutes late?

    Parameters
    ----------
    quick : bool, default=False
        Two TabSwift ensemble members instead of eight.

    Returns
    -------
    list of dict
        One row per model: ``model``, ``features``, ``roc_auc``, ``seconds`` (the
        encoding, shared, plus the model's fit and predict), ``train_rows`` and
        ``test_rows``.

    Examples
    --------
    >>> from skfm.relational.demo import run_rdb_demo
    >>> rows = run_rdb_demo(quick=True)  # doctest: +SKIP
    >>> [(r["model"], r["train_rows"], r["test_rows"]) for r in rows]  # doctest: +SKIP
    [('RDBEncoder + TabSwift', 3000, 1500), ('RDBEncoder + HistGradientBoosting', 3000, 1500)]
    """
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    from skfm.relational import datasets
    from skfm.relational.encoder import RDBEncoder
    from skfm.tabular.classifier import TabSwiftClassifier

    tables = datasets.load_nycflights13_tables()
    db = datasets.nycflights13_database(tables)
    train = datasets.flight_delay_task(tables, "train", max_rows=N_TRAIN)
    test = datasets.flight_delay_task(tables, "test", max_rows=N_TEST)
    columns = ["flight_id", "scheduled", "hour"]
    encoder = RDBEncoder(db, "flights", cutoff_column="scheduled", entity_columns=False,
                         aggregations=("count", "mean"), time_windows=(1,))
    start = time.perf_counter()
    with warnings.catch_warnings():  # planes and airports lack some of the flights' keys
        warnings.filterwarnings("ignore", message=".* names no row of ")
        Z_train = encoder.fit_transform(train[columns])
    Z_test = encoder.transform(test[columns])
    # paths that reach no row for any training flight (no flight leaves from a destination
    # airport) give columns without a value: HistGradientBoosting cannot bin them
    kept = ~np.isnan(Z_train).all(axis=0)
    Z_train, Z_test = Z_train[:, kept], Z_test[:, kept]
    encoding = time.perf_counter() - start
    models = [("RDBEncoder + TabSwift", TabSwiftClassifier(n_estimators=2 if quick else 8)),
              ("RDBEncoder + HistGradientBoosting",
               HistGradientBoostingClassifier(random_state=0))]
    rows = []
    for name, model in models:
        start = time.perf_counter()
        model.fit(Z_train, train["delayed"])
        proba = model.predict_proba(Z_test)[:, 1]
        rows.append({"model": name, "features": Z_train.shape[1],
                     "roc_auc": roc_auc_score(test["delayed"], proba),
                     "seconds": encoding + time.perf_counter() - start,
                     "train_rows": len(train), "test_rows": len(test)})
    return rows
