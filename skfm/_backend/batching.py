"""Batch sizing and out-of-memory back-off for row-wise inference."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from .device import DeviceLike, as_device, available_memory_bytes

T = TypeVar("T")


def _check_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}.")
    return value


def auto_batch_size(
    device: DeviceLike,
    bytes_per_row: int,
    n_rows: int,
    fraction: float = 0.25,
    max_batch: int | None = None,
) -> int:
    """Number of rows per batch that fit in a fraction of the free memory.

    Parameters
    ----------
    device : str, torch.device or None
        The device the batches run on (see :func:`~skfm._backend.as_device`).
    bytes_per_row : int
        Estimated peak memory one row needs, in bytes.
    n_rows : int
        Total number of rows; the batch never exceeds it.
    fraction : float, default=0.25
        Share of :func:`~skfm._backend.available_memory_bytes` to use, in (0, 1].
    max_batch : int or None, default=None
        Upper bound on the batch size.

    Returns
    -------
    int
        A batch size between 1 and ``min(n_rows, max_batch)``.

    Examples
    --------
    >>> from skfm._backend import auto_batch_size
    >>> auto_batch_size("cpu", bytes_per_row=1024, n_rows=100)
    100
    """
    _check_int("bytes_per_row", bytes_per_row)
    _check_int("n_rows", n_rows, minimum=0)
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}.")
    budget = int(available_memory_bytes(device) * fraction)
    size = min(budget // bytes_per_row, n_rows)
    if max_batch is not None:
        size = min(size, _check_int("max_batch", max_batch))
    return max(size, 1)


def _is_out_of_memory(exc: RuntimeError) -> bool:
    return isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc)


def _empty_cache(device: torch.device) -> None:
    if device.type == "cuda" and torch.cuda.is_available():
        torch.cuda.empty_cache()


def _run_chunk(
    fn: Callable[[int, int], T], start: int, stop: int, n_rows: int, device: torch.device
) -> tuple[bool, T | None]:
    """Return ``(True, fn(start, stop))``, or ``(False, None)`` if it ran out of memory."""
    try:
        return True, fn(start, stop)
    except RuntimeError as exc:
        if not _is_out_of_memory(exc):
            raise
        if stop - start == 1:
            raise MemoryError(
                f"Out of memory on {device} even with a batch of 1 row (row {start} of "
                f"{n_rows}). Use a smaller context (fewer training rows or features) or "
                "run on device='cpu'."
            ) from exc
    return False, None


def run_in_batches(
    fn: Callable[[int, int], T], n_rows: int, batch_size: int, *, device: DeviceLike
) -> list[T]:
    """Call ``fn(start, stop)`` on consecutive row chunks, backing off on out-of-memory.

    When a chunk raises a CUDA out-of-memory error (``torch.cuda.OutOfMemoryError``
    or a ``RuntimeError`` mentioning "out of memory"), the CUDA cache is emptied,
    the batch size is halved and the same chunk is retried; the smaller batch
    size is kept for the remaining chunks. A :class:`RuntimeWarning` is issued
    the first time this happens. Other exceptions propagate unchanged.

    Parameters
    ----------
    fn : callable
        ``fn(start, stop)`` processes rows ``start:stop`` and returns any output.
    n_rows : int
        Total number of rows.
    batch_size : int
        Initial number of rows per call.
    device : str, torch.device or None
        Device ``fn`` runs on (see :func:`~skfm._backend.as_device`).

    Returns
    -------
    list
        The outputs of ``fn``, in row order.

    Raises
    ------
    MemoryError
        If a single row does not fit in memory.

    Examples
    --------
    >>> from skfm._backend import run_in_batches
    >>> run_in_batches(lambda start, stop: list(range(start, stop)), 5, 2, device="cpu")
    [[0, 1], [2, 3], [4]]
    """
    _check_int("n_rows", n_rows, minimum=0)
    batch_size = _check_int("batch_size", batch_size)
    device = as_device(device)
    outputs: list[T] = []
    start, warned = 0, False
    while start < n_rows:
        stop = min(start + batch_size, n_rows)
        ok, output = _run_chunk(fn, start, stop, n_rows, device)
        if ok:
            outputs.append(output)
            start = stop
            continue
        _empty_cache(device)
        batch_size = (stop - start) // 2
        if not warned:
            warnings.warn(
                f"Out of memory on {device} with a batch of {stop - start} rows; "
                f"retrying with batches of {batch_size} rows.",
                RuntimeWarning,
                stacklevel=2,
            )
            warned = True
    return outputs
