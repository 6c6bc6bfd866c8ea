"""Masked-reconstruction pretraining of the Time-PEFT forecasting backbone.

``skfm pretrain timeseries-backbone --config small --steps 4000 --out runs/tsb``
trains :class:`~skfm.timeseries.forecasting.backbone.TimeSeriesBackbone` the
MOMENT way: every series is RevIN-normalised and cut into patches, a share
``mask_ratio`` of the patches is replaced by the ``[MASK]`` embedding, and the
loss is the MSE of the reconstructed masked patches.

Series are univariate crops of synthetic series from
:func:`skfm.pretrain.series_families.draw_mixture`: Gaussian-process kernel
compositions through random causal graphs and, where the prior gives
``family_weights``, seasonal ARMA and motif series; they are held in a rolling
pool (:class:`~skfm.pretrain.series_pool.SeriesPool`: generating is slower
than a training step on a CPU). Each step draws one crop length from
``lengths`` (so that every context length the forecaster may use is seen) and
``batch_size`` random crops of it; with ``mixup`` > 0 in ``optim``, that share
of the crops are TSMixup combinations of a few crops
(:func:`~skfm.pretrain.series_pool.mixup_crops`).

With ``forecast_weight`` > 0 in the config's ``optim`` section, each step adds
that many times an auxiliary forecasting loss: a linear head
(:class:`ForecastPretraining`) reads the flattened patch embeddings of the
first ``forecast_lookback`` values of a crop (one lookback, or a list from
which each step draws one, each with its own head) and predicts the next
``forecast_horizon`` values, in the RevIN units of the lookback -- the
task the forecaster's adapters and head are later fine-tuned on. The head
is dropped at export. Pretrained by masked reconstruction alone, the backbone
fine-tuned worse on average than a random one in two of the four adapter
modes; continued with the auxiliary loss it passes its release gate (see the
Time-PEFT benchmark).

The loop (state, resume, schedule, EMA, log) is
:func:`skfm.pretrain._loop.train_loop`; the held-out metric is the masked
reconstruction loss on fixed synthetic series, for each length.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from skfm._weights import load_named_config
from skfm.pretrain._distributed import training_device
from skfm.pretrain._loop import (
    OptimSettings,
    load_ema,
    save_model,
    train_loop,
    training_card,
)
from skfm.pretrain.series_families import draw_mixture, prior_card
from skfm.pretrain.series_pool import SeriesPool, mixup_crops, random_crops
from skfm.pretrain.warm_start import initial_weights
from skfm.timeseries.forecasting.backbone import (
    BackboneConfig,
    TimeSeriesBackbone,
    masked_reconstruction_loss,
    revin_normalise,
)

EVAL_SEED = 20_261_129
MODEL = "timeseries-backbone"


def load_config(config: str | Path) -> dict:
    """A training config by shipped name (``tiny``, ``small``) or json path."""
    return load_named_config(MODEL, config)


def build_model(config: dict) -> TimeSeriesBackbone:
    """The backbone of a training config (at the current torch seed)."""
    return TimeSeriesBackbone(BackboneConfig(**config["model"]))


class ForecastPretraining(nn.Module):
    """The backbone and the linear heads of the auxiliary forecasting loss (pretraining only).

    One head per lookback, each reading the flattened patch embeddings of that
    many values and predicting the next ``horizon``.

    Parameters
    ----------
    backbone : TimeSeriesBackbone
    lookbacks : tuple of int
        Values a head reads (multiples of the patch length).
    horizon : int
        Values every head predicts.

    Examples
    --------
    >>> net = ForecastPretraining(TimeSeriesBackbone(BackboneConfig(
    ...     d_model=16, n_heads=2, n_layers=1, ffn_dim=32)), lookbacks=(16, 32), horizon=8)
    >>> loss = net.forecast_loss(torch.randn(5, 40), lookback=32)
    >>> loss.shape, bool(loss > 0)
    (torch.Size([]), True)
    """

    def __init__(self, backbone: TimeSeriesBackbone, lookbacks: tuple[int, ...], horizon: int):
        super().__init__()
        for lookback in lookbacks:
            backbone.patchify(torch.zeros(1, lookback))  # checks the lookback fits the patches
        self.backbone, self.lookbacks, self.horizon = backbone, tuple(lookbacks), horizon
        d, p = backbone.config.d_model, backbone.config.patch_len
        self.heads = nn.ModuleDict({str(lookback): nn.Linear(lookback // p * d, horizon)
                                    for lookback in lookbacks})

    def forecast_loss(self, x: torch.Tensor, lookback: int) -> torch.Tensor:
        """MSE of the head's forecast of the ``horizon`` values after the first ``lookback``
        of ``x`` (B, >= lookback + horizon), in the RevIN units of the lookback."""
        past, future = x[:, :lookback], x[:, lookback:lookback + self.horizon]
        z, loc, scale = revin_normalise(past)  # (B, lookback), (B, 1), (B, 1)
        embedded = self.backbone.encode(self.backbone.patchify(z)).flatten(1)  # (B, N * D)
        return (self.heads[str(lookback)](embedded) - (future - loc) / scale).pow(2).mean()


def forecast_settings(config: dict) -> tuple[float, tuple[int, ...], int]:
    """``(forecast_weight, forecast_lookbacks, forecast_horizon)`` of a config (weight 0: none).

    ``forecast_lookback`` is one lookback or a list of them (each step draws one).
    """
    opt = config["optim"]
    weight = opt.get("forecast_weight", 0.0)
    lookbacks = np.atleast_1d(opt.get("forecast_lookback", 96)).astype(int).tolist()
    horizon = opt.get("forecast_horizon", 96)
    if weight < 0:
        raise ValueError(f"forecast_weight must be >= 0, got {weight}")
    if weight and max(lookbacks) + horizon > opt["series_len"]:
        raise ValueError(
            f"forecast_lookback + forecast_horizon = {max(lookbacks) + horizon} exceeds "
            f"series_len={opt['series_len']}"
        )
    return weight, tuple(lookbacks), horizon


def build_training_model(config: dict) -> TimeSeriesBackbone | ForecastPretraining:
    """What a run trains: the backbone, with the forecasting head when ``forecast_weight`` > 0."""
    backbone = build_model(config)
    weight, lookbacks, horizon = forecast_settings(config)
    return ForecastPretraining(backbone, lookbacks, horizon) if weight else backbone


def backbone_of(model: TimeSeriesBackbone | ForecastPretraining) -> TimeSeriesBackbone:
    """The backbone of a training model (what export ships)."""
    return model.backbone if isinstance(model, ForecastPretraining) else model


def series_pool(config: dict, seed: int) -> SeriesPool:
    """The rolling pool of a run: :func:`~skfm.pretrain.series_families.draw_mixture`'s series
    of the ``prior`` section (``optim``: ``series_len``, ``pool_chunks``, ...)."""
    opt = config["optim"]
    length = opt["series_len"]
    return SeriesPool(lambda n, rng: draw_mixture(n, length, config["prior"], rng), length, seed,
                      opt["pool_chunks"], opt["chunk_size"], opt["steps_per_chunk"])


def held_out_series(config: dict, n_series: int = 256) -> torch.Tensor:
    """Fixed held-out synthetic series (same for every run with the same config): (n, T)."""
    x = draw_mixture(n_series, config["optim"]["series_len"], config["prior"],
                     np.random.default_rng(EVAL_SEED))
    return torch.from_numpy(x)


@torch.no_grad()
def evaluate(model: TimeSeriesBackbone, series: torch.Tensor, lengths, mask_ratio: float) -> dict:
    """Held-out masked-reconstruction MSE for every crop length (same masks every call)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    out = {}
    for length in lengths:
        g = torch.Generator().manual_seed(EVAL_SEED)
        x = random_crops(series, len(series), length, g).to(device)
        out[f"mse_{length}"] = round(float(masked_reconstruction_loss(model, x, mask_ratio, g)), 5)
    model.train(was_training)
    return out


def train(
    config: dict,
    steps: int,
    out: Path,
    device: str = "cpu",
    seed: int = 0,
    save_every: int = 200,
    eval_every: int = 500,
    threads: int | None = None,
    progress: bool = True,
    init: str | None = None,
) -> Path:
    """Run (or resume) pretraining; returns the path of the training state.

    ``init`` starts a new run from the backbone of an exported checkpoint (a
    name or path) instead of a random initialisation (the forecasting head
    starts at random). Data-parallel under ``torchrun`` (see
    :func:`skfm.pretrain._loop.train_loop`).
    """
    dev = training_device(device)  # this process's GPU under torchrun
    opt = config["optim"]
    weight = forecast_settings(config)[0]
    torch.manual_seed(seed)
    model = build_training_model(config)
    if init is not None:
        config = {**config, "init": initial_weights(backbone_of(model), init, MODEL)}
    model = model.to(dev)
    backbone = backbone_of(model)
    pool = series_pool(config, seed)
    p_mix = opt.get("mixup", 0.0)
    lengths = opt["lengths"]
    held_out = held_out_series(config, opt.get("eval_series", 256))

    def step_fn(step: int, gen: torch.Generator) -> tuple[torch.Tensor, dict, dict]:
        length = lengths[int(torch.randint(len(lengths), (1,), generator=gen))]
        series = pool.at_step(step)
        x = mixup_crops(series, opt["batch_size"], length, gen, p_mix).to(dev)
        loss = masked_reconstruction_loss(backbone, x, opt["mask_ratio"], gen)
        record = {"length": length, "loss": round(float(loss.detach()), 5)}
        if weight:
            lookback = model.lookbacks[int(torch.randint(len(model.lookbacks), (1,),
                                                         generator=gen))]
            crops = mixup_crops(series, opt["batch_size"], lookback + model.horizon, gen,
                                p_mix).to(dev)
            forecast = model.forecast_loss(crops, lookback)
            record.update(lookback=lookback, forecast_loss=round(float(forecast.detach()), 5))
            loss = loss + weight * forecast
        return loss, record, {"loss": f"{float(loss.detach()):.3f}"}

    return train_loop(
        model, step_fn, config=config, steps=steps, out=out, seed=seed,
        optim=OptimSettings.from_config(opt),
        eval_fn=lambda ema: evaluate(backbone_of(ema), held_out, lengths, opt["mask_ratio"]),
        save_every=save_every, eval_every=eval_every, threads=threads, progress=progress,
        desc=f"pretrain {MODEL}",
    )


def export(state_path: Path, target: Path, extra_card: dict | None = None) -> Path:
    """Write the EMA weights of a training state as a shipped checkpoint + card.

    The card records the held-out reconstruction loss of these weights and of
    the same architecture at random initialisation (seed 0), and the
    checkpoint the run started from (``init``), if any. A forecasting head
    (``forecast_weight`` > 0) is not exported.
    """
    trained, state = load_ema(state_path, build_training_model)
    model = backbone_of(trained)
    config = state["config"]
    opt = config["optim"]
    held_out = held_out_series(config, opt.get("eval_series", 256))
    torch.manual_seed(0)
    random_init = build_model(config)
    card = {
        "model": MODEL,
        "config": model.config.to_dict(),
        "prior": prior_card(config["prior"]),
        "training": training_card(state, "series"),
        **({"init": config["init"]} if "init" in config else {}),
        "held_out_prior": evaluate(model, held_out, opt["lengths"], opt["mask_ratio"]),
        "held_out_prior_random_init": evaluate(random_init, held_out, opt["lengths"],
                                               opt["mask_ratio"]),
        **(extra_card or {}),
    }
    return save_model(model, target, card)
