"""How many test rows or contexts one forward pass of a TabSwift estimator takes.

Off the CPU, free memory decides (:func:`skfm._backend.auto_batch_size`) under a fixed
cap. On CPU a forward pass is bandwidth-bound once its activations leave the cache: with 8
members on 2 cores, batches of 1,024 rows predicted faster than batches of 8,192, with
identical outputs (``benchmarks/tabswift_speed.py``; ``docs/benchmarks/tabswift_speed.md``
has the current speeds). So ``batch_size="auto"`` caps the rows x members of a pass on
CPU at :data:`CPU_BATCH_TOKENS`, keeping at least :data:`MIN_CPU_BATCH_ROWS` rows against
per-batch overhead; :meth:`~skfm.TabSwiftRegressor.sample_y_in_contexts` (TabMGP's
rollouts) takes the same cap on members x contexts x context rows.
"""

from __future__ import annotations

import torch

MAX_BATCH_ROWS = 8192  # test rows per forward pass with batch_size="auto"
CPU_BATCH_TOKENS = 4096
MIN_CPU_BATCH_ROWS = 1024
MAX_CONTEXTS_PER_PASS = 1024  # contexts encoded in one forward pass, off the CPU


def items_per_pass(device: torch.device, tokens_per_item: int, most: int, fewest: int = 1) -> int:
    """Upper bound on the items (test rows, rollouts) of one forward pass.

    ``most`` off the CPU (free memory decides the rest); on CPU about :data:`CPU_BATCH_TOKENS`
    tokens per pass, at least ``fewest`` and at most ``most`` items.

    Examples
    --------
    >>> import torch
    >>> items_per_pass(torch.device("cpu"), 8, 1000), items_per_pass(torch.device("cuda"), 8, 1000)
    (512, 1000)
    """
    if device.type != "cpu":
        return most
    return min(most, max(fewest, CPU_BATCH_TOKENS // tokens_per_item))


def max_batch_rows(device: torch.device, n_members: int) -> int:
    """Upper bound on test rows per forward pass for ``batch_size="auto"``.

    Examples
    --------
    >>> import torch
    >>> max_batch_rows(torch.device("cpu"), 8), max_batch_rows(torch.device("cuda"), 8)
    (1024, 8192)
    """
    return items_per_pass(device, n_members, MAX_BATCH_ROWS, fewest=MIN_CPU_BATCH_ROWS)


def contexts_per_pass(device: torch.device, tokens_per_context: int) -> int:
    """Upper bound on the contexts encoded in one forward pass (TabMGP's rollouts).

    The tokens of a pass on CPU (members x contexts x context rows) are capped at
    :data:`CPU_BATCH_TOKENS`, as for the test rows of :class:`~skfm.TabSwiftRegressor`. On
    2 cores it made TabMGP's fits faster, with the same draws;
    ``docs/benchmarks/tabmgp_timing.md`` has their times.

    Examples
    --------
    >>> import torch
    >>> contexts_per_pass(torch.device("cpu"), 2 * 100)
    20
    """
    return items_per_pass(device, tokens_per_context, MAX_CONTEXTS_PER_PASS)
