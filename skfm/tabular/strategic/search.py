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


def favourable_log_odds(proba, fav: int) -> np.ndarray:
    """log P(favourable) - log P(strongest other class): > 0 where the favourable class wins."""
    log_proba = np.log(np.clip(proba, 1e-300, None))
    other = np.delete(log_proba, fav, axis=1).max(axis=1, initial=-np.inf)
    return log_proba[:, fav] - other


def favourable_score(estimator, X, fav: int) -> np.ndarray:
    """The favourable log-odds (:func:`favourable_log_odds`) of ``estimator`` at ``X``."""
    return favourable_log_odds(estimator.predict_proba(X), fav)


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
    score = (1.0 if fav == 1 else -1.0) * estimator.decision_function(data)
    unfavourable = estimator.predict(data) != estimator.classes_[fav]
    move, rate = linear_rate(estimator, cols, weight, cost, fav)
    out = x.copy()
    if rate == 0:  # the score does not depend on any manipulable feature
        return out
    distance = -score / rate * (1 + _OVERSHOOT) + _OVERSHOOT
    moves = unfavourable & (distance <= reach)
    out[moves] += distance[moves, None] * move
    return out


def linear_rate(estimator, cols, weight, cost, fav):
    """The steepest unit move across a binary linear model's hyperplane and its rise in score."""
    sign = 1.0 if fav == 1 else -1.0
    move, rate = steepest(sign * np.asarray(estimator.coef_, float)[:, cols], weight, cost)
    return move, float(rate[0])


def search_directions(score, rows, x, s0, weight, cost, reach, n_directions, rng):
    """The directions the black-box search scans from each row, each of unit distance.

    The first is the steepest ascent of a finite-difference gradient of ``score`` in the
    cost's geometry, the other ``n_directions`` are random ones turned uphill. ``score(rows,
    values)`` scores rows of X whose manipulable features are replaced by ``values``; ``s0`` is
    its value at ``x``. Returns an array of shape (n, 1 + n_directions, m).
    """
    n, m = x.shape
    free = ~np.isnan(x)  # a missing value stays missing
    h = _FD_STEP * reach / weight  # (m,) one step of distance _FD_STEP * reach per feature
    probes = np.repeat(x, m, axis=0) + np.tile(np.diag(h), (n, 1))
    grad = (score(np.repeat(rows, m), probes).reshape(n, m) - s0[:, None]) / h
    grad = np.where(free, np.nan_to_num(grad), 0.0)
    directions = [steepest(grad, weight, cost)[0]]
    for noise in rng.standard_normal((n_directions, n, m)) * free:
        if cost == "linear":
            unit = np.abs(noise).sum(1, keepdims=True)
        else:
            unit = np.linalg.norm(noise, axis=1, keepdims=True)
        step = noise / weight / np.where(unit > 0, unit, 1.0)
        directions.append(step * np.where((step * grad).sum(1) < 0, -1.0, 1.0)[:, None])
    return np.stack(directions, axis=1)


def scan(score, rows, x, directions, reach, n_steps):
    """Scores at ``n_steps`` distances up to ``reach`` along each direction: (n, k, n_steps)."""
    n, k, m = directions.shape
    t = reach * np.arange(1, n_steps + 1) / n_steps
    grid = x[:, None, None, :] + t[None, None, :, None] * directions[:, :, None, :]
    return score(np.repeat(rows, k * n_steps), grid.reshape(-1, m)).reshape(n, k, n_steps), t


def black_box_response(score, x, weight, cost, reach, n_steps, n_directions, rng):
    """Search from each unfavourable row along a few directions for the nearest favourable point.

    ``score(rows, values)`` scores rows of X whose manipulable features are replaced by
    ``values``; it is > 0 where the model gives the favourable class. The directions are those
    of :func:`search_directions`; each is scanned at ``n_steps`` distances up to ``reach``, and
    the cheapest crossing is refined by bisection.
    """
    out = x.copy()
    s0 = score(np.arange(len(x)), x)
    todo = np.flatnonzero(s0 <= 0)
    n, m = len(todo), x.shape[1]
    if n == 0 or m == 0 or reach == 0:
        return out
    x = x[todo]
    directions = search_directions(score, todo, x, s0[todo], weight, cost, reach, n_directions, rng)
    scores, t = scan(score, todo, x, directions, reach, n_steps)
    hit = scores > 0
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


def black_box_reachable(score, x, weight, cost, reach, n_steps, n_directions, rng):
    """The highest score each row reaches on the black-box search's grid (or where it stands)."""
    s0 = score(np.arange(len(x)), x)
    if len(x) == 0 or x.shape[1] == 0 or reach == 0:
        return s0
    rows = np.arange(len(x))
    directions = search_directions(score, rows, x, s0, weight, cost, reach, n_directions, rng)
    return np.maximum(s0, scan(score, rows, x, directions, reach, n_steps)[0].max(axis=(1, 2)))
