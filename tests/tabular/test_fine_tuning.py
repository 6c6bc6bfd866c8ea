"""Fine-tuning TabSwift on the training table: the guard, the budget, the state, the layers."""

import pickle
import time

import numpy as np
import pytest
import skops.io as sio
import torch
from sklearn.datasets import load_breast_cancer, load_diabetes

from skfm import TabSwiftClassifier, TabSwiftRegressor
from skfm.tabular.finetune import LAST_BLOCKS, MAX_VALIDATION_ROWS, validation_split

# guard=False: the bar is the in-context network itself, which a random tiny network can beat;
# with the guard its partners join the bar (test_the_bar_includes_the_guards_partners)
TINY = {"checkpoint": "random:tiny", "n_estimators": 2, "n_jobs": 1, "guard": False}


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(X))
    return X[idx[:240], :10], y[idx[:240]], X[idx[240:340], :10], y[idx[240:340]]


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return X[:200], y[:200], X[200:260]


@pytest.fixture(scope="module")
def tuned(cancer):
    """The random tiny network learns from its first epochs: fine-tuning is kept."""
    X, y, _, _ = cancer
    return TabSwiftClassifier(**TINY, fine_tuning="full", learning_rate=3e-3, max_epochs=4,
                              time_budget=60).fit(X, y)


def _torch_free(obj, seen=None) -> bool:
    """Whether nothing reachable from ``obj`` (dicts, lists, object attributes) is torch's."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return True
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor | torch.nn.Module):
        return False
    if isinstance(obj, dict):
        return all(_torch_free(k, seen) and _torch_free(v, seen) for k, v in obj.items())
    if isinstance(obj, list | tuple | set):
        return all(_torch_free(v, seen) for v in obj)
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return _torch_free(vars(obj), seen)
    return True


def test_fine_tuning_is_kept_when_it_beats_the_checkpoint(tuned, cancer):
    _, _, X_test, _ = cancer
    scores = tuned.validation_scores_
    assert tuned.fine_tuned_ and scores["fine_tuned"] > scores["in_context"]
    assert 1 <= tuned.n_epochs_ <= 4
    assert all(isinstance(v, np.ndarray) and v.dtype == np.float32
               for v in tuned.fine_tuned_weights_.values())
    plain = TabSwiftClassifier(**TINY).fit(*cancer[:2])
    assert not plain.fine_tuned_ and plain.validation_scores_ is None and plain.n_epochs_ == 0
    assert np.abs(tuned.predict_proba(X_test) - plain.predict_proba(X_test)).max() > 1e-3


def test_the_guard_keeps_the_checkpoint_when_fine_tuning_does_not_help(cancer):
    """A learning rate that wrecks the network: its weights are refused, and the estimator
    predicts exactly as without fine-tuning."""
    X, y, X_test, _ = cancer
    refused = TabSwiftClassifier(**TINY, fine_tuning="full", learning_rate=50.0, max_epochs=2,
                                 n_iter_no_change=1).fit(X, y)
    scores = refused.validation_scores_
    assert not refused.fine_tuned_ and refused.fine_tuned_weights_ is None
    assert scores["fine_tuned"] < scores["in_context"]
    plain = TabSwiftClassifier(**TINY).fit(X, y)
    np.testing.assert_array_equal(refused.predict_proba(X_test), plain.predict_proba(X_test))


def test_early_stopping_ends_after_n_iter_no_change_stale_epochs(cancer):
    """A learning rate too small to move the loss: the first epoch is the best, the next two
    are stale, and no change is not an improvement on the checkpoint."""
    X, y, _, _ = cancer
    est = TabSwiftClassifier(**TINY, fine_tuning="last", learning_rate=1e-12, max_epochs=50,
                             n_iter_no_change=2).fit(X, y)
    assert est.n_epochs_ == 3
    assert not est.fine_tuned_
    assert est.validation_scores_["fine_tuned"] == pytest.approx(
        est.validation_scores_["in_context"], abs=1e-4)


def test_time_budget_ends_fine_tuning(cancer):
    X, y, _, _ = cancer
    start = time.perf_counter()
    est = TabSwiftClassifier(**TINY, fine_tuning="full", time_budget=0.5, max_epochs=10_000,
                             n_iter_no_change=10_000).fit(X, y)
    took = time.perf_counter() - start
    assert est.n_epochs_ < 10_000
    assert took < 0.5 + 20  # loosely: the last epoch, its validation and the final context


@pytest.mark.parametrize("fine_tuning", ["last", "full"])
def test_last_trains_registers_heads_and_last_blocks_only(cancer, fine_tuning):
    X, y, _, _ = cancer
    est = TabSwiftClassifier(**TINY, fine_tuning=fine_tuning, learning_rate=3e-3,
                             max_epochs=2).fit(X, y)
    assert est.fine_tuned_
    names = set(est.fine_tuned_weights_)
    n_layers = 2  # random:tiny
    last = {f"blocks.{i}" for i in range(max(0, n_layers - LAST_BLOCKS), n_layers)}
    if fine_tuning == "last":
        assert {".".join(n.split(".")[:2]) for n in names if n.startswith("blocks.")} <= last
        assert "registers" in names and not any(n.startswith("encoder") for n in names)
        assert not any(n.startswith("heads.regression") for n in names)
    else:
        assert any(n.startswith("encoder") for n in names)


def test_pickle_and_skops_keep_the_weights_once_and_no_torch(tuned, cancer, tmp_path):
    _, _, X_test, _ = cancer
    expected = tuned.predict_proba(X_test)
    assert _torch_free(tuned.__getstate__())
    restored = pickle.loads(pickle.dumps(tuned))
    np.testing.assert_array_equal(restored.predict_proba(X_test), expected)
    path = tmp_path / "tuned.skops"
    sio.dump(tuned, path)
    loaded = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    assert loaded.fine_tuned_
    np.testing.assert_array_equal(loaded.predict_proba(X_test), expected)


def test_same_random_state_same_weights(cancer):
    X, y, _, _ = cancer
    a, b = (TabSwiftClassifier(**TINY, fine_tuning="last", learning_rate=3e-3, max_epochs=2,
                               random_state=3).fit(X, y) for _ in range(2))
    assert a.validation_scores_ == b.validation_scores_
    for name, value in a.fine_tuned_weights_.items():
        np.testing.assert_array_equal(value, b.fine_tuned_weights_[name])


def test_regressor_fine_tunes_its_bucket_head(diabetes):
    X, y, X_test = diabetes
    est = TabSwiftRegressor(**TINY, fine_tuning="last", learning_rate=3e-3, max_epochs=3).fit(X, y)
    assert est.fine_tuned_ and est.validation_scores_["fine_tuned"] > \
        est.validation_scores_["in_context"]
    assert not any(n.startswith("heads.classification") for n in est.fine_tuned_weights_)
    prediction = est.predict(X_test)
    assert np.isfinite(prediction).all()
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict(X_test), prediction)


def test_batch_independence_holds_after_fine_tuning(tuned, cancer):
    """A row's prediction does not depend on the rows predicted with it."""
    _, _, X_test, _ = cancer
    together = tuned.predict_proba(X_test)
    alone = np.concatenate([tuned.predict_proba(X_test[i:i + 1]) for i in range(5)])
    np.testing.assert_allclose(alone, together[:5], rtol=1e-5, atol=1e-6)


def test_too_few_rows_per_class_for_a_split_train_nothing():
    X = np.arange(12, dtype=float).reshape(6, 2)
    y = np.array([0, 0, 0, 0, 0, 1])  # one row of class 1: no stratified split
    est = TabSwiftClassifier(**TINY, fine_tuning="full").fit(X, y)
    assert not est.fine_tuned_ and est.validation_scores_ is None and est.n_epochs_ == 0


def test_validation_rows_are_capped():
    est = TabSwiftRegressor(validation_fraction=0.5, random_state=0)
    train, val = validation_split(est, 2 * MAX_VALIDATION_ROWS + 10, None)
    assert len(val) == MAX_VALIDATION_ROWS
    assert sorted(np.concatenate([train, val]).tolist()) == list(range(2 * MAX_VALIDATION_ROWS
                                                                      + 10))


def _scripted_row_losses(monkeypatch, in_context: np.ndarray, tuned: np.ndarray) -> None:
    """Validation losses per row: ``in_context`` for the checkpoint's (the first call), then
    ``tuned`` for every epoch and for the restored best one."""
    from skfm.tabular import finetune

    calls = []

    def row_losses(probe, X_val, y_val):
        calls.append(len(y_val))
        return (in_context if len(calls) == 1 else tuned)[:len(y_val)]

    monkeypatch.setattr(finetune, "_row_losses", row_losses)


def test_a_gain_within_one_standard_error_is_refused(cancer, monkeypatch):
    """The best epoch was chosen on the validation rows: a lower mean loss there that the
    rows' spread could explain does not replace the checkpoint; a clear one does."""
    X, y, _, _ = cancer
    base = np.random.default_rng(0).exponential(size=len(y))
    swing = np.resize([0.5, -0.5], len(y))  # mean 0 over an even number of rows
    params = dict(**TINY, fine_tuning="last", max_epochs=1)
    _scripted_row_losses(monkeypatch, base, base - 0.01 + swing)  # gain 0.01, SE about 0.07
    noisy = TabSwiftClassifier(**params).fit(X, y)
    assert noisy.validation_scores_["fine_tuned"] > noisy.validation_scores_["in_context"]
    assert not noisy.fine_tuned_ and noisy.fine_tuned_weights_ is None
    _scripted_row_losses(monkeypatch, base, base - 0.5 + swing / 10)  # gain 0.5, SE about 0.007
    assert TabSwiftClassifier(**params).fit(X, y).fine_tuned_


def test_row_losses_average_to_the_estimators_losses(cancer, diabetes):
    """The per-row losses of the keep rule average to the log loss and to 1 - R²."""
    from sklearn.metrics import log_loss, r2_score

    from skfm.tabular.finetune import _row_losses

    X, y, X_test, y_test = cancer
    clf = TabSwiftClassifier(**TINY).fit(X, y)
    assert _row_losses(clf, X_test, y_test).mean() == pytest.approx(
        log_loss(y_test, clf.predict_proba(X_test)), rel=1e-6)
    X, y, _ = diabetes
    reg = TabSwiftRegressor(**TINY).fit(X[:150], y[:150])
    assert _row_losses(reg, X[150:], y[150:]).mean() == pytest.approx(
        1 - r2_score(y[150:], reg.predict(X[150:])), rel=1e-6)


def test_the_bar_includes_the_guards_partners(cancer):
    """With the guard on, fine-tuning must beat the estimator as it would be without
    fine-tuning (a kept fine-tuning turns the guard off), not the in-context network alone."""
    from sklearn.metrics import log_loss

    X, y, _, _ = cancer
    params = {**TINY, "guard": True, "random_state": 0}
    est = TabSwiftClassifier(**params, fine_tuning="last", learning_rate=3e-3,
                             max_epochs=2).fit(X, y)
    train, val = validation_split(est, len(y), y)
    bars = {guard: -log_loss(y[val], TabSwiftClassifier(**{**params, "guard": guard})
                             .fit(X[train], y[train]).predict_proba(X[val]))
            for guard in (True, False)}
    assert bars[True] > bars[False]  # the partners raise the bar on this table
    assert est.validation_scores_["in_context"] == pytest.approx(bars[True], rel=1e-6)
    if est.validation_scores_["fine_tuned"] <= bars[True]:
        assert not est.fine_tuned_
