"""How skfm shares the CPU's cores: torch's threads, and scikit-learn work beside them.

:func:`threads` sets torch's intra-op thread count for a block. :func:`side_work` runs
scikit-learn work (the partners skfm fits beside its networks: gradient boosting,
linear models) on a worker thread limited to one OpenMP thread, while the caller's
torch code goes on; as long as such work is running, :func:`threads` gives torch one
thread fewer. These partners gain little from a second core (scikit-learn's
HistGradientBoosting fits 10,000 rows of nine columns as fast on one OpenMP thread as on
two), so beside the network they cost it about a third of their time instead of all of
it, as when they held the whole machine one after the other.

Work run beside must not use torch: the thread count is the process's, and it belongs
to the caller's torch code.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar

import numpy as np
import torch
from threadpoolctl import threadpool_limits

Submit = Callable[..., Future]


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


class _SideWorker:
    """One worker thread, and the torch thread count of the code beside it."""

    def __init__(self, pool: ThreadPoolExecutor, torch_threads: int):
        self._pool, self.torch_threads, self._futures = pool, torch_threads, []

    def submit(self, fn: Callable, /, *args, **kwargs) -> Future:
        future = self._pool.submit(_on_one_thread, fn, *args, **kwargs)
        self._futures.append(future)
        return future

    def busy(self) -> bool:
        """Whether submitted work is waiting or running."""
        return any(not future.done() for future in self._futures)


_WORKER: ContextVar[_SideWorker | None] = ContextVar("skfm_side_worker", default=None)


def _on_one_thread(fn: Callable, *args, **kwargs):
    with threadpool_limits(limits=1, user_api="openmp"):  # the calling thread's OpenMP only
        return fn(*args, **kwargs)


def _run_now(fn: Callable, /, *args, **kwargs) -> Future:
    """A future of ``fn(*args, **kwargs)``, run at once in this thread."""
    future = Future()
    try:
        future.set_result(fn(*args, **kwargs))
    except Exception as err:  # raised again by future.result(), as from a worker
        future.set_exception(err)
    return future


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
        ``os.cpu_count()`` threads, a positive int that many threads. While work
        submitted in :func:`side_work` runs beside, one thread fewer (at least one).

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
    worker = _WORKER.get()
    if worker is not None and worker.busy():
        n = max(1, (worker.torch_threads if n is None else n) - 1)
    return nullcontext() if n is None else _torch_threads(n)


@contextmanager
def side_work(n_jobs: int | None) -> Iterator[Submit]:
    """Run scikit-learn work beside torch's, on one thread of its own.

    Parameters
    ----------
    n_jobs : int or None
        The caller's torch threads, as in :func:`threads` (None: torch's current
        count). With fewer than two, submitted work runs at once, in the calling thread.

    Yields
    ------
    submit : callable
        ``submit(fn, *args, **kwargs)`` returns a :class:`concurrent.futures.Future` of
        ``fn(*args, **kwargs)``; work runs in the order submitted. Leaving the block
        cancels the work not started yet and waits for the running one.

    Raises
    ------
    ValueError
        If ``n_jobs`` is 0, below -1 or not an int.

    Examples
    --------
    >>> from skfm._backend import side_work
    >>> with side_work(2) as submit:
    ...     total = submit(sum, range(10))
    ...     total.result()
    45
    """
    n = _n_threads(n_jobs)
    torch_threads = torch.get_num_threads() if n is None else n
    if torch_threads < 2:
        yield _run_now
        return
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skfm-side-work")
    worker = _SideWorker(pool, torch_threads)
    token = _WORKER.set(worker)
    try:
        yield worker.submit
    finally:
        _WORKER.reset(token)
        pool.shutdown(wait=True, cancel_futures=True)
