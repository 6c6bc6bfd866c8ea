"""best_response: every agent's move against a deployed classifier, within a budget."""

from __future__ import annotations

import numbers
from numbers import Integral

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, validate_params
from sklearn.utils.validation import check_is_fitted

from skfm._validation import float_values
from skfm.tabular.encoding import as_frame, is_categorical
from skfm.tabular.strategic.costs import COST_CONSTRAINTS, budget_reach, cost_weights
from skfm.tabular.strategic.search import (
    black_box_reachable,
    black_box_response,
    favourable_score,
    is_binary_linear,
    linear_rate,
    linear_response,
)


def favourable_index(classes: np.ndarray, favourable_class) -> int:
    """Position of ``favourable_class`` among ``classes`` (None: the last class)."""
    if favourable_class is None:
        return len(classes) - 1
    for i, label in enumerate(classes):
        if label == favourable_class:
            return i
    raise ValueError(
        f"favourable_class={favourable_class!r} is not one of the classes {list(classes)}"
    )


def manipulable_features(manipulable, frame: pd.DataFrame) -> np.ndarray:
    """Positions of the features that may move: a boolean mask over the features, or
    positions (ints) and column names (strings)."""
    n = frame.shape[1]
    if manipulable is None:
        return np.array([j for j in range(n) if not is_categorical(frame.iloc[:, j])], dtype=int)
    items = [manipulable] if isinstance(manipulable, str | numbers.Integral) else manipulable
    if len(items) and all(isinstance(item, bool | np.bool_) for item in items):
        if len(items) != n:
            raise ValueError(
                f"manipulable is a boolean mask of {len(items)} entries; X has {n} features, "
                "so the mask needs one entry per feature"
            )
        items = [j for j, item in enumerate(items) if item]
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
        if is_categorical(frame.iloc[:, j]):
            raise ValueError(
                f"manipulable feature {frame.columns[j]!r} is not numeric; only numeric "
                "features can move"
            )
    return np.array(sorted(set(positions)), dtype=int)


#: Which features may move: a position, a column name, a list of them, a boolean mask, or None
#: (every numeric one); whether they exist is checked against X.
MANIPULABLE_CONSTRAINT = [Integral, str, "array-like", None]


@validate_params(
    {
        "X": ["array-like"],
        **COST_CONSTRAINTS,
        "cost_weight": ["array-like", None],
        "manipulable": MANIPULABLE_CONSTRAINT,
        "n_steps": [Interval(Integral, 1, None, closed="left")],
        "n_directions": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
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
    manipulable : int, str, array-like of int, str or bool, or None, default=None
        Features that can move: positions, column names of a DataFrame, or a boolean mask of
        shape (n_features,). None means every numeric column. The others never move.
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
    agents = _Agents(estimator, X, budget, cost, cost_weight, manipulable, favourable_class)
    if agents.linear:
        moved = linear_response(estimator, agents.data(), agents.x, agents.cols, agents.weight,
                                cost, agents.reach, agents.fav)
    else:
        moved = black_box_response(agents.score, agents.x, agents.weight, cost, agents.reach,
                                   n_steps, n_directions, check_random_state(random_state))
    return agents.with_values(moved)


def reachable_score(
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
    """The highest favourable score each row can reach within ``budget``.

    The score is ``log P(favourable) - log P(strongest other class)`` (> 0 where ``estimator``
    predicts the favourable class). Binary linear models get the exact value, the score plus
    ``budget`` times the rate at which the cheapest move raises it; other classifiers the best
    point of the grid that :func:`best_response` scans (directions of the same kind, the same
    distances): a row that reaches a score above ``t`` here is one that :func:`best_response`
    moves across the rule "favourable iff score > t". The parameters are those of
    :func:`best_response`.

    Returns
    -------
    score : ndarray of shape (n_samples,)
    """
    agents = _Agents(estimator, X, budget, cost, cost_weight, manipulable, favourable_class)
    if agents.linear:
        score = (1.0 if agents.fav == 1 else -1.0) * estimator.decision_function(agents.data())
        _, rate = linear_rate(estimator, agents.cols, agents.weight, cost, agents.fav)
        return score + agents.reach * rate
    return black_box_reachable(agents.score, agents.x, agents.weight, cost, agents.reach,
                               n_steps, n_directions, check_random_state(random_state))


class _Agents:
    """The rows of ``X`` as agents: their manipulable values, prices and reach, and the model's
    favourable score of rows whose manipulable values are replaced."""

    def __init__(self, estimator, X, budget, cost, cost_weight, manipulable, favourable_class):
        self.estimator, self.X = estimator, X
        self.reach = budget_reach(cost, budget)
        self.fav = favourable_index(estimator.classes_, favourable_class)
        frame = as_frame(X)
        self.cols = manipulable_features(manipulable, frame)
        self.weight = cost_weights(cost_weight, frame.shape[1])[self.cols]
        for j in self.cols:
            frame.isetitem(j, float_values(frame.iloc[:, j]))
        self.frame, self.is_frame = frame, isinstance(X, pd.DataFrame)
        self.x = frame.iloc[:, self.cols].to_numpy(dtype=float)
        self.linear = is_binary_linear(estimator, frame.shape[1])
        if not self.linear and not hasattr(estimator, "predict_proba"):
            raise TypeError(
                f"{type(estimator).__name__} has no predict_proba; the black-box best response "
                "needs it (binary linear models with coef_ get a closed form instead)"
            )

    def data(self):
        """The rows as the estimator takes them (with numeric manipulable columns)."""
        return self.frame if self.is_frame else self.frame.to_numpy()

    def rows(self, rows, values):
        data = self.frame.iloc[rows].reset_index(drop=True)
        data.iloc[:, self.cols] = values
        return data if self.is_frame else data.to_numpy()

    def score(self, rows, values):
        return favourable_score(self.estimator, self.rows(rows, values), self.fav)

    def with_values(self, values):
        """All rows with their manipulable features replaced by ``values``, in the form of X."""
        out = self.rows(np.arange(len(self.frame)), values)
        return out.set_axis(self.X.index) if self.is_frame else out
