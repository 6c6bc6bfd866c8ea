"""Data-parallel pretraining under ``torchrun``.

``torchrun --nproc_per_node N --no-python skfm pretrain ...`` starts N processes
with ``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE`` in their
environment. :class:`World` reads them; the model's ``train`` puts it on
:func:`training_device` (``cuda:LOCAL_RANK`` on GPUs) and
:func:`skfm.pretrain._loop.train_loop` joins the process group
(:func:`process_group`: gloo on the CPU, NCCL on CUDA), runs every step through
:func:`data_parallel` and lets rank 0 alone write. Without these variables (or
with ``WORLD_SIZE=1``) nothing here has any effect.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist

#: Process-group backend for each device type.
BACKENDS = {"cpu": "gloo", "cuda": "nccl"}


@dataclass(frozen=True)
class World:
    """The processes of a training run: how many, and which one this is.

    Parameters
    ----------
    size : int, default=1
        Processes in all (``WORLD_SIZE``).
    rank : int, default=0
        This process's rank (``RANK``); rank 0 writes the run's files.
    local_rank : int, default=0
        Its rank on this machine (``LOCAL_RANK``): the index of its GPU.
    local_size : int, default=1
        Processes on this machine (``LOCAL_WORLD_SIZE``, torchrun's ``--nproc_per_node``).

    Examples
    --------
    >>> world = World.from_env({"WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "1",
    ...                         "LOCAL_WORLD_SIZE": "2"})
    >>> world.distributed, world.is_main, world.launcher()
    (True, False, 'torchrun --nproc_per_node 2 --no-python ')
    >>> World.from_env({}).distributed
    False
    """

    size: int = 1
    rank: int = 0
    local_rank: int = 0
    local_size: int = 1

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> World:
        """The world torchrun describes in ``environ`` (default ``os.environ``); one process if unset."""
        env = os.environ if environ is None else environ
        size = int(env.get("WORLD_SIZE", 1))
        return cls(size=size, rank=int(env.get("RANK", 0)), local_rank=int(env.get("LOCAL_RANK", 0)),
                   local_size=int(env.get("LOCAL_WORLD_SIZE", size)))

    @property
    def distributed(self) -> bool:
        """Whether there is more than one process."""
        return self.size > 1

    @property
    def is_main(self) -> bool:
        """Whether this is rank 0, the one that writes."""
        return self.rank == 0

    def launcher(self) -> str:
        """The torchrun prefix of a command starting this world ('' for one process)."""
        if not self.distributed:
            return ""
        nodes = self.size // self.local_size
        return (f"torchrun --nproc_per_node {self.local_size} "
                + (f"--nnodes {nodes} " if nodes > 1 else "") + "--no-python ")


def rank_seed(seed: int, rank: int, step: int = 0) -> int:
    """Seed of a rank's batch generator started at ``step``.

    Rank 0 starting at step 0 gets ``seed`` itself, so that it draws the batches
    of a one-process run; any other ``(rank, step)`` gets a seed derived from
    ``(seed, rank, step)`` by :class:`numpy.random.SeedSequence`, so that ranks
    draw different batches.

    Examples
    --------
    >>> rank_seed(7, 0), rank_seed(7, 1) == rank_seed(7, 1), rank_seed(7, 1) == rank_seed(7, 2)
    (7, True, False)
    """
    if rank == step == 0:
        return seed
    return int(np.random.SeedSequence([seed, rank, step]).generate_state(1)[0])


def training_device(device: str | torch.device) -> torch.device:
    """The device a process trains on: ``device``, except that under torchrun a GPU is ``cuda:LOCAL_RANK``.

    Any CUDA device given (``"cuda"``, ``"cuda:1"`` or ``"auto"`` on a GPU
    machine) stands for "this process's GPU" when there is more than one
    process.

    Examples
    --------
    >>> training_device("cpu")
    device(type='cpu')
    """
    from skfm._backend import resolve_device

    resolved = resolve_device(device)
    world = World.from_env()
    if world.distributed and resolved.type == "cuda":
        return resolve_device(f"cuda:{world.local_rank}")
    return resolved


@contextmanager
def process_group(world: World, device: torch.device) -> Iterator[str | None]:
    """Join the default process group of ``world`` for the duration; yields its backend.

    gloo on the CPU, NCCL on CUDA (after ``torch.cuda.set_device(device)``). A
    group that is already initialised is used and left alone; one started here
    is ended after a barrier, so that no rank leaves before the last write of
    rank 0 is done. With one process nothing happens and ``None`` is yielded.
    """
    if not world.distributed:
        yield None
        return
    if device.type not in BACKENDS:
        raise ValueError(f"data-parallel pretraining runs on 'cpu' or 'cuda', not {device.type!r}")
    started = not dist.is_initialized()
    if started:
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group(BACKENDS[device.type])
    try:
        yield dist.get_backend()
        dist.barrier()
    finally:
        if started:
            dist.destroy_process_group()


def all_ranks(world: World, value):
    """``value`` of every rank, in rank order (a collective: every rank must call it)."""
    if not world.distributed:
        return [value]
    gathered = [None] * world.size
    dist.all_gather_object(gathered, value)
    return gathered


class _Step(torch.nn.Module):
    """A training step as a module: DDP arms its gradient all-reduce in ``forward`` only."""

    def __init__(self, model: torch.nn.Module, step_fn: Callable):
        super().__init__()
        self.model, self.step_fn = model, step_fn

    def forward(self, step: int, generator: torch.Generator):
        return self.step_fn(step, generator)


def data_parallel(
    model: torch.nn.Module, step_fn: Callable, device: torch.device, unused_parameters: bool
) -> Callable:
    """``step_fn`` run through :class:`~torch.nn.parallel.DistributedDataParallel` over ``model``.

    The step, not the model, is wrapped, so that step functions calling other
    methods than ``forward`` (``Mantis.project``) are synchronised too: the
    gradients of ``model`` are averaged over the ranks during ``backward``.
    ``unused_parameters`` lets a step leave parameters unused, and different
    ones on different ranks (TabSwift's regression head in a classification
    step), at the cost of a walk through the autograd graph every step.
    """
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(
        _Step(model, step_fn), device_ids=[device] if device.type == "cuda" else None,
        find_unused_parameters=unused_parameters,
    )
