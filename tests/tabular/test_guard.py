"""Tables the context holds: TabSwift guarded by a ridge (regressor) or by gradient boosting
and a logistic regression (classifier), chosen by cross-fitting."""

import pickle

import numpy as np
import pytest
import skops.io as sio
from scipy.stats import norm
from sklearn.ensemble import HistGradientBoostingClassifier

from skfm import TabSwiftClassifier, TabSwiftRegressor
from skfm.tabular.blend import BLEND_WEIGHTS
from skfm.tabular.guard import (
    BOOSTER_ROUNDS,
    BOOSTER_WORK,
    CALIBRATED_LEVELS,
    GUARD_FOLDS,
    GUARD_MEMBERS,
    MIN_BOOSTED_ROWS,
    MIN_GUARD_ROWS,
    conformal_scale,
    cross_fitted,
    cross_fitted_members,
    one_standard_error_weight,
)
from skfm.tabular.model.buckets import bucket_probabilities

TINY = {"checkpoint": "random:tiny", "n_estimators": 2, "n_jobs": 1}


def linear_table(n, seed=0, noise=0.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, 2.0 * X[:, 0] - X[:, 1] + 0.5 * X[:, 3] + noise * rng.normal(size=n)


@pytest.fixture(scope="module")
def guarded():
    X, y = linear_table(120)
    return TabSwiftRegressor(**TINY).fit(X, y)


def in_context_alone(estimator):
    """A copy of a guarded estimator that predicts with its in-context model alone."""
    alone = pickle.loads(pickle.dumps(estimator))
    alone.blend_weight_, alone.interval_scale_ = 1.0, 1.0
    alone.linear_ = alone.booster_ = None
    return alone


def test_the_ridge_takes_over_where_the_network_cannot_learn(guarded):
    # a random network against a ridge on a linear table: the ridge's share is large
    assert guarded.blend_weight_ in BLEND_WEIGHTS and guarded.blend_weight_ <= 0.3
    assert guarded.linear_ is not None and guarded.booster_ is None
    scores = guarded.blend_scores_
    assert set(scores) == {"tabswift", "linear", "boosting", "blend"}
    assert scores["linear"] > scores["tabswift"] and scores["blend"] > scores["tabswift"]
    assert scores["linear"] > scores["boosting"]
    X_test, y_test = linear_table(300, seed=1)
    alone = TabSwiftRegressor(**TINY, guard=False).fit(*linear_table(120))
    error = np.mean((guarded.predict(X_test) - y_test) ** 2)
    assert error < 0.5 * np.mean((alone.predict(X_test) - y_test) ** 2)


def test_the_booster_takes_over_a_regression_by_thresholds():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = 3.0 * ((X[:, 0] > 0.3) ^ (X[:, 1] > -0.2)) + 0.1 * rng.normal(size=200)
    est = TabSwiftRegressor(**TINY).fit(X, y)
    assert est.booster_ is not None and est.linear_ is None and est.blend_weight_ <= 0.3
    assert est.blend_scores_["boosting"] > est.blend_scores_["linear"]
    alone = in_context_alone(est)
    X_test = rng.normal(size=(40, 4))
    w = est.blend_weight_
    expected = alone.predict(X_test) + (1 - w) * (est.booster_.predict(X_test)
                                                  - alone.predict(X_test))
    np.testing.assert_allclose(est.predict(X_test), expected, rtol=1e-5, atol=1e-6)


def test_a_small_regression_table_is_guarded_by_the_ridge_alone():
    X, y = linear_table(MIN_BOOSTED_ROWS - 1)
    est = TabSwiftRegressor(**TINY).fit(X, y)
    assert set(est.blend_scores_) == {"tabswift", "linear", "blend"}


def test_every_output_moves_by_the_shift_and_the_scale(guarded):
    X_test, _ = linear_table(50, seed=2)
    alone = in_context_alone(guarded)
    w, scale = guarded.blend_weight_, guarded.interval_scale_
    mean = alone.predict(X_test)
    ridge = guarded.linear_.predict(X_test)
    centre = mean + (1 - w) * (ridge - mean)
    np.testing.assert_allclose(guarded.predict(X_test), centre, rtol=1e-9, atol=1e-9)
    q, q_alone = (m.predict(X_test, output_type="quantiles", quantiles=[0.05, 0.5, 0.95])
                  for m in (guarded, alone))
    np.testing.assert_allclose(q, centre[:, None] + scale * (q_alone - mean[:, None]),
                               rtol=1e-9, atol=1e-9)
    draws = guarded.sample_y(X_test, 3, random_state=0)
    draws_alone = alone.sample_y(X_test, 3, random_state=0)
    np.testing.assert_allclose(draws, centre[:, None] + scale * (draws_alone - mean[:, None]),
                               rtol=1e-9, atol=1e-9)


def test_the_guard_is_off_without_rows_to_cross_fit_or_when_asked():
    X, y = linear_table(120)
    off = TabSwiftRegressor(**TINY, guard=False).fit(X, y)
    few = TabSwiftRegressor(**TINY).fit(X[:MIN_GUARD_ROWS - 1], y[:MIN_GUARD_ROWS - 1])
    for est in (off, few):
        assert (est.blend_weight_, est.interval_scale_) == (1.0, 1.0)
        assert est.linear_ is None and est.blend_scores_ is None
    np.testing.assert_array_equal(off.predict(X[:20]), in_context_alone(off).predict(X[:20]))


def test_the_guard_rejects_a_non_boolean():
    with pytest.raises(ValueError, match="guard"):
        TabSwiftRegressor(**TINY, guard="yes").fit(*linear_table(20))


def test_cross_fitting_reads_the_given_rows_as_the_context():
    """With every fitted row as the context, the cross-fitting's prediction is ``predict``'s
    own (the same members, targets and context; float32 sums in another order); with the
    other rows only, the fold's rows are not in it, and the prediction moves."""
    X, y = linear_table(40)
    est = TabSwiftRegressor(**TINY, guard=False).fit(X, y)
    test = np.arange(10)
    every_row = bucket_probabilities(est._logits_in_context(np.arange(40), test))
    np.testing.assert_allclose(every_row, est.predict_distribution(X[test])[0], atol=1e-5)
    mean, ends = cross_fitted(est, [(np.arange(10, 40), test)])
    assert ends.shape == (40, 2 * len(CALIBRATED_LEVELS))
    assert np.all(ends[test, : len(CALIBRATED_LEVELS)] <= mean[test, None])
    assert np.all(ends[test, len(CALIBRATED_LEVELS):] >= mean[test, None])
    assert not np.allclose(mean[test], est.predict(X[test]), atol=1e-3)


def test_the_one_standard_error_rule_keeps_tabswift_unless_the_gain_is_clear():
    rng = np.random.default_rng(0)
    noise = rng.normal(size=(1, 200)) ** 2
    # the ridge's end better by 0.01 on the mean, the rows' differences spread by 1
    # (standard error 0.07): TabSwift alone (the largest weight) is kept
    spread = rng.normal(size=200)
    close = noise + (1 - BLEND_WEIGHTS[:, None]) * (spread - spread.mean() - 0.01)
    best, chosen = one_standard_error_weight(close)
    assert best == 0 and chosen == len(BLEND_WEIGHTS) - 1
    # the ridge's end clearly better: a small weight is chosen
    clear = noise * (1.0 + 3.0 * BLEND_WEIGHTS[:, None])
    best, chosen = one_standard_error_weight(clear)
    assert best == 0 and chosen <= 1


def test_the_rule_prefers_the_lower_loss_among_candidates_of_one_weight():
    # TabSwift alone, then two partners at the weights 0.5 and 0: the second partner's
    # half share is as good as the first's, with a lower loss; all within one error
    losses = np.array([[1.0, 1.2], [0.9, 1.1], [0.8, 1.0], [0.95, 1.15], [0.9, 1.0]])
    weights = np.array([1.0, 0.5, 0.0, 0.5, 0.0])
    best, chosen = one_standard_error_weight(losses, weights)
    assert best == 2  # the lowest mean loss
    # rows' differences to the best are constant: zero standard error, only the best is in
    assert chosen == 2
    spread = losses + np.array([[0.0, 0.3]] * 5) * np.arange(5)[:, None]
    _, chosen = one_standard_error_weight(spread, weights)
    assert weights[chosen] == 1.0  # wide differences: TabSwift alone stays


def test_the_conformal_scale_matches_a_spread_twice_as_wide():
    """In-context intervals of a unit normal, targets with standard deviation 2: the
    scale that makes the central intervals cover is 2 (to sampling error)."""
    rng = np.random.default_rng(0)
    n = 4000
    y = 2.0 * rng.normal(size=n)
    z = norm.ppf([(1 + c) / 2 for c in CALIBRATED_LEVELS])
    ends = np.tile(np.concatenate([-z, z]), (n, 1))
    zero = np.zeros(n)
    assert conformal_scale(y, zero, zero, ends) == pytest.approx(2.0, rel=0.05)


def test_the_guarded_intervals_cover_fresh_rows():
    X, y = linear_table(300, seed=3, noise=1.0)
    est = TabSwiftRegressor(**TINY).fit(X, y)
    X_test, y_test = linear_table(2000, seed=4, noise=1.0)
    q = est.predict(X_test, output_type="quantiles", quantiles=[0.05, 0.95])
    coverage = np.mean((q[:, 0] <= y_test) & (y_test <= q[:, 1]))
    assert 0.82 <= coverage <= 0.97


def test_a_guarded_regressor_pickles_and_skops_saves(guarded, tmp_path):
    X_test, _ = linear_table(30, seed=5)
    expected = guarded.predict(X_test, output_type="quantiles")
    again = pickle.loads(pickle.dumps(guarded))
    np.testing.assert_array_equal(again.predict(X_test, output_type="quantiles"), expected)
    path = tmp_path / "guarded.skops"
    sio.dump(guarded, path)
    loaded = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    np.testing.assert_array_equal(loaded.predict(X_test, output_type="quantiles"), expected)


# ---- the classifier: guarded by gradient boosting and a logistic regression ----------------


def threshold_table(n, seed=0):
    """Classes by thresholds on two features: what a tree ensemble learns at once."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, ((X[:, 0] > 0.3) ^ (X[:, 1] > -0.2)).astype(int)


def assert_the_blend_is_predicted(clf, partner, X_test, y_test, gain):
    """``clf`` predicts ``w * tabswift + (1 - w) * partner`` (renormalised) and its accuracy
    is above TabSwift's alone by ``gain``."""
    alone = in_context_alone(clf)
    w = clf.blend_weight_
    expected = w * alone.predict_proba(X_test) + (1 - w) * partner.predict_proba(X_test)
    np.testing.assert_allclose(clf.predict_proba(X_test),
                               expected / expected.sum(axis=1, keepdims=True), rtol=1e-6)
    assert clf.score(X_test, y_test) > alone.score(X_test, y_test) + gain


@pytest.fixture(scope="module")
def guarded_classifier():
    return TabSwiftClassifier(**TINY).fit(*threshold_table(300))


def test_the_booster_takes_over_where_the_network_cannot_learn(guarded_classifier):
    clf = guarded_classifier
    assert clf.blend_weight_ in BLEND_WEIGHTS and clf.blend_weight_ <= 0.3
    assert clf.booster_ is not None and clf.linear_ is None
    scores = clf.blend_scores_
    assert set(scores) == {"tabswift", "boosting", "linear", "blend"}
    assert scores["boosting"] > scores["tabswift"] and scores["blend"] > scores["tabswift"]
    assert scores["boosting"] > scores["linear"]  # no line separates an exclusive or
    assert_the_blend_is_predicted(clf, clf.booster_, *threshold_table(500, seed=1), gain=0.1)


def test_a_booster_of_three_classes_or_more_stops_early_and_a_binary_one_does_not(
        guarded_classifier):
    """Three classes by thresholds: the guard's booster (one tree per class and round) is
    early-stopped on a tenth of its rows (it scores them every round); the binary booster
    keeps scikit-learn's default (no early stopping below 10,001 rows), so it grows all its
    BOOSTER_ROUNDS rounds."""
    X, y = threshold_table(300)
    three = np.where(X[:, 2] > 0.5, 2, y)
    clf = TabSwiftClassifier(**TINY).fit(X, three)
    assert clf.booster_ is not None and clf.blend_weight_ <= 0.3
    assert clf.booster_.early_stopping is True
    assert len(clf.booster_.validation_score_) == clf.booster_.n_iter_ + 1  # scored each round
    binary = guarded_classifier.booster_
    assert binary.early_stopping == "auto" and len(binary.validation_score_) == 0
    assert binary.n_iter_ == binary.max_iter == BOOSTER_ROUNDS


def test_the_classifier_guard_is_off_when_asked_or_without_two_classes_or_rows_to_split():
    X, y = threshold_table(60)
    off = TabSwiftClassifier(**TINY, guard=False).fit(X, y)
    one_class = TabSwiftClassifier(**TINY).fit(X, np.zeros(60, dtype=int))
    few = TabSwiftClassifier(**TINY).fit(X[:MIN_BOOSTED_ROWS - 1], y[:MIN_BOOSTED_ROWS - 1])
    for clf in (off, one_class, few):
        assert clf.blend_weight_ == 1.0 and clf.blend_scores_ is None
        assert clf.booster_ is None and clf.linear_ is None


def logit_table(n, seed=0):
    """Classes by a noisy linear score: what a logistic regression learns at once."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    score = 2.0 * X[:, 0] - 1.5 * X[:, 1] + X[:, 2] + 0.5 * rng.logistic(size=n)
    return X, (score > 0).astype(int)


@pytest.fixture(scope="module")
def linear_classifier():
    return TabSwiftClassifier(**TINY).fit(*logit_table(300))


def test_the_logistic_regression_takes_over_on_a_linear_table(linear_classifier):
    clf = linear_classifier
    assert clf.blend_weight_ <= 0.3 and clf.linear_ is not None and clf.booster_ is None
    scores = clf.blend_scores_
    assert scores["linear"] > scores["boosting"] and scores["linear"] > scores["tabswift"]
    assert_the_blend_is_predicted(clf, clf.linear_, *logit_table(500, seed=1), gain=0.05)


def test_a_guarded_classifier_pickles_and_skops_saves(linear_classifier, tmp_path):
    X_test, _ = logit_table(30, seed=5)
    expected = linear_classifier.predict_proba(X_test)
    again = pickle.loads(pickle.dumps(linear_classifier))
    np.testing.assert_array_equal(again.predict_proba(X_test), expected)
    path = tmp_path / "guarded.skops"
    sio.dump(linear_classifier, path)
    loaded = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    np.testing.assert_array_equal(loaded.predict_proba(X_test), expected)


def test_a_linear_model_that_cannot_fit_leaves_the_booster():
    X, y = threshold_table(120)
    X[:, 2] *= 1e300  # squares overflow: no standardisation for the logistic regression
    clf = TabSwiftClassifier(**TINY).fit(X, y)
    assert clf.blend_scores_["linear"] == -np.inf and clf.linear_ is None
    assert np.isfinite(clf.blend_scores_["boosting"])
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0, rtol=1e-6)


def test_a_class_absent_from_some_folds_is_no_error():
    X, _ = threshold_table(60)
    y = np.zeros(60, dtype=int)
    y[[3, 17]] = 1  # two rows of class 1: some folds' other rows hold one class only
    clf = TabSwiftClassifier(**TINY).fit(X, y)
    assert clf.blend_scores_ is not None
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0, rtol=1e-6)


def test_the_booster_of_many_classes_and_columns_grows_a_bounded_forest(monkeypatch):
    """One tree per class and round, each split scanning every column: at scikit-learn's
    defaults the guard's booster of 5 classes and 2,000 columns would grow 100 x 5 trees of
    2,000 columns per fit; the guard keeps each fit's trees x columns scanned within
    BOOSTER_WORK (counted, not timed)."""
    rng = np.random.default_rng(0)
    n_classes, n_features = 5, 2000
    X = rng.normal(size=(60, n_features))
    y = np.repeat(np.arange(n_classes), 12)
    X[:, 0] += y  # something to learn
    assert 100 * n_classes * n_features > BOOSTER_WORK  # the defaults would exceed it
    work = []
    fit = HistGradientBoostingClassifier.fit

    def counted_fit(self, *args, **kwargs):
        fitted = fit(self, *args, **kwargs)
        share = 1.0 if self.max_features is None else self.max_features
        scanned = max(1, int(share * self.n_features_in_))  # scikit-learn's columns per split
        work.append(fitted.n_iter_ * fitted.n_trees_per_iteration_ * scanned)
        return fitted

    monkeypatch.setattr(HistGradientBoostingClassifier, "fit", counted_fit)
    clf = TabSwiftClassifier(**TINY).fit(X, y)
    assert len(work) >= GUARD_FOLDS  # one booster per fold (and the refit if it is the partner)
    assert max(work) <= BOOSTER_WORK
    assert np.isfinite(clf.blend_scores_["boosting"])


def test_the_guard_costs_a_bounded_number_of_fits_and_passes(monkeypatch):
    """The guard's work, counted (not timed): TabSwift's first GUARD_MEMBERS members read the
    other folds once per fold, each partner is fitted once per fold and the chosen one once
    more on every row, and the booster grows at most BOOSTER_ROUNDS rounds per fit."""
    from sklearn.linear_model import LogisticRegression

    from skfm.tabular.base import TabSwiftBase

    passes, fits, rounds = [], [], []
    in_context = TabSwiftBase._logits_in_context
    booster_fit, linear_fit = HistGradientBoostingClassifier.fit, LogisticRegression.fit

    def counted_pass(self, context, query, n_members=None):
        passes.append((len(query), n_members))
        return in_context(self, context, query, n_members)

    def counted_booster(self, *args, **kwargs):
        fits.append("boosting")
        fitted = booster_fit(self, *args, **kwargs)
        rounds.append(fitted.n_iter_)
        return fitted

    def counted_linear(self, *args, **kwargs):
        fits.append("linear")
        return linear_fit(self, *args, **kwargs)

    monkeypatch.setattr(TabSwiftBase, "_logits_in_context", counted_pass)
    monkeypatch.setattr(HistGradientBoostingClassifier, "fit", counted_booster)
    monkeypatch.setattr(LogisticRegression, "fit", counted_linear)
    X, y = threshold_table(200)
    clf = TabSwiftClassifier(**{**TINY, "n_estimators": 4}).fit(X, y)
    assert len(passes) == GUARD_FOLDS
    assert sum(rows for rows, _ in passes) == len(y)  # every row out of fold once
    assert {members for _, members in passes} == {GUARD_MEMBERS}  # not all of the members
    refits = 0 if clf.blend_weight_ == 1.0 else 1
    assert len(fits) == 2 * GUARD_FOLDS + refits
    assert fits.count("boosting") == GUARD_FOLDS + (clf.booster_ is not None)
    assert max(rounds) <= BOOSTER_ROUNDS


def test_every_member_cross_fits_where_classes_share_the_head_by_codes():
    """Beyond the head's 10 outputs each member merges the classes by its own code: fewer
    members than fitted could not tell every pair of classes apart, so all predict out of
    fold; within the head, the first GUARD_MEMBERS."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 3))
    many = np.repeat(np.arange(12), 20)
    X[:, 0] += many
    coded = TabSwiftClassifier(**TINY, guard=False).fit(X, many)
    assert len(coded.members_) > GUARD_MEMBERS and cross_fitted_members(coded) is None
    plain = TabSwiftClassifier(**TINY, guard=False).fit(X, many % 3)
    assert cross_fitted_members(plain) == GUARD_MEMBERS


def test_a_many_class_booster_on_few_rows_is_measured_not_lost():
    """50 rows of 6 classes: a tenth of a fold's 40 training rows cannot hold a row of
    every class, where scikit-learn refuses early stopping's stratified split; the booster
    then grows its rounds without early stopping instead of leaving the guard."""
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(6), [9, 9, 8, 8, 8, 8])
    X = rng.normal(size=(50, 3)) + y[:, None]
    clf = TabSwiftClassifier(**TINY).fit(X, y)
    assert np.isfinite(clf.blend_scores_["boosting"])


def test_a_many_class_booster_with_a_rare_class_is_measured_not_lost():
    """300 rows of 4 classes, one of them with 2 rows: some fold's training rows hold a single
    row of it, where early stopping's stratified split is refused; the booster then grows its
    rounds without early stopping instead of leaving the guard."""
    rng = np.random.default_rng(2)
    y = np.repeat(np.arange(4), [120, 120, 58, 2])
    X = rng.normal(size=(300, 3)) + y[:, None]
    clf = TabSwiftClassifier(**TINY).fit(X, y)
    assert np.isfinite(clf.blend_scores_["boosting"])
