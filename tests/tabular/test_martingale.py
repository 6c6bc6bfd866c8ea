"""TabMGPRegressor: posterior shapes, estimands, errors, exactness of the batched sampler."""

import pickle

import matplotlib
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.utils.estimator_checks import check_param_validation

from skfm import TabSwiftRegressor
from skfm.tabular import contexts, martingale
from skfm.tabular.martingale import TabMGPRegressor, plot_posterior

matplotlib.use("Agg")

TINY = dict(n_rollouts=8, horizon=12, block_size=4)


def tiny(**params):
    """A TabMGPRegressor that fits in well under a second."""
    return TabMGPRegressor(TabSwiftRegressor(n_estimators=1, n_jobs=1), **(TINY | params))


@pytest.fixture(scope="module")
def linear_data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(30, 2))
    y = 1.0 + 2.0 * X[:, 0] - X[:, 1] + rng.normal(scale=0.3, size=30)
    return X, y


class EmpiricalY(RegressorMixin, BaseEstimator):
    """Predictive = the empirical distribution of the context's targets, whatever x is."""

    def fit(self, X, y):
        self.y_ = np.asarray(y, dtype=float)
        return self

    def predict(self, X):
        return np.full(len(X), self.y_.mean())

    def sample_y(self, X, n_samples=1, random_state=None):
        rng = np.random.default_rng(random_state)
        return rng.choice(self.y_, size=(len(X), n_samples))


def test_linear_posterior_shapes_names_and_intervals(linear_data):
    X, y = linear_data
    mgp = tiny().fit(X, y)
    assert mgp.posterior_samples_.shape == (8, 3)
    assert list(mgp.posterior_names_) == ["intercept", "x0", "x1"]
    np.testing.assert_allclose(mgp.estimate_, np.linalg.lstsq(np.c_[np.ones(30), X], y)[0])
    lower, upper = mgp.credible_interval(0.8)
    assert lower.shape == upper.shape == (3,) and np.all(lower <= upper)
    wide_lower, wide_upper = mgp.credible_interval(0.95)
    assert np.all(wide_lower <= lower) and np.all(wide_upper >= upper)
    assert mgp.predict(X[:5]).shape == (5,)
    np.testing.assert_allclose(mgp.predict(X[:5]), mgp.estimator_.predict(X[:5]))


def test_same_seed_same_posterior_other_seed_other_posterior(linear_data):
    X, y = linear_data
    a = tiny(random_state=3).fit(X, y).posterior_samples_
    np.testing.assert_array_equal(a, tiny(random_state=3).fit(X, y).posterior_samples_)
    assert not np.allclose(a, tiny(random_state=4).fit(X, y).posterior_samples_)


def test_posterior_does_not_depend_on_rollouts_per_pass(linear_data, monkeypatch):
    """Rollouts are independent rows of a pass: one rollout per pass gives the same draws."""
    X, y = linear_data
    base = TabSwiftRegressor(n_estimators=2, n_jobs=1)
    params = TINY | dict(block_size=0.2)
    together = TabMGPRegressor(base, **params).fit(X, y).posterior_samples_
    monkeypatch.setattr(contexts, "contexts_per_pass", lambda device, tokens: 1)
    one_by_one = TabMGPRegressor(base, **params).fit(X, y).posterior_samples_
    np.testing.assert_allclose(one_by_one, together, rtol=1e-5, atol=1e-6)


def test_polya_urn_matches_the_bayesian_bootstrap_variance():
    """With the empirical distribution as predictive and block_size=1, theta = mean(y) is the
    Polya-urn posterior: variance N / ((n + N)(n + 1)) * var(y)."""
    y = np.random.default_rng(1).normal(size=20)
    X = np.zeros((20, 1))
    mgp = TabMGPRegressor(
        EmpiricalY(), estimand="mean", n_rollouts=300, horizon=30, block_size=1
    ).fit(X, y)
    expected = 30 / (50 * 21) * y.var()
    assert mgp.posterior_samples_.var() / expected == pytest.approx(1.0, abs=0.25)
    assert mgp.posterior_samples_.mean() == pytest.approx(y.mean(), abs=0.1)


def test_other_regressor_with_sample_y_is_refitted_per_block(linear_data):
    X, y = linear_data
    mgp = TabMGPRegressor(GaussianProcessRegressor(alpha=0.1, optimizer=None), **TINY).fit(X, y)
    assert mgp.posterior_samples_.shape == (8, 3)
    assert np.isfinite(mgp.posterior_samples_).all()


def test_dataframe_names_categorical_one_hot_and_callable_gets_a_frame():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        {"size": rng.normal(size=40), "kind": pd.Categorical(rng.choice(["a", "b", "c"], 40))}
    )
    y = frame["size"].to_numpy() + (frame["kind"] == "b") + rng.normal(scale=0.1, size=40)
    mgp = tiny().fit(frame, y)
    assert list(mgp.posterior_names_) == ["intercept", "size", "kind=b", "kind=c"]
    assert list(mgp.feature_names_in_) == ["size", "kind"]

    def slope(X, y):
        assert isinstance(X, pd.DataFrame) and list(X.columns) == ["size", "kind"]
        return pd.Series({"slope": np.polyfit(X["size"], y, 1)[0]})

    mgp = tiny(estimand=slope).fit(frame, y)
    assert list(mgp.posterior_names_) == ["slope"]
    assert mgp.posterior_samples_.shape == (8, 1)


def test_quantile_and_mean_estimands(linear_data):
    X, y = linear_data
    q = tiny(estimand="quantile", quantile=0.9).fit(X, y)
    assert q.posterior_samples_.shape == (8, 3)
    mean = tiny(estimand="mean").fit(X, y)
    assert list(mean.posterior_names_) == ["mean"]
    assert mean.estimate_[0] == pytest.approx(y.mean())


def test_rows_with_missing_values_are_left_out_of_the_linear_estimand(linear_data):
    X, y = linear_data
    X = X.copy()
    X[3, 1] = np.nan
    with pytest.warns(UserWarning, match="1 of 30 rows have missing features"):
        mgp = tiny().fit(X, y)
    keep = np.arange(30) != 3
    expected = np.linalg.lstsq(np.c_[np.ones(29), X[keep]], y[keep])[0]
    np.testing.assert_allclose(mgp.estimate_, expected)
    assert np.isfinite(mgp.posterior_samples_).all()
    assert np.isfinite(tiny(estimand="mean").fit(X, y).posterior_samples_).all()


BLOCK_SIZE_RANGE = (r"'block_size' parameter of TabMGPRegressor must be an int in the range "
                    r"\[1, inf\) or a float in the range \(0.0, 1.0\)")


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(n_rollouts=1), r"'n_rollouts' parameter .* must be an int in the range \[2, inf\)"),
        (dict(horizon=0), r"'horizon' parameter .* must be an int in the range \[1, inf\)"),
        (dict(block_size=1.5), BLOCK_SIZE_RANGE),
        (dict(block_size=0), BLOCK_SIZE_RANGE),
        (dict(block_size="0.1"), BLOCK_SIZE_RANGE),
        (dict(estimand="median"), r"'estimand' parameter .* must be a str among .* or a callable"),
        (dict(estimand="quantile", quantile=1.0),
         r"'quantile' parameter .* must be a float in the range \(0.0, 1.0\)"),
        (dict(estimand=lambda X, y: np.ones((2, 2))), "must return a scalar or non-empty 1-d"),
        (dict(estimand=lambda X, y: np.ones(1 if len(y) == 30 else 2)), "must return 1 values"),
        (dict(estimand=lambda X, y: np.nan), "non-finite"),
    ],
)
def test_clear_errors(linear_data, params, match):
    with pytest.raises(ValueError, match=match):
        tiny(**params).fit(*linear_data)


def test_too_few_rows_is_an_error_and_collinear_columns_a_warning():
    X = np.random.default_rng(0).normal(size=(3, 4))
    with pytest.raises(ValueError, match=r"5 coefficients.*as many complete rows.*n_samples=3"):
        tiny().fit(X, np.arange(3.0))
    collinear = np.c_[X[:, 0], 2 * X[:, 0]]
    with pytest.warns(UserWarning, match="identify only 2 of the 3 coefficients"):
        tiny().fit(collinear, np.arange(3.0))


def test_base_without_sample_y_is_a_type_error(linear_data):
    from sklearn.linear_model import Ridge

    with pytest.raises(TypeError, match="'estimator' parameter .* implementing 'fit' and 'sample_y'"):
        TabMGPRegressor(Ridge()).fit(*linear_data)


def test_levels_outside_zero_one_are_refused(linear_data):
    mgp = tiny().fit(*linear_data)
    for level in (0, 1, 1.5, -0.1, "0.9", float("nan")):
        for method in ("credible_interval", "credible_region"):
            with pytest.raises(ValueError, match=rf"'level' parameter of TabMGPRegressor.{method} "
                               r"must be a float in the range \(0.0, 1.0\)"):
                getattr(mgp, method)(level)


def test_credible_region_holds_its_share_of_the_draws(linear_data):
    mgp = tiny(n_rollouts=40).fit(*linear_data)
    region = mgp.credible_region(0.9)
    inside = region.contains(mgp.posterior_samples_)
    assert inside.shape == (40,) and inside.mean() == pytest.approx(0.9, abs=0.03)
    assert region.contains(region.center) is True
    assert region.contains(region.center + 1e3) is False


def test_context_is_subsampled_beyond_max_context_rows(linear_data):
    X, y = linear_data
    mgp = TabMGPRegressor(TabSwiftRegressor(n_estimators=1, max_context_rows=16, n_jobs=1), **TINY)
    assert np.isfinite(mgp.fit(X, y).posterior_samples_).all()


def test_block_sizes_fixed_relative_and_larger_than_horizon(capsys):
    calls = []

    def record(rows, y, new, rng):
        calls.append((rows.shape[1], new.shape[1]))
        return np.zeros(new.shape)

    rng = np.random.default_rng(0)
    rows, targets = martingale.predictive_resampling(
        record, np.ones(20), 3, 12, 0.25, rng, verbose=True
    )
    assert calls == [(20, 5), (25, 6), (31, 1)]
    assert rows.shape == targets.shape == (3, 32)
    np.testing.assert_array_equal(rows[:, :20], np.tile(np.arange(20), (3, 1)))
    assert rows.max() < 20 and targets[:, :20].all() and not targets[:, 20:].any()
    assert "TabMGP rollouts" in capsys.readouterr().err
    calls.clear()
    martingale.predictive_resampling(record, np.zeros(20), 3, 12, 5, rng)
    assert calls == [(20, 5), (25, 5), (30, 2)]
    calls.clear()
    martingale.predictive_resampling(record, np.zeros(20), 3, 12, 100, rng)
    assert calls == [(20, 12)]


def test_pickle_and_skops_round_trip(linear_data, tmp_path):
    X, y = linear_data
    mgp = tiny().fit(X, y)
    expected = mgp.predict(X)
    loaded = pickle.loads(pickle.dumps(mgp))
    np.testing.assert_allclose(loaded.predict(X), expected)
    np.testing.assert_array_equal(loaded.posterior_samples_, mgp.posterior_samples_)
    path = tmp_path / "mgp.skops"
    sio.dump(mgp, path)
    loaded = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    np.testing.assert_allclose(loaded.predict(X), expected)
    np.testing.assert_array_equal(loaded.credible_interval()[0], mgp.credible_interval()[0])


def test_plot_posterior(linear_data):
    mgp = tiny().fit(*linear_data)
    axes = plot_posterior(mgp, level=0.8)
    assert [ax.get_title() for ax in axes] == ["intercept", "x0", "x1"]
    assert len(plot_posterior(mgp, names=["x1"])) == 1
    with pytest.raises(ValueError, match="unknown component"):
        plot_posterior(mgp, names=["nope"])
    matplotlib.pyplot.close("all")


def test_every_parameter_is_checked_by_scikit_learn():
    """Each parameter has a declarative constraint, and a value outside it fails fit with
    scikit-learn's InvalidParameterError (parametrize_with_checks does not run this check)."""
    check_param_validation("TabMGPRegressor", tiny())


def _contexts(y, n_contexts, shift=0.0):
    """``n_contexts`` copies of every fitted row as the context, targets ``y + shift``."""
    rows = np.tile(np.arange(len(y)), (n_contexts, 1))
    return rows, y[rows] + shift, rows[:, :3]


def test_draws_in_contexts_follow_the_guard(linear_data):
    """The guard's choices move the rollouts' draws as they move ``sample_y``: the spread
    around the in-context mean scaled by ``interval_scale_``, the location moved by the
    partner's share towards the partner refitted on each context."""
    from sklearn.linear_model import Ridge

    X, y = linear_data
    reg = TabSwiftRegressor(n_estimators=1, n_jobs=1, guard=False, random_state=0).fit(X, y)
    rows, targets, query = _contexts(y, 200)
    alone = reg.sample_y_in_contexts(rows, targets, query, random_state=1)
    reg.interval_scale_ = 0.5
    narrow = reg.sample_y_in_contexts(rows, targets, query, random_state=1)
    # same underlying draws, identical contexts: half the spread around the same mean
    np.testing.assert_allclose(narrow.std(0), 0.5 * alone.std(0), rtol=1e-4)
    reg.interval_scale_, reg.linear_, reg.blend_weight_ = 1.0, Ridge().fit(reg.X_context_, y), 0.0
    ridge = reg.linear_.predict(reg.X_context_[query[0]])
    moved = reg.sample_y_in_contexts(rows, targets, query, random_state=1)
    np.testing.assert_allclose(moved.std(0), alone.std(0), rtol=1e-4)
    np.testing.assert_allclose(moved.mean(0), ridge, atol=4 * alone.std(0).max() / np.sqrt(200))
    # refitted per context: targets 10 higher move the ridge's draws 10 higher too
    shifted = reg.sample_y_in_contexts(*_contexts(y, 200, shift=10.0), random_state=1)
    np.testing.assert_allclose(shifted.mean(0) - moved.mean(0), 10.0, atol=0.05)


def test_default_base_is_the_guarded_in_context_model(linear_data):
    X, y = linear_data
    mgp = TabMGPRegressor(**TINY).fit(X, y)
    assert mgp.estimator_.guard is True and mgp.estimator_.n_estimators == 1
    assert mgp.estimator_.large_table == "subsample"
