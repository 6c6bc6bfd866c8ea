"""Seeding of python, numpy and torch random number generators."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
from sklearn.utils import check_random_state

from .device import DeviceLike, as_device

_MAX_SEED = 2**31 - 1


def draw_seed(random_state: int | np.random.RandomState | None = None) -> int:
    """An int seed drawn from a scikit-learn ``random_state``, as scikit-learn draws one.

    ``check_random_state(random_state).randint(2**31 - 1)``: an int always
    gives the same seed, ``None`` draws from numpy's global state and a
    ``RandomState`` instance is advanced by one draw.

    Parameters
    ----------
    random_state : int, numpy.random.RandomState or None, default=None

    Returns
    -------
    int
        In ``[0, 2**31 - 1)``.

    Examples
    --------
    >>> from skfm._backend import draw_seed
    >>> draw_seed(0) == draw_seed(0)
    True
    """
    return int(check_random_state(random_state).randint(_MAX_SEED))


def torch_generator(
    random_state: int | np.random.RandomState | None = None, device: DeviceLike = "cpu"
) -> torch.Generator:
    """A :class:`torch.Generator` seeded from a scikit-learn ``random_state``.

    As elsewhere in scikit-learn, the seed is drawn with
    ``check_random_state(random_state).randint(2**31 - 1)``: an int gives a
    reproducible generator, ``None`` draws from numpy's global state and a
    ``RandomState`` instance is advanced by one draw.

    Parameters
    ----------
    random_state : int, numpy.random.RandomState or None, default=None
        Source of the seed.
    device : str, torch.device or None, default="cpu"
        Device of the generator (see :func:`~skfm._backend.as_device`).

    Returns
    -------
    torch.Generator

    Examples
    --------
    >>> import torch
    >>> from skfm._backend import torch_generator
    >>> a = torch.rand(2, generator=torch_generator(0))
    >>> b = torch.rand(2, generator=torch_generator(0))
    >>> bool(torch.equal(a, b))
    True
    """
    generator = torch.Generator(device=as_device(device))
    generator.manual_seed(draw_seed(random_state))
    return generator


def seed_everything(seed: int) -> None:
    """Seed python's ``random``, numpy's global generator and torch on all devices.

    Parameters
    ----------
    seed : int
        A seed in ``[0, 2**32)``; ``torch.manual_seed`` also seeds every CUDA device.

    Examples
    --------
    >>> import torch
    >>> from skfm._backend import seed_everything
    >>> seed_everything(0); a = torch.rand(1)
    >>> seed_everything(0); b = torch.rand(1)
    >>> bool(torch.equal(a, b))
    True
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}.")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@contextmanager
def seeded(seed: int, device: DeviceLike = "cpu") -> Iterator[None]:
    """Run a block with torch's global generators seeded, and restore them afterwards.

    Inside, ``torch.manual_seed(seed)`` has been called: weight initialisation
    and dropout draw a reproducible stream. The CPU generator and, on CUDA,
    that of ``device`` are restored on exit, so the caller's random state is
    untouched.

    Parameters
    ----------
    seed : int
        Seed of torch's global generators within the block.
    device : str, torch.device or None, default="cpu"
        The device the block draws on; a CUDA device's generator is also restored.

    Examples
    --------
    >>> import torch
    >>> from skfm._backend import seeded
    >>> with seeded(0):
    ...     a = torch.rand(2)
    >>> with seeded(0):
    ...     b = torch.rand(2)
    >>> bool(torch.equal(a, b))
    True
    """
    device = as_device(device)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        yield
