"""Device, thread and memory decisions for every skfm model (precision: :mod:`.precision`).

This is the only module of skfm that knows about accelerators: models and
estimators receive a resolved :class:`torch.device` from here and never call
``.cuda()`` themselves.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import numpy as np
import torch

DeviceLike = str | torch.device | None

_DEVICE_FORMS = "'auto', 'cpu', 'cuda', 'cuda:N', 'mps', a torch.device or None"
_DEVICE_PATTERN = re.compile(r"auto|cpu|mps|cuda(:\d+)?")
_KNOWN_TYPES = ("cpu", "cuda", "mps")
_CPU_MEMORY_FALLBACK = 4 * 2**30


def _mps_available() -> bool:
    return torch.backends.mps.is_available()


def _auto_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def _check_cuda(index: int | None) -> torch.device:
    if not torch.cuda.is_available():
        raise ValueError(
            "device='cuda' was requested but CUDA is not available in this torch build or "
            "on this machine; use device='cpu' or device='auto'."
        )
    count = torch.cuda.device_count()
    if index is None:
        index = torch.cuda.current_device()
    if not 0 <= index < count:
        raise ValueError(
            f"device='cuda:{index}' was requested but only {count} CUDA device(s) are "
            f"visible (indices 0..{count - 1}); use device='cpu' or device='auto'."
        )
    return torch.device("cuda", index)


def _check_mps() -> torch.device:
    if not _mps_available():
        raise ValueError(
            "device='mps' was requested but the Apple MPS backend is not available; "
            "use device='cpu' or device='auto'."
        )
    return torch.device("mps")


def _parse_device(device: Any) -> torch.device:
    if isinstance(device, torch.device):
        return device
    text = device.strip().lower() if isinstance(device, str) else None
    if text is not None and _DEVICE_PATTERN.fullmatch(text):
        return _auto_device() if text == "auto" else torch.device(text)
    raise ValueError(f"Invalid device {device!r}; expected one of {_DEVICE_FORMS}.")


def resolve_device(device: DeviceLike = "auto") -> torch.device:
    """Turn a user-facing ``device`` parameter into an available :class:`torch.device`.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda", "cuda:N", "mps"}, torch.device or None, default="auto"
        ``"auto"`` (and ``None``) picks CUDA if available, else MPS if available,
        else the CPU. ``"cuda"`` means the current CUDA device.

    Returns
    -------
    torch.device
        The device, with an explicit index for CUDA.

    Raises
    ------
    ValueError
        If ``device`` is not one of the accepted forms, or names an accelerator
        that is not available.

    Examples
    --------
    >>> from skfm._backend import resolve_device
    >>> resolve_device("cpu")
    device(type='cpu')
    """
    parsed = _auto_device() if device is None else _parse_device(device)
    if parsed.type == "cuda":
        return _check_cuda(parsed.index)
    if parsed.type == "mps":
        return _check_mps()
    if parsed.type == "cpu":
        return torch.device("cpu")
    raise ValueError(f"Unsupported device type {parsed.type!r}; expected one of {_KNOWN_TYPES}.")


def as_device(device: DeviceLike) -> torch.device:
    """Return ``device`` unchanged if it is a :class:`torch.device`, else resolve it.

    Parameters
    ----------
    device : str, torch.device or None
        An already resolved device, or anything :func:`resolve_device` accepts.

    Returns
    -------
    torch.device

    Examples
    --------
    >>> from skfm._backend import as_device
    >>> as_device("cpu").type
    'cpu'
    """
    return device if isinstance(device, torch.device) else resolve_device(device)


def _n_threads(n_jobs: int | None) -> int | None:
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer):
        raise ValueError(f"n_jobs must be None or an int, got {n_jobs!r}.")
    if n_jobs == -1:
        return os.cpu_count() or 1
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be None, -1 or a positive int, got {n_jobs!r}.")
    return int(n_jobs)


@contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def threads(n_jobs: int | None) -> AbstractContextManager[None]:
    """Context manager running torch with ``n_jobs`` intra-op threads.

    Parameters
    ----------
    n_jobs : int or None
        ``None`` leaves the thread count unchanged, ``-1`` uses
        ``os.cpu_count()`` threads, a positive int that many threads.

    Returns
    -------
    contextlib.AbstractContextManager
        Restores the previous thread count on exit.

    Raises
    ------
    ValueError
        If ``n_jobs`` is 0, below -1 or not an int (raised immediately).

    Examples
    --------
    >>> import torch
    >>> from skfm._backend import threads
    >>> before = torch.get_num_threads()
    >>> with threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    n = _n_threads(n_jobs)
    return nullcontext() if n is None else _torch_threads(n)


def _cpu_available_memory() -> int:
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES")
        page_size = os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return _CPU_MEMORY_FALLBACK
    if pages <= 0 or page_size <= 0:
        return _CPU_MEMORY_FALLBACK
    return pages * page_size


def available_memory_bytes(device: DeviceLike) -> int:
    """Free memory, in bytes, that a model on ``device`` can use.

    Parameters
    ----------
    device : str, torch.device or None
        The device (see :func:`as_device`). MPS shares the system memory, so it
        is measured like the CPU.

    Returns
    -------
    int
        Free CUDA memory from ``torch.cuda.mem_get_info``, or the available
        physical memory (4 GiB where the OS does not report it).

    Examples
    --------
    >>> from skfm._backend import available_memory_bytes
    >>> available_memory_bytes("cpu") > 0
    True
    """
    device = as_device(device)
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    return _cpu_available_memory()


def to_device(
    data: Any, device: DeviceLike, dtype: torch.dtype | None = torch.float32
) -> torch.Tensor:
    """Move a numpy array or tensor to ``device`` as a tensor of ``dtype``.

    The dtype conversion happens on the host. Transfers to CUDA are plain
    copies from pageable memory: every tensor here is used right after it
    arrives, so pinning it first (a second host copy into page-locked
    memory) only adds time, in spikes (``docs/benchmarks/gpu_throughput.md``).
    Read-only numpy arrays are copied so that the tensor never aliases memory
    that must not be written.

    Parameters
    ----------
    data : array-like or torch.Tensor
        The values to move.
    device : str, torch.device or None
        Target device (see :func:`as_device`).
    dtype : torch.dtype or None, default=torch.float32
        Target dtype; ``None`` keeps the dtype of ``data``.

    Returns
    -------
    torch.Tensor

    Examples
    --------
    >>> import numpy as np
    >>> from skfm._backend import to_device
    >>> to_device(np.arange(3), "cpu")
    tensor([0., 1., 2.])
    """
    device = as_device(device)
    tensor = data if isinstance(data, torch.Tensor) else _host_tensor(data)
    if tensor.device.type != "cpu":
        return tensor.to(device, dtype=dtype)
    if dtype is not None:
        tensor = tensor.to(dtype)
    return tensor.to(device)


def _host_tensor(data: Any) -> torch.Tensor:
    array = np.asarray(data)
    if not array.flags.writeable:
        array = array.copy()
    return torch.from_numpy(np.ascontiguousarray(array))


def describe_device(device: DeviceLike) -> str:
    """One line describing ``device``, for ``skfm info``.

    Parameters
    ----------
    device : str, torch.device or None
        The device (see :func:`as_device`).

    Returns
    -------
    str
        For example ``"cpu (2 threads)"`` or ``"cuda:0 NVIDIA H200, 139.8 GiB"``.

    Examples
    --------
    >>> from skfm._backend import describe_device
    >>> describe_device("cpu").startswith("cpu (")
    True
    """
    device = as_device(device)
    if device.type == "cuda":
        index = torch.cuda.current_device() if device.index is None else device.index
        props = torch.cuda.get_device_properties(index)
        return f"cuda:{index} {props.name}, {props.total_memory / 2**30:.1f} GiB"
    if device.type == "mps":
        return "mps (Apple Metal)"
    n = torch.get_num_threads()
    return f"cpu ({n} thread{'' if n == 1 else 's'})"
