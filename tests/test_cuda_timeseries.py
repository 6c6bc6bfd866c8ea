"""Mantis and Time-PEFT on a CUDA device: agreement with the CPU, CUDA fits that load on a CPU.

Every test here is marked ``cuda`` and skipped without a CUDA device; run them with
``python -m pytest -m cuda tests/test_cuda_timeseries.py`` (or ``benchmarks/gpu_check.sh``).
Fine-tuning is not compared across devices: its dropout draws differ between the CPU's and
CUDA's random generators. What must agree is inference with the same weights: the shipped
backbones', or those a fit on the GPU produced.
"""

import pickle

import numpy as np
import pytest
import torch
from conftest import CUDA_SKIP_REASON

from skfm import TimePEFTForecaster
from skfm._backend import resolve_device
from skfm.timeseries import MantisTimeSeriesClassifier

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason=CUDA_SKIP_REASON),
]

CUDA = "cuda"
# Mantis: (inference_precision, tolerance relative to the largest embedding value). bf16
# autocast is its CUDA default (on the CPU, bf16 autocast moves the embeddings by 4e-3 of
# their largest value). Its patch embedding is a convolution, which cuDNN runs in TF32 (a
# 10-bit mantissa, about 1e-3 relative) unless torch.backends.cudnn.allow_tf32 is switched
# off, so fp32 is not held to fp32's 1e-6 but to 5e-3.
PRECISIONS = [("auto", 2e-2), ("fp32", 5e-3)]
# Time-PEFT infers in fp32 without convolutions (CUDA matmuls are not TF32 by default)
TIMEPEFT_TOLERANCE = 1e-4


def _relative_difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12))


@pytest.fixture(scope="module")
def panel(sine_panel):
    """Two classes of noisy sines, 3 channels (conftest's): series to fit, their labels, to
    predict."""
    return sine_panel[:3]


@pytest.fixture(scope="module")
def series():
    """A log Airline-like monthly series: trend, season of 12, noise (240 values)."""
    rng = np.random.default_rng(0)
    t = np.arange(240)
    return np.log(100 + t + 20 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 2, 240))


@pytest.mark.parametrize(("precision", "tolerance"), PRECISIONS)
def test_mantis_embeddings_cuda_match_cpu(panel, precision, tolerance):
    X, y, X_test = panel
    cpu = MantisTimeSeriesClassifier(fusion=None, device="cpu").fit(X, y)
    cuda = MantisTimeSeriesClassifier(fusion=None, device=CUDA,
                                      inference_precision=precision).fit(X, y)
    assert _relative_difference(cuda.embed(X_test), cpu.embed(X_test)) < tolerance
    np.testing.assert_allclose(cuda.predict_proba(X_test), cpu.predict_proba(X_test),
                               atol=5 * tolerance)


def test_mantis_backbone_lives_on_the_cuda_device(panel):
    X, y, _ = panel
    clf = MantisTimeSeriesClassifier(fusion=None, device=CUDA).fit(X, y)
    model = clf._runtime_model(resolve_device(CUDA))
    assert next(model.parameters()).device.type == "cuda"


def test_mantis_finetuned_on_cuda_predicts_on_the_cpu(panel):
    """A backbone fine-tuned on the GPU is saved without torch objects and infers on a CPU."""
    X, y, X_test = panel
    clf = MantisTimeSeriesClassifier(fusion=None, fine_tuning="full", max_epochs=2,
                                     device=CUDA, inference_precision="fp32").fit(X, y)
    expected = clf.predict_proba(X_test)
    assert not any(isinstance(v, torch.nn.Module | torch.Tensor) for v in vars(clf).values())
    on_cpu = pickle.loads(pickle.dumps(clf)).set_params(device="cpu")
    np.testing.assert_allclose(on_cpu.predict_proba(X_test), expected, atol=PRECISIONS[1][1])


def test_timepeft_network_trained_on_cuda_predicts_on_the_cpu(series):
    """The network (``base=None``: its forecast alone) fine-tuned on the GPU, then its
    forecast on the GPU and, after a pickle round trip, on the CPU."""
    forecaster = TimePEFTForecaster(base=None, sp=12, max_epochs=3, device=CUDA)
    forecaster.fit(series, fh=np.arange(1, 13))
    assert forecaster.finetuned_ and forecaster.selected_ == "network"
    assert next(forecaster._trained_net(resolve_device(CUDA)).parameters()).is_cuda
    expected = forecaster.predict()
    on_cpu = pickle.loads(pickle.dumps(forecaster))
    # what device="auto" resolves to on a machine without CUDA; sktime's set_params would
    # reset the fitted forecaster
    on_cpu.device = "cpu"
    assert _relative_difference(np.asarray(on_cpu.predict()),
                                np.asarray(expected)) < TIMEPEFT_TOLERANCE


def test_timepeft_default_fits_on_cuda(series):
    """The default forecaster with fine-tuning forced (network trained and measured on the
    GPU): it fits, chooses, and forecasts finite values of the series' scale."""
    forecaster = TimePEFTForecaster(sp=12, finetune=True, device=CUDA)
    forecast = np.asarray(forecaster.fit(series, fh=np.arange(1, 13)).predict())
    assert forecaster.finetuned_ and forecaster.selected_ == "combination"
    assert "network" in forecaster.validation_scores_
    assert np.isfinite(forecast).all()
    assert np.abs(forecast - series[-12:].mean()).max() < 5 * series.std()
