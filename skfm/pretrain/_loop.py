"""The resumable training loop shared by every ``skfm pretrain`` model.

A model's module supplies what differs (how to draw a batch and compute its
loss, how to evaluate, what goes on the card); this module does the rest the
same way for all of them:

* AdamW with linear warmup then cosine decay to ``min_lr_ratio`` of the peak,
  gradient clipping, and an exponential moving average (EMA) of the weights,
  which is what gets exported; a step whose gradient norm is not finite changes
  nothing (its log record says ``"skipped"``);
* ``state.pt`` in the run folder (``model``, ``ema``, ``optim``, ``generator``,
  ``step``, ``wall_seconds``, ``config``, ``seed``) written atomically every
  ``save_every`` steps and resumed from, so that a resumed run draws the same
  batches as an uninterrupted one;
* ``log.jsonl`` with one record per step (``step``, ``lr`` and whatever the
  step function reports), held-out metrics of the EMA weights every
  ``eval_every`` steps; records of steps after the saved state (written by an
  interrupted run) are dropped on resume;
* a tqdm progress bar and a thread-count context;
* data-parallel training under ``torchrun`` (see
  :mod:`skfm.pretrain._distributed`): every rank draws its own batches, DDP
  averages the gradients, and rank 0 alone writes ``state.pt``, ``log.jsonl``
  and the progress bar.
"""

from __future__ import annotations

import copy
import gc
import json
import logging
import math
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from skfm._progress import progress_bar
from skfm.pretrain._distributed import World, all_ranks, data_parallel, process_group, rank_seed

logger = logging.getLogger(__name__)

#: A step function: ``(step, generator) -> (loss, record, postfix)``. ``loss`` is
#: the scalar to minimise; ``record`` goes into ``log.jsonl`` (json-serialisable);
#: ``postfix`` is shown on the progress bar.
StepFn = Callable[[int, torch.Generator], tuple[torch.Tensor, dict, dict]]


@dataclass(frozen=True)
class OptimSettings:
    """Optimiser and schedule of a pretraining run.

    Parameters
    ----------
    lr : float
        Peak learning rate, reached after ``warmup`` steps.
    weight_decay : float
    warmup : int
        Steps of linear warmup.
    grad_clip : float
        Maximum global gradient norm.
    ema_decay : float
        Decay of the weight EMA (ramped up as ``(step+1)/(step+10)`` early on).
    betas : (float, float), default=(0.9, 0.999)
    min_lr_ratio : float, default=0.05
        The cosine decays to this fraction of ``lr``.

    Examples
    --------
    >>> settings = OptimSettings.from_config(
    ...     {"lr": 1e-3, "weight_decay": 0.01, "warmup": 10, "grad_clip": 1.0, "ema_decay": 0.99,
    ...      "batch_size": 8})
    >>> round(settings.lr_at(9, 100), 6), round(settings.lr_at(100, 100), 6)
    (0.001, 5e-05)
    """

    lr: float
    weight_decay: float
    warmup: int
    grad_clip: float
    ema_decay: float
    betas: tuple[float, float] = (0.9, 0.999)
    min_lr_ratio: float = 0.05

    @classmethod
    def from_config(cls, optim: dict, **overrides) -> OptimSettings:
        """Pick the settings out of a config's ``optim`` section (other keys are ignored)."""
        keys = ("lr", "weight_decay", "warmup", "grad_clip", "ema_decay", "betas", "min_lr_ratio")
        given = {k: optim[k] for k in keys if k in optim}
        if "betas" in given:
            given["betas"] = tuple(given["betas"])
        return cls(**{**given, **overrides})

    def lr_at(self, step: int, total: int) -> float:
        """Learning rate at 0-based ``step`` of a ``total``-step run."""
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        progress = min(1.0, (step - self.warmup) / max(1, total - self.warmup))
        cosine = 0.5 * (1 + math.cos(math.pi * progress))
        return self.lr * (self.min_lr_ratio + (1 - self.min_lr_ratio) * cosine)


def truncate_log(path: Path, step: int) -> None:
    """Drop log records of steps after ``step`` (an interrupted run wrote them)."""
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


def train_loop(
    model: torch.nn.Module,
    step_fn: StepFn,
    *,
    config: dict,
    optim: OptimSettings,
    steps: int,
    out: Path,
    seed: int = 0,
    eval_fn: Callable[[torch.nn.Module], dict] | None = None,
    save_every: int = 200,
    eval_every: int = 500,
    threads: int | None = None,
    progress: bool = True,
    desc: str = "pretrain",
    unused_parameters: bool = False,
) -> Path:
    """Train ``model`` (or resume its run in ``out``) up to ``steps`` optimiser steps.

    Parameters
    ----------
    model : torch.nn.Module
        Freshly initialised (seed torch before building it); already on its device.
    step_fn : callable
        ``step_fn(step, generator) -> (loss, record, postfix)``. Draw every random
        batch from ``generator``: its state is saved and restored on resume.
    config : dict
        The run's config, stored in the state (export rebuilds the model from it).
    optim : OptimSettings
    steps : int
        Total optimiser steps; a run already at ``steps`` is left as it is.
    out : Path
        Run folder for ``state.pt`` and ``log.jsonl``.
    seed : int, default=0
        Seeds the batch generator (of rank 0; see Notes).
    eval_fn : callable, optional
        ``eval_fn(ema_model) -> dict`` of held-out metrics, logged as ``eval_ema``
        (on rank 0 only: it must not call collectives).
    save_every, eval_every : int
    threads : int, optional
        torch threads while training.
    progress : bool, default=True
        Progress bar (never when the environment variable ``SKFM_PROGRESS`` is
        ``0``). The held-out metrics are logged (logger ``skfm.pretrain._loop``,
        level info), which ``skfm pretrain`` prints.
    desc : str
        Progress bar label.
    unused_parameters : bool, default=False
        Whether a step may leave some parameters of ``model`` without gradient
        (TabSwift: the head of the other task). Only matters with several
        processes, where DDP must then look for them every step.

    Returns
    -------
    Path
        ``out / "state.pt"``.

    Notes
    -----
    Under ``torchrun`` (``WORLD_SIZE`` > 1) the loop joins the process group
    (gloo on the CPU, NCCL on CUDA) and runs ``step_fn`` through
    DistributedDataParallel. Each rank draws its own batches from its own
    generator: rank 0 seeded by ``seed``, like a one-process run, rank ``r`` by
    ``rank_seed(seed, r)``; so a step sees ``WORLD_SIZE`` batches. DDP averages
    the gradients, so the weights, the optimiser and the EMA stay identical on
    every rank. Rank 0 alone writes ``state.pt``, ``log.jsonl`` (the records of
    its own batches) and the progress bar.

    On resume every rank needs its own generator state back, so at each save
    the states of all ranks are gathered into ``state.pt`` (``generators``;
    ``generator`` stays rank 0's, as in a one-process state): resumed with the
    same number of processes, the run draws the batches of an uninterrupted
    one (see :func:`resumed_generator_state` for another number). ``state.pt``
    is written only inside the loop, atomically, after a collective that every
    rank reaches; the loop ends with a barrier; so every rank reads the same,
    complete file when a run starts.

    Examples
    --------
    >>> import tempfile
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> net = torch.nn.Linear(3, 1)
    >>> def step_fn(step, gen):
    ...     x = torch.randn(16, 3, generator=gen)
    ...     loss = ((net(x) - x.sum(1, keepdim=True)) ** 2).mean()
    ...     return loss, {"loss": round(loss.item(), 4)}, {}
    >>> settings = OptimSettings(lr=0.1, weight_decay=0.0, warmup=1, grad_clip=1.0, ema_decay=0.5)
    >>> with tempfile.TemporaryDirectory() as run:
    ...     state = train_loop(net, step_fn, config={}, optim=settings, steps=50, out=Path(run),
    ...                        progress=False)
    ...     torch.load(state, weights_only=True)["step"]
    50
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    state_path = out / "state.pt"
    device = next(model.parameters()).device
    world = World.from_env()
    ema = copy.deepcopy(model).requires_grad_(False)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=optim.lr, weight_decay=optim.weight_decay, betas=optim.betas
    )
    generator = torch.Generator().manual_seed(rank_seed(seed, world.rank))
    step, wall = 0, 0.0
    if state_path.exists():
        # on the CPU: generator states must stay there; the rest is copied to the model's device
        state = torch.load(state_path, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
        ema.load_state_dict(state["ema"])
        optimizer.load_state_dict(state["optim"])
        step, wall = state["step"], state["wall_seconds"]
        generator.set_state(resumed_generator_state(state, world, seed))
        if world.is_main:
            truncate_log(out / "log.jsonl", step)

    def save(backend: str | None) -> None:
        generators = all_ranks(world, generator.get_state())  # every rank saves at the same steps
        if not world.is_main:
            return
        parallel = {"generators": generators, "world_size": world.size, "backend": backend}
        tmp = state_path.with_suffix(".tmp")
        torch.save(
            {
                "model": model.state_dict(), "ema": ema.state_dict(),
                "optim": optimizer.state_dict(), "generator": generators[0],
                "step": step, "wall_seconds": wall, "config": config, "seed": seed,
                "threads": torch.get_num_threads(), "device": str(device),
                **(parallel if world.distributed else {}),
            },
            tmp,
        )
        tmp.replace(state_path)

    from skfm._backend import threads as threads_ctx

    # ranks other than 0 log to the null device
    log_path = out / "log.jsonl" if world.is_main else Path(os.devnull)
    with process_group(world, device) as backend, threads_ctx(threads), log_path.open("a") as log:
        run_step = (data_parallel(model, step_fn, device, unused_parameters)
                    if world.distributed else step_fn)
        bar = progress_bar(total=steps, initial=step, verbose=progress and world.is_main, desc=desc)
        model.train()
        while step < steps:
            t0 = time.perf_counter()
            lr = optim.lr_at(step, steps)
            for group in optimizer.param_groups:
                group["lr"] = lr
            loss, record, postfix = run_step(step, generator)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), optim.grad_clip)
            finite = bool(torch.isfinite(norm))  # the same on every rank: gradients are averaged
            if finite:  # a non-finite loss or gradient would turn every weight into NaN
                optimizer.step()
                with torch.no_grad():
                    decay = min(optim.ema_decay, (step + 1) / (step + 10))
                    for p_ema, p in zip(ema.parameters(), model.parameters(), strict=True):
                        p_ema.lerp_(p, 1 - decay)
            step += 1
            wall += time.perf_counter() - t0
            bar.update(1)
            bar.set_postfix(postfix)
            record = {"step": step, "lr": round(lr, 8), **record, **({} if finite else
                                                                    {"skipped": "non-finite"})}
            if eval_fn is not None and world.is_main and (step % eval_every == 0 or step == steps):
                ema.eval()
                record["eval_ema"] = eval_fn(ema)
                record["wall_seconds"] = round(wall, 1)
                logger.info("%s", json.dumps(record))
            log.write(json.dumps(record) + "\n")
            if step % save_every == 0 or step == steps:
                save(backend)
                log.flush()
        bar.close()
        # The DDP wrapper goes while the process group lives: were its reducer the group's last
        # owner, the group's destructor would join gloo's worker threads holding the GIL, a
        # deadlock when a worker is still freeing a Python tensor (pytorch/pytorch#56297).
        del run_step
        gc.collect()
    return state_path


def resumed_generator_state(state: dict, world: World, seed: int) -> torch.Tensor:
    """This rank's batch-generator state when resuming from ``state``.

    The state of every rank of the run that saved ``state`` is in it
    (``generators``; a one-process state has only ``generator``). With the same
    number of processes each rank continues its own stream; with another, rank
    ``r`` continues stream ``r`` if there was one, else starts a fresh one
    seeded by ``rank_seed(seed, r, step)``.
    """
    saved = state.get("generators", [state["generator"]])
    if len(saved) != world.size and world.is_main:
        logger.warning("state.pt was written by %d process(es), resumed by %d: the batches differ "
                       "from those of an uninterrupted run", len(saved), world.size)
    if world.rank < len(saved):
        return saved[world.rank]
    return torch.Generator().manual_seed(rank_seed(seed, world.rank, state["step"])).get_state()


def load_ema(state_path: Path, build: Callable[[dict], torch.nn.Module]) -> tuple[torch.nn.Module, dict]:
    """The EMA weights of a training state in a model built by ``build(config)``, and the state."""
    state = torch.load(state_path, map_location="cpu", weights_only=True)
    model = build(state["config"])
    model.load_state_dict(state["ema"])
    return model.eval(), state


def learning_curve(log: Path) -> list[dict]:
    """The evaluations of a run's ``log.jsonl``: step, training seconds and the EMA's metrics."""
    if not log.exists():
        return []
    records = (json.loads(line) for line in log.read_text().splitlines() if line.strip())
    return [{"step": r["step"], "wall_seconds": r.get("wall_seconds"), **r["eval_ema"]}
            for r in records if "eval_ema" in r]


def training_card(state: dict, unit: str) -> dict:
    """The ``training`` section of a card: optimiser config, steps, ``<unit>_seen``, time, hardware.

    A data-parallel run's card adds ``world_size`` and ``backend``; its
    ``batch_size`` is per process and ``<unit>_seen`` counts all processes.

    Examples
    --------
    >>> state = {"config": {"optim": {"batch_size": 8}}, "step": 10, "wall_seconds": 5.0,
    ...          "seed": 0, "threads": 1, "device": "cpu", "world_size": 2, "backend": "gloo"}
    >>> card = training_card(state, "datasets")
    >>> card["datasets_seen"], card["world_size"], card["hardware"].split(", ")[1:3]
    (160, 2, ['2 processes on cpu (gloo)', '1 threads each'])
    """
    optim = state["config"]["optim"]
    world = state.get("world_size", 1)
    # threads and device of the training run (states saved before they were recorded: now's)
    threads, device = state.get("threads", torch.get_num_threads()), state.get("device", "cpu")
    if world > 1:
        device = f"{world} processes on {torch.device(device).type} ({state['backend']})"
    parallel = {"world_size": world, "backend": state["backend"]} if world > 1 else {}
    return {
        **optim,
        **parallel,
        "steps": state["step"],
        f"{unit}_seen": state["step"] * optim["batch_size"] * world,
        "wall_seconds": round(state["wall_seconds"], 1),
        "seed": state["seed"],
        "hardware": f"{platform.machine()}, {device}, {threads} threads{' each' * (world > 1)}, "
                    f"torch {torch.__version__}",
        "weights": "exponential moving average",
    }


def save_model(model: torch.nn.Module, target: Path, card: dict) -> Path:
    """Write ``model``'s weights as a shipped checkpoint (safetensors + json card)."""
    from skfm._weights import save_checkpoint

    state_np = {k: v.detach().float().cpu().numpy() for k, v in model.state_dict().items()}
    return save_checkpoint(target, state_np, card)


def compact_state(state_path: Path, target: Path) -> Path:
    """Write a smaller copy of a training state that a run resumes from as it is.

    Weights and their EMA are stored in float16, the optimiser's moments in
    bfloat16 (squared gradients underflow float16); the step, generators and
    config are kept. Copied to ``<out>/state.pt``, the run resumes from it:
    loading casts every tensor back to float32. Meant for committing the state
    of a run that spans sessions (a few MB instead of four times the model).

    Examples
    --------
    >>> import tempfile
    >>> net = torch.nn.Linear(3, 1)
    >>> with tempfile.TemporaryDirectory() as run:
    ...     torch.save({"model": net.state_dict(), "ema": net.state_dict(), "step": 7},
    ...                f"{run}/state.pt")
    ...     small = compact_state(Path(run) / "state.pt", Path(run) / "small.pt")
    ...     state = torch.load(small, weights_only=True)
    ...     state["model"]["weight"].dtype, state["step"]
    (torch.float16, 7)
    """
    state = torch.load(state_path, map_location="cpu", weights_only=True)

    def cast(value, dtype):
        if isinstance(value, torch.Tensor):
            return value.to(dtype) if value.is_floating_point() and value.dim() > 0 else value
        if isinstance(value, dict):
            return {key: cast(item, dtype) for key, item in value.items()}
        return value

    small = {**state, "model": cast(state["model"], torch.float16),
             "ema": cast(state["ema"], torch.float16)}
    if "optim" in state:
        small["optim"] = {**state["optim"], "state": cast(state["optim"]["state"], torch.bfloat16)}
    target.parent.mkdir(parents=True, exist_ok=True)
    torch.save(small, target)
    return target
