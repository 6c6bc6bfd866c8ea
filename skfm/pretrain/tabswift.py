"""Pretraining loop for TabSwift on the synthetic tabular prior.

``skfm pretrain tabswift --config small --steps 20000 --out runs/tabswift``
trains with AdamW, linear warmup then cosine decay, gradient clipping and an
exponential moving average of the weights (what gets exported). It writes
``state.pt`` (model, EMA, optimiser, step, generator) every ``--save-every``
steps and resumes from it, logs JSON lines to ``log.jsonl`` and evaluates on a
fixed set of held-out prior batches. ``--export NAME.safetensors`` writes a
shipped-format checkpoint with its card.

The loop only uses the process-local device, so wrapping the model in
``DistributedDataParallel`` under ``torchrun`` needs no other change.
"""

from __future__ import annotations

import copy
import json
import math
import platform
import time
from dataclasses import asdict
from importlib import resources
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from skfm.tabular.buckets import bucket_borders, bucketize
from skfm.tabular.model import CLASSIFICATION, REGRESSION, TabSwift, TabSwiftConfig
from skfm.tabular.prior import PriorBatch, PriorConfig, sample_batch

EVAL_SEED = 20_261_129


def load_config(config: str | Path) -> dict:
    """A training config by shipped name (``tiny``, ``small``) or json path."""
    path = Path(config)
    if not path.exists():
        path = resources.files("skfm.pretrain") / "configs" / f"tabswift-{config}.json"
        if not path.is_file():
            raise ValueError(f"unknown pretraining config {config!r}: give a json path or 'small'/'tiny'")
    return json.loads(path.read_text())


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


def _truncate_log(path: Path, step: int) -> None:
    """Drop log records of steps after the saved state (an interrupted run wrote them)."""
    if not path.exists():
        return
    kept = []
    for line in path.read_text().splitlines():
        try:
            if json.loads(line)["step"] <= step:
                kept.append(line + "\n")
        except (json.JSONDecodeError, KeyError):  # a line cut short by the interruption
            continue
    path.write_text("".join(kept))


def _lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


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
) -> Path:
    """Run (or resume) pretraining; returns the path of the training state."""
    from skfm._backend import resolve_device
    from skfm._backend import threads as threads_ctx

    dev = resolve_device(device)
    model_cfg = TabSwiftConfig(**config["model"])
    prior = PriorConfig(**config["prior"])
    opt_cfg = config["optim"]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    state_path = out / "state.pt"

    torch.manual_seed(seed)
    model = TabSwift(model_cfg).to(dev)
    ema = copy.deepcopy(model).requires_grad_(False)
    optim = torch.optim.AdamW(
        model.parameters(), lr=opt_cfg["lr"], weight_decay=opt_cfg["weight_decay"], betas=(0.9, 0.98)
    )
    gen = torch.Generator().manual_seed(seed)
    step, wall = 0, 0.0
    if state_path.exists():
        state = torch.load(state_path, map_location=dev, weights_only=True)
        model.load_state_dict(state["model"])
        ema.load_state_dict(state["ema"])
        optim.load_state_dict(state["optim"])
        gen.set_state(state["generator"])
        step, wall = state["step"], state["wall_seconds"]
        _truncate_log(out / "log.jsonl", step)
    borders = torch.tensor(bucket_borders(model_cfg.n_buckets), dtype=torch.float32, device=dev)
    held_out = eval_batches(prior, opt_cfg.get("eval_batches", 8), opt_cfg["batch_size"])
    log = (out / "log.jsonl").open("a")

    def save() -> None:
        torch.save(
            {
                "model": model.state_dict(), "ema": ema.state_dict(), "optim": optim.state_dict(),
                "generator": gen.get_state(), "step": step, "wall_seconds": wall,
                "config": config, "seed": seed,
            },
            state_path.with_suffix(".tmp"),
        )
        state_path.with_suffix(".tmp").replace(state_path)

    with threads_ctx(threads):
        bar = tqdm(total=steps, initial=step, disable=not progress, desc="pretrain tabswift")
        model.train()
        while step < steps:
            t0 = time.perf_counter()
            task = REGRESSION if torch.rand(1, generator=gen) < opt_cfg["p_regression"] else CLASSIFICATION
            batch = _to(sample_batch(opt_cfg["batch_size"], task, prior, gen), dev)
            for group in optim.param_groups:
                group["lr"] = _lr_at(step, steps, opt_cfg["lr"], opt_cfg["warmup"])
            loss, stats = batch_loss(model, batch, borders, opt_cfg["deep_supervision"])
            optim.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), opt_cfg["grad_clip"])
            optim.step()
            with torch.no_grad():
                decay = min(opt_cfg["ema_decay"], (step + 1) / (step + 10))
                for p_ema, p in zip(ema.parameters(), model.parameters(), strict=True):
                    p_ema.lerp_(p, 1 - decay)
            step += 1
            wall += time.perf_counter() - t0
            bar.update(1)
            bar.set_postfix(task=task[:3], loss=f"{stats['loss_final']:.3f}")
            record = {"step": step, "task": task, "rows": batch.x.shape[1], **stats}
            if step % eval_every == 0 or step == steps:
                record["eval_ema"] = evaluate(ema, held_out, borders, dev)
                record["wall_seconds"] = round(wall, 1)
                bar.write(json.dumps(record))
            log.write(json.dumps(record) + "\n")
            if step % save_every == 0 or step == steps:
                save()
                log.flush()
        bar.close()
    log.close()
    return state_path


def export(state_path: Path, target: Path, extra_card: dict | None = None) -> Path:
    """Write the EMA weights of a training state as a shipped checkpoint + card."""
    from skfm._weights import save_checkpoint

    state = torch.load(state_path, map_location="cpu", weights_only=True)
    config = state["config"]
    model = TabSwift(TabSwiftConfig(**config["model"]))
    model.load_state_dict(state["ema"])
    borders = torch.tensor(bucket_borders(model.config.n_buckets), dtype=torch.float32)
    held_out = eval_batches(PriorConfig(**config["prior"]), 8, config["optim"]["batch_size"])
    card = {
        "model": "tabswift",
        "config": model.config.to_dict(),
        "prior": asdict(PriorConfig(**config["prior"])),
        "training": {
            **config["optim"],
            "steps": state["step"],
            "datasets_seen": state["step"] * config["optim"]["batch_size"],
            "wall_seconds": round(state["wall_seconds"], 1),
            "seed": state["seed"],
            "hardware": f"{platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}",
            "weights": "exponential moving average",
        },
        "held_out_prior": evaluate(model, held_out, borders, torch.device("cpu")),
        **(extra_card or {}),
    }
    state_np = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    return save_checkpoint(target, state_np, card)
