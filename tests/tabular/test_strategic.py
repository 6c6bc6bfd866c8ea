"""Strategic classification: best responses, SPNClassifier behaviour, inputs, persistence."""

import pickle

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import check_param_validation

from skfm import TabSwiftClassifier
from skfm.tabular.strategic import SPNClassifier, best_response
from skfm.tabular.strategic.classifier import stackelberg_threshold


def _linear_data(n, seed, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + X[:, 1] + 0.5 * rng.normal(size=n) > 0, 1, -1)
    return X, y


@pytest.fixture(scope="module")
def linear():
    X, y = _linear_data(300, 0)
    return X, y, LogisticRegression().fit(X, y)


def _cost(delta, cost, weight):
    if cost == "linear":
        return np.abs(weight * delta).sum(1)
    norm = np.linalg.norm(weight * delta, axis=1)
    return norm**2 if cost == "quadratic" else norm


@pytest.mark.parametrize("cost", ["l2", "quadratic", "linear"])
def test_linear_closed_form_is_the_cheapest_move(linear, cost):
    X, _, model = linear
    weight = np.array([1.0, 2.0, 0.5])
    budget = 0.8
    moved = best_response(model, X, budget=budget, cost=cost, cost_weight=weight)
    before, after = model.decision_function(X), model.decision_function(moved)
    spent = _cost(moved - X, cost, weight)
    w = model.coef_[0]
    rate = np.max(np.abs(w) / weight) if cost == "linear" else np.linalg.norm(w / weight)
    reach = np.sqrt(budget) if cost == "quadratic" else budget
    can = (before <= 0) & (-before / rate <= reach * (1 - 1e-6))
    cannot = (before <= 0) & (-before / rate > reach * (1 + 1e-6))
    assert can.sum() > 10 and cannot.sum() > 10
    assert np.all(after[can] > 0) and np.all(after[can] < 1e-6)  # just across the boundary
    distance = spent[can] ** 0.5 if cost == "quadratic" else spent[can]
    np.testing.assert_allclose(distance, -before[can] / rate, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(moved[~can], X[~can])  # out of reach or already favourable
    if cost == "linear":  # the whole budget goes to the feature with the best price
        assert np.all((moved[can] != X[can]).sum(1) == 1)


def test_black_box_search_approximates_the_closed_form(linear):
    X, y, model = linear
    black_box = make_pipeline(LogisticRegression()).fit(X, y)  # no coef_: black-box path
    kwargs = {"budget": 0.8, "manipulable": [0, 1], "random_state": 0}
    exact = best_response(model, X, **kwargs)
    found = best_response(black_box, X, **kwargs)
    np.testing.assert_array_equal(found[:, 2], X[:, 2])  # immutable feature
    moved_exact = (exact != X).any(1)
    moved_found = (found != X).any(1)
    assert (moved_found == moved_exact).mean() > 0.95
    both = moved_exact & moved_found
    assert np.all(black_box.predict(found[moved_found]) == 1)
    exact_cost = np.linalg.norm(exact[both] - X[both], axis=1)
    found_cost = np.linalg.norm(found[both] - X[both], axis=1)
    assert np.all(found_cost <= 0.8 + 1e-9)
    assert np.median(found_cost / exact_cost) < 1.1  # close to the cheapest move


def test_favourable_class_sets_the_direction(linear):
    X, _, model = linear
    moved = best_response(model, X, budget=0.5, favourable_class=-1)
    changed = (moved != X).any(1)
    assert changed.any()
    assert np.all(model.predict(X[changed]) == 1) and np.all(model.predict(moved[changed]) == -1)


BUDGET_RANGE = r"'budget' parameter of SPNClassifier must be a float in the range \[0.0, inf\)"


@pytest.mark.parametrize(
    "params, message",
    [
        ({"budget": -0.1}, BUDGET_RANGE),
        ({"budget": float("nan")}, BUDGET_RANGE),
        ({"budget": float("inf")}, BUDGET_RANGE),
        ({"cost": "l1"}, r"'cost' parameter of SPNClassifier must be a str among"),
        ({"cost_weight": [1.0, 1.0]}, "one weight per feature"),
        ({"cost_weight": [1.0, 0.0, 1.0]}, "> 0"),
        ({"favourable_class": 2}, "favourable_class=2 is not one of the classes"),
        ({"manipulable": [3]}, "manipulable feature 3 does not exist"),
        ({"manipulable": ["income"]}, "manipulable feature 'income' does not exist"),
        ({"manipulable": [True, False]}, "boolean mask of 2 entries; X has 3 features"),
        ({"method": "fixed_point"}, r"'method' parameter of SPNClassifier must be a str among"),
        ({"base": "tabswift"}, r"'base' parameter of SPNClassifier must be a str among"),
        ({"cv": 1}, r"'cv' parameter of SPNClassifier must be an int in the range \[2, inf\)"),
    ],
)
def test_bad_parameters_raise_clear_errors(linear, params, message):
    X, y, _ = linear
    with pytest.raises(ValueError, match=message):
        SPNClassifier(LogisticRegression(), **params).fit(X, y)


def test_best_response_refuses_bad_search_settings_and_models_without_probabilities(linear):
    from sklearn.svm import SVC

    X, y, model = linear
    with pytest.raises(ValueError, match=r"'n_steps' parameter of best_response must be an int"):
        best_response(model, X, budget=0.5, n_steps=0)
    with pytest.raises(ValueError, match=r"'n_directions' parameter of best_response must be"):
        best_response(model, X, budget=0.5, n_directions=-1)
    with pytest.raises(ValueError, match=r"'budget' parameter of best_response must be a float"):
        best_response(model, X, budget=float("inf"))
    with pytest.raises(TypeError, match="predict_proba"):
        best_response(SVC(kernel="rbf").fit(X, y), X, budget=0.5)


def test_boolean_mask_and_positions_name_the_same_features(linear):
    X, y, _ = linear
    mask = SPNClassifier(LogisticRegression(), manipulable=[True, False, True]).fit(X, y)
    positions = SPNClassifier(LogisticRegression(), manipulable=np.array([0, 2])).fit(X, y)
    np.testing.assert_array_equal(mask.manipulable_, [0, 2])
    assert mask.threshold_ == positions.threshold_


def test_stackelberg_threshold_counts_right_answers_after_the_move():
    reachable = np.array([-1.0, 0.5, 1.5, 2.5, 3.5])
    favourable = np.array([False, False, True, True, True])
    assert stackelberg_threshold(reachable, favourable, ~favourable) == 1.0  # all five right
    # a threshold never goes below 0 (gaming only raises scores), even if that loses rows
    assert stackelberg_threshold(np.array([-2.0, -1.0]), np.ones(2, bool), np.zeros(2, bool)) == 0


@pytest.mark.parametrize("cost", ["l2", "quadratic", "linear"])
def test_equilibrium_rows_answering_spn_gain_no_more_than_their_budget(cost):
    """With a linear base, SPN is the strategic-robust linear classifier: a row that answers
    SPN ends up accepted only if its clean score is within what the budget buys of SPN's
    threshold, and SPN keeps the clean model's accuracy while the clean model loses it."""
    X, y = _linear_data(600, 1)
    X_test, y_test = _linear_data(600, 2)
    budget = 0.6
    spn = SPNClassifier(LogisticRegression(), budget=budget, cost=cost).fit(X, y)
    plain = spn.estimator_
    w = plain.coef_[0]
    rate = np.abs(w).max() if cost == "linear" else np.linalg.norm(w)
    reach = np.sqrt(budget) if cost == "quadratic" else budget
    assert spn.threshold_ > 0.5 * reach * rate and spn.n_moved_ > 20
    moved = spn.best_response(X_test)  # the rows answer SPN itself
    assert (moved != X_test).any(axis=1).sum() > 20
    accepted = spn.predict(moved) == 1
    assert np.all(plain.decision_function(X_test)[accepted] >= spn.threshold_ - reach * rate - 1e-6)
    gamed_plain = plain.score(best_response(plain, X_test, budget=budget, cost=cost), y_test)
    assert plain.score(X_test, y_test) - gamed_plain > 0.03
    assert spn.score(moved, y_test) >= plain.score(X_test, y_test) - 0.02


def test_tabswift_base_keeps_its_accuracy_when_rows_answer_spn():
    X, y = _linear_data(300, 1, d=2)
    X_test, y_test = _linear_data(200, 2, d=2)
    budget = 0.8
    spn = SPNClassifier(TabSwiftClassifier(n_estimators=1, n_jobs=1), budget=budget,
                        base="estimator").fit(X, y)
    plain = spn.estimator_
    assert spn.selected_ == "estimator" and list(spn.validation_scores_) == ["estimator"]
    lost = plain.score(X_test, y_test) - plain.score(best_response(plain, X_test, budget=budget,
                                                                  random_state=0), y_test)
    kept = spn.score(spn.best_response(X_test), y_test) - plain.score(
        best_response(plain, X_test, budget=budget, random_state=0), y_test
    )
    assert spn.threshold_ > 0 and lost > 0.05 and kept > 0.6 * lost
    ratio = spn.predict_proba(X_test)[:, 1] / plain.predict_proba(X_test)[:, 1]
    odds = ratio * (1 - plain.predict_proba(X_test)[:, 1]) / (1 - spn.predict_proba(X_test)[:, 1])
    np.testing.assert_allclose(odds, np.exp(-spn.threshold_), rtol=1e-3)  # float32 proba


def test_context_method_reads_rows_that_answer_the_base_model():
    X, y = _linear_data(300, 1)
    X_test, y_test = _linear_data(300, 2)
    budget = 0.6
    plain = LogisticRegression().fit(X, y)
    manipulated = best_response(plain, X_test, budget=budget)
    lost = plain.score(X_test, y_test) - plain.score(manipulated, y_test)
    spn = SPNClassifier(LogisticRegression(), budget=budget, method="context").fit(X, y)
    assert spn.n_moved_ > 20 and spn.threshold_ == 0.0
    np.testing.assert_allclose(spn.best_response(X_test), manipulated)  # they answer the base
    recovered = spn.score(manipulated, y_test) - plain.score(manipulated, y_test)
    assert lost > 0.05 and recovered > lost / 2


def _circle_data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.5, 1.5, size=(n, 2))
    return X, np.where(np.hypot(X[:, 0], X[:, 1]) < 1.0, 1, -1)


@pytest.mark.parametrize("cost", ["l2", "quadratic"])
def test_guard_keeps_the_strategic_robust_logistic_regression_on_a_linear_problem(cost):
    """On a linear problem the logistic rule is chosen; it is the strategic-robust logistic
    regression (threshold raised by what the budget buys), and rows that answer it are read as
    the clean regression reads them unmoved: its gamed accuracy is its clean accuracy, to one
    row (the black-box search against SPN lands just past the boundary)."""
    X, y = _linear_data(300, 1)
    X_test, y_test = _linear_data(300, 2)
    budget = 0.3
    spn = SPNClassifier(TabSwiftClassifier(n_estimators=1, n_jobs=1), budget=budget,
                        cost=cost).fit(X, y)
    assert spn.selected_ == "logistic"
    assert set(spn.validation_scores_) == {"logistic", "estimator"}
    assert all(0.5 < score <= 1 for score in spn.validation_scores_.values())
    plain = LogisticRegression().fit(X, y)
    np.testing.assert_allclose(spn.estimator_.coef_, plain.coef_)
    reach = np.sqrt(budget) if cost == "quadratic" else budget
    assert spn.threshold_ == pytest.approx(reach * np.linalg.norm(plain.coef_))
    moved = spn.best_response(X_test)
    assert (moved != X_test).any(axis=1).sum() > 10
    assert abs(spn.score(moved, y_test) - plain.score(X_test, y_test)) <= 1 / len(y_test)
    gamed_plain = plain.score(best_response(plain, X_test, budget=budget, cost=cost), y_test)
    assert plain.score(X_test, y_test) - gamed_plain > 0.02


def test_guard_keeps_the_estimator_rule_where_it_is_clearly_better():
    X, y = _circle_data(300, 1)  # favourable inside a circle: no linear rule separates it
    X_test, y_test = _circle_data(200, 2)
    spn = SPNClassifier(TabSwiftClassifier(n_estimators=1, n_jobs=1), budget=0.2).fit(X, y)
    scores = spn.validation_scores_
    assert spn.selected_ == "estimator" and scores["estimator"] > scores["logistic"] + 0.1
    assert isinstance(spn.estimator_, TabSwiftClassifier) and spn.threshold_ > 0
    logistic = SPNClassifier(TabSwiftClassifier(n_estimators=1, n_jobs=1), budget=0.2,
                             base="logistic").fit(X, y)
    assert logistic.selected_ == "logistic" and list(logistic.validation_scores_) == ["logistic"]
    assert spn.score(spn.best_response(X_test), y_test) > logistic.score(
        logistic.best_response(X_test), y_test) + 0.1


def test_logistic_rule_scores_its_clean_cross_validated_accuracy(linear):
    """A row held out of the logistic rule crosses its raised threshold exactly when the clean
    regression accepts it unmoved, so the rule's held-out gamed accuracy is the regression's
    cross-validated accuracy on the same folds."""
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    X, y, _ = linear
    spn = SPNClassifier(LogisticRegression(), budget=0.5, cv=4, random_state=7).fit(X, y)
    folds = StratifiedKFold(4, shuffle=True, random_state=7)
    expected = cross_val_score(LogisticRegression(), X, y, cv=folds).mean()
    assert spn.validation_scores_ == pytest.approx({"logistic": expected, "estimator": expected})
    assert spn.selected_ == "logistic"  # a tie keeps the preferred rule


def test_auto_keeps_the_estimator_rule_when_the_logistic_regression_cannot_read_the_rows():
    X, y = _linear_data(120, 3, d=2)
    X[::7, 1] = np.nan
    tabswift = TabSwiftClassifier(n_estimators=1, n_jobs=1)
    spn = SPNClassifier(tabswift, budget=0.3, manipulable=[0]).fit(X, y)
    assert spn.selected_ == "estimator" and list(spn.validation_scores_) == ["estimator"]
    with pytest.raises(ValueError, match="base='logistic' needs numeric features without"):
        SPNClassifier(tabswift, budget=0.3, base="logistic").fit(X, y)


@pytest.mark.parametrize("method", ["stackelberg", "context"])
def test_zero_budget_gives_the_base_model(linear, method):
    X, y, model = linear
    spn = SPNClassifier(LogisticRegression(), budget=0.0, method=method).fit(X, y)
    np.testing.assert_allclose(spn.predict_proba(X), model.predict_proba(X))
    assert spn.n_moved_ == 0 and spn.threshold_ == 0.0
    assert spn.selected_ == "estimator" and spn.validation_scores_ == {}


def test_multiclass_favourable_class_is_the_one_discounted():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 2))
    y = np.array(["low", "mid", "high"])[np.digitize(X[:, 0] + 0.3 * rng.normal(size=300),
                                                     [-0.5, 0.5])]
    spn = SPNClassifier(LogisticRegression(), budget=0.5, favourable_class="high").fit(X, y)
    proba, base = spn.predict_proba(X), spn.estimator_.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    high = list(spn.classes_).index("high")
    assert spn.threshold_ > 0 and np.all(proba[:, high] < base[:, high])
    assert np.mean(spn.predict(X) == "high") < np.mean(spn.estimator_.predict(X) == "high")


def test_tabswift_base_with_pandas_names_and_a_categorical_column():
    X, y = _linear_data(120, 3, d=2)
    frame = pd.DataFrame(X, columns=["income", "debt"], index=np.arange(120) + 1000)
    frame["region"] = pd.Categorical(np.where(X[:, 0] > 1, "north", "south"))
    spn = SPNClassifier(
        TabSwiftClassifier(n_estimators=1, n_jobs=1), budget=0.5, manipulable=["income"]
    ).fit(frame, y)
    assert list(spn.feature_names_in_) == ["income", "debt", "region"]
    np.testing.assert_array_equal(spn.manipulable_, [0])
    moved = spn.best_response(frame.head(40))
    assert list(moved.index) == list(frame.index[:40])
    pd.testing.assert_series_equal(moved["region"], frame["region"].head(40))
    np.testing.assert_array_equal(moved["debt"], frame["debt"].head(40))
    changed = (moved["income"] != frame["income"].head(40)).to_numpy()
    assert changed.any() and np.all(moved["income"][changed] > frame["income"].head(40)[changed])
    assert np.all(spn.predict(moved[changed]) == 1)
    assert spn.predict_proba(moved).shape == (40, 2)
    with pytest.raises(ValueError, match="'region' is not numeric"):
        SPNClassifier(manipulable="region").fit(frame, y)


@pytest.mark.parametrize("base", ["estimator", "logistic"])
def test_pickle_and_skops_round_trip(tmp_path, base):
    X, y = _linear_data(100, 4)
    spn = SPNClassifier(TabSwiftClassifier(n_estimators=1, n_jobs=1), budget=0.4,
                        base=base).fit(X, y)
    expected, moved = spn.predict_proba(X[:30]), spn.best_response(X[:30])
    loaded = pickle.loads(pickle.dumps(spn))
    np.testing.assert_array_equal(loaded.predict_proba(X[:30]), expected)
    np.testing.assert_array_equal(loaded.best_response(X[:30]), moved)
    path = tmp_path / "spn.skops"
    sio.dump(spn, path)
    untrusted = sio.get_untrusted_types(file=path)
    assert not any("torch" in name for name in untrusted)
    loaded = sio.load(path, trusted=untrusted)
    assert loaded.selected_ == base
    np.testing.assert_array_equal(loaded.predict_proba(X[:30]), expected)
    np.testing.assert_array_equal(loaded.predict(X[:30]), spn.predict(X[:30]))


# Two members, as in test_common.py: with a single member TabSwift's probabilities depend on a
# row's position in the batch at the float32 rounding level (~1e-7 relative), which sometimes
# trips check_methods_sample_order_invariance (rtol=1e-7).


def test_every_parameter_is_checked_by_scikit_learn():
    """Each parameter has a declarative constraint, and a value outside it fails fit with
    scikit-learn's InvalidParameterError (parametrize_with_checks does not run this check)."""
    check_param_validation("SPNClassifier", SPNClassifier(TabSwiftClassifier(n_estimators=1, n_jobs=1)))
