"""How a model computes on its device: the precision (autocast, or weights and inputs in
float64), outputs back to numpy, and the attention kernel.

With :mod:`.device`, the only place of skfm that decides about precision: models run inside
:func:`inference_context` at the precision :func:`resolve_precision` chose.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from typing import Any

import numpy as np
import torch
from torch import nn

from .device import DeviceLike, as_device

PrecisionLike = str | torch.dtype

_PRECISIONS: dict[str, torch.dtype | None] = {
    "fp32": None,
    "float32": None,
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "float16": torch.float16,
    "fp64": torch.float64,
    "float64": torch.float64,
}
_PRECISION_FORMS = (
    "'auto', 'fp32', 'float32', 'bf16', 'bfloat16', 'fp16', 'float16', 'fp64', 'float64', "
    "torch.float32, torch.bfloat16, torch.float16 or torch.float64"
)
#: Precisions run by autocast: the weights stay float32, matrix products run in these.
_AUTOCAST = (torch.bfloat16, torch.float16)


def resolve_precision(
    device: DeviceLike, inference_precision: PrecisionLike = "auto"
) -> torch.dtype | None:
    """Choose the precision of inference on ``device``.

    Parameters
    ----------
    device : str, torch.device or None
        The device the model runs on (see :func:`as_device`).
    inference_precision : str or torch.dtype, default="auto"
        ``"auto"`` is bfloat16 on CUDA and plain float32 elsewhere;
        ``"fp32"``/``"float32"``, ``"bf16"``/``"bfloat16"``,
        ``"fp16"``/``"float16"`` (CUDA only) and ``"fp64"``/``"float64"``
        (not on MPS, which has no float64), or the torch dtypes, select a
        precision explicitly.

    Returns
    -------
    torch.dtype or None
        The autocast dtype (bfloat16, float16), float64 (the module and its
        inputs are cast to it: :func:`cast_module`, :func:`weights_dtype`), or
        ``None`` for float32 without autocast.

    Raises
    ------
    ValueError
        For an unknown precision, float16 on a device other than CUDA, or
        float64 on MPS.

    Examples
    --------
    >>> import torch
    >>> from skfm._backend import resolve_precision
    >>> resolve_precision("cpu") is None
    True
    >>> resolve_precision("cpu", "bf16")
    torch.bfloat16
    >>> resolve_precision("cpu", torch.float64)
    torch.float64
    """
    device_type = as_device(device).type
    if isinstance(inference_precision, str) and inference_precision.lower() == "auto":
        return torch.bfloat16 if device_type == "cuda" else None
    dtype = _parse_precision(inference_precision)
    if dtype is torch.float16 and device_type != "cuda":
        raise ValueError(
            f"inference_precision={inference_precision!r} (float16) is only supported on CUDA, "
            f"not on {device_type!r}; use 'bf16' or 'fp32'."
        )
    if dtype is torch.float64 and device_type == "mps":
        raise ValueError(
            f"inference_precision={inference_precision!r} (float64) is not supported on 'mps': "
            "Apple's MPS backend has no float64; use 'fp32', or device='cpu' for float64."
        )
    return dtype


def weights_dtype(dtype: torch.dtype | None) -> torch.dtype:
    """The dtype of a model's weights and inputs at the precision ``dtype`` of
    :func:`resolve_precision`: float64 for float64, else float32 (autocast computes in
    bfloat16 or float16 from float32 weights).

    Examples
    --------
    >>> import torch
    >>> from skfm._backend import weights_dtype
    >>> weights_dtype(None), weights_dtype(torch.bfloat16), weights_dtype(torch.float64)
    (torch.float32, torch.float32, torch.float64)
    """
    return torch.float64 if dtype is torch.float64 else torch.float32


def cast_module(module: nn.Module, dtype: torch.dtype | None) -> nn.Module:
    """``module`` with its weights in :func:`weights_dtype` of ``dtype``: the module itself
    when they already are, else a copy (a module shared between estimators is never cast in
    place). The caller casts the inputs alike.

    Examples
    --------
    >>> import torch
    >>> from skfm._backend import cast_module
    >>> linear = torch.nn.Linear(2, 1)
    >>> cast_module(linear, None) is linear, cast_module(linear, torch.float64).weight.dtype
    (True, torch.float64)
    >>> linear.weight.dtype
    torch.float32
    """
    target = weights_dtype(dtype)
    if all(p.dtype == target for p in module.parameters()):
        return module
    return copy.deepcopy(module).to(target)


def output_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A model's output as a numpy array on the host: float64 stays float64, any other
    floating dtype (float32, or the bfloat16/float16 of autocast) becomes float32.

    Examples
    --------
    >>> import torch
    >>> from skfm._backend import output_numpy
    >>> output_numpy(torch.ones(2, dtype=torch.bfloat16)).dtype, output_numpy(
    ...     torch.ones(2, dtype=torch.float64)).dtype
    (dtype('float32'), dtype('float64'))
    """
    if tensor.dtype is not torch.float64:
        tensor = tensor.float()
    return tensor.cpu().numpy()


def _parse_precision(precision: Any) -> torch.dtype | None:
    if isinstance(precision, torch.dtype):
        key = str(precision).removeprefix("torch.")
    elif isinstance(precision, str):
        key = precision.lower()
    else:
        key = None
    if key not in _PRECISIONS:
        raise ValueError(
            f"Invalid inference_precision {precision!r}; expected one of {_PRECISION_FORMS}."
        )
    return _PRECISIONS[key]


@contextmanager
def inference_context(device: DeviceLike, dtype: torch.dtype | None) -> Iterator[None]:
    """Inference mode, plus autocast to ``dtype`` on ``device`` when ``dtype`` is bfloat16 or
    float16.

    Parameters
    ----------
    device : str, torch.device or None
        The device the model runs on (see :func:`as_device`).
    dtype : torch.dtype or None
        The precision from :func:`resolve_precision`; ``None`` (float32) and float64 (a
        module and inputs cast by the caller) run without autocast.

    Examples
    --------
    >>> import torch
    >>> from skfm._backend import inference_context
    >>> with inference_context("cpu", torch.bfloat16):
    ...     y = torch.ones(2, 2) @ torch.ones(2, 2)
    >>> y.dtype, y.requires_grad
    (torch.bfloat16, False)
    """
    device_type = as_device(device).type
    with ExitStack() as stack:
        stack.enter_context(torch.inference_mode())
        if dtype in _AUTOCAST:
            stack.enter_context(torch.autocast(device_type, dtype=dtype))
        yield


def thread_invariant_attention(device: DeviceLike) -> AbstractContextManager[None]:
    """Context manager running ``scaled_dot_product_attention`` by its math kernel on the CPU.

    The CPU's fused (flash) attention kernel sums in an order that depends on
    the number of torch threads, so its outputs change in their last bits
    (~2e-7) with ``n_jobs``; the math kernel (matrix products and a softmax)
    gives the same bits on any number of threads, at the same speed for the
    few dozen tokens of a series. Elsewhere (CUDA, MPS) nothing changes.

    Parameters
    ----------
    device : str, torch.device or None
        The device the model runs on (see :func:`as_device`).

    Returns
    -------
    contextlib.AbstractContextManager

    Examples
    --------
    >>> import torch
    >>> from skfm._backend import thread_invariant_attention, threads
    >>> q = torch.randn(4, 2, 33, 16)
    >>> outs = []
    >>> for n in (1, 2):
    ...     with threads(n), thread_invariant_attention("cpu"):
    ...         outs.append(torch.nn.functional.scaled_dot_product_attention(q, q, q))
    >>> torch.equal(*outs)
    True
    """
    if as_device(device).type != "cpu":
        return nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.MATH])
