"""Wall time of TabMGPRegressor per block size, and the coverage each block size gives.

Setup (the issue's): B = ``--rollouts`` (100) rollouts of N = ``--horizon`` (250) imputed rows
on n = ``--n`` (100) training rows with ``--d`` (5) features, the synthetic linear-regression
data of ``tabmgp_coverage.py`` (Gaussian errors by default), least-squares estimand. For each
block size: the wall time of one ``fit`` (base fit + all rollouts + estimand, median of
``--repeats``, after one warm-up fit) with ``torch`` using every core it finds, then the 95% and
80% marginal coverage and median 95% width over ``--seeds`` data sets (seeds 1001, ...).
``--n-estimators`` sets the TabSwift members (8 = ``TabMGPRegressor()``'s default base).

Results go to ``<out>/tabmgp_timing.md`` and ``.csv``.

Example
-------
python benchmarks/tabmgp_timing.py --block-sizes 1,10,50 --seeds 10 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import sys
import time

import _common as C
import numpy as np
import pandas as pd
import tabmgp_coverage as cov
import torch


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--block-sizes", default="1,10,50", help="comma-separated")
    p.add_argument("--rollouts", type=int, default=100, help="posterior draws B")
    p.add_argument("--horizon", type=int, default=250, help="imputed rows N per rollout")
    p.add_argument("--n", type=int, default=100, help="training rows")
    p.add_argument("--d", type=int, default=5, help="features")
    p.add_argument("--error", default="gaussian", choices=cov.ERRORS, help="error law")
    p.add_argument("--n-estimators", type=int, default=8, help="TabSwift ensemble members")
    p.add_argument("--seeds", type=int, default=10, help="data sets for the coverage columns")
    p.add_argument("--repeats", type=int, default=1, help="timed fits per block size")
    p.add_argument("--checkpoint", default="tabswift-v1", help="TabSwift checkpoint")
    p.add_argument("--out", default=C.DEFAULT_OUT, help="output folder")
    return p.parse_args(argv)


def make(block_size: int, seed: int, args):
    from skfm import TabSwiftRegressor
    from skfm.tabular.martingale import TabMGPRegressor

    base = TabSwiftRegressor(
        n_estimators=args.n_estimators, checkpoint=args.checkpoint, random_state=seed
    )
    return TabMGPRegressor(
        base, n_rollouts=args.rollouts, horizon=args.horizon, block_size=block_size,
        random_state=seed,
    )


def main(argv=None) -> None:
    args = parse_args(argv)
    blocks = [int(b) for b in args.block_sizes.split(",")]
    X, y, _ = cov.synthetic(args.n, args.d, args.error, 1000)
    make(max(blocks), 0, args).fit(X, y)  # warm-up: loads the checkpoint, fills caches
    records = []
    for block in blocks:
        seconds = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            make(block, 0, args).fit(X, y)
            seconds.append(time.perf_counter() - start)
        for seed in range(1001, 1001 + args.seeds):
            Xs, ys, theta = cov.synthetic(args.n, args.d, args.error, seed)
            mgp = make(block, seed, args).fit(Xs, ys)
            intervals = {lv: np.stack(mgp.credible_interval(lv)) for lv in cov.LEVELS}
            records.append(
                {"block_size": block, "seed": seed, "fit_seconds": float(np.median(seconds)),
                 **cov.score(intervals, theta)}
            )
        print(f"block {block}: {np.median(seconds):.1f}s per fit", file=sys.stderr, flush=True)
    raw = pd.DataFrame(records)
    table = raw.groupby("block_size").agg(
        seconds=("fit_seconds", "first"), cover95=("cover95", "mean"),
        cover80=("cover80", "mean"), width95=("width95", "median"),
    )
    table.insert(1, "model calls per rollout", [str(-(-args.horizon // b)) for b in table.index])
    table.insert(2, "speed-up vs slowest", table["seconds"].max() / table["seconds"])
    sections = [
        f"Setup: B={args.rollouts} rollouts, N={args.horizon} imputed rows, n={args.n} "
        f"training rows, d={args.d} features ({args.error} errors), TabSwift n_estimators="
        f"{args.n_estimators}, checkpoint `{args.checkpoint}`, {torch.get_num_threads()} torch "
        f"threads. Seconds: one full `fit` (median of {args.repeats}). Coverage and width: "
        f"{args.seeds} data sets per block size.",
        C.markdown_table(table, floatfmt=".3f", index_name="block size"),
    ]
    path = C.write_report(args.out, "tabmgp_timing", "TabMGP time per block size", sections, raw)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
