"""Credible sets from posterior draws: equal-tailed intervals and a joint ellipsoid."""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval

#: A credible level: a probability strictly between 0 and 1.
LEVEL_CONSTRAINT = [Interval(Real, 0, 1, closed="neither")]


def mahalanobis(theta: np.ndarray, center: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    """Mahalanobis distances of the rows of ``theta`` (m, p) to ``center``, shape (m,)."""
    d = theta - center
    return np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", d, np.linalg.pinv(covariance), d), 0.0))


@dataclass(frozen=True)
class CredibleEllipsoid:
    """Joint credible region ``{theta : (theta - center)' P (theta - center) <= radius**2}``.

    ``P`` is the (pseudo-)inverse of ``covariance``; ``radius`` is the ``level`` quantile of the
    posterior draws' Mahalanobis distances to ``center``, so the region holds that share of the
    draws.

    Attributes
    ----------
    center : ndarray of shape (p,)
        Posterior mean.
    covariance : ndarray of shape (p, p)
        Posterior covariance of the draws.
    radius : float
    level : float
    """

    center: np.ndarray
    covariance: np.ndarray
    radius: float
    level: float

    def contains(self, theta) -> np.ndarray | bool:
        """Whether ``theta`` (shape (p,), or (m, p) for m points) lies in the region."""
        points = np.atleast_2d(np.asarray(theta, dtype=float))
        inside = mahalanobis(points, self.center, self.covariance) <= self.radius
        return inside if np.ndim(theta) > 1 else bool(inside[0])


def equal_tailed_interval(draws: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of ``draws`` (m, p), per column."""
    lower, upper = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], 0)
    return lower, upper


def credible_ellipsoid(draws: np.ndarray, level: float) -> CredibleEllipsoid:
    """The ellipsoid of the draws' mean and covariance that holds ``level`` of the draws."""
    center = draws.mean(0)
    covariance = np.atleast_2d(np.cov(draws, rowvar=False))
    radius = float(np.quantile(mahalanobis(draws, center, covariance), level))
    return CredibleEllipsoid(center, covariance, radius, level)
