"""The ``skfm`` command: ``demo``, ``info``, ``pretrain``."""

from __future__ import annotations

import argparse
import sys
from importlib import import_module
from pathlib import Path


def _pretrain(args: argparse.Namespace) -> None:
    """Train (or resume), then optionally export with the command recorded in the card.

    Under ``torchrun`` every process trains (data-parallel) and rank 0 exports.
    """
    from skfm.pretrain._distributed import World

    module = import_module(f"skfm.pretrain.{args.model.replace('-', '_')}")
    state = module.train(
        module.load_config(args.config), steps=args.steps, out=Path(args.out), device=args.device,
        seed=args.seed, save_every=args.save_every, eval_every=args.eval_every,
        threads=args.threads, progress=not args.quiet,
    )
    world = World.from_env()
    if args.export and world.is_main:
        command = world.launcher() + "skfm " + " ".join(args.argv)
        path = module.export(state, Path(args.export), {"command": command})
        print(f"exported {path}")


def _info(args: argparse.Namespace) -> None:
    from skfm._commands import print_info

    print_info()


def _demo(args: argparse.Namespace) -> None:
    from skfm._commands import run_demo

    run_demo(plot=args.plot, quick=args.quick)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="skfm", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="score every estimator on bundled data against baselines")
    demo.add_argument("--plot", default="skfm_demo.png", help="where to save the figure")
    demo.add_argument("--quick", action="store_true", help="smaller ensembles, fewer datasets")
    demo.set_defaults(func=_demo)

    info = sub.add_parser("info", help="version, device and shipped checkpoints")
    info.set_defaults(func=_info)

    pretrain = sub.add_parser("pretrain", help="pretrain a model on its synthetic prior")
    pretrain.add_argument("model", choices=["tabswift", "mantis", "timeseries-backbone"])
    pretrain.add_argument("--config", default="small", help="'small', 'tiny' or a json path")
    pretrain.add_argument("--steps", type=int, required=True, help="total optimiser steps")
    pretrain.add_argument("--out", required=True, help="run folder (state.pt, log.jsonl)")
    pretrain.add_argument("--device", default="auto",
                          help="'auto', 'cpu' or 'cuda'; under torchrun a GPU means cuda:LOCAL_RANK")
    pretrain.add_argument("--seed", type=int, default=0)
    pretrain.add_argument("--save-every", type=int, default=200)
    pretrain.add_argument("--eval-every", type=int, default=500)
    pretrain.add_argument("--threads", type=int, default=None)
    pretrain.add_argument("--export", default=None, help="write NAME.safetensors + card when done")
    pretrain.add_argument("--quiet", action="store_true", help="no progress bar")
    pretrain.set_defaults(func=_pretrain)
    return parser


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    args.func(args)


if __name__ == "__main__":
    main()
