"""What moving costs an agent: the three costs, the distance a budget buys, steepest moves.

Costs of moving from ``x`` to ``z``, with per-feature weights ``a`` (``cost_weight``):

- ``"l2"``: ``||a * (z - x)||_2``
- ``"quadratic"``: ``||a * (z - x)||_2 ** 2`` (Levanon & Rosenfeld, 2021)
- ``"linear"``: ``sum_j a_j |z_j - x_j|``, a price per unit of each feature (weighted l1)
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

COSTS = ("l2", "quadratic", "linear")


#: The declarative checks of ``cost`` and ``budget``, for SPNClassifier and best_response: a
#: budget is a finite number >= 0 (the interval leaves out infinity and NaN).
COST_CONSTRAINTS = {
    "cost": [StrOptions(set(COSTS))],
    "budget": [Interval(Real, 0, None, closed="left")],
}


def budget_reach(cost: str, budget: float) -> float:
    """The distance (in the cost's norm) that ``budget`` buys."""
    return float(np.sqrt(budget) if cost == "quadratic" else budget)


def cost_weights(cost_weight, n_features: int) -> np.ndarray:
    """The price of moving each feature by one unit: ``cost_weight`` checked, or ones."""
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


def steepest(grad: np.ndarray, weight: np.ndarray, cost: str):
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
