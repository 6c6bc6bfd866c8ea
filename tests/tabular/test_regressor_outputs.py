"""TabSwiftRegressor's output_type="full" (every summary and the distribution in one pass) and
a constant target predicted exactly."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes

from skfm import TabSwiftRegressor
from skfm.tabular.model import TabSwift

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return X[:150], y[:150], X[150:190]


@pytest.mark.parametrize("params", [
    {"guard": False},
    {},  # the guard: its partner and interval scale move the summaries
])
def test_full_output_is_the_separate_calls_in_one_pass(diabetes, params, monkeypatch):
    X, y, X_test = diabetes
    reg = TabSwiftRegressor(n_estimators=2, n_jobs=1, **params).fit(X, y)
    calls = []
    original = TabSwift.predict_from_cache
    monkeypatch.setattr(TabSwift, "predict_from_cache",
                        lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs))
    full = reg.predict(X_test, output_type="full", quantiles=[0.05, 0.5, 0.95])
    assert len(calls) == 1  # one forward pass for everything
    assert set(full) == {"mean", "median", "mode", "quantiles", "probabilities", "borders"}
    tolerance = dict(rtol=1e-12, atol=1e-9)
    for name in ("mean", "median", "mode"):
        np.testing.assert_allclose(full[name], reg.predict(X_test, output_type=name),
                                   **tolerance)
    assert full["quantiles"].shape == (40, 3)
    np.testing.assert_allclose(
        full["quantiles"],
        reg.predict(X_test, output_type="quantiles", quantiles=[0.05, 0.5, 0.95]), **tolerance)
    probs, borders = reg.predict_distribution(X_test)
    np.testing.assert_array_equal(full["probabilities"], probs)
    np.testing.assert_array_equal(full["borders"], borders)
    assert full["probabilities"].shape == (40, len(borders) - 1)
    default = reg.predict(X_test[:3], output_type="full")
    assert default["quantiles"].shape == (3, 3)  # 0.1, 0.5, 0.9


def test_full_output_refuses_bad_levels(diabetes):
    X, y, X_test = diabetes
    reg = TabSwiftRegressor(n_estimators=1, n_jobs=1, guard=False).fit(X, y)
    with pytest.raises(ValueError, match="quantiles must be a non-empty list of levels"):
        reg.predict(X_test, output_type="full", quantiles=[0.5, 1.5])


@pytest.mark.parametrize("value", [0.0, 0.1, -2.5e-7, 123456.789, 1e300, -5e-324])
def test_a_constant_target_is_predicted_exactly(value):
    """Every output type and every draw is the constant itself (0 was 1e-309, 0.1 within
    1e-12), and predicting warns of no overflow."""
    X = np.random.default_rng(0).normal(size=(40, 3))
    reg = TabSwiftRegressor(n_estimators=2, n_jobs=1).fit(X, np.full(40, value))
    assert reg.constant_y_ == value
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for output_type in ("mean", "median", "mode"):
            np.testing.assert_array_equal(reg.predict(X[:5], output_type=output_type),
                                          np.full(5, value))
        np.testing.assert_array_equal(
            reg.predict(X[:5], output_type="quantiles", quantiles=[0.1, 0.9]),
            np.full((5, 2), value))
        np.testing.assert_array_equal(reg.sample_y(X[:5], n_samples=4), np.full((5, 4), value))
        full = reg.predict(X[:5], output_type="full")
        for name in ("mean", "median", "mode", "quantiles"):
            assert (full[name] == value).all(), name
    varying = TabSwiftRegressor(n_estimators=1, n_jobs=1).fit(X, np.r_[np.full(39, 1.0), 2.0])
    assert varying.constant_y_ is None
