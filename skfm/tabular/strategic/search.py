"""The two searches for an agent's cheapest favourable move: closed form and black box.

Binary linear models get the exact move across their hyperplane (:func:`linear_response`);
any other classifier a search on its favourable log-odds (:func:`black_box_response`).
"""

from __future__ import annotations

import numpy as np

from skfm.tabular.strategic.costs import steepest

_FD_STEP = 0.1  # finite-difference step, as a fraction of the distance the budget buys
_BISECT = 6  # bisection steps that bring a black-box move close to the decision boundary
_OVERSHOOT = 1e-9  # relative step past a linear boundary, so that the row lands on its far side


def favourable_score(estimator, X, fav: int) -> np.ndarray:
    """log P(favourable) - log P(strongest other class): > 0 where the favourable class wins."""
    log_proba = np.log(np.clip(estimator.predict_proba(X), 1e-300, None))
    other = np.delete(log_proba, fav, axis=1).max(axis=1, initial=-np.inf)
    return log_proba[:, fav] - other


def is_binary_linear(estimator, n_features: int) -> bool:
    coef = getattr(estimator, "coef_", None)
    return (
        coef is not None
        and np.shape(coef) == (1, n_features)
        and hasattr(estimator, "decision_function")
        and len(estimator.classes_) == 2
    )


def linear_response(estimator, data, x, cols, weight, cost, reach, fav):
    """Closed form: the cheapest point across the hyperplane, for rows that can afford it."""
    sign = 1.0 if fav == 1 else -1.0
    score = sign * estimator.decision_function(data)
    unfavourable = estimator.predict(data) != estimator.classes_[fav]
    move, rate = steepest(sign * np.asarray(estimator.coef_, float)[:, cols], weight, cost)
    out = x.copy()
    if rate[0] == 0:  # the score does not depend on any manipulable feature
        return out
    distance = -score / rate[0] * (1 + _OVERSHOOT) + _OVERSHOOT
    moves = unfavourable & (distance <= reach)
    out[moves] += distance[moves, None] * move
    return out


def black_box_response(score, x, weight, cost, reach, n_steps, n_directions, rng):
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
    directions = [steepest(grad, weight, cost)[0]]
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
