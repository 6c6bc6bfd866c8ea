"""Tables larger than the context: the blend with gradient boosting, chosen on held-out rows."""

import pickle

import numpy as np
import pytest
import skops.io as sio
import torch
from sklearn.datasets import make_classification, make_regression
from sklearn.utils._param_validation import InvalidParameterError

from skfm import TabSwiftClassifier, TabSwiftRegressor
from skfm._backend import draw_seed
from skfm._validation import probability_rows
from skfm.tabular.base import (
    BLEND_CONTEXT_ROWS,
    BLEND_MEMBERS,
    DEFAULT_CONTEXT_ROWS,
    DEFAULT_MEMBERS,
)
from skfm.tabular.blend import (
    BLEND_WEIGHTS,
    _early_stopped_booster,
    _new_booster,
    held_out_rows,
)

# 600 training rows are "large" for a context of 128 rows (blended: early exit on)
TINY = {"checkpoint": "random:tiny", "n_estimators": 2, "n_jobs": 1, "max_context_rows": 128}


@pytest.fixture(scope="module")
def regression():
    X, y = make_regression(800, 6, n_informative=4, noise=5.0, random_state=0)
    return X[:600], y[:600], X[600:]


@pytest.fixture(scope="module")
def blended_classifier(classification):
    X, y, _ = classification
    return TabSwiftClassifier(**TINY).fit(X, y)


@pytest.fixture(scope="module")
def blended_regressor(regression):
    X, y, _ = regression
    return TabSwiftRegressor(**TINY).fit(X, y)


def in_context_alone(estimator):
    """A copy of a blended estimator that predicts with its in-context model alone."""
    alone = pickle.loads(pickle.dumps(estimator))
    alone.blend_weight_, alone.booster_ = 1.0, None
    return alone


@pytest.mark.parametrize("Estimator", [TabSwiftClassifier, TabSwiftRegressor])
def test_tables_within_the_context_are_not_blended(Estimator, classification):
    X, y, X_test = classification
    # the guard of tables the context holds (skfm.tabular.guard) off
    blended = Estimator(**{**TINY, "max_context_rows": 600}, guard=False).fit(X, y)
    alone = Estimator(**{**TINY, "max_context_rows": 600}, large_table="subsample",
                      guard=False).fit(X, y)
    assert blended.blend_weight_ == 1.0
    assert blended.booster_ is None and blended.blend_scores_ is None
    np.testing.assert_array_equal(blended.predict(X_test), alone.predict(X_test))


def test_the_chosen_weight_scores_best_on_the_held_out_rows(blended_classifier):
    scores = blended_classifier.blend_scores_
    assert set(scores) == {"tabswift", "boosting", "blend"}
    # both ends of the blend are candidates: the chosen one is at least as good as each
    assert scores["blend"] >= max(scores["tabswift"], scores["boosting"])
    assert blended_classifier.blend_weight_ in BLEND_WEIGHTS
    # the random network cannot compete with boosting on a learnable table
    assert blended_classifier.blend_weight_ < 1.0
    assert blended_classifier.booster_ is not None


def test_the_shares_print_as_the_decimals_of_their_grid(blended_classifier):
    """A fitted share prints as 0.3, not 0.30000000000000004."""
    assert [repr(float(w)) for w in BLEND_WEIGHTS] == [f"{k / 10}" for k in range(11)]
    assert [str(float(w)) for w in BLEND_WEIGHTS[:4]] == ["0.0", "0.1", "0.2", "0.3"]
    assert repr(blended_classifier.blend_weight_) == f"{blended_classifier.blend_weight_:.1f}"


@pytest.mark.parametrize("fixture", ["blended_classifier", "blended_regressor"])
def test_no_member_reads_a_held_out_row(fixture, request, classification):
    est = request.getfixturevalue(fixture)
    strata = classification[1] if fixture == "blended_classifier" else None  # classes 0..2
    train, held_out = held_out_rows(est, 600, strata)
    assert len(held_out) == round(est.validation_fraction * 600)
    for member in est.members_:
        assert est.max_context_rows - 3 <= len(member.rows) <= est.max_context_rows  # stratified
        assert np.isin(member.rows, train).all() and not np.isin(member.rows, held_out).any()


def test_blended_probabilities_average_tabswift_and_the_booster(blended_classifier,
                                                                  classification):
    X, y, X_test = classification
    alone = in_context_alone(blended_classifier)
    w = blended_classifier.blend_weight_
    expected = w * alone.predict_proba(X_test) + (1 - w) * blended_classifier.booster_.predict_proba(
        X_test)
    proba = blended_classifier.predict_proba(X_test)
    np.testing.assert_allclose(proba, expected, atol=1e-6)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-12)


def test_a_blended_regressor_moves_the_whole_distribution(blended_regressor, regression):
    X, y, X_test = regression
    alone = in_context_alone(blended_regressor)
    w = blended_regressor.blend_weight_
    assert w < 1.0
    expected_mean = w * alone.predict(X_test) + (1 - w) * blended_regressor.booster_.predict(X_test)
    np.testing.assert_allclose(blended_regressor.predict(X_test), expected_mean, rtol=1e-5,
                               atol=1e-6 * np.abs(y).max())
    # a location shift: the intervals keep the in-context model's width
    q_blend = blended_regressor.predict(X_test, output_type="quantiles", quantiles=[0.1, 0.9])
    q_alone = alone.predict(X_test, output_type="quantiles", quantiles=[0.1, 0.9])
    np.testing.assert_allclose(np.diff(q_blend, axis=1), np.diff(q_alone, axis=1), rtol=1e-5,
                               atol=1e-6 * np.abs(y).max())
    # the in-context distribution itself is the unblended one
    probs, _ = blended_regressor.predict_distribution(X_test[:5])
    np.testing.assert_allclose(probs, alone.predict_distribution(X_test[:5])[0], atol=1e-6)


def test_blended_predictions_do_not_depend_on_the_batch(blended_regressor, regression):
    _, _, X_test = regression
    whole = blended_regressor.predict(X_test)
    parts = np.concatenate([blended_regressor.predict(X_test[i:i + 7])
                            for i in range(0, len(X_test), 7)])
    np.testing.assert_allclose(parts, whole, rtol=1e-5, atol=1e-6 * np.abs(whole).max())


@pytest.mark.parametrize("fixture", ["blended_classifier", "blended_regressor"])
def test_a_blended_estimator_pickles_and_skops_saves(fixture, request, tmp_path):
    est = request.getfixturevalue(fixture)
    X_test = request.getfixturevalue(fixture.replace("blended_", "").replace(
        "classifier", "classification").replace("regressor", "regression"))[2]
    expected = est.predict(X_test)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(est)).predict(X_test), expected)
    path = tmp_path / "model.skops"
    sio.dump(est, path)
    loaded = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    np.testing.assert_allclose(loaded.predict(X_test), expected)


def test_an_unknown_large_table_option_is_refused(classification):
    X, y, _ = classification
    with pytest.raises(InvalidParameterError, match="large_table"):
        TabSwiftClassifier(**TINY, large_table="stream").fit(X, y)


def test_a_nil_share_predicts_with_the_booster_alone(blended_classifier, blended_regressor,
                                                      classification, regression):
    for est, (_, _, X_test) in [(blended_classifier, classification),
                                (blended_regressor, regression)]:
        booster_only = pickle.loads(pickle.dumps(est))
        booster_only.blend_weight_ = 0.0
        expected = (probability_rows(est.booster_.predict_proba(X_test))  # float64 rows
                    if hasattr(est, "classes_") else est.booster_.predict(X_test))
        got = (booster_only.predict_proba(X_test) if hasattr(est, "classes_")
               else booster_only.predict(X_test))
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("Estimator", [TabSwiftClassifier, TabSwiftRegressor])
def test_auto_sizes_are_lighter_on_a_blended_table(Estimator):
    # more rows than the default context (2,048): blended, 4 members of 512 rows, early exit
    X, y = make_classification(2300, 5, random_state=0)
    blended = Estimator(checkpoint="random:tiny", n_jobs=1).fit(X, y)
    assert blended.blend_scores_ is not None
    assert (blended.n_estimators_, blended.max_context_rows_, blended.early_exit_) == (
        BLEND_MEMBERS, BLEND_CONTEXT_ROWS, True)
    assert len(blended.members_) == BLEND_MEMBERS
    assert all(len(member.rows) <= BLEND_CONTEXT_ROWS for member in blended.members_)
    # within the context: every member reads the whole table, every layer runs
    small = Estimator(checkpoint="random:tiny", n_jobs=1, guard=False).fit(X[:300], y[:300])
    assert small.booster_ is None
    assert (small.n_estimators_, small.max_context_rows_, small.early_exit_) == (
        DEFAULT_MEMBERS, DEFAULT_CONTEXT_ROWS, False)
    assert all(len(member.rows) == 300 for member in small.members_)
    # the subsampled large table keeps the sizes of a table within the context
    alone = Estimator(checkpoint="random:tiny", n_jobs=1, large_table="subsample").fit(X, y)
    assert (alone.n_estimators_, alone.max_context_rows_, alone.early_exit_) == (
        DEFAULT_MEMBERS, DEFAULT_CONTEXT_ROWS, False)


def test_sizes_set_by_the_user_are_kept_in_a_blend(classification):
    X, y, _ = classification
    est = TabSwiftClassifier(**TINY, early_exit=False).fit(X, y)
    assert est.blend_scores_ is not None  # 600 rows > max_context_rows=128: blended
    assert (est.n_estimators_, est.max_context_rows_, est.early_exit_) == (2, 128, False)
    n_layers = est._network(torch.device("cpu")).config.n_layers
    np.testing.assert_array_equal(est.exit_depth(X[:20]), n_layers)  # every layer, every row


@pytest.mark.parametrize("fixture", ["blended_classifier", "blended_regressor"])
def test_the_kept_booster_is_refitted_on_every_row_at_the_early_stopped_length(fixture, request):
    est = request.getfixturevalue(fixture)
    classifier = fixture == "blended_classifier"
    y = request.getfixturevalue("classification" if classifier else "regression")[1]
    seed = draw_seed(est.random_state)  # the classes are 0..2: their own codes
    split = held_out_rows(est, len(y), y if classifier else None)
    first = _early_stopped_booster(est, seed, est.X_context_, y, *split)
    assert first.n_iter_ < 100  # stopped on the held-out loss before scikit-learn's max_iter
    assert est.booster_.max_iter == est.booster_.n_iter_ == first.n_iter_
    booster = _new_booster(est, seed, early_stopping=False, max_iter=first.n_iter_)
    booster.fit(est.X_context_, y)  # every row
    X_test = est.X_context_[:50]
    predict = "predict_proba" if classifier else "predict"
    np.testing.assert_allclose(getattr(est.booster_, predict)(X_test),
                               getattr(booster, predict)(X_test), rtol=1e-12)


def test_held_out_rows_of_an_unseen_class_are_left_out_of_the_early_stopping(classification):
    X, y, _ = classification
    est = TabSwiftClassifier(**TINY).fit(X, y)
    train, val = np.arange(100, 600), np.arange(100)
    y_unseen = y.copy()
    y_unseen[val[:3]] = 3  # a class the booster never sees in fit
    booster = _early_stopped_booster(est, 0, est.X_context_, y_unseen, train, val)
    assert 1 <= booster.n_iter_ <= 100
    assert len(booster.validation_score_) == booster.n_iter_ + 1  # it stopped on the rest
