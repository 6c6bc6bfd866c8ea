"""SPNClassifier: an in-context classifier made robust to the gaming of its own predictions."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, _fit_context, clone
from sklearn.utils import get_tags
from sklearn.utils._param_validation import HasMethods, StrOptions
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
    reachable_score,
)
from skfm.tabular.strategic.search import favourable_log_odds


def stackelberg_threshold(reachable, right_if_accepted, right_if_rejected) -> float:
    """The threshold ``t >= 0`` on the favourable score that is right on the most rows.

    Under the rule "favourable iff score > t" a row that can reach a score above ``t`` within
    its budget ends up accepted, every other row rejected; ``right_if_accepted`` and
    ``right_if_rejected`` (booleans, one per row) say whether each outcome is the row's label.
    The candidates are 0 and the midpoints between consecutive reachable scores; among equally
    good ones the smallest wins.
    """
    order = np.argsort(reachable, kind="stable")
    values = reachable[order]
    candidates = np.unique(np.r_[0.0, (values[:-1] + values[1:]) / 2, values[-1:] + 1.0])
    candidates = candidates[candidates >= 0]
    rejected = np.searchsorted(values, candidates, side="right")  # rows with score <= t
    right = np.r_[0, np.cumsum(right_if_rejected[order])][rejected] + np.r_[
        np.cumsum(right_if_accepted[order][::-1])[::-1], 0
    ][rejected]
    return float(candidates[np.argmax(right)])


class SPNClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Strategy-aware classifier: robust to people gaming its own predictions.

    Once a classifier is deployed, individuals whose prediction is unfavourable move their
    features to obtain the favourable one when that costs at most ``budget`` (see
    :func:`best_response`); labels do not change. A model fitted on clean data then accepts
    every rejected row within reach of its decision boundary. SPN anticipates this without
    retraining the in-context model (a Stackelberg construction): it fits the base estimator on
    the clean rows, lets each of those rows answer the rule "favourable iff the base model's
    favourable score exceeds ``t``" (the same search as :func:`best_response`), and deploys the
    threshold ``t`` that is right on the most rows after they answered. ``predict`` and
    ``predict_proba`` are the base model's with the favourable class's log-odds lowered by that
    threshold (``threshold_``), so the rows people submit after answering SPN are read as the
    ones they were before moving. For a linear base model this is the strategic-robust linear
    classifier: its threshold rises by about ``budget`` times the norm of its weights.

    With ``method="context"`` SPN instead serves a different deployment: people answer the base
    estimator fitted on clean rows (its scores are what they see) and SPN reads their moved
    rows. It then moves every context row as it would answer that base model (labels kept)
    and refits the base estimator on that strategic context, the construction of the SPN paper
    (ICML 2026; a reconstruction, its code is not public).

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
    manipulable : int, str, array-like of int, str or bool, or None, default=None
        Features agents can change: positions, column names of a DataFrame, or a boolean mask
        of shape (n_features,). None means every numeric column. The others (immutable ones)
        never move.
    favourable_class : label or None, default=None
        The outcome agents want; None means the last of ``classes_`` (1 for labels 0/1 or
        -1/+1).
    method : {"stackelberg", "context"}, default="stackelberg"
        Which classifier people game. ``"stackelberg"``: SPN itself, the deployed model; SPN
        raises its favourable threshold as described above. ``"context"``: the base estimator
        fitted on the clean rows; SPN predicts with a strategic context.
    random_state : int, RandomState or None, default=0
        Seeds the random directions of the black-box best-response search.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.
    estimator_ : classifier
        The base estimator fitted on the clean rows (the non-strategic model).
    threshold_ : float
        The amount by which the favourable class's log-odds is lowered (>= 0; 0 with
        ``method="context"`` or ``budget=0``).
    strategic_estimator_ : classifier
        Only with ``method="context"``: the base estimator fitted on the strategic context; it
        makes the predictions.
    manipulable_ : ndarray of int
        Positions of the features that can move.
    n_moved_ : int
        Context rows that can reach the favourable class within budget: against the deployed
        threshold (``"stackelberg"``) or the base estimator (``"context"``).

    See Also
    --------
    best_response : the agents' move against any fitted classifier.
    TabSwiftClassifier : the default base estimator.

    Notes
    -----
    ``spn.predict(spn.best_response(X_test))`` scores SPN on rows that answered the classifier
    people game: SPN itself by default, the base estimator with ``method="context"``.

    SPN's guarantee is the game it assumes: agents know the deployed rule, pay ``cost``, have
    at most ``budget``, and search as :func:`best_response` does. Among the rules "favourable
    iff the base score exceeds ``t``", SPN deploys the one with the most right answers on its
    context rows after they answered it; test rows from the same distribution that answer it
    the same way get that accuracy in expectation. A row moves only to cross the threshold, so
    no row is accepted whose own (unmoved) score is more than what ``budget`` buys below it.

    Examples
    --------
    >>> import numpy as np
    >>> from skfm import TabSwiftClassifier
    >>> from skfm.tabular.strategic import SPNClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = (X[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    >>> spn = SPNClassifier(TabSwiftClassifier(n_estimators=1), budget=0.5).fit(X, y)
    >>> X_moved = spn.best_response(X[:5])  # what agents submit to the deployed SPN
    >>> spn.predict(X_moved).shape
    (5,)
    >>> spn.predict_proba(X_moved).shape
    (5, 2)
    >>> bool(spn.threshold_ > 0)
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict_proba"]), None],
        **COST_CONSTRAINTS,
        "cost_weight": ["array-like", None],
        "manipulable": MANIPULABLE_CONSTRAINT,
        "favourable_class": "no_validation",  # any label; checked against the classes in fit
        "method": [StrOptions({"stackelberg", "context"})],
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
        method="stackelberg",
        random_state=0,
    ):
        self.estimator = estimator
        self.cost = cost
        self.budget = budget
        self.cost_weight = cost_weight
        self.manipulable = manipulable
        self.favourable_class = favourable_class
        self.method = method
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
        """Fit the base estimator on ``X, y`` and the strategic threshold or context.

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
        self.classes_, codes = class_labels(y)
        fav = favourable_index(self.classes_, self.favourable_class)
        frame = as_frame(X)
        cost_weights(self.cost_weight, frame.shape[1])
        self.manipulable_ = manipulable_features(self.manipulable, frame)
        self.estimator_ = clone(self._base()).fit(X, y)
        self.threshold_ = 0.0
        if self.method == "context":
            X_strategic = best_response(self.estimator_, X, **self._response_kwargs())
            before = float_values(frame.iloc[:, self.manipulable_])
            after = float_values(as_frame(X_strategic).iloc[:, self.manipulable_])
            self.n_moved_ = int(((after != before) & ~np.isnan(before)).any(axis=1).sum())
            self.strategic_estimator_ = clone(self._base()).fit(X_strategic, y)
            return self
        proba = self.estimator_.predict_proba(X)
        score = favourable_log_odds(proba, fav)
        reachable = score
        if self.budget > 0 and len(self.classes_) > 1:  # one class: nothing to game for
            reachable = reachable_score(self.estimator_, X, **self._response_kwargs())
            other = np.delete(proba, fav, axis=1).argmax(axis=1)
            other += other >= fav  # back to positions among classes_
            self.threshold_ = stackelberg_threshold(reachable, codes == fav, codes == other)
        self.n_moved_ = int(np.sum((reachable > self.threshold_) & (score <= self.threshold_)))
        return self

    def predict_proba(self, X):
        """Class probabilities of (manipulated) rows.

        With ``method="stackelberg"``: the base estimator's, the favourable class's odds
        divided by ``exp(threshold_)``; with ``"context"``: the strategic estimator's.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        X = self._check_X(X, reset=False)
        if self.method == "context":
            return self.strategic_estimator_.predict_proba(X)
        proba = self.estimator_.predict_proba(X)
        proba[:, favourable_index(self.classes_, self.favourable_class)] *= np.exp(
            -self.threshold_
        )
        return proba / proba.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Most probable class of each (manipulated) row, shape (n_samples,)."""
        check_is_fitted(self)
        return self.classes_[self.predict_proba(X).argmax(axis=1)]

    def best_response(self, X):
        """What each row would become against the classifier people game, within the budget.

        Rows that the gamed classifier labels unfavourable move to its nearest favourable
        point if they can afford it (see :func:`best_response`). The gamed classifier is SPN
        itself (``method="stackelberg"``) or ``estimator_`` (``"context"``). Use it to simulate
        deployment: ``predict(best_response(X))``.

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
        gamed = self.estimator_ if self.method == "context" else self
        return best_response(gamed, X, **self._response_kwargs())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        base = get_tags(self._base()).input_tags
        tags.input_tags.allow_nan = base.allow_nan
        tags.input_tags.categorical = base.categorical
        tags.input_tags.string = base.string
        # On clean (ungamed) rows SPN rejects, by design, the favourable rows within budget of
        # its raised threshold: its accuracy is meant for the rows people submit after gaming.
        tags.classifier_tags.poor_score = self.method == "stackelberg" and self.budget != 0
        return tags
