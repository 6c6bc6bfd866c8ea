"""Tables larger than the context: TabSwift blended with gradient boosting on held-out rows.

Each ensemble member reads at most ``max_context_rows`` rows of the table as its
context, so on tables of tens of thousands of rows the in-context model sees a
fraction of them, while a gradient-boosted tree ensemble learns from all of
them. With ``large_table="blend"`` (the default), ``fit`` on a table with more
rows than the context holds (2,048 rows, or ``max_context_rows`` when set)
holds out ``validation_fraction`` of its rows (at most ``MAX_VALIDATION_ROWS``,
stratified for classifiers: the split of fine-tuning, so fine-tuned weights never
saw them). No ensemble member takes a held-out row into its context (each
member subsamples the others), and scikit-learn's
:class:`~sklearn.ensemble.HistGradientBoostingClassifier` (or ``...Regressor``,
at its defaults, but early-stopped on the held-out rows) is fitted on the other
rows; the blend scores the weighted averages ``w * tabswift + (1 - w) * boosting``
for ``w`` in ``BLEND_WEIGHTS`` on the held-out rows (log loss of the probabilities;
the squared error of the means for regressors). The weight with the lowest loss
is kept (ties go to the larger weight); unless it is 1, the booster is
refitted on every row with the number of iterations the early stopping chose.
(A booster left to scikit-learn's ``early_stopping="auto"`` would set aside 10 %
of its rows above 10,000 to stop on, and none below; the held-out rows already
are such a set, and the refit then learns from every row. Measured on the
large-table suite, ``docs/benchmarks/tabswift_large.md``.) ``large_table="subsample"``
keeps the in-context model alone, ``"retrieve"`` gives it retrieved contexts
(:mod:`skfm.tabular.retrieval`); smaller tables are guarded by cross-fitting instead
(:mod:`skfm.tabular.guard`).

With the default ``"auto"`` sizes, a blended estimator's in-context model is lighter
than on a table that fits the context: ``BLEND_MEMBERS`` members of
``BLEND_CONTEXT_ROWS`` rows with per-row early exit (``skfm.tabular.base``), as
the booster carries what a larger context would add.

A regressor's blend moves each row's whole predictive distribution (the
mean, median, mode, quantiles and draws) by ``(1 - w)`` times the booster's
prediction minus the in-context mean: a location shift, so that intervals
keep TabSwift's width.

The chosen weight and the three held-out scores are fitted attributes
(``blend_weight_``, ``blend_scores_``), so a user sees what was chosen and why.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.utils import _safe_indexing

from skfm._backend import draw_seed
from skfm.tabular.base import context_limit
from skfm.tabular.finetune import validation_split
from skfm.tabular.losses import row_log_losses

# TabSwift's share of the blend: 0, 0.1, ..., 1, each the double nearest its decimal (a
# linspace's 0.30000000000000004 would be printed as the fitted share)
BLEND_WEIGHTS = np.arange(11) / 10
MAX_CATEGORY_LEVELS = 255  # HistGradientBoosting's limit for a native categorical column


@dataclass(frozen=True)
class PartnerOutcome:
    """What the blend (here) or the guard (:mod:`skfm.tabular.guard`) gives the estimator.

    Attributes
    ----------
    weight : float
        TabSwift's share of the prediction (1.0: the in-context model alone).
    booster : HistGradientBoostingClassifier or HistGradientBoostingRegressor or None
        Fitted on every row of the table when it is the partner and ``weight < 1``.
    linear : Pipeline or None
        The guard's ridge or logistic regression, fitted on every row, when it is the
        partner and ``weight < 1``.
    scale : float
        Factor of the regressor's predictive spread about the mean (the guard's).
    scores : dict of str to float or None
        Held-out (blend) or cross-fitted (guard) scores, higher is better (negative log
        losses, negative mean squared errors): of ``"tabswift"``, of each partner alone
        (``"boosting"``, the guard's ``"linear"``; -inf where the linear model cannot fit
        the table) and of the chosen ``"blend"``; None when no partner was considered.
    """

    weight: float = 1.0
    booster: object = None
    linear: object = None
    scale: float = 1.0
    scores: dict[str, float] | None = None


def _new_booster(estimator, seed: int, early_stopping: bool | str = "auto", **params):
    """An unfitted booster at scikit-learn's defaults but ``early_stopping`` and ``params``,
    categorical columns as categories."""
    categorical = np.zeros(estimator.n_features_in_, dtype=bool)
    for j, levels in estimator.encoder_.categories_.items():
        categorical[j] = len(levels) <= MAX_CATEGORY_LEVELS
    Booster = (HistGradientBoostingClassifier if estimator._task == "classification"
               else HistGradientBoostingRegressor)
    return Booster(categorical_features=categorical if categorical.any() else None,
                   early_stopping=early_stopping, random_state=seed, **params)


def stratified_tenths_hold_every_class(y: np.ndarray, folds: list) -> bool:
    """Whether early stopping can hold out a stratified tenth of every fold's training rows
    and of all rows: each class present there has two rows or more, and the tenth has room
    for a row of each (what scikit-learn's ``train_test_split(stratify=...)`` asks).

    Examples
    --------
    >>> import numpy as np
    >>> from skfm.tabular.blend import stratified_tenths_hold_every_class
    >>> y = np.repeat([0, 1, 2], [40, 40, 2])
    >>> stratified_tenths_hold_every_class(y, [(np.arange(81), np.array([81]))])
    False
    >>> stratified_tenths_hold_every_class(y[:80], [(np.arange(70), np.arange(70, 80))])
    True
    """
    for rows in [np.arange(len(y)), *(train for train, _ in folds)]:
        counts = np.bincount(y[rows])
        present = counts[counts > 0]
        if present.min() < 2 or np.ceil(0.1 * len(rows)) < len(present):
            return False
    return True


def _early_stopped_booster(estimator, seed: int, X_enc: np.ndarray, y: np.ndarray,
                           train: np.ndarray, val: np.ndarray):
    """The booster fitted on the ``train`` rows, stopped early on the ``val`` rows (those
    of a class it saw, for classifiers; without any, the booster stops by scikit-learn's
    ``"auto"`` rule)."""
    stop_on = val
    if estimator._task == "classification":
        stop_on = val[np.isin(y[val], y[train])]  # scikit-learn rejects labels unseen in fit
    if len(stop_on) == 0:
        return _new_booster(estimator, seed).fit(X_enc[train], y[train])
    return _new_booster(estimator, seed, early_stopping=True).fit(
        X_enc[train], y[train], X_val=X_enc[stop_on], y_val=y[stop_on])


def _losses(task: str, y_val: np.ndarray, tabswift: np.ndarray,
            boosting: np.ndarray) -> np.ndarray:
    """Held-out loss of every weight in ``BLEND_WEIGHTS``; ``y_val`` are class indices for
    classifiers (columns of the probabilities)."""
    losses = []
    for w in BLEND_WEIGHTS:
        mixed = w * tabswift + (1.0 - w) * boosting
        if task == "classification":
            losses.append(float(row_log_losses(mixed, y_val).mean()))
        else:
            losses.append(float(np.mean((y_val - mixed) ** 2)))
    return np.asarray(losses)


def held_out_rows(estimator, n: int, strata: np.ndarray | None):
    """The rows the blend is chosen on, or None when the estimator will not blend.

    Parameters
    ----------
    estimator : TabSwiftClassifier or TabSwiftRegressor
        Its ``large_table``, ``max_context_rows``, ``validation_fraction`` and
        ``random_state`` are read.
    n : int
        Rows of the training table.
    strata : ndarray of shape (n,) or None
        Class indices to stratify the held-out split by (classifiers), or None.

    Returns
    -------
    (train, held_out) : tuple of ndarray, or None
        Row indices: the rows the members and the first booster may learn from, and the
        held-out ones (the validation split of fine-tuning). None for tables within the
        context, with ``large_table="subsample"`` or ``"retrieve"``, or with no row to hold
        out.
    """
    if estimator.large_table != "blend" or n <= context_limit(estimator):
        return None
    train, held_out = validation_split(estimator, n, strata)
    return None if len(held_out) == 0 else (train, held_out)


def blend_with_boosting(estimator, X, y: np.ndarray, split) -> PartnerOutcome:
    """Choose the blend of ``estimator`` (fitted on ``X, y``) with gradient boosting.

    Parameters
    ----------
    estimator : TabSwiftClassifier or TabSwiftRegressor
        Fitted on ``X, y`` with no blend yet, its members' contexts drawn from
        ``split[0]`` only, so that its predictions of the held-out rows are honest (its
        encoder, ``random_state`` and predictions are read; it is not changed).
    X : array-like or DataFrame of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        Class indices (classifiers) or finite targets.
    split : tuple of ndarray or None
        ``(train, held_out)`` rows from :func:`held_out_rows`; None: no blend.

    Returns
    -------
    PartnerOutcome
    """
    if split is None:
        return PartnerOutcome()
    train, val = split
    seed = draw_seed(estimator.random_state)
    X_val = _safe_indexing(X, val)
    X_enc = estimator.X_context_  # the table as fit encoded it
    booster = _early_stopped_booster(estimator, seed, X_enc, y, train, val)
    if estimator._task == "classification":
        tabswift, boosting = estimator.predict_proba(X_val), booster.predict_proba(X_enc[val])
        # a class missing from the training part is missing from the booster's columns
        full = np.zeros((len(val), len(estimator.classes_)))
        full[:, booster.classes_] = boosting
        boosting = full
    else:
        tabswift, boosting = estimator.predict(X_val), booster.predict(X_enc[val])
    losses = _losses(estimator._task, y[val], tabswift, boosting)
    best = len(losses) - 1 - int(np.argmin(losses[::-1]))  # ties: the larger weight
    scores = {"tabswift": -float(losses[-1]), "boosting": -float(losses[0]),
              "blend": -float(losses[best])}
    weight = float(BLEND_WEIGHTS[best])
    if weight == 1.0:
        return PartnerOutcome(weight, scores=scores)
    refit = _new_booster(estimator, seed, early_stopping=False, max_iter=booster.n_iter_)
    return PartnerOutcome(weight, refit.fit(X_enc, y), scores=scores)
