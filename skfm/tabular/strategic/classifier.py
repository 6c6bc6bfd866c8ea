"""SPNClassifier: an in-context classifier refitted on strategic in-context examples."""

from __future__ import annotations

from numbers import Integral

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, _fit_context, clone
from sklearn.utils import get_tags
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from skfm._validation import check_target, class_labels, float_values
from skfm.tabular.classifier import TabSwiftClassifier
from skfm.tabular.encoding import as_frame
from skfm.tabular.strategic.costs import COST_CONSTRAINTS, cost_weights
from skfm.tabular.strategic.response import (
    MANIPULABLE_CONSTRAINT,
    best_response,
    favourable_index,
    manipulable_features,
)


class SPNClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Strategy-aware classifier: an in-context learner with strategic in-context examples.

    Once a classifier is deployed, individuals whose prediction is unfavourable move their
    features to obtain the favourable one when that costs at most ``budget`` (see
    :func:`best_response`). A model fitted on clean data is biased on such manipulated inputs.
    SPN corrects this at inference time, without retraining the in-context model: ``fit``
    moves every context row as it would best-respond to the deployed classifier (labels kept)
    and refits the base estimator on that strategic context, whose posterior matches the
    manipulated inputs. The deployed classifier is first the base estimator fitted on the clean
    rows; each further iteration (``n_iter``) deploys the previous strategic model and moves the
    clean context against it, towards a fixed point between the classifier and the agents'
    response. ``predict`` reads (already manipulated) inputs against the last strategic
    context. This follows the SPN abstract (ICML 2026); the paper's algorithm is not public, so
    this is a reconstruction.

    Parameters
    ----------
    estimator : classifier or None, default=None
        Base in-context estimator with ``predict_proba``; None means ``TabSwiftClassifier()``.
        It is cloned and refitted, never modified.
    cost : {"l2", "quadratic", "linear"}, default="l2"
        Cost of moving from ``x`` to ``z`` with weights ``a``: ``||a*(z-x)||_2``,
        ``||a*(z-x)||_2**2`` or ``sum_j a_j |z_j-x_j|``.
    budget : float, default=1.0
        The most an agent pays to be labelled favourable (>= 0). With standardised features
        and ``cost="l2"``, 1.0 lets an agent move one standard deviation. 0 means no one
        moves and SPN is the base estimator.
    cost_weight : array-like of shape (n_features,) or None, default=None
        Positive price of moving each feature by one unit; None means all ones.
    manipulable : int, str, list of int or str, or None, default=None
        Features agents can change: positions, or column names of a DataFrame. None means
        every numeric column. The others (immutable ones) never move.
    favourable_class : label or None, default=None
        The outcome agents want; None means the last of ``classes_`` (1 for labels 0/1 or
        -1/+1).
    n_iter : int, default=1
        Fixed-point iterations: rounds of moving the clean context against the deployed
        classifier and refitting on it. 0 gives the base estimator unchanged.
    random_state : int, RandomState or None, default=0
        Seeds the random directions of the black-box best-response search.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.
    estimator_ : classifier
        The base estimator fitted on the clean context (the non-strategic model).
    deployed_estimator_ : classifier
        The classifier agents answer: ``estimator_`` when ``n_iter <= 1``, else the strategic
        model of the previous iteration.
    strategic_estimator_ : classifier
        The base estimator fitted on the last strategic context; it makes the predictions.
    manipulable_ : ndarray of int
        Positions of the features that can move.
    n_moved_ : list of int
        Context rows that moved, per iteration.

    See Also
    --------
    best_response : the agents' move against any fitted classifier.
    TabSwiftClassifier : the default base estimator.

    Notes
    -----
    ``spn.predict(spn.best_response(X_test))`` scores SPN on rows that answered the deployed
    classifier (a post-deployment shift: people game the published model, SPN reads their
    rows). If people could instead game SPN's own predictions, simulate that with the
    function: ``spn.predict(best_response(spn, X_test, budget=spn.budget, ...))``. That case
    is harder: a fixed point of the iterations is needed, and more iterations approach it
    slowly, because the strategic model's boundary lies just past the rows it was built from.

    Examples
    --------
    >>> import numpy as np
    >>> from skfm import TabSwiftClassifier
    >>> from skfm.tabular.strategic import SPNClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = (X[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    >>> spn = SPNClassifier(TabSwiftClassifier(n_estimators=1), budget=0.5, n_iter=1)
    >>> spn = spn.fit(X, y)
    >>> X_moved = spn.best_response(X[:5])  # what agents submit to the deployed classifier
    >>> spn.predict(X_moved).shape
    (5,)
    >>> spn.predict_proba(X_moved).shape
    (5, 2)
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict_proba"]), None],
        **COST_CONSTRAINTS,
        "cost_weight": ["array-like", None],
        "manipulable": MANIPULABLE_CONSTRAINT,
        "favourable_class": "no_validation",  # any label; checked against the classes in fit
        "n_iter": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        estimator=None,
        *,
        cost="l2",
        budget=1.0,
        cost_weight=None,
        manipulable=None,
        favourable_class=None,
        n_iter=1,
        random_state=0,
    ):
        self.estimator = estimator
        self.cost = cost
        self.budget = budget
        self.cost_weight = cost_weight
        self.manipulable = manipulable
        self.favourable_class = favourable_class
        self.n_iter = n_iter
        self.random_state = random_state

    def _base(self):
        return TabSwiftClassifier() if self.estimator is None else self.estimator

    def _check_X(self, X, reset: bool):
        """Check shape and feature names; DataFrames are kept for the base estimator."""
        if not isinstance(X, pd.DataFrame):
            X = check_array(X, dtype=None, ensure_all_finite=False)
        validate_data(self, X, reset=reset, skip_check_array=True)
        return X

    def _response_kwargs(self) -> dict:
        return {
            "budget": self.budget,
            "cost": self.cost,
            "cost_weight": self.cost_weight,
            "manipulable": self.manipulable_,
            "favourable_class": self.favourable_class,
            "random_state": self.random_state,
        }

    @_fit_context(prefer_skip_nested_validation=False)  # the base estimator checks its own
    def fit(self, X, y):
        """Fit the base estimator on ``X, y``, then on the strategic context, ``n_iter`` times.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Clean (not manipulated) training rows.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : SPNClassifier
        """
        y = check_target(self, y)
        X = self._check_X(X, reset=True)
        self.classes_, _ = class_labels(y)
        favourable_index(self.classes_, self.favourable_class)
        frame = as_frame(X)
        cost_weights(self.cost_weight, frame.shape[1])
        self.manipulable_ = manipulable_features(self.manipulable, frame)
        before = float_values(frame.iloc[:, self.manipulable_])
        self.estimator_ = clone(self._base()).fit(X, y)
        self.deployed_estimator_ = self.strategic_estimator_ = self.estimator_
        self.n_moved_ = []
        for _ in range(self.n_iter):
            self.deployed_estimator_ = self.strategic_estimator_
            X_strategic = best_response(self.deployed_estimator_, X, **self._response_kwargs())
            after = float_values(as_frame(X_strategic).iloc[:, self.manipulable_])
            moved = (after != before) & ~np.isnan(before)
            self.n_moved_.append(int(moved.any(axis=1).sum()))
            self.strategic_estimator_ = clone(self._base()).fit(X_strategic, y)
        return self

    def predict_proba(self, X):
        """Class probabilities of (manipulated) rows against the strategic context.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        return self.strategic_estimator_.predict_proba(self._check_X(X, reset=False))

    def predict(self, X):
        """Most probable class of each (manipulated) row, shape (n_samples,)."""
        check_is_fitted(self)
        return self.classes_[self.predict_proba(X).argmax(axis=1)]

    def best_response(self, X):
        """What each row would become against the deployed classifier, under the cost and budget.

        Rows that ``deployed_estimator_`` labels unfavourable move to its nearest favourable
        point if they can afford it (see :func:`best_response`); the same move shaped the
        strategic context. Use it to simulate deployment: ``predict(best_response(X))``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            True (clean) features.

        Returns
        -------
        X_moved : ndarray or DataFrame of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        X = self._check_X(X, reset=False)
        return best_response(self.deployed_estimator_, X, **self._response_kwargs())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        base = get_tags(self._base()).input_tags
        tags.input_tags.allow_nan = base.allow_nan
        tags.input_tags.categorical = base.categorical
        tags.input_tags.string = base.string
        return tags
