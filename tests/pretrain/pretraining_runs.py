"""Tiny pretraining runs shared by the tests of every pretraining loop (TabSwift, Mantis)."""

import json

import torch


def read_log(run_dir) -> list[dict]:
    """The records of a run's ``log.jsonl``, in order."""
    return [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]


def train_tiny(module, out, steps):
    """``module.train`` on its ``tiny`` config for ``steps`` steps (resumes what ``out`` holds);
    saves and evaluates every 2 steps, on one CPU thread. Returns the path of ``state.pt``."""
    return module.train(module.load_config("tiny"), steps=steps, out=out, device="cpu",
                        save_every=2, eval_every=2, progress=False, threads=1)


def four_then_six_steps(module, out) -> dict:
    """A tiny run of 4 steps, then resumed to 6; the log and state at 4 steps are kept."""
    state_path = train_tiny(module, out, 4)
    first = {"log": read_log(out), "state": torch.load(state_path, weights_only=True)}
    train_tiny(module, out, 6)
    return {"out": out, "state_path": state_path, "first": first}
