"""Tables the context holds: TabSwift guarded by the model a user would fit instead.

With ``guard=True`` (the default) a TabSwift estimator fitted on a table the
context holds measures itself against that model on the table, by
``GUARD_FOLDS``-fold cross-fitting: every row is predicted by both from the other
folds (the in-context model reads them as its context, refitting nothing), and
the blend of the two is chosen on these out-of-fold predictions by the
one-standard-error rule: TabSwift's share ``w`` in ``BLEND_WEIGHTS`` is the
largest whose loss is within one standard error (of its paired difference) of
the lowest, so that noise alone does not move the prediction away from the
in-context model.

Why this rule and not :func:`skfm._selection.gain_margin` (the rule by which
:class:`~skfm.SPNClassifier` and Mantis replace a default with one alternative when its
per-fold gain is clear): the share is a point on a path of eleven, where the
one-standard-error rule is the usual choice, and five per-fold gains with their
corrected variance are too few to move along it. On the regression suite and the
linear study of 20-100 rows (``docs/benchmarks/tabswift_guard_rules.md``, every rule
choosing from the same cross-fitted predictions), requiring a clear gain at ``z = 2``
gave mean R² 0.648 against 0.650 and, at 20 rows, an RMSE of 1.44 against 1.17 (OLS:
0.98); the lowest cross-fitted error alone scored higher on the means (0.651, 0.92)
but lost up to 0.013 R² to the in-context model on tables where it was the better one.

:class:`~skfm.TabSwiftClassifier` is guarded by a
:class:`~sklearn.ensemble.HistGradientBoostingClassifier` at its defaults (the
log loss of ``w * tabswift + (1 - w) * boosting``; tables of at least
``MIN_BOOSTED_ROWS`` rows), and predicts that average, as the blend of large
tables does (:mod:`skfm.tabular.blend`).

On a small regression table a linear model is often what a user would fit, and
the in-context model, pretrained on non-linear functions, can trail it where the
target is nearly linear in the features (more so with few rows):
:class:`~skfm.TabSwiftRegressor` is guarded by scikit-learn's
:class:`~sklearn.linear_model.RidgeCV` (numeric columns imputed by their median
with missing indicators and standardised, categorical ones one-hot). Two things
are chosen on the out-of-fold predictions:

- TabSwift's share ``w`` of the mean ``w * tabswift + (1 - w) * ridge``, by the
  one-standard-error rule on the squared error;
- a scale of the predictive spread, by cross-conformal calibration: for each
  central interval in ``CALIBRATED_LEVELS``, the smallest factor by which the
  in-context interval, centred on the blended mean, covers the level's share of
  the out-of-fold targets (the ``ceil((n + 1) * level)``-th smallest factor a row
  needs); the median of these factors is kept.

At prediction each row's distribution (mean, median, mode, quantiles, draws)
becomes ``m + (1 - w) * (ridge - m) + scale * (value - m)``, ``m`` the in-context
mean: a location shift towards the ridge and a stretch about the mean. The
chosen share, the scale and the cross-fitted scores are fitted attributes
(``blend_weight_``, ``interval_scale_``, ``blend_scores_``; the classifier's
``booster_``, the regressor's ``linear_``), so a user sees what was chosen and why.

Tables larger than the context are blended with gradient boosting instead
(:mod:`skfm.tabular.blend`); a fine-tuned network (it has seen every row),
tables of fewer than ``MIN_GUARD_ROWS`` rows and, with ``large_table="subsample"``,
tables larger than the context are not guarded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skfm._backend import draw_seed
from skfm.tabular.base import context_limit
from skfm.tabular.blend import BLEND_WEIGHTS, BlendOutcome, _new_booster
from skfm.tabular.model import buckets

GUARD_FOLDS = 5
MIN_GUARD_ROWS = 10
CALIBRATED_LEVELS = (0.5, 0.8, 0.9)  # central intervals whose conformal scales are pooled
RIDGE_ALPHAS = np.logspace(-3, 3, 13)
# fewer rows are not guarded: a booster at its defaults (leaves of 20 rows or more) could
# hardly split the 4/5 of them each fold trains on, and would predict the class shares
MIN_BOOSTED_ROWS = 50


@dataclass(frozen=True)
class GuardOutcome:
    """What the guard gives the regressor.

    Attributes
    ----------
    weight : float
        TabSwift's share of the mean (1.0: the in-context model alone).
    linear : Pipeline or None
        The ridge, fitted on every row, when ``weight < 1``.
    scale : float
        Factor of the predictive spread about the mean.
    scores : dict of str to float or None
        Cross-fitted negative mean squared errors of ``"tabswift"``, ``"linear"`` (-inf
        where the ridge cannot fit the table) and ``"blend"``; None when the table was not
        guarded.
    """

    weight: float = 1.0
    linear: Pipeline | None = None
    scale: float = 1.0
    scores: dict[str, float] | None = None


def linear_model(categorical: list[int], n_features: int) -> Pipeline:
    """An unfitted ridge for the encoded table (see :mod:`skfm.tabular.encoding`).

    Parameters
    ----------
    categorical : list of int
        Columns holding category codes (NaN: missing); the others are numeric.
    n_features : int

    Returns
    -------
    Pipeline
        Numeric columns median-imputed with missing indicators and standardised,
        categorical ones one-hot (missing as a level of its own), then
        :class:`~sklearn.linear_model.RidgeCV` over ``RIDGE_ALPHAS``.
    """
    numeric = sorted(set(range(n_features)) - set(categorical))
    columns = ColumnTransformer([
        ("numeric", make_pipeline(
            SimpleImputer(strategy="median", add_indicator=True, keep_empty_features=True),
            StandardScaler()), numeric),
        ("categorical", make_pipeline(
            SimpleImputer(strategy="constant", fill_value=-1.0),
            OneHotEncoder(handle_unknown="ignore")), categorical),
    ])
    return make_pipeline(columns, RidgeCV(alphas=RIDGE_ALPHAS))


def _levels() -> list[float]:
    """The quantile levels of the calibrated intervals' ends, lower ends first."""
    return [(1 - c) / 2 for c in CALIBRATED_LEVELS] + [(1 + c) / 2 for c in CALIBRATED_LEVELS]


def cross_fitted(estimator, folds: list) -> tuple[np.ndarray, np.ndarray]:
    """TabSwift's out-of-fold means and interval ends of every fitted row.

    Parameters
    ----------
    estimator : TabSwiftRegressor
        Fitted on the rows, no guard yet.
    folds : list of (train, test) row indices

    Returns
    -------
    mean : ndarray of shape (n,)
    ends : ndarray of shape (n, 2 * len(CALIBRATED_LEVELS))
        The quantiles at ``_levels()``, on the target's scale.
    """
    n = len(estimator.X_context_)
    mean, ends = np.empty(n), np.empty((n, 2 * len(CALIBRATED_LEVELS)))
    for train, test in folds:
        probs = buckets.bucket_probabilities(estimator._logits_in_context(train, test))  # (k, C)
        borders = estimator._borders(probs.shape[1])
        mean[test] = buckets.mean(probs, borders)
        ends[test] = buckets.quantiles(probs, borders, _levels())
    return mean, ends


def one_standard_error_weight(squared_errors: np.ndarray) -> tuple[int, int]:
    """The lowest-error weight and the largest within one standard error of it.

    Parameters
    ----------
    squared_errors : ndarray of shape (len(BLEND_WEIGHTS), n)
        Each weight's squared error of every row.

    Returns
    -------
    (best, chosen) : tuple of int
        Indices into ``BLEND_WEIGHTS``.
    """
    mse = squared_errors.mean(1)
    best = len(mse) - 1 - int(np.argmin(mse[::-1]))  # ties: the larger weight
    paired = squared_errors - squared_errors[best]
    standard_error = paired.std(1, ddof=1) / np.sqrt(squared_errors.shape[1])
    return best, int(np.flatnonzero(mse <= mse[best] + standard_error).max())


def conformal_scale(y: np.ndarray, centre: np.ndarray, mean: np.ndarray,
                    ends: np.ndarray) -> float:
    """The median over ``CALIBRATED_LEVELS`` of each interval's cross-conformal scale.

    Parameters
    ----------
    y, centre, mean : ndarray of shape (n,)
        Targets, the blended means and TabSwift's means (out of fold).
    ends : ndarray of shape (n, 2 * len(CALIBRATED_LEVELS))
        TabSwift's interval ends at ``_levels()`` (out of fold).

    Returns
    -------
    float
    """
    n, k = len(y), len(CALIBRATED_LEVELS)
    residual = (y - centre)[:, None]  # (n, 1)
    below = np.minimum(ends[:, :k] - mean[:, None], -1e-300)  # (n, k), < 0
    above = np.maximum(ends[:, k:] - mean[:, None], 1e-300)  # (n, k), > 0
    needed = np.where(residual >= 0, residual / above, residual / below)  # (n, k), >= 0
    ranks = np.minimum(np.ceil((n + 1) * np.asarray(CALIBRATED_LEVELS)).astype(int), n)
    scales = np.sort(needed, axis=0)[ranks - 1, np.arange(k)]
    return float(np.median(scales))


def _guarded(estimator, n: int) -> bool:
    """Whether the guard runs on a fitted estimator's table of ``n`` rows."""
    return (estimator.guard and not estimator.fine_tuned_ and MIN_GUARD_ROWS <= n
            <= context_limit(estimator))


def _folds(n: int, classes: np.ndarray | None, seed: int) -> list:
    """``GUARD_FOLDS`` shuffled folds of ``n`` rows, stratified by ``classes`` (class
    indices) when every class has a row in each fold."""
    rows = np.zeros((n, 1))
    if classes is not None and np.bincount(classes).min() >= GUARD_FOLDS:
        return list(StratifiedKFold(GUARD_FOLDS, shuffle=True, random_state=seed)
                    .split(rows, classes))
    return list(KFold(GUARD_FOLDS, shuffle=True, random_state=seed).split(rows))


def guard_with_boosting(estimator, y: np.ndarray) -> BlendOutcome:
    """Choose the booster's share of a fitted TabSwiftClassifier's probabilities.

    Both models predict every row from the other folds: TabSwift reading them as its
    context (:meth:`~skfm.tabular.base.TabSwiftBase._logits_in_context`), a
    :class:`~sklearn.ensemble.HistGradientBoostingClassifier` at its defaults fitted on
    them. TabSwift's share of ``w * tabswift + (1 - w) * boosting`` is the largest in
    ``BLEND_WEIGHTS`` whose log loss is within one standard error of the lowest.

    Parameters
    ----------
    estimator : TabSwiftClassifier
        Fitted on every row of the table, no blend; its ``guard``, ``fine_tuned_``,
        ``random_state``, classes and encoder are read.
    y : ndarray of shape (n_samples,)
        Class indices.

    Returns
    -------
    BlendOutcome
        With the booster refitted on every row when TabSwift's share is below 1, and the
        cross-fitted negative log losses (``"tabswift"``, ``"boosting"``, ``"blend"``).
    """
    n, n_classes = len(y), len(estimator.classes_)
    if n_classes < 2 or n < MIN_BOOSTED_ROWS or not _guarded(estimator, n):
        return BlendOutcome()
    X_enc, seed = estimator.X_context_, draw_seed(estimator.random_state)
    tabswift, boosting = np.empty((n, n_classes)), np.zeros((n, n_classes))
    n_outputs = estimator._n_outputs()
    for train, test in _folds(n, y, seed):
        tabswift[test] = estimator._proba(estimator._logits_in_context(train, test), n_outputs)
        present = np.unique(y[train])
        if len(present) == 1:  # the other folds hold one class: nothing to boost
            boosting[test, present[0]] = 1.0
            continue
        booster = _new_booster(estimator, seed).fit(X_enc[train], y[train])
        # a class missing from the other folds is missing from the booster's columns
        boosting[np.ix_(test, booster.classes_)] = booster.predict_proba(X_enc[test])
    losses = []
    for w in BLEND_WEIGHTS:
        mixed = w * tabswift + (1 - w) * boosting
        truth = mixed[np.arange(n), y] / mixed.sum(axis=1)
        losses.append(-np.log(np.clip(truth, 1e-15, 1.0)))
    losses = np.stack(losses)  # (len(BLEND_WEIGHTS), n)
    _, chosen = one_standard_error_weight(losses)
    weight = float(BLEND_WEIGHTS[chosen])
    scores = {"tabswift": -float(losses[-1].mean()), "boosting": -float(losses[0].mean()),
              "blend": -float(losses[chosen].mean())}
    if weight == 1.0:
        return BlendOutcome(weight, None, scores)
    return BlendOutcome(weight, _new_booster(estimator, seed).fit(X_enc, y), scores)


def _fitted_ridge(categorical: list[int], X: np.ndarray, y: np.ndarray) -> Pipeline | None:
    """The ridge fitted on ``X, y``, or None where it cannot fit them: values whose squares
    overflow, such as 1e300, give it no finite standardisation or no converging solver."""
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            return linear_model(categorical, X.shape[1]).fit(X, y)
        except ValueError:  # non-finite standardised values; LinAlgError is one too
            return None


def _cross_fitted_ridge(categorical: list[int], X_enc: np.ndarray, y: np.ndarray,
                        folds: list) -> np.ndarray | None:
    """The ridge's out-of-fold predictions, or None where it cannot fit the table."""
    linear = np.empty(len(y))
    for train, test in folds:
        model = _fitted_ridge(categorical, X_enc[train], y[train])
        if model is None:
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            linear[test] = model.predict(X_enc[test])
    return linear if np.isfinite(linear).all() else None


def guard_with_linear(estimator, y: np.ndarray) -> GuardOutcome:
    """Choose the ridge's share and the spread's scale of a fitted TabSwiftRegressor.

    Parameters
    ----------
    estimator : TabSwiftRegressor
        Fitted on every row of the table (its ``X_context_``), no guard yet; its
        ``guard``, ``fine_tuned_``, ``random_state`` and encoder are read.
    y : ndarray of shape (n_samples,)

    Returns
    -------
    GuardOutcome
    """
    n = len(y)
    if not _guarded(estimator, n):
        return GuardOutcome()
    X_enc = estimator.X_context_
    folds = _folds(n, None, draw_seed(estimator.random_state))
    mean, ends = cross_fitted(estimator, folds)
    categorical = sorted(estimator.encoder_.categories_)
    linear = _cross_fitted_ridge(categorical, X_enc, y, folds)
    no_ridge = linear is None  # then TabSwift alone (every weight ties), its spread calibrated
    if no_ridge:
        linear = mean
    unit = estimator.y_scale_  # errors in standard deviations of y: no overflow
    squared_errors = np.stack([((y - (w * mean + (1 - w) * linear)) / unit) ** 2
                               for w in BLEND_WEIGHTS])
    _, chosen = one_standard_error_weight(squared_errors)
    weight = float(BLEND_WEIGHTS[chosen])
    centre = weight * mean + (1 - weight) * linear
    with np.errstate(over="ignore"):  # back to the target's units (-inf past float64)
        scores = {name: -float(squared_errors[k].mean() * np.square(unit))
                  for name, k in (("tabswift", -1), ("linear", 0), ("blend", chosen))}
    fitted = None if weight == 1.0 else _fitted_ridge(categorical, X_enc, y)
    if no_ridge or (weight < 1.0 and fitted is None):
        scores["linear"], scores["blend"] = -np.inf, scores["tabswift"]
        weight, centre = 1.0, mean
    scale = conformal_scale(y, centre, mean, ends)
    return GuardOutcome(weight, fitted, scale, scores)
