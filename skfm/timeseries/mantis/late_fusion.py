"""Late fusion of the Mantis classifier: Mantis's head and MiniRocket + ridge, both calibrated,
their probabilities multiplied with a weight chosen by out-of-fold log loss.

``fusion="late"`` adds where ``fusion="minirocket"`` picks: :class:`LateFusionClassifier`
fits MiniRocket's ridge (:func:`~.fusion.ridge_head`) on the MiniRocket block
and Mantis's head (a logistic regression by default) on the embeddings, and
predicts::

    softmax((1 - w) * b_r * s_r + w * b_m * s_m)

with ``s_r``, ``s_m`` the class scores of the two (the ridge's decision values;
the logistic regression's logits, ``log p`` for a head without a decision
function), ``b_r``, ``b_m`` their inverse temperatures and ``w`` Mantis's weight:
a weighted geometric mean of the two temperature-scaled distributions,
renormalised. ``w = 0`` is MiniRocket + ridge with temperature-scaled
probabilities, ``w = 1`` Mantis's head with them. One stratified k-fold split of
the training set gives out-of-fold scores of both; each temperature minimises
its head's out-of-fold log loss, and ``w`` is the value of :data:`WEIGHTS` whose
fused out-of-fold probabilities have the smallest log loss (the smaller weight
on a tie).

:data:`WEIGHTS` stop at one half: Mantis adds to MiniRocket but never outvotes
it. Out-of-fold scores of a small training set are noisy and, trained on
(k - 1)/k of the rows, understate MiniRocket's 10,000-feature ridge more than
Mantis's 256-feature head; without the bound the fusion handed Herring (64
training series) and FaceFour (24) to Mantis at weights 1.0 and 0.6 and lost
9.4 and 9.1 points to MiniRocket. Leave-one-out scores and the one-standard-error
rule did not help (``docs/benchmarks/mantis_late_fusion.md``). A weight above one
half can still be given as ``weight``.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted

from skfm.timeseries.mantis.fusion import ridge_head

#: Mantis's weights tried when none is given (0: MiniRocket + ridge alone; at most one half,
#: see the module docstring).
WEIGHTS = np.round(np.linspace(0.0, 0.5, 6), 2)
#: Bounds and tolerance of the log inverse temperature (those of scikit-learn's temperature
#: scaling, ``CalibratedClassifierCV(method="temperature")``).
LOG_BETA_BOUNDS = (-10.0, 10.0)
LOG_BETA_TOLERANCE = 64 * np.finfo(np.float64).eps
#: The smallest probability whose log is a class score (a head without a decision function).
MIN_PROBABILITY = 1e-12


def class_scores(model, X: np.ndarray, method: str | None = None) -> np.ndarray:
    """Class scores of a fitted classifier: (n, K) float64, softmax-able.

    ``decision_function`` where the classifier has one (a binary model's
    ``d`` as ``(-d / 2, d / 2)``, so that a logistic regression's softmax is its
    probability), else ``log predict_proba`` floored at ``MIN_PROBABILITY``.
    ``method`` gives the output of that method instead of calling it (``X`` are
    then its values, as :func:`~sklearn.model_selection.cross_val_predict` returns them).
    """
    kind = scoring_method(model)
    values = np.asarray(getattr(model, kind)(X) if method is None else X, dtype=np.float64)
    if kind == "predict_proba":
        return np.log(np.maximum(values, MIN_PROBABILITY))
    return np.column_stack([-values / 2, values / 2]) if values.ndim == 1 else values


def scoring_method(model) -> str:
    """``"decision_function"`` if ``model`` has one, else ``"predict_proba"``."""
    return "decision_function" if hasattr(model, "decision_function") else "predict_proba"


def mean_log_loss(scores: np.ndarray, y: np.ndarray) -> float:
    """Mean negative log-likelihood of classes ``y`` (codes) under ``softmax(scores)``."""
    return float(-log_softmax(scores, axis=1)[np.arange(len(y)), y].mean())


def inverse_temperature(scores: np.ndarray, y: np.ndarray) -> float:
    """The ``b`` minimising the log loss of ``softmax(b * scores)`` (temperature scaling, as
    scikit-learn's ``CalibratedClassifierCV(method="temperature")`` fits it).

    Examples
    --------
    >>> import numpy as np
    >>> from skfm.timeseries.mantis.late_fusion import inverse_temperature
    >>> scores = np.array([[2.0, -2.0], [-2.0, 2.0], [1.0, -1.0], [1.0, -1.0]])
    >>> b = inverse_temperature(scores, np.array([0, 1, 0, 1]))  # one of four wrong: soften
    >>> 0 < b < 1
    True
    """
    found = minimize_scalar(lambda log_b: mean_log_loss(np.exp(log_b) * scores, y),
                            bounds=LOG_BETA_BOUNDS, method="bounded",
                            options={"xatol": LOG_BETA_TOLERANCE})
    return float(np.exp(found.x))


class LateFusionClassifier(ClassifierMixin, BaseEstimator):
    """Late fusion of MiniRocket + ridge and Mantis's head, each temperature-scaled.

    The head of ``MantisTimeSeriesClassifier(fusion="late")``; see the module
    docstring for the formula.

    Parameters
    ----------
    n_mantis : int
        Columns of ``X`` that are Mantis embeddings (the first); the rest are
        MiniRocket features.
    mantis_head : estimator or None, default=None
        Mantis's classifier (cloned); None: ``StandardScaler`` +
        ``LogisticRegression``.
    weight : float in [0, 1] or None, default=None
        Mantis's weight; None: chosen from :data:`WEIGHTS` (0 to 0.5) by
        out-of-fold log loss. A head with weight 0 is not fitted; 1 is
        Mantis's head alone.
    n_folds : int, default=5
        Folds of the stratified split (fewer when a class has fewer rows).
        With a class of one row no split holds it out: the temperatures are
        fitted on the training rows' own scores (too confident), and ``weight``
        None means 0.
    random_state : int, default=0
        Shuffles the folds.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    weight_ : float
        Mantis's weight.
    losses_ : ndarray of shape (len(WEIGHTS),) or None
        Out-of-fold log loss of the fused probabilities at every weight of
        :data:`WEIGHTS` (None when ``weight`` is given or no split exists).
    inverse_temperatures_ : dict
        ``{"minirocket": b_r, "mantis": b_m}`` (of the heads that were scored).
    estimators_ : dict
        The fitted heads with a positive weight, by name.

    Examples
    --------
    >>> import numpy as np
    >>> from skfm.timeseries.mantis.late_fusion import WEIGHTS, LateFusionClassifier
    >>> rng = np.random.default_rng(0)
    >>> y = np.tile([0, 1], 30)
    >>> X = np.hstack([y[:, None] + rng.normal(size=(60, 2)), rng.normal(size=(60, 50))])
    >>> fused = LateFusionClassifier(n_mantis=2).fit(X, y)  # only the Mantis block knows y
    >>> fused.weight_, bool(fused.weight_ == WEIGHTS[fused.losses_.argmin()])
    (0.5, True)
    >>> fused.predict_proba(X[:2]).sum(1)
    array([1., 1.])
    """

    _parameter_constraints: dict = {
        "n_mantis": [Interval(Integral, 1, None, closed="left")],
        "mantis_head": [HasMethods(["fit", "predict_proba"]), None],
        "weight": [Interval(Real, 0, 1, closed="both"), None],
        "n_folds": [Interval(Integral, 2, None, closed="left")],
        "random_state": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, n_mantis: int, mantis_head=None, weight: float | None = None,
                 n_folds: int = 5, random_state: int = 0):
        self.n_mantis = n_mantis
        self.mantis_head = mantis_head
        self.weight = weight
        self.n_folds = n_folds
        self.random_state = random_state

    def _blocks(self, X: np.ndarray) -> dict[str, np.ndarray]:
        return {"minirocket": X[:, self.n_mantis:], "mantis": X[:, :self.n_mantis]}

    def _heads(self) -> dict:
        mantis = self.mantis_head if self.mantis_head is not None else make_pipeline(
            StandardScaler(), LogisticRegression(max_iter=2000))
        return {"minirocket": ridge_head(), "mantis": clone(mantis)}

    @staticmethod
    def _shares(weight: float) -> dict[str, float]:
        """Each head's weight; those of weight 0 are left out."""
        return {name: share for name, share in (("minirocket", 1.0 - weight), ("mantis", weight))
                if share > 0}

    def fit(self, X, y):
        """Score both heads out of fold, fit the temperatures and the weight, refit the heads.

        Parameters
        ----------
        X : ndarray of shape (n, n_mantis + n_minirocket)
            Mantis embeddings, then MiniRocket features.
        y : array-like of shape (n,)
            Class labels (at least two classes).

        Returns
        -------
        self : LateFusionClassifier
        """
        self._validate_params()
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] <= self.n_mantis:
            raise ValueError(f"X must be 2-D with more than n_mantis={self.n_mantis} columns "
                             f"(Mantis's, then MiniRocket's), got shape {X.shape}")
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError("LateFusionClassifier needs at least 2 classes, got 1")
        blocks, heads = self._blocks(X), self._heads()
        n_folds = min(self.n_folds, int(np.bincount(codes).min()))
        folds = StratifiedKFold(n_folds, shuffle=True, random_state=self.random_state) if (
            n_folds >= 2) else None
        scored = heads if self.weight is None else self._shares(self.weight)
        scores = {name: self._out_of_fold(heads[name], blocks[name], codes, folds)
                  for name in scored}
        self.inverse_temperatures_ = {name: inverse_temperature(values, codes)
                                      for name, values in scores.items()}
        self.losses_ = None
        if self.weight is not None:
            self.weight_ = float(self.weight)
        elif folds is None:
            self.weight_ = 0.0
        else:
            self.losses_ = np.array([mean_log_loss(self._fused(scores, w), codes)
                                     for w in WEIGHTS])
            self.weight_ = float(WEIGHTS[np.argmin(self.losses_)])
        self.estimators_ = {name: heads[name].fit(blocks[name], codes)
                            for name in self._shares(self.weight_)}
        return self

    @staticmethod
    def _out_of_fold(head, X: np.ndarray, y: np.ndarray, folds) -> np.ndarray:
        """Class scores of ``head`` on every row from a fit without it (in sample without
        ``folds``)."""
        if folds is None:
            return class_scores(clone(head).fit(X, y), X)
        method = scoring_method(head)
        return class_scores(head, cross_val_predict(head, X, y, cv=folds, method=method),
                            method=method)

    def _fused(self, scores: dict[str, np.ndarray], weight: float) -> np.ndarray:
        """``sum(share * b * s)`` over the heads of positive share: fused class scores."""
        shares = self._shares(weight)
        return sum(share * self.inverse_temperatures_[name] * scores[name]
                   for name, share in shares.items())

    def _scores(self, X) -> np.ndarray:
        """Fused class scores, log-probabilities up to a constant per row: (n, n_classes)."""
        check_is_fitted(self)
        blocks = self._blocks(np.asarray(X, dtype=np.float64))
        return self._fused({name: class_scores(head, blocks[name])
                            for name, head in self.estimators_.items()}, self.weight_)

    def predict_proba(self, X) -> np.ndarray:
        """Fused class probabilities, columns in the order of ``classes_``: (n, n_classes)."""
        return softmax(self._scores(X), axis=1)

    def predict(self, X) -> np.ndarray:
        """The most probable class of every row."""
        return self.classes_[self._scores(X).argmax(1)]
