"""Synthetic series for pretraining on a CPU: a rolling pool, its crops and TSMixup.

Generating series is slower than a training step on a CPU, so the series
pretraining runs (:mod:`skfm.pretrain.mantis`,
:mod:`skfm.pretrain.timeseries_backbone`) draw from a :class:`SeriesPool` of
``n_chunks`` chunks whose oldest chunk is replaced by a fresh one every
``steps_per_chunk`` steps. Chunk ``i`` is seeded by ``(seed, i)``, so a
resumed run rebuilds exactly the pool it had. :func:`random_crops` cuts
training inputs from the pool; :func:`mixup_crops` adds TSMixup (Ansari et
al., "Chronos", 2024): some crops are convex combinations of a few
standardised crops, with Dirichlet weights, so that one series carries
several patterns at once.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

#: Dirichlet concentration of TSMixup's weights (Chronos's 1.5).
MIXUP_ALPHA = 1.5


class SeriesPool:
    """``n_chunks`` chunks of ``chunk_size`` series of ``length`` values, rolled forward by step.

    Parameters
    ----------
    draw : callable
        ``draw(n, rng)``: ``n`` series as an array or tensor of shape (n, length).
    length : int
    seed : int
    n_chunks, chunk_size, steps_per_chunk : int

    Examples
    --------
    >>> import numpy as np
    >>> pool = SeriesPool(lambda n, rng: rng.standard_normal((n, 16)), 16, seed=0,
    ...                   n_chunks=2, chunk_size=3, steps_per_chunk=5)
    >>> pool.at_step(0).shape
    torch.Size([6, 16])
    >>> bool((pool.at_step(4) == SeriesPool(pool.draw, 16, 0, 2, 3, 5).at_step(4)).all())
    True
    """

    def __init__(self, draw: Callable, length: int, seed: int, n_chunks: int, chunk_size: int,
                 steps_per_chunk: int):
        self.draw, self.length, self.seed = draw, length, seed
        self.n_chunks, self.chunk_size, self.steps_per_chunk = n_chunks, chunk_size, steps_per_chunk
        self.data = torch.empty(n_chunks * chunk_size, length)
        self.newest = -1

    def at_step(self, step: int) -> torch.Tensor:
        """The pool at ``step`` (S, length): chunks ``newest - n_chunks + 1 .. newest``."""
        newest = self.n_chunks - 1 + step // self.steps_per_chunk
        for chunk in range(max(self.newest + 1, newest - self.n_chunks + 1), newest + 1):
            series = self.draw(self.chunk_size, np.random.default_rng([self.seed, chunk]))
            slot = (chunk % self.n_chunks) * self.chunk_size
            self.data[slot:slot + self.chunk_size] = torch.as_tensor(series)
        self.newest = newest
        return self.data


def random_crops(series: torch.Tensor, n: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` random crops of ``length`` values from random rows of ``series`` (S, T): (n, length)."""
    rows = torch.randint(len(series), (n,), generator=generator)
    starts = torch.randint(series.shape[1] - length + 1, (n,), generator=generator)
    index = starts[:, None] + torch.arange(length)[None]
    return series[rows[:, None], index]


def mixup_crops(series: torch.Tensor, n: int, length: int, generator: torch.Generator,
                p_mix: float, max_parts: int = 3) -> torch.Tensor:
    """:func:`random_crops`, of which a share ``p_mix`` are TSMixup combinations: (n, length).

    A mixed crop is ``sum_k w_k standardised(crop_k)`` over 2 to ``max_parts`` crops,
    with ``w ~ Dirichlet(MIXUP_ALPHA)``; the others are plain crops, as
    :func:`random_crops` would cut them. ``p_mix=0`` draws exactly :func:`random_crops`.

    Examples
    --------
    >>> import torch
    >>> x = torch.randn(10, 50)
    >>> mixup_crops(x, 6, 20, torch.Generator().manual_seed(0), p_mix=0.5).shape
    torch.Size([6, 20])
    """
    crops = random_crops(series, n, length, generator)
    if not p_mix:
        return crops
    mixed = torch.rand(n, generator=generator) < p_mix  # (n,)
    n_mixed = int(mixed.sum())
    if not n_mixed:
        return crops
    parts = random_crops(series, n_mixed * max_parts, length, generator).view(
        n_mixed, max_parts, length)
    parts = (parts - parts.mean(-1, keepdim=True)) / parts.std(-1, keepdim=True).clamp_min(1e-5)
    n_parts = torch.randint(2, max_parts + 1, (n_mixed, 1), generator=generator)
    rng = np.random.default_rng(int(torch.randint(2**31, (1,), generator=generator)))
    gamma = torch.from_numpy(rng.gamma(MIXUP_ALPHA, size=(n_mixed, max_parts))).float()
    weights = gamma * (torch.arange(max_parts)[None] < n_parts)  # (n_mixed, max_parts)
    crops[mixed] = torch.einsum("mk,mkt->mt", weights / weights.sum(1, keepdim=True), parts)
    return crops
