"""Pretraining loop for TabSwift on the synthetic tabular prior.

``skfm pretrain tabswift --config small --steps 20000 --out runs/tabswift``
trains with AdamW, linear warmup then cosine decay, gradient clipping and an
exponential moving average of the weights (what gets exported). It writes
``state.pt`` (model, EMA, optimiser, step, generator) every ``--save-every``
steps and resumes from it, logs JSON lines to ``log.jsonl`` and evaluates on a
fixed set of held-out prior batches. ``--export NAME.safetensors`` writes a
shipped-format checkpoint with its card. A config may grow the row count
over the run (``"curriculum"``, :func:`stage_at`).

The loop itself (state, resume, schedule, EMA, log) is
:func:`skfm.pretrain._loop.train_loop`; this module supplies the batches, the
loss, the held-out evaluation and the card.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

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
from skfm.pretrain.real_tables import RealTaskSampler, real_table_sources, table_record
from skfm.pretrain.screen import regression_screen, tabular_screen
from skfm.pretrain.tabular_prior import PriorBatch, PriorConfig, sample_batch
from skfm.pretrain.warm_start import Growth, initial_weights
from skfm.tabular.model import CLASSIFICATION, REGRESSION, TabSwift, TabSwiftConfig
from skfm.tabular.model.buckets import bucket_borders, bucketize

EVAL_SEED = 20_261_129
#: What a run started from a checkpoint (``init``) may enlarge: more layers and wider
#: feed-forward blocks start as the checkpoint's function (:mod:`skfm.pretrain.warm_start`).
GROWTH = Growth(fields=("n_layers", "ffn_factor"), residual_outputs=("attn.out.", "ffn.2."))


def load_config(config: str | Path) -> dict:
    """A training config by shipped name (``tiny``, ``small``) or json path."""
    return load_named_config("tabswift", config)


def stage_at(config: dict, step: int) -> tuple[PriorConfig, int]:
    """The prior and batch size of the curriculum stage that ``step`` falls in.

    ``config["curriculum"]`` (optional) lists stages ``{"from_step": s, "prior":
    {...}, "batch_size": b}`` in increasing ``from_step``; each stage overrides
    the settings of the ones before it, so that, for example, the row count
    grows to the longest contexts in the last stage while the batch shrinks.

    Examples
    --------
    >>> config = {"prior": {"max_rows": 512}, "optim": {"batch_size": 32},
    ...           "curriculum": [{"from_step": 100, "prior": {"max_rows": 2048}, "batch_size": 8}]}
    >>> [(prior.max_rows, batch) for prior, batch in (stage_at(config, 99), stage_at(config, 100))]
    [(512, 32), (2048, 8)]
    """
    prior, batch_size = dict(config["prior"]), config["optim"]["batch_size"]
    stages = config.get("curriculum", [])
    starts = [stage["from_step"] for stage in stages]
    if starts != sorted(starts):
        raise ValueError(f"curriculum stages must be in increasing from_step, got {starts}")
    for stage in stages:
        if step >= stage["from_step"]:
            prior.update(stage.get("prior", {}))
            batch_size = stage.get("batch_size", batch_size)
    return PriorConfig(**prior), batch_size


def batch_loss(
    model: TabSwift, batch: PriorBatch, borders: torch.Tensor, deep_supervision: float
) -> tuple[torch.Tensor, dict]:
    """Cross-entropy on the test rows, averaged with the per-layer exit heads."""
    n = batch.n_ctx
    if batch.task == CLASSIFICATION:
        y_ctx, target = batch.y[:, :n], batch.y[:, n:]
    else:
        mu = batch.y[:, :n].mean(1, keepdim=True)
        sd = batch.y[:, :n].std(1, keepdim=True).clamp_min(1e-6)
        y_std = (batch.y - mu) / sd
        y_ctx, target = y_std[:, :n], bucketize(y_std[:, n:], borders)
    logits = model(batch.x, y_ctx, batch.n_features, batch.task, all_layers=True)  # (L,B,M,C)
    if batch.task == CLASSIFICATION:
        absent = torch.arange(logits.shape[-1], device=logits.device) >= batch.n_classes.view(-1, 1, 1)
        logits = logits.masked_fill(absent, -1e4)
    n_layers = logits.shape[0]
    per_layer = torch.stack(
        [F.cross_entropy(logits[i].flatten(0, 1).float(), target.flatten()) for i in range(n_layers)]
    )
    loss = per_layer[-1] + deep_supervision * per_layer[:-1].mean() if n_layers > 1 else per_layer[-1]
    stats = {"loss_final": float(per_layer[-1].detach())}
    if batch.task == CLASSIFICATION:
        stats["acc"] = float((logits[-1].argmax(-1) == target).float().mean())
    return loss, stats


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
    """Mean final-layer loss per task and classification accuracy."""
    model.eval()
    out: dict[str, list[float]] = {}
    for batch in batches:
        _, stats = batch_loss(model, _to(batch, device), borders, 0.0)
        out.setdefault(f"{batch.task}_loss", []).append(stats["loss_final"])
        if "acc" in stats:
            out.setdefault("classification_acc", []).append(stats["acc"])
    model.train()
    return {k: sum(v) / len(v) for k, v in out.items()}


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
    regression_screen_data: str | Path | None = None,
) -> Path:
    """Run (or resume) pretraining; returns the path of the training state.

    ``init`` starts a new run from the weights of an exported checkpoint (a
    name or path) instead of a random initialisation, e.g. to fine-tune a
    shipped checkpoint on a changed prior; the config may have more layers or
    wider feed-forward blocks than the checkpoint (:data:`GROWTH`). ``screen``: a folder of CC18-style
    tables; every evaluation then also scores the EMA weights on them
    (:func:`skfm.pretrain.screen.tabular_screen`), the learning curve that
    :func:`export` writes into the card; ``regression_screen_data``, a folder
    of regression tables, adds their R² (:func:`skfm.pretrain.screen.regression_screen`).
    A config section ``"real"`` mixes tasks from real tables into the prior
    (:mod:`skfm.pretrain.real_tables`): ``tables`` (the allow-list CSV),
    ``p_real`` (the share of batches), ``min_rows``/``max_rows``, optional
    ``exclude`` and ``validation_fraction``; the evaluations then add the loss
    on fixed tasks from the held-back tables (``real_validation_*``). Data-parallel under ``torchrun``
    (see :func:`skfm.pretrain._loop.train_loop`).
    """
    dev = training_device(device)  # this process's GPU under torchrun
    model_cfg = TabSwiftConfig(**config["model"])
    prior = PriorConfig(**config["prior"])
    opt_cfg = config["optim"]
    torch.manual_seed(seed)
    model = TabSwift(model_cfg)
    if init is not None:
        config = {**config, "init": initial_weights(model, init, "tabswift", GROWTH)}
    model = model.to(dev)
    borders = torch.tensor(bucket_borders(model_cfg.n_buckets), dtype=torch.float32, device=dev)
    held_out = eval_batches(prior, opt_cfg.get("eval_batches", 8), opt_cfg["batch_size"])
    real = config.get("real")
    if real is not None:  # real tables mixed in: training tables, and fixed validation tasks
        training_tables, validation_tables = real_table_sources(real, out)
        sampler = RealTaskSampler(training_tables, model_cfg.max_features, model_cfg.max_classes)
        real_held_out = real_validation_batches(validation_tables, real, model_cfg,
                                                opt_cfg.get("eval_batches", 8))

    def step_fn(step: int, gen: torch.Generator) -> tuple[torch.Tensor, dict, dict]:
        task = REGRESSION if torch.rand(1, generator=gen) < opt_cfg["p_regression"] else CLASSIFICATION
        stage_prior, batch_size = stage_at(config, step)
        from_real = real is not None and float(torch.rand(1, generator=gen)) < real["p_real"]
        if from_real:
            batch = sampler.sample_batch(batch_size, task, real["min_rows"], real["max_rows"], gen)
        else:
            batch = sample_batch(batch_size, task, stage_prior, gen)
        loss, stats = batch_loss(model, _to(batch, dev), borders, opt_cfg["deep_supervision"])
        record = {"task": task, "rows": batch.x.shape[1], "real": from_real, **stats}
        return loss, record, {"task": task[:3], "loss": f"{stats['loss_final']:.3f}"}

    def eval_fn(ema: TabSwift) -> dict:
        record = evaluate(ema, held_out, borders, dev)
        if real is not None:
            record.update({f"real_validation_{k}": v
                           for k, v in evaluate(ema, real_held_out, borders, dev).items()})
        if screen is not None:
            record.update(tabular_screen(ema, screen))
        if regression_screen_data is not None:
            record.update(regression_screen(ema, regression_screen_data))
        return record

    return train_loop(
        model, step_fn, config=config, steps=steps, out=out, seed=seed,
        optim=OptimSettings.from_config({"betas": (0.9, 0.98), "min_lr_ratio": 0.05, **opt_cfg}),
        eval_fn=eval_fn,
        save_every=save_every, eval_every=eval_every, threads=threads, progress=progress,
        desc="pretrain tabswift", unused_parameters=True,  # the other task's head
    )


def real_validation_batches(tables, real: dict, model_cfg: TabSwiftConfig, n_batches: int):
    """Fixed tasks from the held-back real tables (the same for every run with the same list)."""
    sampler = RealTaskSampler(tables, model_cfg.max_features, model_cfg.max_classes)
    g = torch.Generator().manual_seed(EVAL_SEED)
    tasks = [CLASSIFICATION, REGRESSION] * (n_batches // 2)
    return [sampler.sample_batch(8, task, real["min_rows"], real["max_rows"], g) for task in tasks]


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
        **({"curriculum": config["curriculum"]} if "curriculum" in config else {}),
        "training": training_card(state, "datasets"),
        **({"init": config["init"]} if "init" in config else {}),
        "held_out_prior": evaluate(model, held_out, borders, torch.device("cpu")),
        "learning_curve": learning_curve(Path(state_path).parent / "log.jsonl"),
        **({"real_tables": table_record(config["real"], Path(state_path).parent)}
           if "real" in config else {}),
        **(extra_card or {}),
    }
    return save_model(model, target, card)
