"""inference_precision=float64 (a float64 copy of the network and its inputs on the CPU) and
probabilities as float64 rows that sum to one, for TabSwift and SPN (Mantis:
tests/timeseries/test_mantis_transformer.py)."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_diabetes, load_iris

from skfm import SPNClassifier, TabSwiftClassifier, TabSwiftRegressor
from skfm.tabular.base import DEFAULT_CLASSIFIER_CHECKPOINT, load_model

CPU = torch.device("cpu")
SMALL = dict(n_estimators=2, guard=False, early_exit=False, device="cpu", n_jobs=1)


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X[::2], y[::2], X[1::2]


def _output_dtypes(module: torch.nn.Module, run) -> set:
    """The dtypes of ``module``'s outputs while ``run()`` runs."""
    seen = set()
    hook = module.register_forward_hook(lambda m, inputs, out: seen.add(out.dtype))
    try:
        run()
    finally:
        hook.remove()
    return seen


@pytest.mark.parametrize("precision", [torch.float64, "fp64", "float64"])
def test_float64_classifier_is_close_to_float32_and_runs_in_float64(iris, precision):
    X, y, X_test = iris
    fp32 = TabSwiftClassifier(**SMALL).fit(X, y)
    fp64 = TabSwiftClassifier(inference_precision=precision, **SMALL).fit(X, y)
    head = fp64._network(CPU).heads["classification"]
    assert _output_dtypes(head, lambda: fp64.predict_proba(X_test)) == {torch.float64}
    np.testing.assert_allclose(fp64.predict_proba(X_test), fp32.predict_proba(X_test),
                               atol=1e-4)
    # the checkpoint's module, shared by every estimator, is never cast in place
    assert load_model(DEFAULT_CLASSIFIER_CHECKPOINT, CPU)[0].encoder.weight.dtype == torch.float32
    assert fp32._network(CPU).encoder.weight.dtype == torch.float32


def test_float64_regressor_is_close_to_float32():
    X, y = load_diabetes(return_X_y=True)
    fp32 = TabSwiftRegressor(**SMALL).fit(X[:200], y[:200])
    fp64 = TabSwiftRegressor(inference_precision=torch.float64, **SMALL).fit(X[:200], y[:200])
    head = fp64._network(CPU).heads["regression"]
    assert _output_dtypes(head, lambda: fp64.predict(X[200:260])) == {torch.float64}
    np.testing.assert_allclose(fp64.predict(X[200:260]), fp32.predict(X[200:260]),
                               rtol=1e-4)


def test_a_precision_that_is_no_precision_is_named_with_what_is_accepted(iris):
    X, y, _ = iris
    with pytest.raises(ValueError, match=r"Invalid inference_precision torch.int8; expected one "
                                         r"of 'auto', .*'fp64', 'float64', torch.float32, "
                                         r"torch.bfloat16, torch.float16 or torch.float64\."):
        TabSwiftClassifier(inference_precision=torch.int8, **SMALL).fit(X, y)
    with pytest.raises(ValueError, match="float16.*only supported on CUDA"):
        TabSwiftClassifier(inference_precision=torch.float16, **SMALL).fit(X, y)


@pytest.mark.parametrize("make", [
    lambda: TabSwiftClassifier(**SMALL),
    lambda: TabSwiftClassifier(n_estimators=2, n_jobs=1),  # guarded: maybe a partner's share
    lambda: SPNClassifier(TabSwiftClassifier(**SMALL)),
])
def test_probabilities_are_float64_rows_that_sum_to_one(iris, make):
    X, y, X_test = iris
    if isinstance(make(), SPNClassifier):
        y = (y == 2).astype(int)  # SPN is binary
    proba = make().fit(X, y).predict_proba(X_test)
    assert proba.dtype == np.float64
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=0, atol=4e-16)
