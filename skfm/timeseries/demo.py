"""The time-series part of ``skfm demo``: Mantis and Time-PEFT on data shipped with sktime."""

from __future__ import annotations

import time
import warnings


def mantis_demo_rows(quick: bool = False) -> list[dict]:
    """Score MantisTimeSeriesClassifier and raw-series baselines on shipped UCR/UEA data.

    GunPoint (and, unless ``quick``, ArrowHead and the 6-channel BasicMotions),
    official train/test splits, ROC-AUC (one-vs-rest for more than two
    classes). Needs sktime for the datasets.

    Parameters
    ----------
    quick : bool, default=False
        GunPoint only.

    Returns
    -------
    list of dict
        Rows ``{"task", "dataset", "model", "score", "seconds"}`` in the format
        of ``skfm._commands.run_demo``.

    Examples
    --------
    >>> from skfm.timeseries.demo import mantis_demo_rows
    >>> rows = mantis_demo_rows(quick=True)
    >>> sorted({r["model"] for r in rows})
    ['LogisticRegression (raw)', 'MantisTimeSeriesClassifier', 'RandomForest (raw)']
    """
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sktime.datasets import load_arrow_head, load_basic_motions, load_gunpoint

    from skfm.timeseries.mantis.classifier import MantisTimeSeriesClassifier

    loaders = {"GunPoint": load_gunpoint, "ArrowHead": load_arrow_head,
               "BasicMotions": load_basic_motions}
    if quick:
        loaders = {"GunPoint": load_gunpoint}
    rows = []
    for name, loader in loaders.items():
        X_train, y_train = loader(split="train", return_type="numpy3D")
        X_test, y_test = loader(split="test", return_type="numpy3D")
        models = {
            "MantisTimeSeriesClassifier": (MantisTimeSeriesClassifier(), False),
            "LogisticRegression (raw)": (
                make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)), True),
            "RandomForest (raw)": (RandomForestClassifier(n_estimators=300, random_state=0), True),
        }
        for model_name, (model, flat) in models.items():
            train, test = X_train, X_test
            if flat:
                train, test = X_train.reshape(len(X_train), -1), X_test.reshape(len(X_test), -1)
            start = time.perf_counter()
            proba = model.fit(train, y_train).predict_proba(test)
            seconds = time.perf_counter() - start
            if proba.shape[1] == 2:
                score = roc_auc_score(y_test == model.classes_[1], proba[:, 1])
            else:
                score = roc_auc_score(y_test, proba, multi_class="ovr", labels=model.classes_)
            rows.append({"task": "classification", "dataset": name, "model": model_name,
                         "score": float(score), "seconds": seconds})
    return rows



def timepeft_demo_rows(quick: bool = False) -> list[dict]:
    """Score TimePEFTForecaster and sktime baselines on series shipped with sktime.

    Airline (monthly passengers, log) and, unless ``quick``, Lynx (annual
    trappings, log): the last 24 (Airline) or 12 (Lynx) points are forecast
    from the rest; the score is the R² of the forecast over those points
    (higher is better; 0 is the test mean).

    Parameters
    ----------
    quick : bool, default=False
        Airline only.

    Returns
    -------
    list of dict
        Rows ``{"task", "dataset", "model", "score", "seconds"}`` in the format
        of ``skfm._commands.run_demo``.

    Examples
    --------
    >>> from skfm.timeseries.demo import timepeft_demo_rows
    >>> rows = timepeft_demo_rows(quick=True)
    >>> sorted({r["model"] for r in rows})
    ['LinearAR (Ridge)', 'SeasonalNaive', 'TimePEFTForecaster']
    """
    import numpy as np
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score
    from sktime.datasets import load_airline, load_lynx
    from sktime.forecasting.compose import make_reduction
    from sktime.forecasting.naive import NaiveForecaster

    from skfm.timeseries.forecasting.forecaster import TimePEFTForecaster

    sets = {"Airline": (load_airline, 24, 12, 48), "Lynx": (load_lynx, 12, 10, 32)}
    if quick:
        sets = {"Airline": sets["Airline"]}
    rows = []
    for name, (loader, horizon, season, context) in sets.items():
        y = np.log(loader())
        y_train, y_test = y.iloc[:-horizon], y.iloc[-horizon:]
        fh = np.arange(1, horizon + 1)
        with warnings.catch_warnings():  # sktime's notice of its coming remember_data default
            warnings.filterwarnings("ignore", ".*remember_data", FutureWarning)
            baselines = {
                "SeasonalNaive": NaiveForecaster(strategy="last", sp=season),
                "LinearAR (Ridge)": make_reduction(Ridge(alpha=1.0), window_length=context,
                                                   strategy="recursive"),
            }
        models = {
            "TimePEFTForecaster": TimePEFTForecaster(
                context_length=context, max_epochs=30, learning_rate=3e-3,
                validation_fraction=0.15, random_state=0),
            **{name: model.set_config(remember_data=False) for name, model in baselines.items()},
        }
        for model_name, model in models.items():
            start = time.perf_counter()
            pred = model.fit(y_train, fh=fh).predict()
            rows.append({"task": "forecasting", "dataset": name, "model": model_name,
                         "score": float(r2_score(y_test, pred)),
                         "seconds": time.perf_counter() - start})
    return rows
