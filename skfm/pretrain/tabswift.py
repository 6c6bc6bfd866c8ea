"""Pretraining loop for TabSwift on the synthetic tabular prior.

``skfm pretrain tabswift --config small --steps 20000 --out runs/tabswift``
trains with AdamW, linear warmup then cosine decay, gradient clipping and an
exponential moving average of the weights (what gets exported). It writes
``state.pt`` (model, EMA, optimiser, step, generator) every ``--save-every``
steps and resumes from it, logs JSON lines to ``log.jsonl`` and evaluates on a
fixed set of held-out prior batches. ``--export NAME.safetensors`` writes a
shipped-format checkpoint with its card.

A config with a ``"trunk"`` entry (a checkpoint name or path; shipped:
``--config exits``) trains only the model's exit adapters: the trunk's
weights are loaded from that checkpoint and frozen, and each intermediate
layer's readout is distilled into the last layer's (KL divergence), so that
rows can leave early without changing what the full depth predicts.

The loop itself (state, resume, schedule, EMA, log) is
:func:`skfm.pretrain._loop.train_loop`; this module supplies the batches, the
loss, the held-out evaluation and the card.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from skfm.pretrain._distributed import training_device
from skfm.pretrain._loop import (
    OptimSettings,
    load_ema,
    load_named_config,
    save_model,
    train_loop,
    training_card,
)
from skfm.tabular.buckets import bucket_borders, bucketize
from skfm.tabular.model import CLASSIFICATION, REGRESSION, TabSwift, TabSwiftConfig
from skfm.tabular.prior import PriorBatch, PriorConfig, sample_batch

EVAL_SEED = 20_261_129


def load_config(config: str | Path) -> dict:
    """A training config by shipped name (``tiny``, ``small``) or json path."""
    return load_named_config("tabswift", config)


def batch_loss(
    model: TabSwift, batch: PriorBatch, borders: torch.Tensor, deep_supervision: float
) -> tuple[torch.Tensor, dict]:
    """Cross-entropy on the test rows, averaged with the per-layer exit heads."""
    n = batch.n_ctx
    if batch.task == CLASSIFICATION:
        y_ctx, target = batch.y[:, :n], batch.y[:, n:]
    else:
        y_ctx, target = _standardised_targets(batch, borders)
    logits = model(batch.x, y_ctx, batch.n_features, batch.task, all_layers=True)  # (L,B,M,C)
    if batch.task == CLASSIFICATION:
        logits = logits.masked_fill(_absent_classes(batch, logits.shape[-1]), -1e4)
    n_layers = logits.shape[0]
    per_layer = torch.stack(
        [F.cross_entropy(logits[i].flatten(0, 1).float(), target.flatten()) for i in range(n_layers)]
    )
    loss = per_layer[-1] + deep_supervision * per_layer[:-1].mean() if n_layers > 1 else per_layer[-1]
    stats = {"loss_final": float(per_layer[-1].detach())}
    if batch.task == CLASSIFICATION:
        stats["acc"] = float((logits[-1].argmax(-1) == target).float().mean())
    return loss, stats


def exit_distillation_loss(
    model: TabSwift, batch: PriorBatch, borders: torch.Tensor
) -> tuple[torch.Tensor, dict]:
    """KL divergence from the last layer's predictive to each earlier layer's, averaged.

    Reports ``tv_layer<k>``: the mean total variation between layer ``k``'s
    and the last layer's predictive (1-based ``k``), what the early-exit rule
    compares.
    """
    n = batch.n_ctx
    y_ctx = batch.y[:, :n] if batch.task == CLASSIFICATION else _standardised_targets(batch, borders)[0]
    logits = model(batch.x, y_ctx, batch.n_features, batch.task, all_layers=True)  # (L,B,M,C)
    if batch.task == CLASSIFICATION:
        logits = logits.masked_fill(_absent_classes(batch, logits.shape[-1]), -1e4)
    log_p = logits.float().log_softmax(-1)  # (L, B, M, C)
    teacher = log_p[-1].detach()
    kl = (teacher.exp() * (teacher - log_p[:-1])).sum(-1)  # (L - 1, B, M)
    tv = 0.5 * (log_p[:-1].exp() - teacher.exp()).abs().sum(-1).mean((1, 2))  # (L - 1,)
    stats = {f"tv_layer{k + 1}": round(float(v), 5) for k, v in enumerate(tv.detach())}
    return kl.mean(), stats


def _standardised_targets(batch: PriorBatch, borders: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Regression context targets standardised by the context, and the test rows' buckets."""
    n = batch.n_ctx
    mu = batch.y[:, :n].mean(1, keepdim=True)
    sd = batch.y[:, :n].std(1, keepdim=True).clamp_min(1e-6)
    y_std = (batch.y - mu) / sd
    return y_std[:, :n], bucketize(y_std[:, n:], borders)


def _absent_classes(batch: PriorBatch, n_outputs: int) -> torch.Tensor:
    """Mask (B, 1, C) of the outputs beyond each dataset's number of classes."""
    return torch.arange(n_outputs, device=batch.y.device) >= batch.n_classes.view(-1, 1, 1)


def load_trunk(model: TabSwift, trunk: str | Path) -> None:
    """Load a checkpoint's weights into ``model`` and freeze all but the exit adapters."""
    from skfm._weights import load_checkpoint

    ckpt = load_checkpoint(trunk)
    if ckpt.card.get("model") != "tabswift":
        raise ValueError(f"trunk checkpoint {trunk!r} holds a {ckpt.card.get('model')!r} model")
    own = {k: v for k, v in ckpt.card["config"].items() if k != "exit_adapters"}
    wanted = {k: v for k, v in model.config.to_dict().items() if k != "exit_adapters"}
    if own != wanted:
        raise ValueError(f"trunk checkpoint {trunk!r} has config {own}, the run asks for {wanted}")
    state = {k: torch.from_numpy(np.array(v)) for k, v in ckpt.state.items()
             if not k.startswith("exit_adapters.")}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or any(not k.startswith("exit_adapters.") for k in missing):
        raise ValueError(f"trunk checkpoint {trunk!r} does not fit the model: "
                         f"missing {missing}, unexpected {unexpected}")
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(name.startswith("exit_adapters."))


def _to(batch: PriorBatch, device: torch.device) -> PriorBatch:
    return PriorBatch(
        batch.x.to(device), batch.y.to(device), batch.n_features.to(device),
        batch.n_classes.to(device), batch.n_ctx, batch.task,
    )


def eval_batches(prior: PriorConfig, n_batches: int, batch_size: int) -> list[PriorBatch]:
    """Fixed held-out prior batches (same for every run with the same prior)."""
    g = torch.Generator().manual_seed(EVAL_SEED)
    tasks = [CLASSIFICATION, REGRESSION] * (n_batches // 2)
    return [sample_batch(batch_size, t, prior, g, n_rows=prior.max_rows // 2) for t in tasks]


@torch.no_grad()
def evaluate(model: TabSwift, batches, borders, device) -> dict:
    """Mean final-layer loss per task, classification accuracy, and ``exit_tv``.

    ``exit_tv`` lists, for each layer but the last, the mean total variation
    between its readout and the last layer's (lower: earlier exits agree more).
    """
    model.eval()
    out: dict[str, list[float]] = {}
    tv: list[list[float]] = []
    for batch in batches:
        batch = _to(batch, device)
        _, stats = batch_loss(model, batch, borders, 0.0)
        out.setdefault(f"{batch.task}_loss", []).append(stats["loss_final"])
        if "acc" in stats:
            out.setdefault("classification_acc", []).append(stats["acc"])
        tv.append(list(exit_distillation_loss(model, batch, borders)[1].values()))
    model.train()
    return {**{k: sum(v) / len(v) for k, v in out.items()},
            "exit_tv": [round(sum(col) / len(col), 5) for col in zip(*tv, strict=True)]}


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
) -> Path:
    """Run (or resume) pretraining; returns the path of the training state.

    Data-parallel under ``torchrun`` (see :func:`skfm.pretrain._loop.train_loop`).
    """
    dev = training_device(device)  # this process's GPU under torchrun
    model_cfg = TabSwiftConfig(**config["model"])
    prior = PriorConfig(**config["prior"])
    opt_cfg = config["optim"]
    torch.manual_seed(seed)
    model = TabSwift(model_cfg).to(dev)
    borders = torch.tensor(bucket_borders(model_cfg.n_buckets), dtype=torch.float32, device=dev)
    held_out = eval_batches(prior, opt_cfg.get("eval_batches", 8), opt_cfg["batch_size"])
    exits_only = "trunk" in config
    if exits_only:
        load_trunk(model, config["trunk"])

    def step_fn(step: int, gen: torch.Generator) -> tuple[torch.Tensor, dict, dict]:
        task = REGRESSION if torch.rand(1, generator=gen) < opt_cfg["p_regression"] else CLASSIFICATION
        batch = _to(sample_batch(opt_cfg["batch_size"], task, prior, gen), dev)
        if exits_only:
            loss, stats = exit_distillation_loss(model, batch, borders)
            stats["kl"] = float(loss.detach())
        else:
            loss, stats = batch_loss(model, batch, borders, opt_cfg["deep_supervision"])
        record = {"task": task, "rows": batch.x.shape[1], **stats}
        shown = stats["kl"] if exits_only else stats["loss_final"]
        return loss, record, {"task": task[:3], "loss": f"{shown:.3f}"}

    return train_loop(
        model, step_fn, config=config, steps=steps, out=out, seed=seed,
        optim=OptimSettings.from_config(opt_cfg, betas=(0.9, 0.98), min_lr_ratio=0.05),
        eval_fn=lambda ema: evaluate(ema, held_out, borders, dev),
        save_every=save_every, eval_every=eval_every, threads=threads, progress=progress,
        desc="pretrain tabswift", unused_parameters=True,  # the other task's head
    )


def export(state_path: Path, target: Path, extra_card: dict | None = None) -> Path:
    """Write the EMA weights of a training state as a shipped checkpoint + card."""
    model, state = load_ema(state_path, lambda config: TabSwift(TabSwiftConfig(**config["model"])))
    config = state["config"]
    borders = torch.tensor(bucket_borders(model.config.n_buckets), dtype=torch.float32)
    held_out = eval_batches(PriorConfig(**config["prior"]), 8, config["optim"]["batch_size"])
    card = {
        "model": "tabswift",
        "config": model.config.to_dict(),
        "prior": asdict(PriorConfig(**config["prior"])),
        "training": training_card(state, "datasets"),
        "held_out_prior": evaluate(model, held_out, borders, torch.device("cpu")),
        **(extra_card or {}),
    }
    return save_model(model, target, card)
