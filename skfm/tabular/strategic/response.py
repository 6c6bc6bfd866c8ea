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
    black_box_response,
    favourable_score,
    is_binary_linear,
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
    """Positions of the features that may move: ints are positions, strings column names."""
    n = frame.shape[1]
    if manipulable is None:
        return np.array([j for j in range(n) if not is_categorical(frame.iloc[:, j])], dtype=int)
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
        if is_categorical(frame.iloc[:, j]):
            raise ValueError(
                f"manipulable feature {frame.columns[j]!r} is not numeric; only numeric "
                "features can move"
            )
    return np.array(sorted(set(positions)), dtype=int)


#: Which features may move: a position, a column name, a list of them, or None (every numeric
#: one); whether they exist is checked against X.
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
    reach = budget_reach(cost, budget)
    fav = favourable_index(estimator.classes_, favourable_class)
    frame = as_frame(X)
    cols = manipulable_features(manipulable, frame)
    weight = cost_weights(cost_weight, frame.shape[1])[cols]
    for j in cols:
        frame.isetitem(j, float_values(frame.iloc[:, j]))
    is_frame = isinstance(X, pd.DataFrame)

    def with_values(rows, values):
        data = frame.iloc[rows].reset_index(drop=True)
        data.iloc[:, cols] = values
        return data if is_frame else data.to_numpy()

    x = frame.iloc[:, cols].to_numpy(dtype=float)
    linear = is_binary_linear(estimator, frame.shape[1])
    if not linear and not hasattr(estimator, "predict_proba"):
        raise TypeError(
            f"{type(estimator).__name__} has no predict_proba; the black-box best response "
            "needs it (binary linear models with coef_ get a closed form instead)"
        )
    if linear:
        data = frame if is_frame else frame.to_numpy()
        moved = linear_response(estimator, data, x, cols, weight, cost, reach, fav)
    else:
        rng = check_random_state(random_state)

        def score(rows, values):
            return favourable_score(estimator, with_values(rows, values), fav)

        moved = black_box_response(score, x, weight, cost, reach, n_steps, n_directions, rng)
    out = with_values(np.arange(len(frame)), moved)
    return out.set_axis(X.index) if is_frame else out
