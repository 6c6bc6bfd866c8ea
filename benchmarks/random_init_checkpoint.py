"""Write a TabSwift checkpoint with the shipped architecture at random initialisation.

The baseline row "same architecture, no pretraining" of the CC18 report:

    python benchmarks/random_init_checkpoint.py /tmp/random-init.safetensors
    python benchmarks/cc18.py --splits 1 --models tabswift --n-estimators 1 \
        --checkpoint /tmp/random-init.safetensors --out /tmp/random-init-bench
"""

import sys

import torch

from skfm._weights import load_checkpoint, save_checkpoint
from skfm.tabular.base import DEFAULT_CHECKPOINT
from skfm.tabular.model import TabSwift, TabSwiftConfig


def main(target: str) -> None:
    config = load_checkpoint(DEFAULT_CHECKPOINT).card["config"]
    torch.manual_seed(0)
    model = TabSwift(TabSwiftConfig(**config))
    # output projections start at zero (every block the identity); draw them too, so that the
    # baseline is a real random network rather than an embedding followed by the head
    for name, p in model.named_parameters():
        if name.endswith(("attn.out.weight", "ffn.2.weight")):
            torch.nn.init.normal_(p, std=0.02)
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    save_checkpoint(target, state, {"model": "tabswift", "config": config, "note": "random init"})


if __name__ == "__main__":
    main(sys.argv[1])
