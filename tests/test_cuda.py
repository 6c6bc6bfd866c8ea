"""TabSwift on a CUDA device: agreement with the CPU, early exit, out-of-memory back-off.

Every test here is marked ``cuda`` and skipped without a CUDA device; run them with
``python -m pytest -m cuda tests/test_cuda.py`` (or ``benchmarks/gpu_check.sh``).
"""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_breast_cancer, load_diabetes

from skfm import TabSwiftClassifier, TabSwiftRegressor
from skfm._backend import run_in_batches
from skfm.tabular.base import load_model
from skfm.tabular.model import TabSwift

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

CUDA = "cuda"
# (inference_precision, atol on probabilities): bf16 autocast is the CUDA default
PRECISIONS = [("auto", 2e-2), ("fp32", 1e-4)]


def _split(X, y):
    """Even rows to fit, odd rows to predict."""
    return X[::2], y[::2], X[1::2], y[1::2]


@pytest.fixture(scope="module")
def breast_cancer():
    return _split(*load_breast_cancer(return_X_y=True))


@pytest.fixture(scope="module")
def diabetes():
    return _split(*load_diabetes(return_X_y=True))


@pytest.fixture(scope="module")
def cpu_proba(breast_cancer):
    X, y, X_test, _ = breast_cancer
    return TabSwiftClassifier(n_estimators=2, device="cpu").fit(X, y).predict_proba(X_test)


def _oom_above(rows: int):
    """A ``predict_from_cache`` that runs out of CUDA memory for batches above ``rows``."""
    original = TabSwift.predict_from_cache

    def predict_from_cache(self, x_test, *args, **kwargs):
        if x_test.shape[1] > rows:
            free, _ = torch.cuda.mem_get_info(x_test.device)
            torch.empty(int(free * 2), dtype=torch.uint8, device=x_test.device)  # raises
        return original(self, x_test, *args, **kwargs)

    return predict_from_cache


@pytest.mark.parametrize(("precision", "atol"), PRECISIONS)
def test_classifier_cuda_matches_cpu(breast_cancer, cpu_proba, precision, atol):
    """predict_proba on CUDA equals the CPU's, within bf16 error or float32 rounding."""
    X, y, X_test, y_test = breast_cancer
    clf = TabSwiftClassifier(n_estimators=2, device=CUDA, inference_precision=precision)
    proba = clf.fit(X, y).predict_proba(X_test)
    assert proba.shape == cpu_proba.shape and proba.dtype == cpu_proba.dtype
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(proba, cpu_proba, atol=atol, rtol=0)
    assert clf.score(X_test, y_test) > 0.5  # better than chance, nothing more


@pytest.mark.parametrize(("precision", "atol"), PRECISIONS)
def test_regressor_cuda_matches_cpu(diabetes, precision, atol):
    """The predicted mean on CUDA equals the CPU's (tolerance relative to the target's spread)."""
    X, y, X_test, _ = diabetes
    expected = TabSwiftRegressor(n_estimators=2, device="cpu").fit(X, y).predict(X_test)
    reg = TabSwiftRegressor(n_estimators=2, device=CUDA, inference_precision=precision)
    mean = reg.fit(X, y).predict(X_test)
    assert mean.shape == expected.shape
    np.testing.assert_allclose(mean, expected, atol=atol * y.std(), rtol=0)
    probs, _ = reg.predict_distribution(X_test)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-5)


def test_model_lives_on_the_cuda_device(breast_cancer):
    """The fitted context cache and the shared module sit on the GPU."""
    X, y, _, _ = breast_cancer
    clf = TabSwiftClassifier(n_estimators=1, device=CUDA).fit(X, y)
    model, _ = load_model(clf.checkpoint, torch.device("cuda", torch.cuda.current_device()))
    assert next(model.parameters()).is_cuda
    (cache, x_ctx, n_features), = clf._cache.values()
    assert x_ctx.is_cuda and n_features.is_cuda and cache[0][0].is_cuda
    assert cache[0][0].dtype == torch.bfloat16  # "auto" precision: bf16 autocast on CUDA


@pytest.mark.parametrize(("precision", "atol"), [("auto", 1e-2), ("fp32", 1e-5)])
def test_early_exit_on_cuda(breast_cancer, precision, atol):
    """A near-zero agreement lets every row leave at the earliest exit (layer patience + 1 = 3),
    giving the ``max_layers=3`` answer.

    The early-exit path runs each member alone, the plain path all members in one batch: in
    bf16 the two may round logits differently, hence the looser tolerance.
    """
    X, y, X_test, _ = breast_cancer
    kwargs = dict(n_estimators=2, device=CUDA, inference_precision=precision)
    eager = TabSwiftClassifier(early_exit=1e-6, **kwargs).fit(X, y)
    assert np.all(eager.exit_depth(X_test) == 3)
    three_layers = TabSwiftClassifier(max_layers=3, **kwargs).fit(X, y).predict_proba(X_test)
    np.testing.assert_allclose(eager.predict_proba(X_test), three_layers, atol=atol, rtol=0)
    reg = TabSwiftRegressor(early_exit=1e-6, **kwargs).fit(X, y.astype(float))
    assert np.all(reg.exit_depth(X_test) == 3)
    assert np.isfinite(reg.predict(X_test)).all()


def test_early_exit_depths_match_cpu(breast_cancer):
    """With a strict agreement (rows leave at every depth from 3 to the last) the per-row depths
    on CUDA (fp32) are the CPU's."""
    X, y, X_test, _ = breast_cancer
    kwargs = dict(n_estimators=2, early_exit=0.99)
    cpu = TabSwiftClassifier(device="cpu", **kwargs).fit(X, y)
    n_layers = load_model(cpu.checkpoint, torch.device("cpu"))[0].config.n_layers
    full = TabSwiftClassifier(n_estimators=2, device="cpu", early_exit=False).fit(X, y)
    full = full.predict_proba(X_test)  # every row through every layer
    gpu = TabSwiftClassifier(device=CUDA, inference_precision="fp32", **kwargs).fit(X, y)
    depth_cpu, depth_gpu = cpu.exit_depth(X_test), gpu.exit_depth(X_test)
    assert depth_gpu.min() >= 3 and depth_gpu.max() <= n_layers
    assert depth_gpu.min() < n_layers  # the agreement does let rows exit
    assert np.mean(depth_gpu == depth_cpu) >= 0.95  # rows at the threshold may flip
    same = depth_gpu == depth_cpu
    np.testing.assert_allclose(gpu.predict_proba(X_test)[same], cpu.predict_proba(X_test)[same],
                               atol=1e-4, rtol=0)
    deepest = same & (depth_cpu == n_layers)
    np.testing.assert_allclose(gpu.predict_proba(X_test)[deepest], full[deepest], atol=1e-4)


def test_run_in_batches_backs_off_on_real_cuda_oom():
    """A chunk that really exhausts GPU memory is halved and retried, and the result is right."""
    device = torch.device("cuda", torch.cuda.current_device())
    data = torch.arange(10_000, device=device, dtype=torch.float32)
    allocated = torch.cuda.memory_allocated(device)

    def fn(start, stop):
        if stop - start > 1000:
            free, _ = torch.cuda.mem_get_info(device)
            torch.empty(int(free * 2), dtype=torch.uint8, device=device)  # raises
        return (data[start:stop] * 2).cpu()

    with pytest.warns(RuntimeWarning, match="Out of memory"):
        parts = run_in_batches(fn, len(data), 8000, device=device)
    assert all(len(p) <= 1000 for p in parts)
    torch.testing.assert_close(torch.cat(parts), (data * 2).cpu())
    assert torch.cuda.memory_allocated(device) == allocated  # the failures left nothing behind


def test_huge_batch_size_backs_off_and_matches_small_batches(breast_cancer, monkeypatch):
    """``batch_size`` far beyond what fits: the estimator halves it and predicts the same."""
    X, y, _, _ = breast_cancer
    X_big = np.tile(X, (40, 1))  # 11 400 test rows
    kwargs = dict(n_estimators=2, device=CUDA, inference_precision="fp32")
    small = TabSwiftClassifier(batch_size=512, **kwargs).fit(X, y).predict_proba(X_big)
    monkeypatch.setattr(TabSwift, "predict_from_cache", _oom_above(1024))
    huge = TabSwiftClassifier(batch_size=10**9, **kwargs).fit(X, y)
    with pytest.warns(RuntimeWarning, match="Out of memory"):
        proba = huge.predict_proba(X_big)
    np.testing.assert_allclose(proba, small, atol=1e-5, rtol=0)


def test_estimator_backs_off_on_a_real_out_of_memory(breast_cancer):
    """A batch larger than the memory this process may use raises a real CUDA out-of-memory
    error inside the model (no monkeypatching); predict halves the batch until it fits and
    returns what small batches give.

    The process is capped at what it holds now plus 1 GiB (``set_per_process_memory_fraction``,
    reset at the end), so that 400 000 test rows in one batch (several GiB of activations)
    do not fit on any GPU.
    """
    X, y, _, _ = breast_cancer
    X_big = np.tile(X, (1400, 1))[:400_000]
    device = torch.device("cuda", torch.cuda.current_device())
    kwargs = dict(n_estimators=2, device=CUDA, inference_precision="fp32")
    expected = TabSwiftClassifier(batch_size=4096, **kwargs).fit(X, y).predict_proba(X_big)
    huge = TabSwiftClassifier(batch_size=len(X_big), **kwargs).fit(X, y)
    total = torch.cuda.get_device_properties(device).total_memory
    torch.cuda.empty_cache()
    cap = (torch.cuda.memory_reserved(device) + 2**30) / total
    torch.cuda.set_per_process_memory_fraction(cap, device)
    try:
        with pytest.warns(RuntimeWarning, match="Out of memory"):
            proba = huge.predict_proba(X_big)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0, device)
    np.testing.assert_allclose(proba, expected, atol=1e-5, rtol=0)
