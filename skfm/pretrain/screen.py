"""A quick screen of a TabSwift model on real tables: the learning curve of a pretraining run.

Held-out prior batches say whether pretraining fits its prior; they do not say
whether it helps on real data. :func:`tabular_screen` scores the weights of a
model being trained on a fixed set of classification tables (OpenML-CC18
``.npz`` files, as in ``../shared/data/openml_cc18``): one stratified 50/50
split per table (seed 0), one ensemble member, the mean ROC-AUC. Run at every
evaluation of ``skfm pretrain tabswift --screen DIR``, its values over the steps
are the learning curve that a checkpoint card records.
"""

from __future__ import annotations

import tempfile
import time
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


def load_table(data: str | Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Features (NaN = missing) and integer labels of ``<data>/<name>.npz``."""
    with np.load(Path(data) / f"{name}.npz", allow_pickle=False) as table:
        return table["X"].astype(np.float32), table["y"].astype(np.int64)


def tabular_screen(
    model: torch.nn.Module, data: str | Path, tables=SCREEN_TABLES, max_train_rows: int = 1024
) -> dict:
    """Mean ROC-AUC of ``model``'s weights on the screen tables, and the seconds it took.

    Parameters
    ----------
    model : TabSwift
        The weights to score (for example the EMA of a running pretraining).
    data : str or Path
        Folder of the tables' ``.npz`` files.
    tables : sequence of str
        Table names (files ``<name>.npz``).
    max_train_rows : int
        Training rows kept per table at most (the first ones of the split).

    Returns
    -------
    dict
        ``screen_roc_auc`` (mean), ``screen_seconds`` and ``screen_<table>`` per table.
    """
    from skfm.tabular.classifier import TabSwiftClassifier

    start = time.perf_counter()
    scores = {}
    with tempfile.TemporaryDirectory() as folder:
        weights = save_model(model, Path(folder) / "screen.safetensors",
                             {"model": "tabswift", "config": model.config.to_dict()})
        for name in tables:
            X, y = load_table(data, name)
            X_train, X_test, y_train, y_test = train_test_split(
                X, y, test_size=0.5, stratify=y, random_state=0)
            classifier = TabSwiftClassifier(checkpoint=str(weights), n_estimators=1, device="cpu",
                                            random_state=0)
            proba = classifier.fit(X_train[:max_train_rows], y_train[:max_train_rows]).predict_proba(X_test)
            binary = proba.shape[1] == 2
            scores[name] = roc_auc_score(y_test, proba[:, 1] if binary else proba, multi_class="ovr",
                                         labels=None if binary else classifier.classes_)
    return {"screen_roc_auc": float(np.mean(list(scores.values()))),
            "screen_seconds": round(time.perf_counter() - start, 1),
            **{f"screen_{name}": round(float(score), 4) for name, score in scores.items()}}
