"""Contrastive pretraining of Mantis on synthetic series.

``skfm pretrain mantis --config small --steps 3000 --out runs/mantis`` trains
with the Mantis recipe made harder for a small CPU budget: two random views of
every series (:func:`augment`: crop ``crop_range`` of its length at a random
offset and resize it back to ``seq_len``, then a random amplitude factor,
Gaussian jitter and one masked segment), the last-layer CLS token through the
projector, and an InfoNCE loss over cosine similarities at ``temperature``
(both directions). An optional ``warp`` (:func:`time_warp`) also warps the time
axis of every view.

Series come from :func:`skfm.pretrain.series_families.draw_mixture` (by default
:func:`skfm.pretrain.timeseries_prior.generate_series` alone; the prior's
``family_weights`` mixes in ARMA and motif series), drawn at varied native
lengths and resized to ``seq_len`` (:func:`draw_series`), so that pretraining
sees series as coarse or as smooth as resized real data. A pool of
``pool_chunks`` chunks of ``chunk_size`` series is kept and its oldest chunk
replaced by a fresh one every ``steps_per_chunk`` steps; chunk ``i`` is seeded
by ``(seed, i)``, so a resumed run rebuilds exactly the pool it had.

The loop itself (AdamW, warmup then cosine decay to 2 % of the peak, gradient
clipping, the exported EMA of the weights, ``state.pt``, resume, ``log.jsonl``
with one record per step and held-out metrics with the wall time every
``--eval-every`` steps) is :func:`skfm.pretrain._loop.train_loop`; this module
supplies the views, the loss, the held-out evaluation and the card.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from skfm._weights import load_named_config
from skfm.pretrain._distributed import training_device
from skfm.pretrain._loop import (
    OptimSettings,
    learning_curve,
    load_ema,
    save_model,
    train_loop,
    training_card,
)
from skfm.pretrain.screen import series_screen
from skfm.pretrain.series_families import draw_mixture, prior_card
from skfm.pretrain.series_pool import SeriesPool
from skfm.pretrain.warm_start import Growth, initial_weights
from skfm.timeseries.mantis.model import Mantis, MantisConfig, resize

EVAL_SEED = 20_261_129
#: What a run started from a checkpoint (``init``) may enlarge: more blocks and wider MLPs
#: start as the checkpoint's function (:mod:`skfm.pretrain.warm_start`).
GROWTH = Growth(fields=("n_layers", "mlp_dim"), residual_outputs=(".out.", ".mlp.3."))


def load_config(config: str | Path) -> dict:
    """A training config by shipped name (``tiny``, ``small``) or json path."""
    return load_named_config("mantis", config)


def _sample_at(x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """Linear interpolation of ``x`` (B, T) at positions ``pos`` (B, L) in [0, T - 1]."""
    left = pos.floor().long().clamp(max=x.shape[1] - 2)  # (B, L)
    return torch.lerp(x.gather(1, left), x.gather(1, left + 1), pos - left)


def random_crop_resize(
    x: torch.Tensor, length: int, crop_range: tuple[float, float], generator: torch.Generator
) -> torch.Tensor:
    """Crop a random fraction in ``crop_range`` off each series, resize to ``length``.

    Parameters
    ----------
    x : Tensor of shape (B, T)
    length : int
    crop_range : (float, float)
        Fraction of the series removed, drawn uniformly per series.
    generator : torch.Generator

    Returns
    -------
    Tensor of shape (B, length)
    """
    b, t = x.shape
    rate = torch.empty(b).uniform_(*crop_range, generator=generator)
    span = (t - 1) * (1 - rate)  # (B,) kept extent in samples
    start = torch.rand(b, generator=generator) * (t - 1 - span)
    pos = (start[:, None] + span[:, None] * torch.linspace(0, 1, length)[None]).to(x.device)
    return _sample_at(x, pos)


def time_warp(x: torch.Tensor, strength: float, generator: torch.Generator) -> torch.Tensor:
    """Warp the time axis of each series smoothly and monotonically, keeping both ends.

    The local speed is ``exp(strength * g)`` for ``g`` a standard normal at 6 knots
    interpolated linearly over the series; its cumulative sum, rescaled to the
    series, gives the (increasing) positions at which the series is resampled.

    Parameters
    ----------
    x : Tensor of shape (B, T)
    strength : float
    generator : torch.Generator

    Returns
    -------
    Tensor of shape (B, T)

    Examples
    --------
    >>> ramp = torch.linspace(0, 1, 50)[None].repeat(3, 1)
    >>> warped = time_warp(ramp, 0.5, torch.Generator().manual_seed(0))
    >>> warped.shape, bool((warped.diff(dim=1) >= 0).all())
    (torch.Size([3, 50]), True)
    """
    b, t = x.shape
    knots = torch.randn(b, 1, 6, generator=generator)
    speed = F.interpolate(knots, size=t - 1, mode="linear", align_corners=True)[:, 0]  # (B, T-1)
    steps = torch.cat([torch.zeros(b, 1), (strength * speed).exp().cumsum(1)], 1)  # (B, T)
    pos = (steps / steps[:, -1:] * (t - 1)).clamp(0, t - 1).to(x.device)
    return _sample_at(x, pos)


def augment(x: torch.Tensor, length: int, optim: dict, generator: torch.Generator) -> torch.Tensor:
    """A random view of each series: crop-resize, time warp, amplitude, jitter, one masked segment.

    Parameters
    ----------
    x : Tensor of shape (B, T)
    length : int
        Length of the views.
    optim : dict
        ``crop_range`` (see :func:`random_crop_resize`); optional
        ``amplitude_range`` (log-uniform factor per view, default ``[1, 1]``),
        ``jitter`` (Gaussian noise of standard deviation up to this fraction of
        the view's, default 0), ``mask`` (a contiguous segment of up to this
        fraction of the view replaced by the straight line between its ends,
        default 0) and ``warp`` (the strength of :func:`time_warp`, default 0:
        no warp).
    generator : torch.Generator

    Returns
    -------
    Tensor of shape (B, length)
    """
    view = random_crop_resize(x, length, tuple(optim["crop_range"]), generator)
    if optim.get("warp", 0.0):  # no draws without it: the views of earlier recipes
        view = time_warp(view, optim["warp"], generator)
    b = len(view)
    low, high = np.log(optim.get("amplitude_range", (1.0, 1.0)))
    scale = torch.empty(b, 1).uniform_(low, high, generator=generator).exp()
    sigma = torch.rand(b, 1, generator=generator) * optim.get("jitter", 0.0)
    view = view + sigma * view.std(-1, keepdim=True) * torch.randn(b, length, generator=generator)
    span = torch.rand(b, 1, generator=generator) * optim.get("mask", 0.0) * (length - 1)
    start = (torch.rand(b, 1, generator=generator) * (length - 1 - span)).floor().long()
    stop = (start + span.ceil().long()).clamp(max=length - 1)  # (B, 1)
    t = torch.arange(length)[None]
    frac = (t - start) / (stop - start).clamp(min=1)
    line = torch.lerp(view.gather(1, start), view.gather(1, stop), frac)
    view = torch.where((t > start) & (t < stop), line, view)
    return view * scale


def info_nce(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> tuple[torch.Tensor, float]:
    """Symmetric InfoNCE of two views (B, K); returns the loss and the top-1 match rate."""
    z1, z2 = F.normalize(z1.float(), dim=-1), F.normalize(z2.float(), dim=-1)
    logits = z1 @ z2.T / temperature  # (B, B), positives on the diagonal
    target = torch.arange(len(z1), device=z1.device)
    loss = 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target))
    return loss, float((logits.argmax(1) == target).float().mean())


def draw_series(n: int, config: dict, rng: np.random.Generator) -> torch.Tensor:
    """``n`` synthetic series at varied native lengths, all resized to ``seq_len``; (n, seq_len).

    ``optim.length_range`` (default ``[seq_len, seq_len]``) gives the log-uniform
    range of native lengths and ``optim.length_groups`` (default 1) how many
    lengths one call draws (the series are split evenly among them), so that
    pretraining sees series as smooth or as coarse as resized real data. The
    series of each length are :func:`skfm.pretrain.series_families.draw_mixture`'s
    of the ``prior`` section.
    """
    opt, length = config["optim"], config["model"]["seq_len"]
    low, high = opt.get("length_range", (length, length))
    groups = np.array_split(np.arange(n), opt.get("length_groups", 1))
    native = np.exp(rng.uniform(np.log(low), np.log(high), len(groups))).astype(int)
    parts = [
        resize(torch.from_numpy(draw_mixture(len(g), max(int(t), 8), config["prior"], rng)), length)
        for g, t in zip(groups, native, strict=True) if len(g)
    ]
    return torch.cat(parts)


def series_pool(config: dict, seed: int) -> SeriesPool:
    """The rolling pool of :func:`draw_series` of a run (``optim``: ``pool_chunks``, ...)."""
    opt = config["optim"]
    return SeriesPool(lambda n, rng: draw_series(n, config, rng), config["model"]["seq_len"],
                      seed, opt["pool_chunks"], opt["chunk_size"], opt["steps_per_chunk"])


def held_out_views(config: dict, n_series: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
    """Fixed held-out views (same for every run with the same config)."""
    x = draw_series(n_series, config, np.random.default_rng(EVAL_SEED))
    g = torch.Generator().manual_seed(EVAL_SEED)
    length = config["model"]["seq_len"]
    return augment(x, length, config["optim"], g), augment(x, length, config["optim"], g)


@torch.no_grad()
def evaluate(model: Mantis, views, temperature: float, batch_size: int, device) -> dict:
    """Held-out InfoNCE loss and top-1 view retrieval of an eval-mode model, in batches."""
    losses, accs = [], []
    for start in range(0, len(views[0]) - batch_size + 1, batch_size):
        z1 = model.project(views[0][start:start + batch_size].to(device))
        z2 = model.project(views[1][start:start + batch_size].to(device))
        loss, acc = info_nce(z1, z2, temperature)
        losses.append(float(loss))
        accs.append(acc)
    return {"loss": float(np.mean(losses)), "top1": float(np.mean(accs))}


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
    screen: str | Path | None = None,
) -> Path:
    """Run (or resume) contrastive pretraining; returns the path of the training state.

    ``init`` starts a new run from the weights of an exported checkpoint (a
    name or path, e.g. ``"mantis-v3"`` to continue it with a fresh schedule); the
    config may have more blocks or wider MLPs than the checkpoint (:data:`GROWTH`).
    ``screen``: a folder of UCR/UEA ``.npz`` sets; every evaluation then also
    scores the EMA's frozen embeddings on them
    (:func:`skfm.pretrain.screen.series_screen`), the learning curve that
    :func:`export` writes into the card. Data-parallel under ``torchrun`` (see
    :func:`skfm.pretrain._loop.train_loop`).
    """
    dev = training_device(device)  # this process's GPU under torchrun
    opt_cfg = config["optim"]
    torch.manual_seed(seed)
    model = Mantis(MantisConfig(**config["model"]))
    if init is not None:
        config = {**config, "init": initial_weights(model, init, "mantis", GROWTH)}
    model = model.to(dev)
    length, batch, temperature = model.config.seq_len, opt_cfg["batch_size"], opt_cfg["temperature"]
    pool = series_pool(config, seed)
    held_out = held_out_views(config, opt_cfg.get("eval_series", 512))

    def step_fn(step: int, gen: torch.Generator) -> tuple[torch.Tensor, dict, dict]:
        data = pool.at_step(step)
        x = data[torch.randint(len(data), (batch,), generator=gen)]
        v1 = augment(x, length, opt_cfg, gen).to(dev)
        v2 = augment(x, length, opt_cfg, gen).to(dev)
        loss, acc = info_nce(model.project(v1), model.project(v2), temperature)
        record = {"loss": round(float(loss.detach()), 4), "top1": round(acc, 4)}
        return loss, record, {"loss": f"{record['loss']:.3f}", "top1": f"{acc:.2f}"}

    return train_loop(
        model, step_fn, config=config, steps=steps, out=out, seed=seed,
        optim=OptimSettings.from_config(opt_cfg, min_lr_ratio=0.02),
        eval_fn=lambda ema: {**evaluate(ema, held_out, temperature, batch, dev),
                             **(series_screen(ema, screen) if screen is not None else {})},
        save_every=save_every, eval_every=eval_every, threads=threads, progress=progress,
        desc="pretrain mantis",
    )


def export(state_path: Path, target: Path, extra_card: dict | None = None) -> Path:
    """Write the EMA weights of a training state as a shipped checkpoint + card."""
    model, state = load_ema(state_path, lambda config: Mantis(MantisConfig(**config["model"])))
    config = state["config"]
    opt_cfg = config["optim"]
    views = held_out_views(config, opt_cfg.get("eval_series", 512))
    card = {
        "model": "mantis",
        "config": model.config.to_dict(),
        "prior": prior_card(config["prior"]),
        "training": training_card(state, "series"),
        **({"init": config["init"]} if "init" in config else {}),
        "held_out_prior": evaluate(model, views, opt_cfg["temperature"], opt_cfg["batch_size"],
                                   torch.device("cpu")),
        "learning_curve": learning_curve(Path(state_path).parent / "log.jsonl"),
        **(extra_card or {}),
    }
    return save_model(model, target, card)
