"""Late fusion of Mantis and MiniRocket (``fusion="late"``): probabilities, the weight, its
ablation at 0, its source (the out-of-fold losses), persistence and documentation."""

import pickle

import numpy as np
import pytest
import skops.io as sio
from scipy.special import softmax
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.neighbors import KNeighborsClassifier

from skfm._backend import draw_seed
from skfm.timeseries import MantisTimeSeriesClassifier
from skfm.timeseries.mantis import late_fusion
from skfm.timeseries.mantis.fusion import ridge_head
from skfm.timeseries.mantis.late_fusion import (
    WEIGHTS,
    LateFusionClassifier,
    class_scores,
    inverse_temperature,
)

TINY = "random:tiny"
N_MANTIS = 3 * 2 * 16  # the tiny model's embedding: channels x combined x d_model


def late(**kwargs):
    """The tiny random Mantis in a late fusion with MiniRocket at its smallest (84 kernels)."""
    return MantisTimeSeriesClassifier(checkpoint=TINY, device="cpu", minirocket_kernels=84,
                                      **{"fusion": "late", **kwargs})


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def data(sine_panel):
    """Two classes of noisy sines, 3 channels, length 80 (conftest's), labels as strings."""
    X, y, X_test, y_test = sine_panel
    names = np.array(["low", "high"])
    return X, names[y], X_test, names[y_test]


@pytest.fixture(scope="module")
def fitted(data):
    X, y, _, _ = data
    return late().fit(X, y)


def test_late_fusion_gives_float64_probability_rows_and_a_grid_weight(data, fitted):
    X, y, X_test, y_test = data
    proba = fitted.predict_proba(X_test)
    assert proba.dtype == np.float64 and proba.shape == (20, 2)
    assert np.abs(proba.sum(1) - 1).max() < 1e-15 and (proba >= 0).all()
    assert fitted.selected_ == "late" and isinstance(fitted.head_, LateFusionClassifier)
    assert fitted.fusion_weight_ in WEIGHTS and fitted.head_.losses_.shape == (len(WEIGHTS),)
    assert fitted.fusion_weight_ == WEIGHTS[np.argmin(fitted.head_.losses_)]
    np.testing.assert_array_equal(fitted.predict(X_test), fitted.classes_[proba.argmax(1)])
    assert fitted.score(X_test, y_test) >= 0.9
    assert fitted.transform(X_test).shape == (20, N_MANTIS + 84)


def test_late_fusion_is_the_default_and_mantis_never_outweighs_minirocket(data):
    """Without fusion_weight, Mantis's weight is chosen among 0, 0.1, ..., 0.5: even where only
    the Mantis block carries the class, MiniRocket keeps an equal say; a weight above one half
    is the user's to give."""
    assert MantisTimeSeriesClassifier().fusion == "late"
    assert WEIGHTS.tolist() == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    rng = np.random.default_rng(0)
    codes = np.tile([0, 1], 30)
    X = np.hstack([codes[:, None] + rng.normal(size=(60, 2)), rng.normal(size=(60, 50))])
    assert LateFusionClassifier(n_mantis=2).fit(X, codes).weight_ == 0.5
    alone = LateFusionClassifier(n_mantis=2, weight=1.0).fit(X, codes)
    assert set(alone.estimators_) == {"mantis"}


def test_weight_zero_is_minirocket_ridge_with_scikit_learn_temperature_scaling(data, fitted):
    """fusion_weight=0 (the ablation without Mantis): MiniRocket + ridge, its probabilities
    softmax(b * decision) with b fitted on the out-of-fold decisions, as scikit-learn's
    temperature scaling on the same folds gives them; no Mantis head is fitted."""
    X, y, X_test, _ = data
    clf = late(fusion_weight=0.0).fit(X, y)
    assert clf.fusion_weight_ == 0.0 and clf.head_.losses_ is None
    assert set(clf.head_.estimators_) == set(clf.head_.inverse_temperatures_) == {"minirocket"}
    codes = (y == clf.classes_[1]).astype(int)
    train = clf.transform(X).astype(np.float64)[:, N_MANTIS:]
    test = clf.transform(X_test).astype(np.float64)[:, N_MANTIS:]
    folds = StratifiedKFold(5, shuffle=True, random_state=draw_seed(0))
    out_of_fold = cross_val_predict(ridge_head(), train, codes, cv=folds,
                                    method="decision_function")
    b = inverse_temperature(class_scores(ridge_head(), out_of_fold, "decision_function"), codes)
    ridge = ridge_head().fit(train, codes)
    expected = softmax(b * class_scores(ridge, test), axis=1)
    np.testing.assert_array_equal(clf.head_.predict_proba(np.hstack(
        [np.zeros((20, N_MANTIS)), test])), expected)  # the Mantis block is never read
    np.testing.assert_allclose(clf.predict_proba(X_test), expected, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(clf.predict(X_test), clf.classes_[ridge.predict(test)])
    sklearn_scaled = CalibratedClassifierCV(ridge_head(), method="temperature", ensemble=False,
                                            cv=folds).fit(train, codes)
    np.testing.assert_allclose(expected, sklearn_scaled.predict_proba(test), atol=1e-9)


def test_weight_comes_from_the_out_of_fold_scores(data, monkeypatch):
    """Out-of-fold scores that make one head informative and the other noise force the weight
    to that head (Mantis: as far as WEIGHTS go); both heads are scored out of fold once, on the
    same folds."""
    X, y, _, _ = data
    calls, informed = [], {}

    def forced(head, features, codes, cv, method):
        calls.append((features.shape[1], [tuple(test) for _, test in cv.split(features, codes)]))
        noise = np.random.default_rng(len(calls)).normal(size=len(codes))
        informative = np.where(codes == 1, 1.0, -1.0) + 0.8 * noise  # a few errors
        is_mantis = features.shape[1] == N_MANTIS
        return informative if is_mantis == (informed["head"] == "mantis") else noise

    monkeypatch.setattr(late_fusion, "cross_val_predict", forced)
    for head, weight in (("mantis", WEIGHTS.max()), ("minirocket", 0.0)):
        calls.clear()
        informed["head"] = head
        clf = late().fit(X, y)
        assert clf.fusion_weight_ == weight
        assert sorted(width for width, _ in calls) == [84, N_MANTIS]  # one pass each
        assert calls[0][1] == calls[1][1]  # the same folds
    calls.clear()
    assert late(fusion_weight=0.3).fit(X, y).head_.losses_ is None and len(calls) == 2


def test_without_folds_the_weight_is_zero_and_temperatures_are_in_sample():
    rng = np.random.default_rng(0)
    y = np.r_[0, np.ones(29, int)]  # a class of one row: no split holds it out
    X = np.hstack([y[:, None] + rng.normal(size=(30, 2)), rng.normal(size=(30, 20))])
    fused = LateFusionClassifier(n_mantis=2).fit(X, y)
    assert fused.weight_ == 0.0 and fused.losses_ is None
    assert set(fused.inverse_temperatures_) == {"minirocket", "mantis"}
    np.testing.assert_allclose(fused.predict_proba(X).sum(1), 1.0, rtol=0, atol=1e-15)
    assert LateFusionClassifier(n_mantis=2, weight=0.5).fit(X, y).weight_ == 0.5


def test_class_scores_softmax_to_the_classifier_s_probabilities():
    """A logistic regression's scores (binary: (-d/2, d/2)) are its logits; a classifier
    without decision_function gives log-probabilities, zeros floored."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    for y in (np.tile([0, 1], 20), np.arange(40) % 3):
        model = LogisticRegression().fit(X, y)
        np.testing.assert_allclose(softmax(class_scores(model, X), axis=1),
                                   model.predict_proba(X), rtol=1e-12)
    neighbours = KNeighborsClassifier(n_neighbors=1).fit(X, np.arange(40) % 3)
    scores = class_scores(neighbours, X)
    assert scores.min() == np.log(late_fusion.MIN_PROBABILITY)
    np.testing.assert_allclose(softmax(scores, axis=1), neighbours.predict_proba(X), atol=1e-11)


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"fusion_weight": 0.5, "fusion": "minirocket"}, ValueError,
         "fusion_weight needs fusion='late', got fusion='minirocket'"),
        ({"fine_tuning": "head"}, ValueError,
         r"fusion='late' \(the default\) needs fine_tuning='none', got 'head': pass "
         "fusion='minirocket'"),
        ({"fusion_weight": 1.5}, ValueError, "'fusion_weight' parameter"),
    ],
)
def test_bad_late_fusion_parameters(data, params, error, match):
    X, y, _, _ = data
    with pytest.raises(error, match=match):
        late(**params).fit(X, y)


def test_late_fusion_head_refuses_features_without_a_minirocket_block_or_a_second_class():
    with pytest.raises(ValueError, match="more than n_mantis=4 columns"):
        LateFusionClassifier(n_mantis=4).fit(np.zeros((6, 4)), np.arange(6) % 2)
    with pytest.raises(ValueError, match="at least 2 classes, got 1"):
        LateFusionClassifier(n_mantis=4).fit(np.zeros((6, 9)), np.zeros(6))


def test_pickle_and_skops_round_trip(data, fitted):
    _, _, X_test, _ = data
    expected = fitted.predict_proba(X_test)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(fitted)).predict_proba(X_test),
                                  expected)
    dumped = sio.dumps(fitted)
    untrusted = sio.get_untrusted_types(data=dumped)
    assert "skfm.timeseries.mantis.late_fusion.LateFusionClassifier" in untrusted
    assert "torch" not in str(untrusted)
    restored = sio.loads(dumped, trusted=untrusted)
    np.testing.assert_array_equal(restored.predict_proba(X_test), expected)
    assert restored.fusion_weight_ == fitted.fusion_weight_


def test_fitted_attributes_are_documented(fitted):
    assert "fusion_weight_ : float or None" in MantisTimeSeriesClassifier.__doc__
    head_attributes = {name for name in vars(fitted.head_)
                       if name.endswith("_") and not name.startswith("_")}
    assert head_attributes == {"classes_", "weight_", "losses_", "inverse_temperatures_",
                               "estimators_"}
    for name in head_attributes:
        assert f"{name} :" in LateFusionClassifier.__doc__
