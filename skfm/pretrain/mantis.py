"""Contrastive pretraining of Mantis on synthetic series.

``skfm pretrain mantis --config small --steps 3000 --out runs/mantis`` trains
with the Mantis recipe: two random crop-resize views of every series (crop
``crop_range`` of its length at a random offset, linearly resized back to
``seq_len``), the last-layer CLS token through the projector, and an InfoNCE
loss over cosine similarities at ``temperature`` (both directions); AdamW with
linear warmup then cosine decay, gradient clipping and an exponential moving
average of the weights (what gets exported).

Series come from :func:`skfm.timeseries.synthetic.generate_series`. Generating
is slower than a training step on a CPU, so a pool of ``pool_chunks`` chunks of
``chunk_size`` series is kept and its oldest chunk replaced by a fresh one
every ``steps_per_chunk`` steps; chunk ``i`` is seeded by ``(seed, i)``, so a
resumed run rebuilds exactly the pool it had. ``state.pt`` (model, EMA,
optimiser, step, batch generator) is written every ``--save-every`` steps and
resumed from; ``log.jsonl`` gets one record per step (loss, InfoNCE top-1
accuracy, series/s) and held-out metrics every ``--eval-every`` steps.
"""

from __future__ import annotations

import copy
import json
import math
import platform
import time
from importlib import resources
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from skfm.timeseries.mantis.model import Mantis, MantisConfig
from skfm.timeseries.synthetic import SyntheticConfig, generate_series

EVAL_SEED = 20_261_129


def load_config(config: str | Path) -> dict:
    """A training config by shipped name (``tiny``, ``small``) or json path."""
    path = Path(config)
    if not path.exists():
        path = resources.files("skfm.pretrain") / "configs" / f"mantis-{config}.json"
        if not path.is_file():
            raise ValueError(
                f"unknown pretraining config {config!r}: give a json path or 'small'/'tiny'"
            )
    return json.loads(path.read_text())


def _prior(config: dict) -> SyntheticConfig:
    return SyntheticConfig(**{k: tuple(v) if isinstance(v, list) else v
                              for k, v in config["prior"].items()})


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
    left = pos.floor().long().clamp(max=t - 2)  # (B, length)
    return torch.lerp(x.gather(1, left), x.gather(1, left + 1), pos - left)


def info_nce(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> tuple[torch.Tensor, float]:
    """Symmetric InfoNCE of two views (B, K); returns the loss and the top-1 match rate."""
    z1, z2 = F.normalize(z1.float(), dim=-1), F.normalize(z2.float(), dim=-1)
    logits = z1 @ z2.T / temperature  # (B, B), positives on the diagonal
    target = torch.arange(len(z1), device=z1.device)
    loss = 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target))
    return loss, float((logits.argmax(1) == target).float().mean())


class SeriesPool:
    """Rolling pool of synthetic series, rebuilt deterministically from ``(seed, step)``."""

    def __init__(self, config: dict, seed: int):
        opt = config["optim"]
        self.prior = _prior(config)
        self.length = config["model"]["seq_len"]
        self.seed, self.n_chunks = seed, opt["pool_chunks"]
        self.chunk_size, self.steps_per_chunk = opt["chunk_size"], opt["steps_per_chunk"]
        self.data = torch.empty(self.n_chunks * self.chunk_size, self.length)
        self.newest = -1

    def _fill(self, chunk: int) -> None:
        series = generate_series(self.chunk_size, self.length, config=self.prior,
                                 random_state=[self.seed, chunk])[:, 0]
        slot = chunk % self.n_chunks
        self.data[slot * self.chunk_size:(slot + 1) * self.chunk_size] = torch.from_numpy(series)

    def at_step(self, step: int) -> torch.Tensor:
        """The pool as it is at ``step``: chunks ``newest - n_chunks + 1 .. newest``."""
        newest = self.n_chunks - 1 + step // self.steps_per_chunk
        for chunk in range(max(self.newest + 1, newest - self.n_chunks + 1), newest + 1):
            self._fill(chunk)
        self.newest = newest
        return self.data


def _lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


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


def held_out_views(config: dict, n_series: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
    """Fixed held-out views (same for every run with the same config)."""
    x = generate_series(n_series, config["model"]["seq_len"], config=_prior(config),
                        random_state=EVAL_SEED)[:, 0]
    g = torch.Generator().manual_seed(EVAL_SEED)
    x = torch.from_numpy(x)
    crop = tuple(config["optim"]["crop_range"])
    length = config["model"]["seq_len"]
    return random_crop_resize(x, length, crop, g), random_crop_resize(x, length, crop, g)


@torch.no_grad()
def evaluate(model: Mantis, views, temperature: float, batch_size: int, device) -> dict:
    """Held-out InfoNCE loss and top-1 view retrieval, in batches of ``batch_size``."""
    model.eval()
    losses, accs = [], []
    for start in range(0, len(views[0]) - batch_size + 1, batch_size):
        z1 = model.project(views[0][start:start + batch_size].to(device))
        z2 = model.project(views[1][start:start + batch_size].to(device))
        loss, acc = info_nce(z1, z2, temperature)
        losses.append(float(loss))
        accs.append(acc)
    model.train()
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
) -> Path:
    """Run (or resume) contrastive pretraining; returns the path of the training state."""
    from skfm._backend import resolve_device
    from skfm._backend import threads as threads_ctx

    dev = resolve_device(device)
    opt_cfg = config["optim"]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    state_path = out / "state.pt"

    torch.manual_seed(seed)
    model = Mantis(MantisConfig(**config["model"])).to(dev)
    ema = copy.deepcopy(model).requires_grad_(False)
    optim = torch.optim.AdamW(model.parameters(), lr=opt_cfg["lr"],
                              weight_decay=opt_cfg["weight_decay"], betas=(0.9, 0.999))
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
    length, crop, batch = model.config.seq_len, tuple(opt_cfg["crop_range"]), opt_cfg["batch_size"]
    temperature = opt_cfg["temperature"]

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
        pool = SeriesPool(config, seed)
        if step < steps:
            pool.at_step(step)
        held_out = held_out_views(config, opt_cfg.get("eval_series", 512))
        log = (out / "log.jsonl").open("a")
        bar = tqdm(total=steps, initial=step, disable=not progress, desc="pretrain mantis")
        model.train()
        while step < steps:
            t0 = time.perf_counter()
            data = pool.at_step(step)
            x = data[torch.randint(len(data), (batch,), generator=gen)]
            v1 = random_crop_resize(x, length, crop, gen).to(dev)
            v2 = random_crop_resize(x, length, crop, gen).to(dev)
            for group in optim.param_groups:
                group["lr"] = _lr_at(step, steps, opt_cfg["lr"], opt_cfg["warmup"])
            loss, acc = info_nce(model.project(v1), model.project(v2), temperature)
            optim.zero_grad(set_to_none=True)
            loss.backward()
            loss = float(loss.detach())
            torch.nn.utils.clip_grad_norm_(model.parameters(), opt_cfg["grad_clip"])
            optim.step()
            with torch.no_grad():
                decay = min(opt_cfg["ema_decay"], (step + 1) / (step + 10))
                for p_ema, p in zip(ema.parameters(), model.parameters(), strict=True):
                    p_ema.lerp_(p, 1 - decay)
            step += 1
            seconds = time.perf_counter() - t0
            wall += seconds
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.3f}", top1=f"{acc:.2f}")
            record = {"step": step, "loss": round(loss, 4), "top1": round(acc, 4),
                      "lr": round(group["lr"], 6), "series_per_s": round(batch / seconds, 1)}
            if step % eval_every == 0 or step == steps:
                record["eval_ema"] = evaluate(ema, held_out, temperature, batch, dev)
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
    model = Mantis(MantisConfig(**config["model"]))
    model.load_state_dict(state["ema"])
    opt_cfg = config["optim"]
    views = held_out_views(config, opt_cfg.get("eval_series", 512))
    card = {
        "model": "mantis",
        "config": model.config.to_dict(),
        "prior": _prior(config).to_dict(),
        "training": {
            **opt_cfg,
            "steps": state["step"],
            "series_seen": state["step"] * opt_cfg["batch_size"],
            "wall_seconds": round(state["wall_seconds"], 1),
            "seed": state["seed"],
            "hardware": f"{platform.machine()}, {torch.get_num_threads()} threads, "
                        f"torch {torch.__version__}",
            "weights": "exponential moving average",
        },
        "held_out_prior": evaluate(model, views, opt_cfg["temperature"], opt_cfg["batch_size"],
                                   torch.device("cpu")),
        **(extra_card or {}),
    }
    state_np = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    return save_checkpoint(target, state_np, card)
