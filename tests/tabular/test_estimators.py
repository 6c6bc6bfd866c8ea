"""TabSwift estimators: behaviour, inputs, persistence, early exit, batched prediction."""

import pickle
import tracemalloc

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
import torch
from sklearn.datasets import load_diabetes, load_iris
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_param_validation

from skfm import TabSwiftClassifier, TabSwiftRegressor
from skfm._validation import probability_rows
from skfm.tabular.base import load_model
from skfm.tabular.batching import contexts_per_pass, max_batch_rows
from skfm.tabular.contexts import distributions_in_contexts
from skfm.tabular.model import TabSwift, buckets
from skfm.tabular.model.buckets import bucket_probabilities


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(X))
    return X[idx[:100]], y[idx[:100]], X[idx[100:]], y[idx[100:]]


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return X[:200], y[:200], X[200:260], y[200:260]


def test_classifier_learns_iris(iris):
    X, y, X_test, y_test = iris
    clf = TabSwiftClassifier(n_estimators=2).fit(X, y)
    proba = clf.predict_proba(X_test)
    assert proba.shape == (50, 3)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-6)
    assert clf.score(X_test, y_test) > 0.8


def test_string_labels_and_subset_invariance(iris):
    X, y, X_test, _ = iris
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    clf = TabSwiftClassifier(n_estimators=3).fit(X, labels)
    assert set(clf.predict(X_test)) <= set(labels)
    full = clf.predict_proba(X_test)
    np.testing.assert_allclose(clf.predict_proba(X_test[:7]), full[:7], rtol=1e-5, atol=1e-6)


def test_more_classes_than_outputs_use_output_codes():
    """15 well-separated classes on a 10-output head: learned through output codes."""
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=4.0, size=(15, 4))
    y = np.repeat(np.arange(15), 16)
    X = centres[y] + rng.normal(size=(len(y), 4))
    clf = TabSwiftClassifier(n_estimators=2, n_jobs=1).fit(X[::2], y[::2])
    proba = clf.predict_proba(X[1::2])
    assert proba.shape == (120, 15)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-6)
    assert len(clf.members_) >= 5  # more members than asked, to separate the classes
    codes = np.stack([m.class_code for m in clf.members_])
    assert codes.max() == 9
    for a in range(15):  # every pair of classes is told apart by three codes
        for b in range(a):
            assert (codes[:, a] != codes[:, b]).sum() >= 3
    assert clf.score(X[1::2], y[1::2]) > 0.7  # chance is 1/15


def test_output_codes_are_cyclic_shifts_when_classes_fit():
    from skfm.tabular.ensemble import output_codes

    codes = output_codes(4, 10, 6, np.random.default_rng(0))
    assert codes.shape == (6, 4)
    for code in codes:
        assert sorted(code) == [0, 1, 2, 3]


def test_pandas_mixed_types_missing_and_unseen_categories():
    rng = np.random.default_rng(1)
    n = 80
    frame = pd.DataFrame(
        {
            "num": rng.normal(size=n),
            "cat": pd.Categorical(rng.choice(["a", "b", "c"], n)),
            "text": pd.Series(rng.choice(["x", "y"], n), dtype="string"),
            "flag": rng.random(n) > 0.5,
        }
    )
    frame.loc[::7, "num"] = np.nan
    frame.loc[::5, "text"] = pd.NA
    y = (frame["cat"] == "a").astype(int).to_numpy()
    clf = TabSwiftClassifier(n_estimators=2).fit(frame, y)
    unseen = frame.head(5).copy()
    unseen["cat"] = pd.Categorical(["zzz"] * 5)
    proba = clf.predict_proba(unseen)
    assert np.isfinite(proba).all()
    assert list(clf.feature_names_in_) == ["num", "cat", "text", "flag"]


def test_categories_come_back_as_floats():
    """Integer and boolean categories given back as floats (shap's maskers turn every column
    into floats) are the same categories, not unseen ones."""
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"num": rng.normal(size=60), "cat": pd.Categorical(rng.integers(0, 3, 60)),
                          "flag": rng.random(60) > 0.5})
    y = ((frame["cat"] == 1) ^ frame["flag"]).astype(int).to_numpy()
    clf = TabSwiftClassifier(n_estimators=2).fit(frame, y)
    as_floats = frame.astype(float)
    np.testing.assert_array_equal(clf.encoder_.transform(as_floats, clf),
                                  clf.encoder_.transform(frame, clf))
    np.testing.assert_array_equal(clf.predict_proba(as_floats), clf.predict_proba(frame))


def test_infinity_is_refused_by_name(iris):
    X, y, _, _ = iris
    bad = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    bad.loc[3, "c"] = np.inf
    with pytest.raises(ValueError, match="infinity.*'c'"):
        TabSwiftClassifier(n_estimators=1).fit(bad, y)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"n_estimators": 0}, r"'n_estimators' parameter .* must be an int in the range \[1,"),
        ({"early_exit": 1.5}, r"'early_exit' parameter .* a float in the range \(0.0, 1.0\]"),
        ({"early_exit": "yes"}, r"'early_exit' parameter .* 'bool'"),
        ({"max_layers": 0}, r"'max_layers' parameter .* must be an int in the range \[1,"),
        ({"max_context_rows": 1}, r"'max_context_rows' parameter .* in the range \[2,"),
        ({"batch_size": "big"}, r"'batch_size' parameter .* a str among \{'auto'\} or an int"),
        ({"softmax_temperature": 0.0}, r"'softmax_temperature' parameter .* range \(0.0, inf\)"),
        ({"inference_precision": "fp128"}, "Invalid inference_precision .fp128.; expected one of"),
        ({"device": "tpu"}, "tpu"),
        ({"checkpoint": "no-such-model"}, "no-such-model"),
    ],
)
def test_bad_parameters_raise_clear_errors(iris, params, message):
    X, y, _, _ = iris
    with pytest.raises(ValueError, match=message):
        TabSwiftClassifier(**params).fit(X, y)


def test_more_features_than_the_model_reads():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 130))
    y = (X[:, 0] > 0).astype(int)
    clf = TabSwiftClassifier(n_estimators=2).fit(X, y)
    assert all(len(m.features) == 100 for m in clf.members_)
    assert clf.predict_proba(X[:5]).shape == (5, 2)


def test_context_is_subsampled_above_max_context_rows(iris):
    X, y, X_test, _ = iris
    clf = TabSwiftClassifier(n_estimators=2, max_context_rows=30).fit(X, y)
    assert all(len(m.rows) <= 30 for m in clf.members_)
    assert all(set(y[m.rows]) == {0, 1, 2} for m in clf.members_)  # stratified
    assert clf.predict(X_test).shape == (50,)


def test_early_exit_and_max_layers(iris):
    X, y, X_test, _ = iris
    clf = TabSwiftClassifier(n_estimators=1).fit(X, y)
    n_layers = load_model(clf.checkpoint, "cpu")[0].config.n_layers
    assert np.all(clf.exit_depth(X_test) == n_layers)
    shallow = clf.set_params(max_layers=2).fit(X, y)
    assert np.all(shallow.exit_depth(X_test) == 2)
    eager = clf.set_params(max_layers=None, early_exit=1e-6).fit(X, y)
    assert np.all(eager.exit_depth(X_test) == 3)  # any movement is small: out after 2 + 1
    exact = clf.set_params(early_exit=False).fit(X, y).predict_proba(X_test)
    clf.set_params(early_exit=True).fit(X, y)
    depth, proba = clf.exit_depth(X_test), clf.predict_proba(X_test)
    assert depth.mean() < n_layers  # the default agreement lets some rows leave
    full = depth == n_layers  # rows that did not exit get exactly the full-depth answer
    np.testing.assert_allclose(proba[full], exact[full], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(clf.predict_proba(X_test[:5]), proba[:5], rtol=1e-5, atol=1e-6)


def test_regressor_outputs(diabetes):
    X, y, X_test, _ = diabetes
    reg = TabSwiftRegressor(n_estimators=2).fit(X, y)
    mean = reg.predict(X_test)
    q = reg.predict(X_test, output_type="quantiles", quantiles=[0.05, 0.5, 0.95])
    assert mean.shape == (60,) and q.shape == (60, 3)
    assert np.all(np.diff(q, axis=1) >= 0)
    np.testing.assert_allclose(reg.predict(X_test, output_type="median"), q[:, 1], rtol=1e-6)
    assert np.all((mean > q[:, 0]) & (mean < q[:, 2]))
    samples = reg.sample_y(X_test, n_samples=200, random_state=0)
    assert samples.shape == (60, 200)
    np.testing.assert_allclose(samples.mean(1), mean, atol=0.25 * y.std())
    np.testing.assert_array_equal(samples, reg.sample_y(X_test, 200, random_state=0))
    with pytest.raises(ValueError, match=r"'output_type' parameter of TabSwiftRegressor.predict"):
        reg.predict(X_test, output_type="variance")
    with pytest.raises(ValueError, match=r"'n_samples' parameter of TabSwiftRegressor.sample_y"):
        reg.sample_y(X_test, n_samples=0)
    with pytest.raises(ValueError, match="quantiles"):
        reg.predict(X_test, output_type="quantiles", quantiles=[1.5])


@pytest.mark.parametrize("Estimator", [TabSwiftClassifier, TabSwiftRegressor])
def test_pickle_and_skops_round_trip(Estimator, iris, tmp_path):
    X, y, X_test, _ = iris
    est = Estimator(n_estimators=2).fit(X, y)
    expected = est.predict(X_test)
    blob = pickle.dumps(est)
    assert len(blob) < 200_000  # weights are reloaded by name, not pickled
    np.testing.assert_allclose(pickle.loads(blob).predict(X_test), expected)
    path = tmp_path / "model.skops"
    sio.dump(est, path)
    loaded = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    np.testing.assert_allclose(loaded.predict(X_test), expected)


def test_skops_refuses_untrusted_types_by_default(iris, tmp_path):
    X, y, _, _ = iris
    path = tmp_path / "model.skops"
    sio.dump(TabSwiftClassifier(n_estimators=1).fit(X, y), path)
    with pytest.raises(sio.exceptions.UntrustedTypesFoundException):
        sio.load(path)


def test_works_in_pipeline_cross_validation_and_grid_search(iris):
    X, y, _, _ = iris
    pipe = make_pipeline(StandardScaler(), TabSwiftClassifier(n_estimators=1))
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.mean() > 0.7
    grid = GridSearchCV(
        TabSwiftClassifier(n_estimators=1), {"softmax_temperature": [0.5, 1.0]}, cv=2
    ).fit(X, y)
    assert grid.best_params_["softmax_temperature"] in (0.5, 1.0)


def test_precision_can_change_after_fit(iris):
    X, y, X_test, _ = iris
    clf = TabSwiftClassifier(n_estimators=1, inference_precision="bf16").fit(X, y)
    low = clf.predict_proba(X_test)
    high = clf.set_params(inference_precision="fp32").predict_proba(X_test)
    np.testing.assert_allclose(low, high, atol=0.05)


def test_string_column_missing_throughout_fit_takes_text_later():
    """A declared string column with no values at fit is categorical: text at predict is an
    unseen category (missing), not a "was numeric during fit" error."""
    frame = pd.DataFrame({"x": np.arange(6.0), "s": pd.array([None] * 6, dtype="string")})
    reg = TabSwiftRegressor(n_estimators=1).fit(frame, np.arange(6.0))
    later = frame.assign(s=pd.array(["u", None, "v", "u", None, "w"], dtype="string"))
    np.testing.assert_array_equal(reg.predict(later), reg.predict(frame))


def test_every_other_pair_of_members_one_hot_encodes_categories():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {"colour": pd.Categorical(rng.choice(["r", "g", "b", "y"], 60)), "x": rng.normal(size=60)}
    )
    y = (frame["colour"] == "g").to_numpy().astype(int)
    clf = TabSwiftClassifier(n_estimators=4).fit(frame, y)
    assert [bool(m.one_hot) for m in clf.members_] == [False, False, True, True]
    assert clf.members_[2].transform(clf.X_context_).shape == (60, 5)  # 4 indicators + x
    assert clf.score(frame, y) > 0.9


def test_wide_numeric_tables_get_principal_component_members():
    """Members 2, 3, 6, 7 of an all-numeric table with >= 15 columns see whitened PCs."""

    rng = np.random.default_rng(0)
    latent = rng.normal(size=(200, 4))
    X = latent @ rng.normal(size=(4, 30)) + 0.1 * rng.normal(size=(200, 30))  # correlated
    y = (latent[:, 0] > 0).astype(int)
    clf = TabSwiftClassifier(n_estimators=4, n_jobs=1).fit(X[:100], y[:100])
    views = [m.projection is not None for m in clf.members_]
    assert views == [False, False, True, True]
    for member in clf.members_[2:]:
        assert 4 <= member.width < 30  # 99% of the variance of rank-4 data plus noise
        z = member.transform(X[:100])
        assert z.shape == (100, member.width)
        np.testing.assert_allclose(z[:, :4].std(0), 1.0, atol=0.15)  # whitened, soft-clipped
    assert clf.score(X[100:], y[100:]) > 0.85
    independent = rng.normal(size=(100, 20))  # nothing to compress: every component kept
    wide = TabSwiftClassifier(n_estimators=4, n_jobs=1).fit(independent, y[:100])
    assert [m.width for m in wide.members_] == [20, 20, 20, 20]
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(again.predict_proba(X[100:]), clf.predict_proba(X[100:]))
    frame = pd.DataFrame(X).add_prefix("x").assign(kind=pd.Categorical(rng.choice(["a", "b"], 200)))
    mixed = TabSwiftClassifier(n_estimators=4, n_jobs=1).fit(frame[:100], y[:100])
    assert all(m.projection is None for m in mixed.members_)  # categorical tables: plain view


# ---- batched prediction: each batch is reduced to its output at once ----------------------


@pytest.fixture
def model_calls(monkeypatch):
    """The members' logits (B, m, C) and exit depths (B, m) of every model batch, in order."""
    calls = []
    original = TabSwift.predict_from_cache

    def predict_from_cache(self, *args, **kwargs):
        logits, depth = original(self, *args, **kwargs)
        calls.append((logits.float().numpy(), depth.numpy()))
        return logits, depth

    monkeypatch.setattr(TabSwift, "predict_from_cache", predict_from_cache)
    return calls


def _joined(calls, n_batches):
    """The recorded logits and depths, each joined along rows; forgets them."""
    assert len(calls) == n_batches
    logits, depth = (np.concatenate(part, axis=1) for part in zip(*calls, strict=True))
    calls.clear()
    return logits, depth


def _table(n_classes, n_rows=150, n_test=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows + n_test, 4))
    X[::9, 1] = np.nan
    y = np.digitize(X[:, 0] + 0.3 * X[:, 2], np.linspace(-1.5, 1.5, n_classes - 1))
    return X[:n_rows], y[:n_rows], X[n_rows:]


@pytest.mark.parametrize("n_classes, params", [
    (3, {}), (3, {"average_logits": False}), (3, {"early_exit": 0.9}), (14, {}),
])
def test_classifier_batches_give_the_bits_of_one_reduction(model_calls, n_classes, params):
    """Batches of 7 rows, each reduced to probabilities at once, give bit for bit what
    reducing all the members' logits together gives (reduced the way predict_proba did
    before reducing per batch). The reference reduces the very logits of these batches:
    the model's own float32 outputs vary with the batch size in the last bits. Without the
    guard, whose cross-fitting runs the model in ``fit`` and whose booster moves the outputs."""
    X, y, X_test = _table(n_classes)
    clf = TabSwiftClassifier(n_estimators=3, batch_size=7, n_jobs=1, guard=False,
                             **params).fit(X, y)
    proba = clf.predict_proba(X_test)
    logits, _ = _joined(model_calls, n_batches=6)
    reference = probability_rows(clf._proba(logits, clf._n_outputs()))  # as predict_proba ends
    np.testing.assert_array_equal(proba, reference)
    depth = clf.exit_depth(X_test)
    np.testing.assert_array_equal(depth, _joined(model_calls, n_batches=6)[1].mean(0))


def test_regressor_batches_give_the_bits_of_one_reduction(model_calls):
    """Every output of the regressor, from batches of 7 rows, equals the statistic of the
    bucket probabilities of all rows at once; the mean to within float64 rounding (a
    matrix-vector product, whose BLAS kernels round by blocks of rows, differently on
    other CPUs: 1e-12 relative covers a sum over a few hundred buckets). Without the guard,
    whose cross-fitting runs the model in ``fit`` and whose ridge moves the outputs."""
    X, _, X_test = _table(2)
    y = X[:, 0] + np.random.default_rng(1).normal(size=len(X))
    reg = TabSwiftRegressor(n_estimators=3, batch_size=7, early_exit=0.9, n_jobs=1,
                            guard=False).fit(X, y)
    probs, borders = reg.predict_distribution(X_test)
    expected = bucket_probabilities(_joined(model_calls, n_batches=6)[0])
    np.testing.assert_array_equal(probs, expected)
    for output_type, statistic in [
        ("median", lambda: buckets.quantiles(expected, borders, [0.5])[:, 0]),
        ("mode", lambda: buckets.mode(expected, borders)),
        ("quantiles", lambda: buckets.quantiles(expected, borders, [0.1, 0.5, 0.9])),
    ]:
        np.testing.assert_array_equal(reg.predict(X_test, output_type), statistic())
        _joined(model_calls, n_batches=6)
    np.testing.assert_allclose(reg.predict(X_test), buckets.mean(expected, borders),
                               rtol=1e-12, atol=0)
    _joined(model_calls, n_batches=6)
    rng = np.random.default_rng(np.random.RandomState(5).randint(2**31 - 1))  # as sample_y
    np.testing.assert_array_equal(reg.sample_y(X_test, 4, random_state=5),
                                  buckets.sample(expected, borders, 4, rng))


def test_bad_values_raise_before_the_model_runs(model_calls):
    """Infinity in the last batch: the error comes before the model runs on the first."""
    X, y, X_test = _table(3)
    clf = TabSwiftClassifier(n_estimators=1, batch_size=7, n_jobs=1, guard=False).fit(X, y)
    X_test[-1, 2] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        clf.predict_proba(X_test)
    assert model_calls == []


def _numpy_peak(predict, X) -> int:
    """Peak bytes traced by tracemalloc (numpy arrays included) while ``predict(X)`` runs."""
    tracemalloc.start()
    try:
        predict(X)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_prediction_memory_grows_by_the_output_only():
    """Four times the rows: the traced peak grows by the output (kept per batch, then joined:
    two copies) and per-batch bookkeeping of pandas (bounded), not by the members' logits,
    bucket probabilities or encoded rows (before batches were reduced at once: 266 and
    3,137 bytes per row here). The regressor without the guard: on this linear target its
    ridge would predict alone (``blend_weight_`` 0), in chunks of ``VALUE_CHECK_ROWS`` rows."""
    X, y, _ = _table(2, n_rows=60)
    rng = np.random.default_rng(2)
    small, large = rng.normal(size=(500, 4)), rng.normal(size=(2000, 4))
    clf = TabSwiftClassifier(n_estimators=4, batch_size=100, n_jobs=1).fit(X, y)
    reg = TabSwiftRegressor(n_estimators=4, batch_size=100, n_jobs=1, guard=False).fit(X, X[:, 0])
    for predict, output_bytes_per_row in [(clf.predict_proba, 2 * 8), (reg.predict, 8)]:
        growth = _numpy_peak(predict, large) - _numpy_peak(predict, small)
        assert growth < 2 * output_bytes_per_row * 1500 + 100_000, (predict, growth)


@pytest.mark.parametrize("device, n_members, expected", [
    ("cpu", 1, 4096), ("cpu", 2, 2048), ("cpu", 8, 1024), ("cpu", 64, 1024), ("cuda", 8, 8192),
])
def test_auto_batches_cap_rows_times_members_on_cpu(device, n_members, expected):
    """On CPU "auto" batches hold about 4,096 rows x members (activations stay in cache),
    never fewer than 1,024 rows; other devices take up to 8,192 rows, as free memory allows."""
    assert max_batch_rows(torch.device(device), n_members) == expected


def test_draws_in_contexts_read_the_same_distribution_as_predict(diabetes):
    """Given the fitted rows as its context, a context predicts exactly what predict does."""
    X, y, _, _ = diabetes
    reg = TabSwiftRegressor(n_estimators=3, n_jobs=1).fit(X[:30], y[:30])
    rows = np.tile(np.arange(30), (2, 1))
    new = np.array([[0, 5, 7], [1, 2, 29]])
    probs, mean, scale, borders = distributions_in_contexts(reg, rows, np.tile(y[:30], (2, 1)),
                                                        new)
    for b in range(2):
        expected, expected_borders = reg.predict_distribution(X[new[b]])
        np.testing.assert_allclose(probs[b], expected, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(mean[b] + scale[b] * borders, expected_borders)


def test_sample_y_in_contexts_seeds_shapes_and_checks(diabetes):
    X, y, _, _ = diabetes
    reg = TabSwiftRegressor(n_estimators=1, max_context_rows=20, n_jobs=1).fit(X[:30], y[:30])
    rows = np.random.default_rng(0).integers(0, 30, size=(4, 25))  # cut to 20 rows each
    draws = reg.sample_y_in_contexts(rows, y[rows], rows[:, :3], random_state=1)
    assert draws.shape == (4, 3) and np.isfinite(draws).all()
    np.testing.assert_array_equal(
        draws, reg.sample_y_in_contexts(rows, y[rows], rows[:, :3], random_state=1))
    generator = np.random.default_rng(5)
    first = reg.sample_y_in_contexts(rows, y[rows], rows[:, :3], random_state=generator)
    second = reg.sample_y_in_contexts(rows, y[rows], rows[:, :3], random_state=generator)
    assert not np.array_equal(first, second)  # a Generator is advanced, not reseeded
    for args, match in [
        ((rows, y[rows][:, :5], rows[:, :3]), "same shape"),
        ((rows, y[rows], rows[:2, :3]), "query_rows must have shape"),
        ((rows + 30, y[rows], rows[:, :3]), r"context_rows must hold positions.*\[0, 30\)"),
        ((rows, y[rows], rows[:, :3] - 1.5), "query_rows must hold positions"),
    ]:
        with pytest.raises(ValueError, match=match):
            reg.sample_y_in_contexts(*args)


def test_sample_y_in_contexts_on_any_magnitude(diabetes):
    """Contexts are standardised as fit standardises the table: targets near 1e298 (whose
    squares overflow) give finite draws on their own scale, and a constant context draws its
    constant (not a spread of 1 in the target's units)."""
    X, y, _, _ = diabetes
    huge = (y[:30] - y[:30].mean()) * 1e296
    reg = TabSwiftRegressor(n_estimators=1, n_jobs=1, guard=False).fit(X[:30], huge)
    rows = np.random.default_rng(0).integers(0, 30, size=(2, 20))
    draws = reg.sample_y_in_contexts(rows, huge[rows], rows[:, :3], random_state=0)
    assert np.isfinite(draws).all() and np.abs(draws).max() > 1e290
    constant = np.full((2, 20), 7.0)
    draws = reg.sample_y_in_contexts(rows, constant, rows[:, :3], random_state=0)
    np.testing.assert_allclose(draws, 7.0, rtol=1e-9)


@pytest.mark.parametrize("device, tokens, expected", [
    ("cpu", 100, 40), ("cpu", 8 * 358, 1), ("cpu", 1, 1024), ("cuda", 8 * 358, 1024),
])
def test_contexts_per_pass_caps_tokens_on_cpu(device, tokens, expected):
    """On CPU a pass holds about 4,096 tokens (members x contexts x context rows), at least
    one context; other devices take up to 1,024 contexts, as free memory allows."""
    assert contexts_per_pass(torch.device(device), tokens) == expected


@pytest.mark.parametrize("Estimator", [TabSwiftClassifier, TabSwiftRegressor])
def test_every_parameter_is_checked_by_scikit_learn(Estimator):
    """Each parameter has a declarative constraint, and a value outside it fails fit with
    scikit-learn's InvalidParameterError (parametrize_with_checks does not run this check)."""
    check_param_validation(Estimator.__name__, Estimator(n_estimators=1, n_jobs=1))
