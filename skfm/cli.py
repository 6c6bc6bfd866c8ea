"""The ``skfm`` command: ``demo``, ``info``, ``pretrain``, ``bench``."""

from __future__ import annotations

import argparse
import sys
from importlib import import_module
from pathlib import Path

MODELS = ["tabswift", "mantis", "timeseries-backbone"]
#: Models whose pretraining can score its learning curve on real data (``--screen``).
SCREEN_MODELS = ["tabswift", "mantis"]


def _pretrain(args: argparse.Namespace) -> None:
    """Train (or resume), then optionally export with the command recorded in the card.

    Under ``torchrun`` every process trains (data-parallel) and rank 0 exports.
    """
    from skfm.pretrain import World

    if args.screen and args.model not in SCREEN_MODELS:
        raise SystemExit(f"skfm pretrain: --screen is supported for {', '.join(SCREEN_MODELS)}, "
                         f"not {args.model}")
    if args.regression_screen and args.model != "tabswift":
        raise SystemExit(f"skfm pretrain: --regression-screen is supported for tabswift, "
                         f"not {args.model}")
    module = import_module(f"skfm.pretrain.{args.model.replace('-', '_')}")
    state = module.train(
        module.load_config(args.config), steps=args.steps, out=Path(args.out), device=args.device,
        seed=args.seed, save_every=args.save_every, eval_every=args.eval_every,
        threads=args.threads, progress=not args.quiet, **({"init": args.init} if args.init else {}),
        **({"screen": args.screen} if args.screen else {}),
        **({"regression_screen_data": args.regression_screen} if args.regression_screen else {}),
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


def _bench(args: argparse.Namespace) -> int:
    """List the benchmark scripts of the checkout, or run one with the remaining arguments."""
    from skfm._bench import find_benchmarks, format_listing, list_benchmarks, run_benchmark

    try:
        folder = find_benchmarks()
        if args.name is None:
            print(format_listing(list_benchmarks(folder), folder))
            return 0
        return run_benchmark(args.name, args.args, folder)
    except (FileNotFoundError, ValueError) as err:
        raise SystemExit(f"skfm bench: {err}") from None


def _configs_epilog() -> str:
    """The shipped pretraining configs, one a line, for ``skfm pretrain --help``."""
    from skfm._weights import shipped_configs

    lines = ["shipped configs (--config NAME; or the path of a json file with the same sections):"]
    for model in MODELS:
        for name, config in shipped_configs(model).items():
            arch, optim = config["model"], config["optim"]
            lines.append(
                f"  {model + ' ' + name:<26} d_model={arch.get('d_model')}, "
                f"n_layers={arch.get('n_layers')}, n_heads={arch.get('n_heads')}; "
                f"batch_size={optim.get('batch_size')}, lr={optim.get('lr')}"
            )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="skfm", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="score every estimator on bundled data against baselines")
    demo.add_argument("--plot", default="skfm_demo.png",
                      help="where to save the score figure; the other figures go beside it")
    demo.add_argument("--quick", action="store_true", help="smaller ensembles, fewer datasets")
    demo.set_defaults(func=_demo)

    info = sub.add_parser("info", help="version, device and shipped checkpoints")
    info.set_defaults(func=_info)

    pretrain = sub.add_parser("pretrain", help="pretrain a model on its synthetic prior",
                              epilog=_configs_epilog(),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    pretrain.add_argument("model", choices=MODELS)
    pretrain.add_argument("--config", default="small",
                          help="a shipped config (listed below) or a json path")
    pretrain.add_argument("--steps", type=int, required=True, help="total optimiser steps")
    pretrain.add_argument("--out", required=True, help="run folder (state.pt, log.jsonl)")
    pretrain.add_argument("--device", default="auto",
                          help="'auto', 'cpu' or 'cuda'; under torchrun a GPU means cuda:LOCAL_RANK")
    pretrain.add_argument("--seed", type=int, default=0)
    pretrain.add_argument("--save-every", type=int, default=200)
    pretrain.add_argument("--eval-every", type=int, default=500)
    pretrain.add_argument("--threads", type=int, default=None)
    pretrain.add_argument("--init", default=None,
                          help="start from the weights of an exported checkpoint (name or path) "
                               "instead of a random initialisation")
    pretrain.add_argument("--screen", default=None,
                          help="tabswift: a folder of CC18 .npz tables (e.g. "
                               "../shared/data/openml_cc18), every evaluation also scores the "
                               "EMA weights (the network alone) on all of them; mantis: a folder of UCR/UEA .npz "
                               "sets (e.g. ../shared/data/ucr), every evaluation also scores "
                               "the EMA's frozen embeddings + LR on all of them; the learning "
                               "curve of the card")
    pretrain.add_argument("--regression-screen", default=None,
                          help="tabswift: a folder of regression .npz tables (X, y); every "
                               "evaluation also scores the EMA weights' R2 on them")
    pretrain.add_argument("--export", default=None, help="write NAME.safetensors + card when done")
    pretrain.add_argument("--quiet", action="store_true", help="no progress bar")
    pretrain.set_defaults(func=_pretrain)

    bench = sub.add_parser(
        "bench", help="list the benchmark scripts of the source checkout, or run one",
        description="Without NAME: list the scripts in the checkout's benchmarks/ folder "
                    "(the maintained comparisons, then the studies of benchmarks/studies/). "
                    "With NAME: run benchmarks/NAME.py in this Python with ARGS "
                    "(reports go to runs/benchmarks under the current directory unless --out "
                    "says otherwise, and the command prints where; --out docs/benchmarks in "
                    "the checkout regenerates a shipped one; "
                    "`skfm bench NAME --help` shows its options).")
    bench.add_argument("name", nargs="?", help="script name, e.g. cc18 or studies/tabswift_shap")
    bench.add_argument("args", nargs=argparse.REMAINDER, help="passed to the script")
    bench.set_defaults(func=_bench)
    return parser


def main(argv: list[str] | None = None) -> None:
    """Run a subcommand; skfm's log records (info and up) are printed on stderr.

    Exits with the subcommand's status when it is not 0 (``bench``: the script's).
    """
    from skfm._progress import console_logging

    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    with console_logging():
        status = args.func(args)
    if status:
        raise SystemExit(status)


if __name__ == "__main__":
    main()
