"""SPNClassifier: an in-context classifier made robust to the gaming of its own predictions."""

from __future__ import annotations

from numbers import Integral

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, _fit_context, clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from skfm._selection import gain_margin
from skfm._validation import check_target, class_labels, float_values, probability_rows
from skfm.tabular.classifier import TabSwiftClassifier
from skfm.tabular.encoding import as_frame, is_categorical
from skfm.tabular.strategic.costs import COST_CONSTRAINTS, budget_reach, cost_weights
from skfm.tabular.strategic.response import (
    MANIPULABLE_CONSTRAINT,
    best_response,
    favourable_index,
    manipulable_features,
    reachable_score,
)
from skfm.tabular.strategic.search import favourable_log_odds, is_binary_linear, linear_rate

#: The rules SPN's guard chooses from, in order of preference (the estimator's only for a clear gain): the
#: strategic-robust logistic regression, then the threshold on the base estimator's score.
RULES = ("logistic", "estimator")


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
    retraining the in-context model (a Stackelberg construction): it deploys a base model whose
    favourable log-odds are lowered by a threshold ``threshold_``, chosen so that the rows
    people submit after answering SPN are read as the ones they were before moving.

    Two such rules are candidates. ``"estimator"``: the base estimator (TabSwift by default)
    with the threshold that is right on the most context rows after they answered the rule
    "favourable iff the score exceeds ``t``" (the same search as :func:`best_response`; each
    row's reachable score comes from the base estimator fitted without that row's fold; a
    binary linear base estimator gets the closed form of the logistic rule).
    ``"logistic"``: ``LogisticRegression()`` with its threshold raised by what the budget buys,
    ``budget`` (``sqrt(budget)`` for the quadratic cost) times the dual norm of its weights:
    the strategic-robust logistic regression, which reads a row that answered it exactly as
    the clean regression reads the unmoved row. With ``base="auto"`` (the default) SPN scores
    both on held-out context rows that game each rule (``cv`` stratified folds, each rule
    fitted without the fold) and keeps the logistic rule unless the estimator's gain in
    accuracy, fold by fold, exceeds two standard errors corrected for the rows the folds share
    (``skfm._selection.gain_margin``, as ``MantisTimeSeriesClassifier`` chooses its
    head); ``selected_`` and ``validation_scores_`` say which and why.

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
    base : {"auto", "estimator", "logistic"}, default="auto"
        Whose score SPN thresholds (``method="stackelberg"`` only): ``"estimator"``,
        ``"logistic"`` (``LogisticRegression()``, the strategic-robust logistic regression), or
        ``"auto"``: the one more accurate on held-out context rows that game it, the logistic
        regression unless the estimator's rule is better by more than two corrected
        standard errors of the paired fold gains.
        ``"auto"`` keeps the estimator's rule when a feature is not numeric or has missing
        values (the logistic regression takes neither); ``"logistic"`` then raises.
    cv : int, default=5
        Stratified folds of the context rows (fewer when a class has fewer rows): each rule's
        held-out accuracy, and the reachable scores that set the estimator's threshold, come
        from the rule fitted without the fold.
    random_state : int, RandomState or None, default=0
        Seeds the random directions of the black-box best-response search and shuffles the
        folds.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.
    estimator_ : classifier
        The selected base (the base estimator or the logistic regression) fitted on the clean
        rows (the non-strategic model).
    selected_ : {"estimator", "logistic"}
        The rule SPN deploys (always ``"estimator"`` with ``method="context"``).
    validation_scores_ : dict
        Accuracy of each candidate rule (``"logistic"``, ``"estimator"``) on held-out context
        rows after they answered it, mean over the folds; empty with ``method="context"``,
        ``budget=0``, a single class, or a class of a single row (then the first rule ``base``
        allows is fitted on all rows).
    threshold_ : float
        The amount by which the favourable class's log-odds is lowered (>= 0; 0 with
        ``method="context"`` or ``budget=0``).
    strategic_estimator_ : classifier
        Only with ``method="context"``: the base estimator fitted on the strategic context; it
        makes the predictions.
    manipulable_ : ndarray of int
        Positions of the features that can move.
    n_moved_ : int
        Context rows that can reach the favourable class within budget: held out, against
        their fold's rule (``"stackelberg"``), or against the base estimator (``"context"``).

    See Also
    --------
    best_response : the agents' move against any fitted classifier.
    TabSwiftClassifier : the default base estimator.

    Notes
    -----
    ``spn.predict(spn.best_response(X_test))`` scores SPN on rows that answered the classifier
    people game: SPN itself by default, the base estimator with ``method="context"``.

    SPN's guarantee is the game it assumes: agents know the deployed rule, pay ``cost``, have
    at most ``budget``, and search as :func:`best_response` does. The logistic rule's accuracy
    on rows that answer it is the clean logistic regression's accuracy on the unmoved rows; the
    estimator's rule is the threshold with the most right answers on held-out context rows
    after they answered it. With ``base="auto"`` SPN keeps the estimator's rule only where, on
    held-out rows that game each rule, it beats the strategic-robust logistic regression by
    more than the noise of that estimate (two corrected standard errors).

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
    >>> sorted(spn.validation_scores_)  # held-out accuracy of each rule when rows game it
    ['estimator', 'logistic']
    >>> spn.selected_ in spn.validation_scores_, bool(spn.threshold_ > 0)
    (True, True)
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict_proba"]), None],
        **COST_CONSTRAINTS,
        "cost_weight": ["array-like", None],
        "manipulable": MANIPULABLE_CONSTRAINT,
        "favourable_class": "no_validation",  # any label; checked against the classes in fit
        "method": [StrOptions({"stackelberg", "context"})],
        "base": [StrOptions({"auto", *RULES})],
        "cv": [Interval(Integral, 2, None, closed="left")],
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
        base="auto",
        cv=5,
        random_state=0,
    ):
        self.estimator = estimator
        self.cost = cost
        self.budget = budget
        self.cost_weight = cost_weight
        self.manipulable = manipulable
        self.favourable_class = favourable_class
        self.method = method
        self.base = base
        self.cv = cv
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

    def _candidates(self, frame: pd.DataFrame) -> dict:
        """The unfitted base of each rule ``base`` allows, in order of preference."""
        numeric = all(pd.api.types.is_numeric_dtype(frame[c]) and not is_categorical(frame[c])
                      for c in frame.columns)
        usable = numeric and bool(np.isfinite(float_values(frame)).all())
        if self.base == "logistic" and not usable:
            raise ValueError(
                "base='logistic' needs numeric features without missing values; use "
                "base='estimator' (or 'auto', which then keeps the estimator's rule)"
            )
        rules = {"logistic": LogisticRegression(), "estimator": self._base()}
        if self.base != "auto":
            return {self.base: rules[self.base]}
        return rules if usable else {"estimator": rules["estimator"]}

    def _linear_threshold(self, model, n_features: int, fav: int):
        """What the budget buys in a binary linear model's favourable score; None otherwise."""
        if not is_binary_linear(model, n_features):
            return None
        weight = cost_weights(self.cost_weight, n_features)[self.manipulable_]
        _, rate = linear_rate(model, self.manipulable_, weight, self.cost, fav)
        return budget_reach(self.cost, self.budget) * rate

    def _answers(self, estimator, X, y, train, test, fav):
        """``estimator`` fitted on rows ``train``, and for rows ``test``: its favourable score,
        the highest score each reaches within budget and each one's strongest other class."""
        model = clone(estimator).fit(_safe_indexing(X, train), _safe_indexing(y, train))
        X_test = _safe_indexing(X, test)
        proba = model.predict_proba(X_test)
        other = np.delete(proba, fav, axis=1).argmax(axis=1)
        other += other >= fav  # back to positions among classes_
        reachable = reachable_score(model, X_test, **self._response_kwargs())
        return model, favourable_log_odds(proba, fav), reachable, other

    def _cross_fit(self, estimator, X, y, codes, fav, folds):
        """One rule on held-out context rows: the rows' answers and, per fold, the accuracy on
        the fold's rows after they answered the rule fitted without them."""
        n, n_features = len(codes), as_frame(X).shape[1]
        score, reachable, other = np.empty(n), np.empty(n), np.empty(n, dtype=int)
        thresholds = []
        for train, test in folds:
            model, score[test], reachable[test], other[test] = self._answers(
                estimator, X, y, train, test, fav)
            thresholds.append(self._linear_threshold(model, n_features, fav))
        right = (codes == fav, codes == other)  # if accepted, if rejected
        accuracy, moved = [], 0
        for (train, test), t in zip(folds, thresholds, strict=True):
            if t is None:  # the threshold the other folds' rows call for
                t = stackelberg_threshold(reachable[train], right[0][train], right[1][train])
            accepted = reachable[test] > t
            accuracy.append(np.mean(np.where(accepted, right[0][test], right[1][test])))
            moved += int(np.sum(accepted & (score[test] <= t)))
        return reachable, right, np.array(accuracy), moved

    @_fit_context(prefer_skip_nested_validation=False)  # the base estimator checks its own
    def fit(self, X, y):
        """Fit the chosen rule on ``X, y``: a base estimator and its strategic threshold.

        With ``base="auto"`` each rule is first scored on held-out context rows that game it
        (``cv`` stratified folds); see the class description.

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
        n_features = frame.shape[1]
        if len(frame) == 0:
            raise ValueError(f"Found array with 0 sample(s) (shape={frame.shape}) while a minimum "
                             "of 1 is required by SPNClassifier.")
        cost_weights(self.cost_weight, n_features)
        self.manipulable_ = manipulable_features(self.manipulable, frame)
        self.threshold_, self.n_moved_, self.validation_scores_ = 0.0, 0, {}
        if self.method == "context":
            self.selected_ = "estimator"
            self.estimator_ = clone(self._base()).fit(X, y)
            X_strategic = best_response(self.estimator_, X, **self._response_kwargs())
            before = float_values(frame.iloc[:, self.manipulable_])
            after = float_values(as_frame(X_strategic).iloc[:, self.manipulable_])
            self.n_moved_ = int(((after != before) & ~np.isnan(before)).any(axis=1).sum())
            self.strategic_estimator_ = clone(self._base()).fit(X_strategic, y)
            return self
        candidates = self._candidates(frame)
        if self.budget == 0 or len(self.classes_) == 1:  # no one moves, or nothing to game for
            self.selected_ = "estimator" if "estimator" in candidates else "logistic"
            self.estimator_ = clone(candidates[self.selected_]).fit(X, y)
            return self
        n_folds = min(self.cv, int(np.bincount(codes).min()))
        if n_folds < 2:  # a class of one row: no held-out rows, the rule is fitted in-sample
            self.selected_ = next(iter(candidates))
            everything = np.arange(len(codes))
            self.estimator_, score, reachable, other = self._answers(
                candidates[self.selected_], X, y, everything, everything, fav)
            right = (codes == fav, codes == other)
            moved = None
        else:
            folds = list(StratifiedKFold(n_folds, shuffle=True, random_state=self.random_state)
                         .split(frame, codes))
            fits = {name: self._cross_fit(estimator, X, y, codes, fav, folds)
                    for name, estimator in candidates.items()}
            self.validation_scores_ = {name: float(fit[2].mean()) for name, fit in fits.items()}
            self.selected_ = next(iter(candidates))
            if len(candidates) == 2:  # the estimator's rule only for a clear gain, fold by fold
                gain = fits["estimator"][2] - fits["logistic"][2]
                if gain.mean() > gain_margin(gain, n_folds):
                    self.selected_ = "estimator"
            reachable, right, _, moved = fits[self.selected_]
            self.estimator_ = clone(candidates[self.selected_]).fit(X, y)
        threshold = self._linear_threshold(self.estimator_, n_features, fav)
        if threshold is None:
            threshold = stackelberg_threshold(reachable, *right)
        self.threshold_ = float(threshold)
        self.n_moved_ = (moved if moved is not None
                         else int(np.sum((reachable > threshold) & (score <= threshold))))
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
            float64 rows that sum to one.
        """
        check_is_fitted(self)
        X = self._check_X(X, reset=False)
        if self.method == "context":
            return probability_rows(self.strategic_estimator_.predict_proba(X))
        if self.selected_ == "logistic":  # the regression's own error would not name the column
            try:
                float_values(as_frame(X))
            except (TypeError, ValueError) as err:
                raise ValueError(f"the deployed logistic rule needs numeric features: {err}"
                                 ) from None
        proba = np.array(self.estimator_.predict_proba(X), dtype=np.float64)
        proba[:, favourable_index(self.classes_, self.favourable_class)] *= np.exp(
            -self.threshold_
        )
        return probability_rows(proba)

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
