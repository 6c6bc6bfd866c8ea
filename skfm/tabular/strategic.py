"""Strategic classification: agents' best response and SPNClassifier.

After a classifier is deployed, each individual whose prediction is unfavourable moves their
features to the cheapest point the classifier labels favourable, provided that point costs at
most ``budget``; labels do not change (gaming, not improvement; Hardt et al., 2016).
:func:`best_response` simulates that move for any fitted classifier: in closed form for binary
linear models, by a black-box search on ``predict_proba`` otherwise.

:class:`SPNClassifier` (after SPN, "strategic prior-data fitted network", ICML 2026 - a
reconstruction, the paper's code is not public) adapts an in-context learner at inference time,
without retraining the model: it replaces the context by *strategic* in-context examples - the
context rows moved as they would best-respond to the deployed classifier, labels kept - and
repeats that a few times towards a fixed point between the classifier and the agents' response.

Costs of moving from ``x`` to ``z``, with per-feature weights ``a`` (``cost_weight``):

- ``"l2"``: ``||a * (z - x)||_2``
- ``"quadratic"``: ``||a * (z - x)||_2 ** 2`` (Levanon & Rosenfeld, 2021)
- ``"linear"``: ``sum_j a_j |z_j - x_j|``, a price per unit of each feature (weighted l1)

Immutable features (those not in ``manipulable``) never move.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.utils import check_random_state, get_tags
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d, validate_data

from skfm._validation import class_labels, float_values
from skfm.tabular.classifier import TabSwiftClassifier
from skfm.tabular.encoding import _as_frame, _is_categorical

COSTS = ("l2", "quadratic", "linear")
_FD_STEP = 0.1  # finite-difference step, as a fraction of the distance the budget buys
_BISECT = 6  # bisection steps that bring a black-box move close to the decision boundary
_OVERSHOOT = 1e-9  # relative step past a linear boundary, so that the row lands on its far side


def _check_cost(cost, budget) -> float:
    """The distance (in the cost's norm) that ``budget`` buys."""
    if cost not in COSTS:
        raise ValueError(f"cost must be one of {COSTS}, got {cost!r}")
    if (
        isinstance(budget, bool)
        or not isinstance(budget, numbers.Real)
        or not np.isfinite(budget)
        or budget < 0
    ):
        raise ValueError(f"budget must be a finite number >= 0, got {budget!r}")
    return float(np.sqrt(budget) if cost == "quadratic" else budget)


def _check_weight(cost_weight, n_features: int) -> np.ndarray:
    if cost_weight is None:
        return np.ones(n_features)
    weight = np.asarray(cost_weight, dtype=float)
    if weight.shape != (n_features,):
        raise ValueError(
            f"cost_weight must hold one weight per feature ({n_features}), "
            f"got shape {weight.shape}"
        )
    if not np.all(np.isfinite(weight) & (weight > 0)):
        raise ValueError(f"cost_weight must be finite and > 0, got {weight.tolist()}")
    return weight


def _favourable_index(classes: np.ndarray, favourable_class) -> int:
    if favourable_class is None:
        return len(classes) - 1
    for i, label in enumerate(classes):
        if label == favourable_class:
            return i
    raise ValueError(
        f"favourable_class={favourable_class!r} is not one of the classes {list(classes)}"
    )


def _resolve_manipulable(manipulable, frame: pd.DataFrame) -> np.ndarray:
    """Positions of the features that may move: ints are positions, strings column names."""
    n = frame.shape[1]
    if manipulable is None:
        return np.array([j for j in range(n) if not _is_categorical(frame.iloc[:, j])], dtype=int)
    items = [manipulable] if isinstance(manipulable, str | numbers.Integral) else manipulable
    names = list(frame.columns) if all(isinstance(c, str) for c in frame.columns) else []
    positions = []
    for item in items:
        if isinstance(item, str) and item in names:
            positions.append(names.index(item))
        elif isinstance(item, numbers.Integral) and not isinstance(item, bool) and 0 <= item < n:
            positions.append(int(item))
        else:
            known = f"columns {names}" if names else f"positions 0..{n - 1}"
            raise ValueError(f"manipulable feature {item!r} does not exist; X has {known}")
    for j in positions:
        if _is_categorical(frame.iloc[:, j]):
            raise ValueError(
                f"manipulable feature {frame.columns[j]!r} is not numeric; only numeric "
                "features can move"
            )
    return np.array(sorted(set(positions)), dtype=int)


def _favourable_score(estimator, X, fav: int) -> np.ndarray:
    """log P(favourable) - log P(strongest other class): > 0 where the favourable class wins."""
    log_proba = np.log(np.clip(estimator.predict_proba(X), 1e-300, None))
    other = np.delete(log_proba, fav, axis=1).max(axis=1, initial=-np.inf)
    return log_proba[:, fav] - other


def _steepest(grad: np.ndarray, weight: np.ndarray, cost: str):
    """Per row, the move of unit distance that raises a score of gradient ``grad`` the most.

    Returns the moves (n, m) and the rise per unit distance (n,), the dual norm of ``grad``.
    """
    rows = np.arange(len(grad))
    if cost == "linear":  # weighted l1: spend everything on the best-priced feature
        ratio = np.abs(grad) / weight
        best = ratio.argmax(axis=1)
        move = np.zeros_like(grad)
        move[rows, best] = np.sign(grad[rows, best]) / weight[best]
        return move, ratio[rows, best]
    rate = np.linalg.norm(grad / weight, axis=1)  # l2 and quadratic: weighted l2 geometry
    return grad / weight**2 / np.where(rate > 0, rate, 1.0)[:, None], rate


def _is_binary_linear(estimator, n_features: int) -> bool:
    coef = getattr(estimator, "coef_", None)
    return (
        coef is not None
        and np.shape(coef) == (1, n_features)
        and hasattr(estimator, "decision_function")
        and len(estimator.classes_) == 2
    )


def _linear_response(estimator, data, x, cols, weight, cost, reach, fav):
    """Closed form: the cheapest point across the hyperplane, for rows that can afford it."""
    sign = 1.0 if fav == 1 else -1.0
    score = sign * estimator.decision_function(data)
    unfavourable = estimator.predict(data) != estimator.classes_[fav]
    move, rate = _steepest(sign * np.asarray(estimator.coef_, float)[:, cols], weight, cost)
    out = x.copy()
    if rate[0] == 0:  # the score does not depend on any manipulable feature
        return out
    distance = -score / rate[0] * (1 + _OVERSHOOT) + _OVERSHOOT
    moves = unfavourable & (distance <= reach)
    out[moves] += distance[moves, None] * move
    return out


def _black_box_response(score, x, weight, cost, reach, n_steps, n_directions, rng):
    """Search from each unfavourable row along a few directions for the nearest favourable point.

    ``score(rows, values)`` scores rows of X whose manipulable features are replaced by
    ``values``; it is > 0 where the model gives the favourable class. The directions are the
    steepest ascent of a finite-difference gradient (in the cost's geometry) and
    ``n_directions`` random ones; each is scanned at ``n_steps`` distances up to ``reach``, and
    the cheapest crossing is refined by bisection.
    """
    out = x.copy()
    s0 = score(np.arange(len(x)), x)
    todo = np.flatnonzero(s0 <= 0)
    n, m = len(todo), x.shape[1]
    if n == 0 or m == 0 or reach == 0:
        return out
    x, s0 = x[todo], s0[todo]
    free = ~np.isnan(x)  # a missing value stays missing
    h = _FD_STEP * reach / weight  # (m,) one step of distance _FD_STEP * reach per feature
    probes = np.repeat(x, m, axis=0) + np.tile(np.diag(h), (n, 1))
    grad = (score(np.repeat(todo, m), probes).reshape(n, m) - s0[:, None]) / h
    grad = np.where(free, np.nan_to_num(grad), 0.0)
    directions = [_steepest(grad, weight, cost)[0]]
    for noise in rng.standard_normal((n_directions, n, m)) * free:
        if cost == "linear":
            unit = np.abs(noise).sum(1, keepdims=True)
        else:
            unit = np.linalg.norm(noise, axis=1, keepdims=True)
        step = noise / weight / np.where(unit > 0, unit, 1.0)
        directions.append(step * np.where((step * grad).sum(1) < 0, -1.0, 1.0)[:, None])
    directions = np.stack(directions, axis=1)  # (n, k, m), each of unit distance
    k = directions.shape[1]
    t = reach * np.arange(1, n_steps + 1) / n_steps  # (K,)
    grid = x[:, None, None, :] + t[None, None, :, None] * directions[:, :, None, :]
    hit = score(np.repeat(todo, k * n_steps), grid.reshape(-1, m)).reshape(n, k, n_steps) > 0
    first = np.where(hit.any(axis=2), hit.argmax(axis=2), n_steps)  # (n, k)
    best = first.argmin(axis=1)
    found = np.flatnonzero(first[np.arange(n), best] < n_steps)
    if len(found) == 0:
        return out
    step = first[found, best[found]]
    direction = directions[found, best[found]]
    hi, lo = t[step], np.where(step > 0, t[step - 1], 0.0)
    for _ in range(_BISECT):
        mid = (lo + hi) / 2
        good = score(todo[found], x[found] + mid[:, None] * direction) > 0
        hi, lo = np.where(good, mid, hi), np.where(good, lo, mid)
    out[todo[found]] = x[found] + hi[:, None] * direction
    return out


def best_response(
    estimator,
    X,
    *,
    budget,
    cost="l2",
    cost_weight=None,
    manipulable=None,
    favourable_class=None,
    n_steps=4,
    n_directions=2,
    random_state=None,
):
    """Move each row to the cheapest point ``estimator`` labels favourable, within ``budget``.

    A row the classifier already labels favourable stays; an unfavourable one moves to the
    nearest favourable point (just across the decision boundary) if that costs at most
    ``budget``, and stays otherwise. Binary linear models (``coef_`` of shape
    (1, n_features), e.g. LogisticRegression) get the exact closed form; any other classifier
    with ``predict_proba`` gets a black-box search: a finite-difference gradient of the
    favourable log-odds gives a steepest-ascent direction in the cost's geometry, which with
    ``n_directions`` random directions is scanned at ``n_steps`` distances; the cheapest
    crossing is refined by bisection. The black-box move is an upper bound on the true cheapest
    move.

    Parameters
    ----------
    estimator : fitted classifier
        The deployed model; needs ``classes_`` and ``predict_proba`` (or, for the closed form,
        ``coef_`` and ``decision_function``).
    X : array-like or DataFrame of shape (n_samples, n_features)
        The agents' true features, in the form ``estimator`` was fitted on.
    budget : float
        The most an agent pays to be labelled favourable (>= 0), in the units of ``cost``.
    cost : {"l2", "quadratic", "linear"}, default="l2"
        Cost of moving from ``x`` to ``z`` with weights ``a``: ``||a*(z-x)||_2``,
        ``||a*(z-x)||_2**2`` or ``sum_j a_j |z_j-x_j|``.
    cost_weight : array-like of shape (n_features,) or None, default=None
        Positive price of moving each feature by one unit; None means all ones.
    manipulable : int, str, list of int or str, or None, default=None
        Features that can move: positions, or column names of a DataFrame. None means every
        numeric column. The others never move.
    favourable_class : label or None, default=None
        The outcome agents want; None means the last of ``estimator.classes_`` (e.g. 1).
    n_steps : int, default=4
        Black-box search: distances scanned along each direction.
    n_directions : int, default=2
        Black-box search: random directions tried besides the gradient one.
    random_state : int, RandomState or None, default=None
        Seeds the random directions.

    Returns
    -------
    X_moved : ndarray or DataFrame of shape (n_samples, n_features)
        The same form as ``X`` (a DataFrame keeps its index and columns); moved features are
        float.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skfm.tabular.strategic import best_response
    >>> X = np.array([[-2.0, 0.0], [-0.5, 0.0], [1.0, 0.0], [2.0, 0.0]])
    >>> model = LogisticRegression().fit(X, [0, 0, 1, 1])
    >>> moved = best_response(model, X, budget=1.0)
    >>> model.predict(moved).tolist()  # the row within budget of the boundary crossed it
    [0, 1, 1, 1]
    >>> bool(np.allclose(moved[[0, 2, 3]], X[[0, 2, 3]]))
    True
    """
    check_is_fitted(estimator)
    reach = _check_cost(cost, budget)
    if not isinstance(n_steps, numbers.Integral) or n_steps < 1:
        raise ValueError(f"n_steps must be an integer >= 1, got {n_steps!r}")
    if not isinstance(n_directions, numbers.Integral) or n_directions < 0:
        raise ValueError(f"n_directions must be an integer >= 0, got {n_directions!r}")
    fav = _favourable_index(estimator.classes_, favourable_class)
    frame = _as_frame(X)
    cols = _resolve_manipulable(manipulable, frame)
    weight = _check_weight(cost_weight, frame.shape[1])[cols]
    for j in cols:
        frame.isetitem(j, float_values(frame.iloc[:, j]))
    is_frame = isinstance(X, pd.DataFrame)

    def with_values(rows, values):
        data = frame.iloc[rows].reset_index(drop=True)
        data.iloc[:, cols] = values
        return data if is_frame else data.to_numpy()

    x = frame.iloc[:, cols].to_numpy(dtype=float)
    linear = _is_binary_linear(estimator, frame.shape[1])
    if not linear and not hasattr(estimator, "predict_proba"):
        raise TypeError(
            f"{type(estimator).__name__} has no predict_proba; the black-box best response "
            "needs it (binary linear models with coef_ get a closed form instead)"
        )
    if linear:
        data = frame if is_frame else frame.to_numpy()
        moved = _linear_response(estimator, data, x, cols, weight, cost, reach, fav)
    else:
        rng = check_random_state(random_state)

        def score(rows, values):
            return _favourable_score(estimator, with_values(rows, values), fav)

        moved = _black_box_response(score, x, weight, cost, reach, n_steps, n_directions, rng)
    out = with_values(np.arange(len(frame)), moved)
    return out.set_axis(X.index) if is_frame else out


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
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        X = self._check_X(X, reset=True)
        y = column_or_1d(y, warn=True)
        self.classes_, _ = class_labels(y)
        _check_cost(self.cost, self.budget)
        if not isinstance(self.n_iter, numbers.Integral) or self.n_iter < 0:
            raise ValueError(f"n_iter must be an integer >= 0, got {self.n_iter!r}")
        _favourable_index(self.classes_, self.favourable_class)
        frame = _as_frame(X)
        _check_weight(self.cost_weight, frame.shape[1])
        self.manipulable_ = _resolve_manipulable(self.manipulable, frame)
        before = float_values(frame.iloc[:, self.manipulable_])
        self.estimator_ = clone(self._base()).fit(X, y)
        self.deployed_estimator_ = self.strategic_estimator_ = self.estimator_
        self.n_moved_ = []
        for _ in range(self.n_iter):
            self.deployed_estimator_ = self.strategic_estimator_
            X_strategic = best_response(self.deployed_estimator_, X, **self._response_kwargs())
            after = float_values(_as_frame(X_strategic).iloc[:, self.manipulable_])
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
