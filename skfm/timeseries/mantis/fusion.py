"""Fusion of the Mantis classifier: a second embedding beside Mantis's own.

``fusion="minirocket"``: sktime's MiniRocket (imported on first use) on the
series resized to the longest training length, and a head chosen by
cross-validation on the training set among MiniRocket's features alone,
Mantis's embeddings alone and both (:func:`select_head`), MiniRocket's unless
another is better by more than one standard error, so that the default is not
worse than its better part, up to the noise of that estimate. Any
other string: the embedding of another checkpoint, read at that checkpoint's
default layer and concatenated.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import RidgeClassifierCV
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skfm.timeseries._panel import resize_panel
from skfm.timeseries.mantis.embedding import embed_panel
from skfm.timeseries.mantis.loading import load_model

#: MiniRocket's shortest series (its kernels span 9 points); shorter ones are stretched to it.
MINIROCKET_MIN_LENGTH = 9
#: Cross-validation folds of :func:`select_head` at most (fewer when a class is smaller).
SELECTION_FOLDS = 5
#: Ridge penalties MiniRocket's ridge head chooses from (leave-one-out, on the training set).
RIDGE_ALPHAS = np.logspace(-3, 3, 10)
#: The candidates of :func:`select_head`, in order of preference (one-standard-error rule).
CANDIDATES = ("minirocket", "fusion", "mantis")


def minirocket_length(panel) -> int:
    """Length MiniRocket sees: the longest series of ``panel``, at least 9 points."""
    return max(MINIROCKET_MIN_LENGTH, max(s.shape[-1] for s in panel))


def fit_minirocket(resized: np.ndarray, seed: int, n_jobs: int | None):
    """sktime's MiniRocketMultivariate (needs numba) fitted on ``resized`` (n, C, L).

    ``n_jobs`` (None: 1) are numba's threads; the features do not depend on them.
    """
    from sktime.transformations.panel.rocket import MiniRocketMultivariate

    return MiniRocketMultivariate(random_state=seed, n_jobs=1 if n_jobs is None else n_jobs
                                  ).fit(resized)


def minirocket_features(transformer, resized: np.ndarray) -> np.ndarray:
    """MiniRocket features of ``resized`` (n, C, L): (n, n_kernels) float32.

    MiniRocket's compiled kernels take writable parameter arrays only; those of
    an estimator loaded read-only (a joblib memory map) are copied first.
    """
    if not all(array.flags.writeable for array in transformer.parameters):
        transformer = copy.copy(transformer)
        transformer.parameters = tuple(np.array(array) for array in transformer.parameters)
    return np.asarray(transformer.transform(resized), dtype=np.float32)


def checkpoint_features(checkpoint: str, panel, device: torch.device,
                        dtype: torch.dtype | None) -> np.ndarray:
    """Embeddings by another checkpoint, at its length and default layer: (n, C * 2 D)."""
    other, card = load_model(checkpoint, device)
    return embed_panel(other, resize_panel(panel, other.config.seq_len),
                       card.get("default_layer"), "combined", device, dtype)


def _ridge(blocks: list[tuple[str, slice]], weights: dict[str, float] | None = None):
    """Each block standardised (and weighted), then MiniRocket's usual head."""
    return make_pipeline(
        ColumnTransformer([(name, StandardScaler(), columns) for name, columns in blocks],
                          transformer_weights=weights),
        RidgeClassifierCV(alphas=RIDGE_ALPHAS),
    )


def select_head(features: np.ndarray, n_mantis: int, y: np.ndarray, mantis_head, seed: int):
    """The head of ``fusion="minirocket"``, chosen by stratified k-fold CV on the training set.

    The candidates, in order of preference: ``"minirocket"``, the MiniRocket
    block standardised and a ``RidgeClassifierCV`` (MiniRocket's usual
    classifier); ``"fusion"``, both blocks standardised, the Mantis block
    weighted so that both have the same total variance, and the same ridge;
    ``"mantis"``, ``mantis_head`` on the embeddings. The first candidate whose
    mean CV accuracy is within one standard error (over the folds) of the best
    one's is chosen: another head replaces MiniRocket's only when it is
    clearly better on the training data, not when a few series of a small
    training set say so. A ridge head is refitted with temperature-scaled
    probabilities (``CalibratedClassifierCV`` on the same folds), which keep
    the ridge's predictions.

    Parameters
    ----------
    features : ndarray of shape (n, n_mantis + n_minirocket)
        Mantis embeddings, then MiniRocket features.
    n_mantis : int
        Columns of the Mantis embeddings.
    y : ndarray of shape (n,)
        Class codes 0..K-1, every class present.
    mantis_head : estimator
        The head of the ``"mantis"`` candidate (unfitted).
    seed : int
        Shuffles the folds.

    Returns
    -------
    head : estimator
        The chosen candidate, fitted on all of ``features``.
    choice : str
        ``"fusion"``, ``"minirocket"`` or ``"mantis"``.
    scores : dict
        Mean CV accuracy of every candidate; empty when a class has fewer than
        2 series (then the ``"mantis"`` head is used without selection).
    standard_error : float or None
        Of the best candidate's fold accuracies: the tolerance of the choice.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skfm.timeseries.mantis.fusion import select_head
    >>> rng = np.random.default_rng(0)
    >>> y = np.tile([0, 1], 20)
    >>> features = np.hstack([rng.normal(size=(40, 4)), y[:, None] + rng.normal(size=(40, 50))])
    >>> head, choice, scores, _ = select_head(features, 4, y, LogisticRegression(), seed=0)
    >>> choice, scores["mantis"] < scores[choice]  # only the second block carries the class
    ('minirocket', True)
    """
    mantis, minirocket = slice(0, n_mantis), slice(n_mantis, None)
    weight = np.sqrt((features.shape[1] - n_mantis) / n_mantis)
    candidates = {
        "minirocket": _ridge([("minirocket", minirocket)]),
        "fusion": _ridge([("mantis", mantis), ("minirocket", minirocket)], {"mantis": weight}),
        "mantis": make_pipeline(ColumnTransformer([("mantis", "passthrough", mantis)]),
                                clone(mantis_head)),
    }
    n_folds = min(SELECTION_FOLDS, int(np.bincount(y).min()))
    if n_folds < 2:
        return candidates["mantis"].fit(features, y), "mantis", {}, None
    cv = StratifiedKFold(n_folds, shuffle=True, random_state=seed)
    folds = {name: cross_val_score(model, features, y, cv=cv)
             for name, model in candidates.items()}
    scores = {name: float(values.mean()) for name, values in folds.items()}
    best = max(scores, key=scores.get)
    standard_error = float(folds[best].std() / np.sqrt(n_folds))
    choice = next(name for name in CANDIDATES if scores[name] >= scores[best] - standard_error)
    head = candidates[choice]
    if choice != "mantis":
        head = CalibratedClassifierCV(head, method="temperature", cv=cv, ensemble=False)
    return head.fit(features, y), choice, scores, standard_error
