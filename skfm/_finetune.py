"""The one early-stopping fine-tuning loop of every skfm estimator that trains.

:class:`~skfm.TimePEFTForecaster` (adapters on a frozen backbone),
:class:`~skfm.timeseries.MantisTimeSeriesClassifier` (``fine_tuning="head"``
or ``"full"``) and :class:`~skfm.TabSwiftClassifier` /
:class:`~skfm.TabSwiftRegressor` (``fine_tuning="last"`` or ``"full"``) train
through :func:`fine_tune`; what differs between them is passed in: the
network, its parameter groups, the loss of a mini-batch and of the validation
rows, and a :class:`FineTuneConfig`. :func:`stratified_split` holds out their
validation rows of classification tasks.

An epoch reshuffles the training rows (a seeded generator of the caller),
takes AdamW steps over mini-batches (optionally clipping the gradient norm),
optionally decays the learning rates, then computes the validation loss in
eval mode. The best state (parameters and buffers, BatchNorm statistics
included) is copied whenever the validation loss drops by more than ``tol``,
training stops after ``n_iter_no_change`` epochs without such a drop, and the
best state is restored at the end (with ``validate_start``, the starting state
competes too). With a ``time_budget``, the epoch in which it
runs out ends after that step, is validated and is the last. Dropout draws from torch's global
generator: run the loop (and the network's initialisation, if it should follow
the same seed) under :func:`skfm._backend.seeded`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.model_selection import train_test_split
from torch import nn

from skfm._backend import draw_seed
from skfm._progress import progress_bar


@dataclass(frozen=True)
class FineTuneConfig:
    """How :func:`fine_tune` trains.

    Parameters
    ----------
    max_epochs : int
        Passes over the training rows at most.
    batch_size : int
        Rows per optimiser step.
    n_iter_no_change : int
        Stop after this many epochs without a validation loss lower than the
        best one by more than ``tol``.
    tol : float
        Smallest decrease of the validation loss that counts as an improvement.
    weight_decay : float
        AdamW's weight decay.
    clip_grad_norm : float or None, default=None
        Clip the norm of all trainable parameters' gradients to this before
        every step; None: no clipping.
    step_lr : tuple of (int, float) or None, default=None
        ``(every, factor)``: multiply the learning rates by ``factor`` every
        ``every`` epochs (``torch.optim.lr_scheduler.StepLR``); None: constant.
    min_batch : int, default=1
        Smallest mini-batch: a last batch smaller than this joins the previous
        one, and batches still smaller are skipped (2 for BatchNorm, which
        cannot normalise one row in training mode).
    verbose : bool, default=False
        Show a progress bar over the epochs (see :mod:`skfm._progress`).
    desc : str, default="fine-tune"
        The progress bar's label.
    loss_name : str, default="loss"
        Name of the loss on the progress bar (``val_<name>``, ``train_<name>``).
    time_budget : float or None, default=None
        Seconds of training: the first step that ends past them ends its
        epoch, which is still validated, and training. None: no limit.
    validate_start : bool, default=False
        Validate the network before the first epoch too, so that its
        starting state is kept when no epoch beats it (for a network that
        starts from a good solution, e.g. a linear probe).
    """

    max_epochs: int
    batch_size: int
    n_iter_no_change: int
    tol: float
    weight_decay: float
    clip_grad_norm: float | None = None
    step_lr: tuple[int, float] | None = None
    min_batch: int = 1
    verbose: bool = False
    desc: str = "fine-tune"
    loss_name: str = "loss"
    time_budget: float | None = None
    validate_start: bool = False


@dataclass(frozen=True)
class FineTuneResult:
    """What :func:`fine_tune` reports.

    Attributes
    ----------
    n_epochs : int
        Epochs run (early stopping may end training before ``max_epochs``).
    validation_loss : float or None
        The best validation loss, whose state the network holds; None without
        validation (or when no epoch gave a finite loss): the network then
        holds the state after the last epoch.
    seconds : float
        Wall time of the loop.
    out_of_time : bool
        Whether the ``time_budget`` ended training.
    """

    n_epochs: int
    validation_loss: float | None
    seconds: float
    out_of_time: bool = False


def param_groups(
    params: Sequence[nn.Parameter],
    learning_rate: float,
    backbone_params: Sequence[nn.Parameter] = (),
    backbone_learning_rate: float | None = None,
) -> list[dict]:
    """AdamW parameter groups: the trained modules, then the backbone if it trains.

    Parameters
    ----------
    params : sequence of Parameter
        Heads and adapters, at ``learning_rate``.
    learning_rate : float
    backbone_params : sequence of Parameter, default=()
        Backbone weights that train, at ``backbone_learning_rate``; no group
        when empty.
    backbone_learning_rate : float or None, default=None

    Returns
    -------
    list of dict

    Examples
    --------
    >>> from torch import nn
    >>> from skfm._finetune import param_groups
    >>> head, body = nn.Linear(2, 1), nn.Linear(2, 2)
    >>> [g["lr"] for g in param_groups(list(head.parameters()), 1e-2)]
    [0.01]
    >>> [g["lr"] for g in param_groups(list(head.parameters()), 1e-2,
    ...                                list(body.parameters()), 1e-4)]
    [0.01, 0.0001]
    """
    groups = [{"params": list(params), "lr": float(learning_rate)}]
    if len(backbone_params):
        groups.append({"params": list(backbone_params), "lr": float(backbone_learning_rate)})
    return groups


def minibatches(order: np.ndarray, batch_size: int, min_batch: int = 1) -> list[np.ndarray]:
    """Consecutive slices of ``order`` of ``batch_size`` rows.

    A last slice smaller than ``min_batch`` joins the previous one; slices
    still smaller than ``min_batch`` are dropped.

    Parameters
    ----------
    order : ndarray of shape (n,)
        Row indices, in the order of the epoch.
    batch_size : int
    min_batch : int, default=1

    Returns
    -------
    list of ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from skfm._finetune import minibatches
    >>> [b.tolist() for b in minibatches(np.arange(5), 2)]
    [[0, 1], [2, 3], [4]]
    >>> [b.tolist() for b in minibatches(np.arange(5), 2, min_batch=2)]
    [[0, 1], [2, 3, 4]]
    """
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if len(batches) > 1 and len(batches[-1]) < min_batch:
        batches[-2:] = [np.concatenate(batches[-2:])]
    return [b for b in batches if len(b) >= min_batch]


def stratified_split(y: np.ndarray, validation_fraction: float,
                     random_state) -> tuple[np.ndarray, np.ndarray]:
    """Stratified train/validation indices; no validation when it cannot be stratified.

    A seed is drawn from ``random_state`` only when there is a validation split.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Class indices in ``0..n_classes - 1``.
    validation_fraction : float
        Share of the rows held out.
    random_state : int, RandomState or None

    Returns
    -------
    train, validation : ndarrays of int
        Row indices; ``validation`` is empty when some class has fewer than two
        rows, or either part would have fewer rows than there are classes.

    Examples
    --------
    >>> import numpy as np
    >>> from skfm._finetune import stratified_split
    >>> train, val = stratified_split(np.repeat([0, 1], 10), 0.2, 0)
    >>> len(train), np.bincount(np.repeat([0, 1], 10)[val]).tolist()
    (16, [2, 2])
    >>> stratified_split(np.array([0, 0, 1]), 0.5, 0)[1].size  # one row of class 1
    0
    """
    n = len(y)
    n_val = int(round(validation_fraction * n))
    counts = np.bincount(y)
    if n_val < len(counts) or n - n_val < len(counts) or counts.min() < 2:
        return np.arange(n), np.arange(0)
    return train_test_split(np.arange(n), test_size=n_val, stratify=y,
                            random_state=draw_seed(random_state))


def fine_tune(
    net: nn.Module,
    groups: list[dict],
    train_rows: np.ndarray,
    batch_loss: Callable[[np.ndarray], torch.Tensor],
    validation_loss: Callable[[], torch.Tensor | float] | None,
    config: FineTuneConfig,
    generator: torch.Generator,
) -> FineTuneResult:
    """Train ``net`` with AdamW and early stopping; it ends holding its best state.

    Parameters
    ----------
    net : nn.Module
        The network; put in train mode for every epoch, eval mode for validation.
    groups : list of dict
        AdamW parameter groups (:func:`param_groups`).
    train_rows : ndarray of shape (n_train,)
        Indices of the training rows; ``batch_loss`` receives subsets of them.
    batch_loss : callable
        ``batch_loss(rows)``: the differentiable loss of a mini-batch of rows.
    validation_loss : callable or None
        ``validation_loss()``: the loss on the held-out rows, called in eval
        mode under ``torch.no_grad()`` after every epoch; None: no early
        stopping, all ``max_epochs`` run.
    config : FineTuneConfig
    generator : torch.Generator
        Draws the order of the training rows in every epoch.

    Returns
    -------
    FineTuneResult

    Examples
    --------
    >>> import numpy as np, torch
    >>> from torch import nn
    >>> from skfm._backend import seeded
    >>> from skfm._finetune import FineTuneConfig, fine_tune, param_groups
    >>> x = torch.linspace(-1, 1, 40)[:, None]
    >>> y = 3 * x
    >>> with seeded(0):  # the initialisation, and dropout if there were any
    ...     net = nn.Linear(1, 1)
    ...     result = fine_tune(
    ...         net, param_groups(list(net.parameters()), 0.1), np.arange(0, 40, 2),
    ...         lambda rows: ((net(x[rows]) - y[rows]) ** 2).mean(),
    ...         lambda: ((net(x[1::2]) - y[1::2]) ** 2).mean(),
    ...         FineTuneConfig(max_epochs=100, batch_size=4, n_iter_no_change=5, tol=1e-4,
    ...                        weight_decay=0.0),
    ...         torch.Generator().manual_seed(0))
    >>> result.n_epochs < 100, result.validation_loss < 0.01, round(net.weight.item(), 1)
    (True, True, 2.9)
    """
    optimizer = torch.optim.AdamW(groups, weight_decay=config.weight_decay)
    schedule = (None if config.step_lr is None
                else torch.optim.lr_scheduler.StepLR(optimizer, *config.step_lr))
    clipped = [p for p in net.parameters() if p.requires_grad]
    best, best_loss, stale, n_epochs, loss = None, math.inf, 0, 0, None
    start = time.perf_counter()
    deadline = math.inf if config.time_budget is None else start + config.time_budget
    out_of_time = False
    if validation_loss is not None and config.validate_start:
        net.eval()
        with torch.no_grad():
            start_loss = float(validation_loss())
        if math.isfinite(start_loss):
            best_loss = start_loss
            best = {k: v.detach().clone() for k, v in net.state_dict().items()}
    with progress_bar(total=config.max_epochs, verbose=config.verbose, desc=config.desc) as bar:
        while n_epochs < config.max_epochs and not out_of_time:
            n_epochs += 1
            net.train()
            order = train_rows[torch.randperm(len(train_rows), generator=generator).numpy()]
            for rows in minibatches(order, config.batch_size, config.min_batch):
                loss = batch_loss(rows)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if config.clip_grad_norm is not None:
                    torch.nn.utils.clip_grad_norm_(clipped, config.clip_grad_norm)
                optimizer.step()
                if time.perf_counter() >= deadline:
                    out_of_time = True
                    break
            if schedule is not None:
                schedule.step()
            bar.update(1)
            if validation_loss is None:
                if loss is not None:
                    bar.set_postfix({f"train_{config.loss_name}": f"{loss.item():.4f}"})
                continue
            net.eval()
            with torch.no_grad():
                val_loss = float(validation_loss())
            bar.set_postfix({f"val_{config.loss_name}": f"{val_loss:.4f}"})
            if val_loss < best_loss - config.tol:
                best_loss, stale = val_loss, 0
                best = {k: v.detach().clone() for k, v in net.state_dict().items()}
            else:
                stale += 1
                if stale >= config.n_iter_no_change:
                    break
    if best is not None:
        net.load_state_dict(best)
    return FineTuneResult(n_epochs, None if best is None else best_loss,
                          time.perf_counter() - start, out_of_time)
