"""Tables the context holds: TabSwift guarded by the models a user would fit instead.

With ``guard=True`` (the default) a TabSwift estimator fitted on a table the
context holds measures itself against its partners on the table, by
``GUARD_FOLDS``-fold cross-fitting: every row is predicted from the other folds
by TabSwift (its first ``GUARD_MEMBERS`` members reading them as their context,
refitting nothing; all members where output codes merge the classes, see
:func:`cross_fitted_members`) and by each partner (fitted on them). The partners
are a linear model, scikit-learn's :class:`~sklearn.linear_model.RidgeCV` or
:class:`~sklearn.linear_model.LogisticRegression` at its defaults (numeric
columns imputed by their median with missing indicators and standardised,
categorical ones one-hot), and from ``MIN_BOOSTED_ROWS`` rows on
:class:`~sklearn.ensemble.HistGradientBoostingRegressor` or
``...Classifier`` of ``BOOSTER_ROUNDS`` rounds at a learning rate of ``10 / BOOSTER_ROUNDS``
(rounds times rate as at scikit-learn's defaults; for three classes or more with early
stopping, see :func:`_partners`; on many classes times columns with fewer rounds, see
:func:`booster_schedule`). The candidates are TabSwift alone and
``w * tabswift + (1 - w) * partner`` for each partner and each ``w < 1`` in
``BLEND_WEIGHTS``, scored by the squared error (regressors) or the log loss
(classifiers) of the out-of-fold predictions; the one-standard-error rule
keeps the candidate of largest share ``w`` whose loss is within one standard
error (of its paired difference) of the lowest (at equal shares, the lower
loss), so that noise alone does not move the prediction away from the
in-context model. Unless TabSwift alone is kept, the chosen partner is refitted
on every row.

Why this rule and not :func:`skfm._selection.gain_margin` (the rule by which
:class:`~skfm.SPNClassifier` and Mantis replace a default with one alternative when its
per-fold gain is clear): the share is a point on a path (eleven per partner), where the
one-standard-error rule is the usual choice, and five per-fold gains with their
corrected variance are too few to move along it. On the regression suite and the
linear study of 20-100 rows (``docs/benchmarks/tabswift_guard_rules.md``, every rule
choosing from the same cross-fitted predictions), requiring a clear gain at ``z = 2``
gave mean R² 0.649 against 0.654 and, at 20 rows, an RMSE of 1.44 against 1.17 (OLS:
0.98); the lowest cross-fitted error alone tied on the suite (0.654) and did better at
few rows (0.92), but lost up to 0.016 R² to the in-context model on tables where it was
the better one (cpus, Salaries).

The classifier predicts the weighted average of the probabilities, as the blend
of large tables does (:mod:`skfm.tabular.blend`). The regressor moves the whole
predicted distribution, and scales its spread by cross-conformal calibration:
for each central interval in ``CALIBRATED_LEVELS``, the smallest factor by which
the in-context interval, centred on the blended mean, covers the level's share
of the out-of-fold targets (the ``ceil((n + 1) * level)``-th smallest factor a
row needs); the median of these factors is kept. At prediction each row's
distribution (mean, median, mode, quantiles, draws) becomes
``m + (1 - w) * (partner - m) + scale * (value - m)``, ``m`` the in-context
mean: a location shift towards the partner and a stretch about the mean. The
chosen share, partner and scale and the cross-fitted scores are fitted
attributes (``blend_weight_``, ``linear_`` or ``booster_``, ``interval_scale_``,
``blend_scores_``), so a user sees what was chosen and why.

Tables larger than the context are blended with gradient boosting instead
(:mod:`skfm.tabular.blend`); a fine-tuned network (it has seen every row),
tables of fewer than ``MIN_GUARD_ROWS`` rows and, with ``large_table="subsample"``,
tables larger than the context are not guarded.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, RidgeCV
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skfm._backend import draw_seed
from skfm.tabular.base import context_limit
from skfm.tabular.blend import (
    BLEND_WEIGHTS,
    PartnerOutcome,
    _new_booster,
    stratified_tenths_hold_every_class,
)
from skfm.tabular.losses import row_log_losses
from skfm.tabular.model import buckets

# The first 2 members cross-fitted and a booster of 40 rounds (until 2026-12-07 every member
# and scikit-learn's 100 rounds): on the 70 tables of docs/benchmarks/tabswift_guard_cost.md
# the guard's cost fell by more than half, its choices and scores moved within noise.
GUARD_FOLDS = 5
GUARD_MEMBERS = 2
BOOSTER_ROUNDS = 40
MIN_GUARD_ROWS = 10
CALIBRATED_LEVELS = (0.5, 0.8, 0.9)  # central intervals whose conformal scales are pooled
RIDGE_ALPHAS = np.logspace(-3, 3, 13)
# on fewer rows no booster partners TabSwift (and a classifier is not guarded): a booster
# at its defaults (leaves of 20 rows or more) could hardly split the 4/5 of them each fold
# trains on, and would predict the class shares or the mean
MIN_BOOSTED_ROWS = 50
# A booster partner's work per fit, in trees x columns each split scans: what 100 rounds
# grow on 10 classes and 100 columns, so that every table of the CC18 folder (at most 760
# trees' columns per round, mfeat-fourier) keeps its BOOSTER_ROUNDS. Beyond it (one tree per
# class and round, each split scanning every column) the guard of 750 rows of 20 classes and
# 120 columns took 5 times the network alone, and more classes or columns more; see
# booster_schedule.
BOOSTER_WORK = 100_000
MIN_BOOSTER_ROUNDS = 20  # at a learning rate of 0.5


def linear_model(categorical: list[int], n_features: int,
                 classification: bool = False) -> Pipeline:
    """An unfitted linear model for the encoded table (see :mod:`skfm.tabular.encoding`).

    Parameters
    ----------
    categorical : list of int
        Columns holding category codes (NaN: missing); the others are numeric.
    n_features : int
    classification : bool, default=False

    Returns
    -------
    Pipeline
        Numeric columns median-imputed with missing indicators and standardised,
        categorical ones one-hot (missing as a level of its own), then
        :class:`~sklearn.linear_model.RidgeCV` over ``RIDGE_ALPHAS``, or for
        classification :class:`~sklearn.linear_model.LogisticRegression` at its
        defaults (``max_iter=1000``).
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
    model = LogisticRegression(max_iter=1000) if classification else RidgeCV(alphas=RIDGE_ALPHAS)
    return make_pipeline(columns, model)


def _levels() -> list[float]:
    """The quantile levels of the calibrated intervals' ends, lower ends first."""
    return [(1 - c) / 2 for c in CALIBRATED_LEVELS] + [(1 + c) / 2 for c in CALIBRATED_LEVELS]


def cross_fitted(estimator, folds: list,
                 n_members: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """TabSwift's out-of-fold means and interval ends of every fitted row.

    Parameters
    ----------
    estimator : TabSwiftRegressor
        Fitted on the rows, no guard yet.
    folds : list of (train, test) row indices
    n_members : int, optional
        Its first members that predict (None: all).

    Returns
    -------
    mean : ndarray of shape (n,)
    ends : ndarray of shape (n, 2 * len(CALIBRATED_LEVELS))
        The quantiles at ``_levels()``, on the target's scale.
    """
    n = len(estimator.X_context_)
    mean, ends = np.empty(n), np.empty((n, 2 * len(CALIBRATED_LEVELS)))
    for train, test in folds:
        probs = buckets.bucket_probabilities(
            estimator._logits_in_context(train, test, n_members))  # (k, C)
        borders = estimator._borders(probs.shape[1])
        mean[test] = buckets.mean(probs, borders)
        ends[test] = buckets.quantiles(probs, borders, _levels())
    return mean, ends


def one_standard_error_weight(losses: np.ndarray,
                              weights: np.ndarray = BLEND_WEIGHTS) -> tuple[int, int]:
    """The lowest-loss candidate and the one of largest weight within one standard error.

    Parameters
    ----------
    losses : ndarray of shape (n_candidates, n)
        Each candidate's loss of every row.
    weights : ndarray of shape (n_candidates,), default=BLEND_WEIGHTS
        TabSwift's share in each candidate.

    Returns
    -------
    (best, chosen) : tuple of int
        Indices of candidates: the lowest mean loss (ties: the larger weight), and the
        largest weight whose mean loss is within one standard error (of its paired
        difference) of the best's (ties: the lower loss).
    """
    mean = losses.mean(1)
    best = int(np.lexsort((-weights, mean))[0])
    paired = losses - losses[best]
    standard_error = paired.std(1, ddof=1) / np.sqrt(losses.shape[1])
    within = np.flatnonzero(mean <= mean[best] + standard_error)
    return best, int(within[np.lexsort((mean[within], -weights[within]))[0]])


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


def cross_fitted_members(estimator) -> int | None:
    """How many of a guarded estimator's members predict out of fold: the first
    ``GUARD_MEMBERS``, or all (None) where the classes share the head's outputs by codes
    (fewer members could not tell every pair of classes apart)."""
    if estimator._task == "classification" and len(estimator.classes_) > estimator._n_outputs():
        return None
    return GUARD_MEMBERS


def _guarded(estimator, n: int) -> bool:
    """Whether the guard runs on a fitted estimator's table of ``n`` rows."""
    return (estimator.guard and not estimator.fine_tuned_ and MIN_GUARD_ROWS <= n
            <= context_limit(estimator))


def _folds(n: int, classes: np.ndarray | None, seed: int, k: int = GUARD_FOLDS) -> list:
    """``k`` shuffled folds of ``n`` rows, stratified by ``classes`` (class indices) when
    every class has a row in each fold."""
    rows = np.zeros((n, 1))
    if classes is not None and np.bincount(classes).min() >= k:
        return list(StratifiedKFold(k, shuffle=True, random_state=seed).split(rows, classes))
    return list(KFold(k, shuffle=True, random_state=seed).split(rows))


def _fitted_partner(partner, X: np.ndarray, y: np.ndarray):
    """``partner`` fitted on ``X, y``, or None where it cannot fit them: values whose
    squares overflow, such as 1e300, give a linear model no finite standardisation or no
    converging solver (a solver that stops early still gives a model, measured as any)."""
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            return partner.fit(X, y)
        except ValueError:  # non-finite standardised values; LinAlgError is one too
            return None


def booster_schedule(trees_per_round: int, n_features: int,
                     rounds: int = BOOSTER_ROUNDS) -> dict:
    """The parameters that keep a booster partner within ``BOOSTER_WORK``.

    ``rounds`` rounds at a learning rate of ``10 / rounds`` where they do;
    beyond, fewer rounds (at least ``MIN_BOOSTER_ROUNDS``) at a learning rate raised so that
    rounds times rate stays 10, and below that many rounds a share of the columns per split
    (``max_features``). The histograms of every column are still built, so the work is
    bounded by a constant times ``BOOSTER_WORK`` rather than at it.

    Parameters
    ----------
    trees_per_round : int
        One per class for three classes or more, else 1.
    n_features : int
    rounds : int, default=BOOSTER_ROUNDS
        The most rounds (100: scikit-learn's defaults, the guard's until 2026-12-07).

    Returns
    -------
    dict
        Parameters of :class:`~sklearn.ensemble.HistGradientBoostingClassifier` (or
        ``...Regressor``).

    Examples
    --------
    >>> booster_schedule(1, 20)
    {'max_iter': 40, 'learning_rate': 0.25}
    >>> booster_schedule(26, 150)
    {'max_iter': 25, 'learning_rate': 0.4}
    >>> booster_schedule(26, 617)
    {'max_iter': 20, 'learning_rate': 0.5, 'max_features': 0.3116...}
    """
    per_round = trees_per_round * n_features
    rounds = min(rounds, max(MIN_BOOSTER_ROUNDS, BOOSTER_WORK // per_round))
    params = {"max_iter": rounds, "learning_rate": 10 / rounds}
    if rounds * per_round > BOOSTER_WORK:
        params["max_features"] = BOOSTER_WORK / (rounds * per_round)
    return params


def _partners(estimator, y: np.ndarray, folds: list, seed: int) -> dict:
    """Makers of the unfitted partners of a guarded estimator on the rows ``y`` (class
    indices or targets) split into ``folds``, by name: the linear model, and from
    ``MIN_BOOSTED_ROWS`` rows on the booster."""
    categorical = sorted(estimator.encoder_.categories_)
    width = estimator.X_context_.shape[1]
    classification = estimator._task == "classification"
    partners = {"linear": lambda: linear_model(categorical, width, classification)}
    if len(y) >= MIN_BOOSTED_ROWS:
        # one tree per class and round for three classes or more: there, early stopping on
        # a stratified tenth of the rows spares the rounds that no longer help, where that
        # tenth can hold every class (else scikit-learn refuses it and the partner is lost);
        # binary and regression boosters keep the default (early stopping beyond 10,000
        # rows); BOOSTER_ROUNDS rounds, fewer beyond BOOSTER_WORK (booster_schedule)
        many = classification and len(estimator.classes_) > 2
        stops = many and stratified_tenths_hold_every_class(y, folds)
        schedule = booster_schedule(len(estimator.classes_) if many else 1, width)
        partners["boosting"] = lambda: _new_booster(
            estimator, seed, True if stops else "auto", **schedule)
    return partners


def _out_of_fold(make_partner, X: np.ndarray, y: np.ndarray, folds: list,
                 n_classes: int) -> np.ndarray | None:
    """A partner's out-of-fold predictions, or None where it cannot fit the table.

    Class probabilities (n, n_classes) when ``n_classes`` > 0 (zero for a class absent
    from the other folds), else predictions (n,).
    """
    out = np.zeros((len(y), n_classes)) if n_classes else np.empty(len(y))
    for train, test in folds:
        present = np.unique(y[train]) if n_classes else None
        if n_classes and len(present) == 1:  # the other folds hold one class: nothing to learn
            out[test, present[0]] = 1.0
            continue
        fitted = _fitted_partner(make_partner(), X[train], y[train])
        if fitted is None:
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            if n_classes:
                out[np.ix_(test, fitted.classes_)] = fitted.predict_proba(X[test])
            else:
                out[test] = fitted.predict(X[test])
    return out if np.isfinite(out).all() else None


def _choose(tabswift: np.ndarray, outputs: dict, loss) -> tuple[float, str | None, dict]:
    """TabSwift's share, the partner (None: TabSwift alone) and the mean losses of
    TabSwift alone, of each partner alone and of the chosen candidate."""
    weights, names, losses = [1.0], [None], [loss(tabswift)]
    for name, partner in outputs.items():
        for w in BLEND_WEIGHTS[:-1]:
            weights.append(w)
            names.append(name)
            losses.append(loss(w * tabswift + (1 - w) * partner))
    losses = np.stack(losses)  # (n_candidates, n)
    _, chosen = one_standard_error_weight(losses, np.asarray(weights))
    mean = losses.mean(1)
    alone = {name: float(mean[names.index(name)]) for name in outputs}  # weight 0 comes first
    return float(weights[chosen]), names[chosen], {
        "tabswift": float(mean[0]), **alone, "blend": float(mean[chosen])}


def guard_with_partners(estimator, y: np.ndarray) -> PartnerOutcome:
    """Choose the partner, its share and (regressors) the spread's scale of a fitted
    TabSwift estimator.

    Every row is predicted from the other folds: by TabSwift's first members
    (:func:`cross_fitted_members`) reading them as their context
    (:meth:`~skfm.tabular.base.TabSwiftBase._logits_in_context`), and by each partner
    fitted on them: the linear model (:func:`linear_model`) and, on ``MIN_BOOSTED_ROWS``
    rows or more, a booster of ``BOOSTER_ROUNDS`` rounds (:func:`booster_schedule`;
    early-stopped for three classes or more where a stratified tenth of a fold's rows can
    hold every class: :func:`stratified_tenths_hold_every_class`). The candidates are
    TabSwift alone and ``w * tabswift + (1 - w) * partner`` for each partner and each ``w < 1`` in
    ``BLEND_WEIGHTS``; :func:`one_standard_error_weight` on the log loss (classifiers) or
    the squared error (regressors) picks one. A regressor's spread is then scaled by
    :func:`conformal_scale`.

    Parameters
    ----------
    estimator : TabSwiftClassifier or TabSwiftRegressor
        Fitted on every row of the table (its ``X_context_``), no blend or guard yet; its
        ``guard``, ``fine_tuned_``, ``random_state`` and encoder (and a classifier's
        classes) are read.
    y : ndarray of shape (n_samples,)
        Class indices (classifiers) or targets.

    Returns
    -------
    PartnerOutcome
        With the chosen partner refitted on every row when TabSwift's share is below 1.
    """
    n = len(y)
    n_classes = len(estimator.classes_) if estimator._task == "classification" else 0
    classifier_guarded = n_classes >= 2 and n >= MIN_BOOSTED_ROWS
    if not _guarded(estimator, n) or (n_classes and not classifier_guarded):
        return PartnerOutcome()
    X_enc, seed = estimator.X_context_, draw_seed(estimator.random_state)
    folds = _folds(n, y if n_classes else None, seed)
    n_members = cross_fitted_members(estimator)
    if n_classes:
        tabswift, n_outputs = np.empty((n, n_classes)), estimator._n_outputs()
        for train, test in folds:
            tabswift[test] = estimator._proba(
                estimator._logits_in_context(train, test, n_members), n_outputs,
                estimator.members_[:n_members])
        unit = 1.0

        def loss(prediction):
            return row_log_losses(prediction, y)
    else:
        tabswift, ends = cross_fitted(estimator, folds, n_members)
        unit = estimator.y_scale_  # errors in standard deviations of y: no overflow

        def loss(prediction):
            return ((y - prediction) / unit) ** 2
    partners = _partners(estimator, y, folds, seed)
    outputs = {name: out for name, make in partners.items()
               if (out := _out_of_fold(make, X_enc, y, folds, n_classes)) is not None}
    weight, name, losses = _choose(tabswift, outputs, loss)
    fitted = None if name is None else _fitted_partner(partners[name](), X_enc, y)
    if fitted is None:  # TabSwift alone, chosen or left as the partner cannot fit every row
        weight, name, losses["blend"] = 1.0, None, losses["tabswift"]
    with np.errstate(over="ignore"):  # back to the target's units (-inf past float64)
        squared_unit = np.square(np.float64(unit))
        scores = {key: float(-losses.get(key, np.inf) * squared_unit)
                  for key in ("tabswift", *partners, "blend")}
    outcome = PartnerOutcome(weight, linear=fitted if name == "linear" else None,
                           booster=fitted if name == "boosting" else None, scores=scores)
    if n_classes:
        return outcome
    centre = tabswift if name is None else weight * tabswift + (1 - weight) * outputs[name]
    return replace(outcome, scale=conformal_scale(y, centre, tabswift, ends))
