"""Tests of skfm._backend: devices, precision, threads, memory, batching and seeds."""

import os
import random
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from skfm._backend import (
    as_device,
    auto_batch_size,
    available_memory_bytes,
    batching,
    cast_module,
    describe_device,
    inference_context,
    output_numpy,
    resolve_device,
    resolve_precision,
    run_in_batches,
    seed_everything,
    threads,
    to_device,
    torch_generator,
    weights_dtype,
)

CUDA = torch.device("cuda", 0)
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture
def no_accelerator(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


@pytest.fixture
def fake_cuda(monkeypatch):
    """Pretend one CUDA device is available (nothing is allocated on it)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


# -- resolve_device ---------------------------------------------------------------------


@pytest.mark.parametrize("device", ["auto", None, "AUTO"])
def test_resolve_device_auto_falls_back_to_cpu(no_accelerator, device):
    assert resolve_device(device) == torch.device("cpu")


def test_resolve_device_auto_prefers_cuda_then_mps(monkeypatch, fake_cuda):
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert resolve_device("auto") == CUDA
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device() == torch.device("mps")


@pytest.mark.parametrize("device", ["cpu", " CPU ", torch.device("cpu"), torch.device("cpu", 0)])
def test_resolve_device_cpu(device):
    assert resolve_device(device) == torch.device("cpu")


@pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda")])
def test_resolve_device_cuda_gets_an_index(fake_cuda, device):
    assert resolve_device(device) == CUDA


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "cpu:0", "", 0, 1.5])
def test_resolve_device_invalid(device):
    with pytest.raises(ValueError, match=r"Invalid device .*'auto', 'cpu', 'cuda', 'cuda:N'"):
        resolve_device(device)


def test_resolve_device_unsupported_type():
    with pytest.raises(ValueError, match="Unsupported device type 'meta'"):
        resolve_device(torch.device("meta"))


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "mps"])
def test_resolve_device_unavailable_accelerator(no_accelerator, device):
    with pytest.raises(ValueError, match=r"not available.*device='cpu' or device='auto'"):
        resolve_device(device)


def test_resolve_device_cuda_index_out_of_range(fake_cuda):
    with pytest.raises(ValueError, match=r"cuda:3.*only 1 CUDA device.*device='cpu'"):
        resolve_device("cuda:3")


def test_as_device_passes_devices_through():
    assert as_device(CUDA) is CUDA
    assert as_device("cpu") == torch.device("cpu")


# -- resolve_precision ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("device", "expected"),
    [("cpu", None), (CUDA, torch.bfloat16), (torch.device("mps"), None)],
)
def test_resolve_precision_auto(device, expected):
    assert resolve_precision(device) is expected
    assert resolve_precision(device, "Auto") is expected


@pytest.mark.parametrize(
    ("precision", "expected"),
    [
        ("fp32", None),
        ("FLOAT32", None),
        (torch.float32, None),
        ("bf16", torch.bfloat16),
        ("bfloat16", torch.bfloat16),
        (torch.bfloat16, torch.bfloat16),
    ],
)
def test_resolve_precision_explicit(precision, expected):
    assert resolve_precision("cpu", precision) is expected
    assert resolve_precision(CUDA, precision) is expected


@pytest.mark.parametrize("precision", ["fp16", "float16", torch.float16])
def test_resolve_precision_fp16_cuda_only(precision):
    assert resolve_precision(CUDA, precision) is torch.float16
    with pytest.raises(ValueError, match="only supported on CUDA"):
        resolve_precision("cpu", precision)


@pytest.mark.parametrize("precision", ["int8", "half", torch.int8, torch.complex64, None, 16])
def test_resolve_precision_invalid(precision):
    """The message lists what is accepted, torch dtypes by name (every torch dtype is not)."""
    with pytest.raises(ValueError, match="Invalid inference_precision") as error:
        resolve_precision("cpu", precision)
    assert str(error.value).endswith(
        "expected one of 'auto', 'fp32', 'float32', 'bf16', 'bfloat16', 'fp16', 'float16', "
        "'fp64', 'float64', torch.float32, torch.bfloat16, torch.float16 or torch.float64.")


@pytest.mark.parametrize("precision", ["fp64", "Float64", torch.float64])
def test_resolve_precision_fp64_everywhere_but_mps(precision):
    assert resolve_precision("cpu", precision) is torch.float64
    assert resolve_precision(CUDA, precision) is torch.float64
    with pytest.raises(ValueError, match="not supported on 'mps': Apple's MPS backend has no "
                                         "float64"):
        resolve_precision(torch.device("mps"), precision)


def test_float64_runs_a_cast_copy_without_autocast():
    """fp64 casts a copy of the module (the shared one stays float32) and inputs; outputs come
    back to numpy in float64, autocast ones in float32."""
    module = torch.nn.Linear(3, 2)
    double = cast_module(module, torch.float64)
    assert module.weight.dtype == torch.float32 and double.weight.dtype == torch.float64
    assert cast_module(module, None) is module and cast_module(double, torch.float64) is double
    with inference_context("cpu", torch.float64):
        assert not torch.is_autocast_enabled("cpu")
        out = double(torch.ones(4, 3, dtype=weights_dtype(torch.float64)))
    assert output_numpy(out).dtype == np.float64
    with inference_context("cpu", torch.bfloat16):
        assert output_numpy(module(torch.ones(4, 3))).dtype == np.float32


# -- inference_context ------------------------------------------------------------------


def test_inference_context_fp32():
    with inference_context("cpu", None):
        assert torch.is_inference_mode_enabled()
        assert not torch.is_autocast_enabled("cpu")
        y = torch.ones(2, 2) @ torch.ones(2, 2)
    assert not torch.is_inference_mode_enabled()
    assert y.dtype == torch.float32


def test_inference_context_autocast():
    with inference_context(torch.device("cpu"), torch.bfloat16):
        assert torch.is_inference_mode_enabled()
        y = torch.ones(2, 2) @ torch.ones(2, 2)
    assert not torch.is_autocast_enabled("cpu")
    assert y.dtype == torch.bfloat16


# -- threads ----------------------------------------------------------------------------


def test_threads_none_leaves_unchanged():
    before = torch.get_num_threads()
    with threads(None):
        assert torch.get_num_threads() == before


def test_threads_sets_and_restores():
    before = torch.get_num_threads()
    with pytest.raises(KeyError), threads(1):
        assert torch.get_num_threads() == 1
        raise KeyError("restored even on error")
    assert torch.get_num_threads() == before


def test_threads_minus_one_uses_cpu_count(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    before = torch.get_num_threads()
    with threads(-1):
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("n_jobs", [0, -2, 1.5, True, "2"])
def test_threads_invalid_raises_on_call(n_jobs):
    with pytest.raises(ValueError, match="n_jobs"):
        threads(n_jobs)


# -- seeding ----------------------------------------------------------------------------


def _draw(generator):
    return torch.rand(4, generator=generator)


def test_torch_generator_int_is_reproducible():
    assert torch.equal(_draw(torch_generator(0)), _draw(torch_generator(0)))
    assert not torch.equal(_draw(torch_generator(0)), _draw(torch_generator(1)))
    assert torch_generator(0).device == torch.device("cpu")


def test_torch_generator_random_state_follows_sklearn_convention():
    rng = np.random.RandomState(0)
    expected = np.random.RandomState(0).randint(2**31 - 1)
    assert torch_generator(rng).initial_seed() == expected
    assert torch_generator(0).initial_seed() == expected
    assert torch_generator(rng).initial_seed() != expected  # rng was advanced


def test_torch_generator_none_uses_numpy_global_state():
    np.random.seed(3)
    first = _draw(torch_generator(None))
    np.random.seed(3)
    assert torch.equal(first, _draw(torch_generator()))


def test_torch_generator_invalid():
    with pytest.raises(ValueError):
        torch_generator("seed")


def test_seed_everything():
    seed_everything(7)
    first = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_everything(7)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == first


@pytest.mark.parametrize("seed", [-1, 1.5, True, None])
def test_seed_everything_invalid(seed):
    with pytest.raises(ValueError, match="seed"):
        seed_everything(seed)


# -- memory -----------------------------------------------------------------------------


def test_available_memory_cpu():
    assert available_memory_bytes("cpu") > 0


def _raise_value_error(name):
    raise ValueError(name)


@pytest.mark.parametrize("sysconf", [_raise_value_error, lambda name: -1])
def test_available_memory_cpu_fallback(monkeypatch, sysconf):
    monkeypatch.setattr(os, "sysconf", sysconf)
    assert available_memory_bytes("cpu") == 4 * 2**30


def test_available_memory_cuda_uses_mem_get_info(monkeypatch):
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (123, 456))
    assert available_memory_bytes(CUDA) == 123


# -- auto_batch_size --------------------------------------------------------------------


@pytest.fixture
def thousand_bytes(monkeypatch):
    monkeypatch.setattr(batching, "available_memory_bytes", lambda device: 1000)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"bytes_per_row": 10, "n_rows": 1000}, 25),
        ({"bytes_per_row": 10, "n_rows": 1000, "fraction": 1.0}, 100),
        ({"bytes_per_row": 10, "n_rows": 7}, 7),
        ({"bytes_per_row": 10, "n_rows": 1000, "max_batch": 5}, 5),
        ({"bytes_per_row": 10**6, "n_rows": 1000}, 1),
        ({"bytes_per_row": 10, "n_rows": 0}, 1),
    ],
)
def test_auto_batch_size(thousand_bytes, kwargs, expected):
    assert auto_batch_size("cpu", **kwargs) == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bytes_per_row": 0, "n_rows": 10},
        {"bytes_per_row": 10, "n_rows": -1},
        {"bytes_per_row": 10, "n_rows": 10, "fraction": 0},
        {"bytes_per_row": 10, "n_rows": 10, "fraction": 1.5},
        {"bytes_per_row": 10, "n_rows": 10, "max_batch": 0},
    ],
)
def test_auto_batch_size_invalid(thousand_bytes, kwargs):
    with pytest.raises(ValueError):
        auto_batch_size("cpu", **kwargs)


def test_auto_batch_size_real_cpu_memory():
    assert 1 <= auto_batch_size("cpu", bytes_per_row=1024, n_rows=10**6) <= 10**6


# -- run_in_batches ---------------------------------------------------------------------


class OOMBelow:
    """Fake model: runs out of memory on chunks of more than ``limit`` rows."""

    def __init__(self, limit, error=torch.cuda.OutOfMemoryError):
        self.limit, self.error, self.calls = limit, error, []

    def __call__(self, start, stop):
        self.calls.append((start, stop))
        if stop - start > self.limit:
            raise self.error("CUDA out of memory. Tried to allocate 2.00 GiB")
        return list(range(start, stop))


def test_run_in_batches_plain():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = run_in_batches(lambda a, b: (a, b), 10, 4, device="cpu")
    assert out == [(0, 4), (4, 8), (8, 10)]
    assert run_in_batches(lambda a, b: (a, b), 0, 4, device="cpu") == []


@pytest.mark.parametrize("error", [torch.cuda.OutOfMemoryError, RuntimeError])
def test_run_in_batches_backs_off(error):
    fn = OOMBelow(3, error)
    with pytest.warns(RuntimeWarning, match="retrying with batches of 8 rows") as record:
        out = run_in_batches(fn, 20, 16, device="cpu")
    assert len(record) == 1
    assert [row for chunk in out for row in chunk] == list(range(20))
    assert [stop - start for start, stop in fn.calls[:4]] == [16, 8, 4, 2]
    assert all(start == 0 for start, _ in fn.calls[:4])
    assert [stop - start for start, stop in fn.calls[3:]] == [2] * 10


def test_run_in_batches_halves_the_failing_chunk():
    calls = []

    def fn(start, stop):
        calls.append((start, stop))
        if start >= 8 and stop - start > 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        return list(range(start, stop))

    with pytest.warns(RuntimeWarning, match="batches of 1 rows"):
        out = run_in_batches(fn, 10, 4, device="cpu")
    assert calls == [(0, 4), (4, 8), (8, 10), (8, 9), (9, 10)]
    assert [row for chunk in out for row in chunk] == list(range(10))


def test_run_in_batches_empties_cuda_cache(monkeypatch, fake_cuda):
    emptied = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(True))
    with pytest.warns(RuntimeWarning, match="cuda:0"):
        run_in_batches(OOMBelow(3), 8, 8, device=CUDA)
    assert len(emptied) == 2


def test_run_in_batches_single_row_oom_raises_memory_error():
    fn = OOMBelow(0)
    with pytest.warns(RuntimeWarning), pytest.raises(MemoryError) as info:
        run_in_batches(fn, 10, 4, device="cpu")
    message = str(info.value)
    assert "1 row" in message and "cpu" in message and "device='cpu'" in message
    assert "smaller context" in message
    assert isinstance(info.value.__cause__, torch.cuda.OutOfMemoryError)
    assert [stop - start for start, stop in fn.calls] == [4, 2, 1]


@pytest.mark.parametrize("error", [ValueError("bad input"), RuntimeError("shape mismatch")])
def test_run_in_batches_other_errors_propagate(error):
    def fn(start, stop):
        raise error

    with pytest.raises(type(error)) as info:
        run_in_batches(fn, 10, 4, device="cpu")
    assert info.value is error


@pytest.mark.parametrize("batch_size", [0, -1, 2.0])
def test_run_in_batches_invalid_batch_size(batch_size):
    with pytest.raises(ValueError, match="batch_size"):
        run_in_batches(lambda a, b: None, 10, batch_size, device="cpu")


# -- to_device / describe_device --------------------------------------------------------


def test_to_device_numpy_to_float32():
    out = to_device(np.arange(6, dtype=np.float64).reshape(2, 3), "cpu")
    assert out.dtype == torch.float32 and out.shape == (2, 3) and out.device.type == "cpu"


def test_to_device_keeps_dtype_and_accepts_lists():
    assert to_device(np.arange(3), "cpu", dtype=None).dtype == torch.int64
    assert to_device([[1.0, 2.0]], "cpu").shape == (1, 2)
    tensor = torch.ones(3, dtype=torch.float64)
    assert to_device(tensor, "cpu").dtype == torch.float32


def test_to_device_read_only_array_is_copied():
    array = np.zeros(3, dtype=np.float32)
    array.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = to_device(array, "cpu")
    out += 1
    assert array.sum() == 0


def test_describe_device_cpu():
    with threads(2):
        assert describe_device("cpu") == "cpu (2 threads)"
    with threads(1):
        assert describe_device(torch.device("cpu")) == "cpu (1 thread)"
    assert describe_device(torch.device("mps")) == "mps (Apple Metal)"


def test_describe_device_cuda(monkeypatch):
    props = SimpleNamespace(name="Fake GPU", total_memory=80 * 2**30)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    assert describe_device(CUDA) == "cuda:0 Fake GPU, 80.0 GiB"


# -- on a real CUDA device --------------------------------------------------------------


@pytest.mark.cuda
@needs_cuda
def test_cuda_resolve_and_describe():
    device = resolve_device("cuda")
    assert device.type == "cuda" and device.index is not None
    assert resolve_device("auto") == device
    assert describe_device(device).startswith(f"cuda:{device.index} ")


@pytest.mark.cuda
@needs_cuda
def test_cuda_bf16_autocast():
    device = resolve_device("cuda")
    dtype = resolve_precision(device)
    assert dtype is torch.bfloat16
    x = to_device(np.ones((4, 4)), device)
    assert x.device == device and x.dtype == torch.float32
    with inference_context(device, dtype):
        y = x @ x
    assert y.dtype == torch.bfloat16 and not y.requires_grad


@pytest.mark.cuda
@needs_cuda
def test_cuda_auto_batch_size_uses_free_memory():
    device = resolve_device("cuda")
    free, _ = torch.cuda.mem_get_info(device)
    assert available_memory_bytes(device) > 0
    expected = max(1, min(int(free * 0.25) // 2**20, 10**9))
    assert abs(auto_batch_size(device, 2**20, 10**9) - expected) <= expected // 10 + 1


@pytest.mark.cuda
@needs_cuda
def test_cuda_real_back_off():
    device = resolve_device("cuda")
    row_bytes = torch.cuda.mem_get_info(device)[0] // 3

    def fn(start, stop):
        block = torch.empty((stop - start) * row_bytes, dtype=torch.uint8, device=device)
        return block.numel() // row_bytes

    with pytest.warns(RuntimeWarning):
        out = run_in_batches(fn, 8, 8, device=device)
    assert sum(out) == 8 and max(out) <= 2
    torch.cuda.empty_cache()
