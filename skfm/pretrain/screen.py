"""Quick screens of a model being pretrained on real data: the learning curve of a run.

Held-out prior batches say whether pretraining fits its prior; they do not say
whether it helps on real data. :func:`tabular_screen` scores the weights of a
TabSwift model being trained on a fixed set of classification tables
(OpenML-CC18 ``.npz`` files, as in ``../shared/data/openml_cc18``): one
stratified 50/50 split per table (seed 0), one ensemble member, no guard (the
network alone), the mean ROC-AUC; :func:`regression_screen` the mean R² on a
folder of regression tables alike. :func:`series_screen` scores a Mantis encoder's frozen embeddings with
a logistic head on UCR/UEA sets (``.npz`` files with official splits, as in
``../shared/data/ucr``): the mean test accuracy. Run at every evaluation of
``skfm pretrain tabswift|mantis --screen DIR``, their values over the steps are
the learning curve that a checkpoint card records.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from skfm.pretrain._loop import save_model

#: Ten CC18 tables: five where tree ensembles led tabswift-v2 on ROC-AUC and five where it led
#: them (docs/benchmarks/tabswift_cc18.md).
SCREEN_TABLES = (
    "tic-tac-toe", "steel-plates-fault", "car", "pc4", "cylinder-bands",
    "credit-g", "diabetes", "cmc", "pc3", "balance-scale",
)


def npz_names(data: str | Path) -> list[str]:
    """The names of the ``.npz`` files in ``data`` (without the suffix), sorted."""
    return sorted(path.stem for path in Path(data).glob("*.npz"))


def screen_weights(
    model: torch.nn.Module, family: str, metric: str, names, score: Callable[[str, str], float],
    prefix: str = "screen_",
) -> dict:
    """Score ``model``'s weights on every name, and time it: the record every screen returns.

    Parameters
    ----------
    model : torch.nn.Module
        The weights to score; saved as a ``family`` checkpoint to a temporary file.
    family : {"tabswift", "mantis"}
        The model family the checkpoint's card names.
    metric : str
        The record's key for the mean score.
    names : sequence of str
        The tables or sets to score.
    score : callable
        ``score(checkpoint, name)``: the score of the saved checkpoint (a path) on ``name``.
    prefix : str, default="screen_"
        Of the keys of the seconds and the per-name scores; two screens of one
        evaluation need different ones (a regression table may share a name
        with a classification table: "diabetes").

    Returns
    -------
    dict
        ``metric`` (the mean), ``<prefix>seconds`` and ``<prefix><name>`` per name.
    """
    start = time.perf_counter()
    scores = {}
    with tempfile.TemporaryDirectory() as folder:
        weights = save_model(model, Path(folder) / "screen.safetensors",
                             {"model": family, "config": model.config.to_dict()})
        for name in names:
            scores[name] = score(str(weights), name)
    return {metric: float(np.mean(list(scores.values()))),
            f"{prefix}seconds": round(time.perf_counter() - start, 1),
            **{f"{prefix}{name}": round(float(value), 4) for name, value in scores.items()}}


def load_table(data: str | Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Features (NaN = missing) and integer labels of ``<data>/<name>.npz``."""
    with np.load(Path(data) / f"{name}.npz", allow_pickle=False) as table:
        return table["X"].astype(np.float32), table["y"].astype(np.int64)


def tabular_screen(
    model: torch.nn.Module, data: str | Path, tables=None, max_train_rows: int = 1024
) -> dict:
    """Mean ROC-AUC of ``model``'s weights on the screen tables, and the seconds it took.

    Parameters
    ----------
    model : TabSwift
        The weights to score (for example the EMA of a running pretraining).
    data : str or Path
        Folder of the tables' ``.npz`` files.
    tables : sequence of str, optional
        Table names (files ``<name>.npz``); default: every ``.npz`` in ``data``.
        :data:`SCREEN_TABLES` are the ten of the earlier runs.
    max_train_rows : int
        Training rows kept per table at most (the first ones of the split).

    Returns
    -------
    dict
        ``screen_roc_auc`` (mean), ``screen_seconds`` and ``screen_<table>`` per table.
    """
    from skfm.tabular.classifier import TabSwiftClassifier

    def score(weights: str, name: str) -> float:
        X, y = load_table(data, name)
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.5, stratify=y, random_state=0)
        classifier = TabSwiftClassifier(checkpoint=weights, n_estimators=1, guard=False,
                                        device="cpu", random_state=0)
        proba = classifier.fit(X_train[:max_train_rows], y_train[:max_train_rows]).predict_proba(X_test)
        binary = proba.shape[1] == 2
        return roc_auc_score(y_test, proba[:, 1] if binary else proba, multi_class="ovr",
                             labels=None if binary else classifier.classes_)

    names = npz_names(data) if tables is None else tables
    if not names:
        raise FileNotFoundError(f"no .npz classification tables in {data}")
    return screen_weights(model, "tabswift", "screen_roc_auc", names, score)


def regression_screen(model: torch.nn.Module, data: str | Path, max_train_rows: int = 1024) -> dict:
    """Mean R² of ``model``'s weights on the regression tables ``<data>/*.npz`` (``X``, ``y``).

    One 50/50 split per table (seed 0), one ensemble member, no guard: the
    network alone, as :func:`tabular_screen` scores it on classification.

    Returns
    -------
    dict
        ``screen_r2`` (mean), ``screen_r2_seconds`` and ``screen_r2_<table>`` per table
        (their own keys beside :func:`tabular_screen`'s).
    """
    from sklearn.metrics import r2_score

    from skfm.tabular.regressor import TabSwiftRegressor

    def score(weights: str, name: str) -> float:
        with np.load(Path(data) / f"{name}.npz", allow_pickle=False) as table:
            X, y = table["X"].astype(np.float32), table["y"].astype(np.float64)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, random_state=0)
        regressor = TabSwiftRegressor(checkpoint=weights, n_estimators=1, guard=False,
                                      device="cpu", random_state=0)
        regressor.fit(X_train[:max_train_rows], y_train[:max_train_rows])
        return r2_score(y_test, regressor.predict(X_test))

    names = npz_names(data)
    if not names:
        raise FileNotFoundError(f"no .npz regression tables in {data}")
    return screen_weights(model, "tabswift", "screen_r2", names, score, prefix="screen_r2_")


def series_screen(model: torch.nn.Module, data: str | Path, datasets=None) -> dict:
    """Mean test accuracy of ``model``'s frozen embeddings + logistic regression on UCR/UEA sets.

    Parameters
    ----------
    model : Mantis
        The weights to score (for example the EMA of a running pretraining).
    data : str or Path
        Folder of the sets' ``.npz`` files (``X_train``, ``y_train``, ``X_test``,
        ``y_test``; X of shape (n, channels, length)).
    datasets : sequence of str, optional
        Set names (files ``<name>.npz``); default: every ``.npz`` in ``data``.

    Returns
    -------
    dict
        ``screen_accuracy`` (mean), ``screen_seconds`` and ``screen_<set>`` per set.
    """
    from skfm.timeseries import MantisTimeSeriesClassifier

    def score(weights: str, name: str) -> float:
        with np.load(Path(data) / f"{name}.npz", allow_pickle=False) as arrays:
            X_train, y_train, X_test, y_test = (
                arrays[key] for key in ("X_train", "y_train", "X_test", "y_test"))
        classifier = MantisTimeSeriesClassifier(checkpoint=weights, fusion=None,
                                                device="cpu", random_state=0)
        return classifier.fit(X_train, y_train).score(X_test, y_test)

    names = npz_names(data) if datasets is None else datasets
    if not names:
        raise FileNotFoundError(f"no .npz time-series sets in {data}")
    return screen_weights(model, "mantis", "screen_accuracy", names, score)
