"""``skfm pretrain tabswift`` under torchrun, recording what this rank trained.

Started by ``tests/pretrain/test_distributed.py`` as ``torchrun ... ddp_pretrain_worker.py
RECORD_DIR <skfm arguments>``. Writes ``RECORD_DIR/rank<RANK>.pt``: the model's
parameters (flattened) before and after training, and the record of every step
this rank ran (rank 0 alone writes the run's log).
"""

import os
import sys
from pathlib import Path

import torch

from skfm.cli import main
from skfm.pretrain import _loop, tabswift


def _flat(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()]).clone()


def _recording_loop(seen: dict):
    def train_loop(model, step_fn, **kwargs):
        seen["initial"] = _flat(model)

        def recorded_step(step, generator):
            loss, record, postfix = step_fn(step, generator)
            seen["records"].append(record)
            return loss, record, postfix

        path = _loop.train_loop(model, recorded_step, **kwargs)
        seen["final"] = _flat(model)
        return path

    return train_loop


if __name__ == "__main__":
    seen = {"records": []}
    tabswift.train_loop = _recording_loop(seen)
    main(sys.argv[2:])
    torch.save(seen, Path(sys.argv[1]) / f"rank{os.environ['RANK']}.pt")
