"""Fusion of the Mantis classifier: a second embedding beside Mantis's own.

``fusion="minirocket"``: sktime's MiniRocket (imported on first use) on the
series resized to the longest training length, and a head chosen by
cross-validation on the training set among MiniRocket's features alone,
Mantis's embeddings alone and both (:func:`select_head`): MiniRocket's unless
another beats it clearly (by twice the corrected standard error of a repeated
CV), so that the choice is MiniRocket wherever the training data cannot tell
the heads apart (the classifier's default, ``fusion="late"``, is in
:mod:`.late_fusion`). Any other string: the embedding of another checkpoint, read at that checkpoint's
default layer and concatenated.
"""

from __future__ import annotations

import copy
from numbers import Integral

import numpy as np
import torch
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import RidgeClassifierCV
from sklearn.model_selection import RepeatedStratifiedKFold, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skfm._backend import cast_module, draw_seed
from skfm._selection import gain_margin
from skfm.timeseries._panel import resize_panel
from skfm.timeseries.mantis.embedding import embed_panel
from skfm.timeseries.mantis.loading import load_model

#: MiniRocket's shortest series (its kernels span 9 points); shorter ones are stretched to it.
MINIROCKET_MIN_LENGTH = 9
#: Cross-validation folds of :func:`select_head` at most (fewer when a class is smaller).
SELECTION_FOLDS = 5
#: Repeats of that cross-validation, each with other folds.
SELECTION_REPEATS = 3
#: Corrected standard errors by which another head must beat MiniRocket's in the CV.
SELECTION_Z = 2.0
#: Ridge penalties MiniRocket's ridge head chooses from (leave-one-out, on the training set).
RIDGE_ALPHAS = np.logspace(-3, 3, 10)
#: The heads that may replace MiniRocket's in :func:`select_head`.
ALTERNATIVES = ("fusion", "mantis")
#: The values of the classifier's ``fusion`` that use MiniRocket's features (``"late"``:
#: :mod:`~skfm.timeseries.mantis.late_fusion`).
MINIROCKET_FUSIONS = ("minirocket", "late")


def minirocket_length(panel) -> int:
    """Length MiniRocket sees: the longest series of ``panel``, at least 9 points."""
    return max(MINIROCKET_MIN_LENGTH, max(s.shape[-1] for s in panel))


def fit_minirocket(panel, n_kernels: int, random_state, n_jobs: int | None):
    """sktime's MiniRocketMultivariate (needs numba) fitted on ``panel`` resized to its
    :func:`minirocket_length`: that length and the fitted transformer.

    ``n_kernels`` is its ``num_kernels`` (rounded down to a multiple of 84); an int
    ``random_state`` seeds it as it is (``random_state=0`` gives the features of
    ``MiniRocketMultivariate(random_state=0)``); ``n_jobs`` (None: 1) are numba's
    threads; the features do not depend on them.
    """
    from sktime.transformations.panel.rocket import MiniRocketMultivariate

    length = minirocket_length(panel)
    seed = random_state if isinstance(random_state, Integral) else draw_seed(random_state)
    transformer = MiniRocketMultivariate(num_kernels=n_kernels, random_state=seed,
                                         n_jobs=1 if n_jobs is None else n_jobs)
    return length, transformer.fit(resize_panel(panel, length))


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
    other = cast_module(other, dtype)  # a float64 copy for dtype float64
    return embed_panel(other, resize_panel(panel, other.config.seq_len),
                       card.get("default_layer"), "combined", device, dtype)


def ridge_head(blocks=(("minirocket", slice(0, None)),), weights: dict[str, float] | None = None):
    """MiniRocket's usual head: each block of columns, ``(name, columns)``, standardised (and
    weighted by ``weights[name]``), then a ``RidgeClassifierCV`` over ``RIDGE_ALPHAS``."""
    return make_pipeline(
        ColumnTransformer([(name, StandardScaler(), columns) for name, columns in blocks],
                          transformer_weights=weights),
        RidgeClassifierCV(alphas=RIDGE_ALPHAS),
    )


def select_head(features: np.ndarray, n_mantis: int, y: np.ndarray, mantis_head, seed: int,
                n_folds: int = SELECTION_FOLDS):
    """The head of ``fusion="minirocket"``: MiniRocket's unless the training data clearly say otherwise.

    The candidates: ``"minirocket"``, the MiniRocket block standardised and a
    ``RidgeClassifierCV`` (MiniRocket's usual classifier); ``"fusion"``, both
    blocks standardised, the Mantis block weighted so that both have the same
    total variance, and the same ridge; ``"mantis"``, ``mantis_head`` on the
    embeddings. All three are scored on the same splits of a stratified
    ``n_folds``-fold cross-validation repeated ``SELECTION_REPEATS`` times. An
    alternative replaces MiniRocket's head only when its mean gain in accuracy
    over MiniRocket's, split by split, exceeds ``SELECTION_Z`` times its
    standard error corrected for the overlap of the training sets (the
    corrected resampled t-test of Nadeau and Bengio, 2003; the variance of
    the gains times ``1 / (repeats * folds) + 1 / (folds - 1)``); of several
    such, the one with the largest gain. A ridge head is refitted with
    temperature-scaled probabilities (``CalibratedClassifierCV`` on one
    stratified k-fold split), which keep the ridge's predictions.

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
    n_folds : int, default=5
        Folds at most (fewer when a class has fewer series).

    Returns
    -------
    head : estimator
        The chosen candidate, fitted on all of ``features``.
    choice : str
        ``"minirocket"``, ``"fusion"`` or ``"mantis"``.
    scores : dict
        Mean CV accuracy of every candidate; empty when a class has a single
        series: no split can hold it out, and MiniRocket's head is used, its
        temperature fitted on its own training predictions (overconfident
        probabilities; its predictions are MiniRocket + ridge's).
    margins : dict or None
        For ``"fusion"`` and ``"mantis"``: the gain over MiniRocket's mean CV
        accuracy it had to exceed (``SELECTION_Z`` corrected standard errors).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skfm.timeseries.mantis.fusion import select_head
    >>> rng = np.random.default_rng(0)
    >>> y = np.tile([0, 1], 20)
    >>> features = np.hstack([y[:, None] + rng.normal(size=(40, 4)), rng.normal(size=(40, 50))])
    >>> head, choice, scores, margins = select_head(features, 4, y, LogisticRegression(), seed=0)
    >>> choice  # only the Mantis block carries the class: a clear gain over MiniRocket's
    'fusion'
    >>> scores["fusion"] - scores["minirocket"] > margins["fusion"]
    True
    """
    mantis, minirocket = slice(0, n_mantis), slice(n_mantis, None)
    weight = np.sqrt((features.shape[1] - n_mantis) / n_mantis)
    candidates = {
        "minirocket": ridge_head([("minirocket", minirocket)]),
        "fusion": ridge_head([("mantis", mantis), ("minirocket", minirocket)], {"mantis": weight}),
        "mantis": make_pipeline(ColumnTransformer([("mantis", "passthrough", mantis)]),
                                clone(mantis_head)),
    }
    n_folds = min(n_folds, int(np.bincount(y).min()))
    if n_folds < 2:  # no split holds every class out: MiniRocket's head, calibrated on its fit
        rows = np.arange(len(y))
        head = CalibratedClassifierCV(FrozenEstimator(candidates["minirocket"].fit(features, y)),
                                      method="temperature", cv=[(rows, rows)])
        return head.fit(features, y), "minirocket", {}, None
    splits = RepeatedStratifiedKFold(n_splits=n_folds, n_repeats=SELECTION_REPEATS,
                                     random_state=seed)
    folds = {name: cross_val_score(model, features, y, cv=splits)
             for name, model in candidates.items()}
    scores = {name: float(values.mean()) for name, values in folds.items()}
    margins, gains = {}, {}
    for name in ALTERNATIVES:
        gain = folds[name] - folds["minirocket"]
        margins[name] = gain_margin(gain, n_folds, SELECTION_Z)
        if gain.mean() > margins[name]:
            gains[name] = gain.mean()
    choice = max(gains, key=gains.get) if gains else "minirocket"
    head = candidates[choice]
    if choice != "mantis":
        head = CalibratedClassifierCV(
            head, method="temperature", ensemble=False,
            cv=StratifiedKFold(n_folds, shuffle=True, random_state=seed))
    return head.fit(features, y), choice, scores, margins
