"""Fine-tuning a Time-PEFT forecasting network on the sliding windows of one series.

Every window of ``context_length + horizon`` consecutive values (every
``window_stride``-th start) is a training example; the last
``validation_fraction`` of them, whose targets follow the training targets,
hold out for early stopping. Training is skfm's shared loop
(:func:`skfm._finetune.fine_tune`) with this recipe: AdamW (weight decay
0.01) at ``learning_rate`` for adapters, LoRA and head and
``backbone_learning_rate`` for the backbone's own weights, gradient norms
clipped to 1, optionally the official code's step schedule, and the MSE of the
de-normalised forecast on the standardised series (:func:`forecast_loss`).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from skfm._backend import seeded, to_device
from skfm._finetune import FineTuneConfig, FineTuneResult, fine_tune, param_groups
from skfm.timeseries.forecasting.adapters import ForecastNet

SCHEDULES = ("constant", "step")
#: The official code's StepLR: the learning rates halve every 5 epochs.
STEP_EPOCHS, STEP_FACTOR = 5, 0.5
#: Windows per forward pass when computing the validation loss.
EVAL_BATCH = 256


def sliding_windows(values: np.ndarray, context_length: int, horizon: int,
                    stride: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (W, C, context_length) and targets (W, C, horizon) of a series (T, C).

    Examples
    --------
    >>> import numpy as np
    >>> from skfm.timeseries.forecasting.training import sliding_windows
    >>> x, y = sliding_windows(np.arange(10.0)[:, None], 4, 2, stride=2)
    >>> x.shape, y.shape, y[1].tolist()
    ((3, 1, 4), (3, 1, 2), [[6.0, 7.0]])
    """
    span = context_length + horizon
    starts = np.arange(0, len(values) - span + 1, stride)
    index = starts[:, None] + np.arange(span)[None]
    windows = values[index].transpose(0, 2, 1)  # (W, C, span)
    return windows[..., :context_length], windows[..., context_length:]


def temporal_split(n_windows: int, validation_fraction: float, horizon: int,
                   stride: int) -> tuple[np.ndarray, np.ndarray]:
    """Training and validation window indices; validation targets follow training ones.

    No validation (an empty second array) for fewer than 10 windows, a
    fraction giving no window, or no training window left before the gap.

    Examples
    --------
    >>> from skfm.timeseries.forecasting.training import temporal_split
    >>> train, val = temporal_split(20, 0.1, horizon=3, stride=1)
    >>> train.tolist()[-1], val.tolist()
    (14, [18, 19])
    """
    n_val = int(round(n_windows * float(validation_fraction)))
    if n_windows < 10 or n_val < 1:
        return np.arange(n_windows), np.arange(0)
    gap = math.ceil(horizon / stride)  # train targets end before val's
    n_train = n_windows - n_val - gap
    if n_train < 1:
        return np.arange(n_windows), np.arange(0)
    return np.arange(n_train), np.arange(n_windows - n_val, n_windows)


def forecast_loss(net: ForecastNet, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """MSE of the de-normalised forecast in units of each channel's standard deviation.

    ``x`` (B, C, L) and ``target`` (B, C, H) in the series' units. As in the official
    Time-PEFT and MOMENT code (and the benchmarks' metric), the error is measured after
    RevIN's de-normalisation on the standardised series, not in each window's own units,
    which would weigh a calm window's small errors as much as a volatile one's large ones.
    """
    return ((net(x) - target) / net.series_scale).pow(2).mean()


def mean_loss(net: ForecastNet, x: torch.Tensor, target: torch.Tensor) -> float:
    """:func:`forecast_loss` over all windows, in chunks of ``EVAL_BATCH`` windows."""
    losses = [float(forecast_loss(net, x[s:s + EVAL_BATCH], target[s:s + EVAL_BATCH]))
              * len(x[s:s + EVAL_BATCH]) for s in range(0, len(x), EVAL_BATCH)]
    return sum(losses) / len(x)


def train(
    net: ForecastNet,
    values: np.ndarray,
    *,
    context_length: int,
    horizon: int,
    window_stride: int,
    validation_fraction: float,
    learning_rate: float,
    backbone_learning_rate: float,
    learning_rate_schedule: str,
    max_epochs: int,
    batch_size: int,
    n_iter_no_change: int,
    verbose: bool,
    device: torch.device,
    seed: int,
) -> FineTuneResult:
    """Fine-tune ``net`` (moved to ``device``) on all windows of ``values`` (T, C).

    The parameters are those of ``TimePEFTForecaster``; ``seed`` seeds the
    window order and dropout. ``net`` ends with the weights of the lowest
    validation loss (the last epoch's without validation).

    Returns
    -------
    FineTuneResult
    """
    net.to(device)
    trainable = {n: p for n, p in net.named_parameters() if p.requires_grad}
    in_backbone = {n: n.startswith("backbone.") and "lora_" not in n for n in trainable}
    backbone = [p for n, p in trainable.items() if in_backbone[n]]
    others = [p for n, p in trainable.items() if not in_backbone[n]]
    inputs, targets = sliding_windows(values, context_length, horizon, window_stride)
    train_idx, val_idx = temporal_split(len(inputs), validation_fraction, horizon,
                                        window_stride)
    x_all, y_all = to_device(inputs, device), to_device(targets, device)  # (W, C, L), (W, C, H)
    config = FineTuneConfig(
        max_epochs=max_epochs, batch_size=int(batch_size), n_iter_no_change=n_iter_no_change,
        tol=1e-6, weight_decay=0.01, clip_grad_norm=1.0,
        step_lr=(STEP_EPOCHS, STEP_FACTOR) if learning_rate_schedule == "step" else None,
        verbose=verbose, desc="fine-tune", loss_name="mse",
    )
    with seeded(seed, device):  # dropout
        return fine_tune(
            net,
            param_groups(others, learning_rate, backbone, backbone_learning_rate),
            train_idx,
            lambda rows: forecast_loss(net, x_all[rows], y_all[rows]),
            (lambda: mean_loss(net, x_all[val_idx], y_all[val_idx])) if len(val_idx) else None,
            config,
            torch.Generator().manual_seed(seed),
        )
