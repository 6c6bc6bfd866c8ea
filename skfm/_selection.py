"""When a measured gain is clear: one standard error of paired losses, or the margin of the
corrected resampled t-test for cross-validated gains."""

from __future__ import annotations

import numpy as np


def gain_margin(gains, n_folds: int, z: float = 2.0) -> float:
    """The mean gain an alternative must exceed to replace the default model.

    ``gains`` holds one number per cross-validation split: the alternative's
    score minus the default's, both measured on that split. The margin is ``z``
    standard errors of their mean, its variance corrected for the training
    rows that k-fold splits share (the corrected resampled t-test of Nadeau
    and Bengio, 2003): ``var(gains) * (1 / len(gains) + 1 / (n_folds - 1))``.
    Without the correction k-fold gains look about twice as sure as they are.

    Parameters
    ----------
    gains : array-like of shape (n_splits,)
        Paired score differences, alternative minus default (at least 2).
    n_folds : int
        Folds of the (repeated) k-fold cross-validation (at least 2).
    z : float, default=2.0
        Standard errors the mean gain must exceed.

    Returns
    -------
    float
        The margin; the alternative is kept when ``mean(gains)`` exceeds it.

    Examples
    --------
    >>> from skfm._selection import gain_margin
    >>> gains = [0.02, 0.05, -0.01, 0.04, 0.03]
    >>> round(gain_margin(gains, n_folds=5), 4)
    0.0309
    >>> sum(gains) / len(gains) > gain_margin(gains, n_folds=5)  # 0.026: not clear
    False
    """
    gains = np.asarray(gains, dtype=float)
    return float(z * gains.std(ddof=1) * np.sqrt(1 / len(gains) + 1 / (n_folds - 1)))


def beats_with_margin(base, other) -> bool:
    """Whether ``other`` errs less than ``base`` by more than one standard error.

    ``base``, ``other``: paired losses of the same cases, one per rolling origin
    or per validation row; the standard error is that of the mean paired
    difference (the one-standard-error rule). False with fewer than two cases.

    Examples
    --------
    >>> import numpy as np
    >>> from skfm._selection import beats_with_margin
    >>> beats_with_margin(np.array([1.0, 1.1, 0.9]), np.array([0.5, 0.6, 0.5]))
    True
    >>> beats_with_margin(np.array([1.0, 1.1, 0.9]), np.array([0.5, 1.6, 0.5]))
    False
    """
    gain = np.asarray(base, dtype=float) - np.asarray(other, dtype=float)
    if len(gain) < 2:
        return False
    return bool(gain.mean() > gain.std(ddof=1) / np.sqrt(len(gain)))
