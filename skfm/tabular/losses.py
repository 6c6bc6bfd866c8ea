"""Per-row losses of the tabular estimators' predictions, for paired comparisons.

The guard (:mod:`skfm.tabular.guard`) and fine-tuning's keep rule
(:mod:`skfm.tabular.finetune`) compare two models row by row, with the standard error of
the paired differences; they need each row's loss, which scikit-learn's metrics average away.
"""

from __future__ import annotations

import numpy as np


def row_log_losses(probabilities: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Each row's log loss, shape (n,).

    Parameters
    ----------
    probabilities : ndarray of shape (n, n_classes)
        Class probabilities; each row is renormalised to sum to one.
    classes : ndarray of shape (n,)
        The true class of each row, as a column index of ``probabilities``.

    Examples
    --------
    >>> import numpy as np
    >>> from skfm.tabular.losses import row_log_losses
    >>> row_log_losses(np.array([[0.5, 0.5], [0.2, 0.6]]), np.array([0, 1])).round(4).tolist()
    [0.6931, 0.2877]
    """
    truth = probabilities[np.arange(len(classes)), classes] / probabilities.sum(axis=1)
    return -np.log(np.clip(truth, 1e-15, 1.0))
