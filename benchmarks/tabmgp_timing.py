"""Wall time of TabMGPRegressor per block size, and the coverage each block size gives.

Setup (the issue's): B = ``--rollouts`` (100) rollouts of N = ``--horizon`` (250) imputed rows
on n = ``--n`` (100) training rows with ``--d`` (5) features, the synthetic linear-regression
data of ``tabmgp_coverage.py`` (Gaussian errors by default), least-squares estimand. For each
block size (an integer, or a fraction of the current context): the wall time of one ``fit``
(base fit + all rollouts + estimand, after one warm-up fit) with ``torch`` using every core it
finds, all block sizes timed before any coverage fit starts; then the 95% and 80% marginal
coverage and median 95% width over ``--seeds`` data sets (seeds 1001, ...; fewer when
``--coverage-budget`` seconds per block size run out).
``--n-estimators`` sets the TabSwift members; the default ``TabMGPRegressor()`` is timed once
more on the same data unless ``--skip-default``. ``--coverage-from RAW.csv`` re-times only and takes the
coverage rows of an earlier run with the same settings (the draws do not depend on the timing).

Results go to ``<out>/tabmgp_timing.md`` and ``.csv``.

Example
-------
python benchmarks/tabmgp_timing.py --block-sizes 50,10,0.1,1 --seeds 10 --out docs/benchmarks
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
    p.add_argument("--block-sizes", default="50,10,0.1,1", help="integers or fractions (0, 1)")
    p.add_argument("--rollouts", type=int, default=100, help="posterior draws B")
    p.add_argument("--horizon", type=int, default=250, help="imputed rows N per rollout")
    p.add_argument("--n", type=int, default=100, help="training rows")
    p.add_argument("--d", type=int, default=5, help="features")
    p.add_argument("--error", default="gaussian", choices=cov.ERRORS, help="error law")
    p.add_argument("--n-estimators", type=int, default=1, help="TabSwift ensemble members")
    p.add_argument("--seeds", type=int, default=10, help="data sets for the coverage columns")
    p.add_argument(
        "--coverage-budget", type=float, default=None,
        help="seconds per block size for the coverage fits (fewer seeds when they run out)",
    )
    p.add_argument("--checkpoint", default="tabswift-v1", help="TabSwift checkpoint")
    p.add_argument(
        "--coverage-from", default=None,
        help="raw CSV of an earlier run with the same settings: reuse its coverage rows",
    )
    p.add_argument("--skip-default", action="store_true", help="do not time TabMGPRegressor()")
    C.add_out_argument(p)
    p.add_argument("--name", default="tabmgp_timing", help="report file stem")
    return p.parse_args(argv)


def block_size(text: str):
    """``"10"`` -> 10, ``"0.1"`` -> 0.1."""
    value = float(text)
    return int(value) if value >= 1 else value


def make(block, seed: int, args, n_estimators: int | None = None):
    from skfm import TabSwiftRegressor
    from skfm.tabular.martingale import TabMGPRegressor

    base = TabSwiftRegressor(
        n_estimators=n_estimators or args.n_estimators, checkpoint=args.checkpoint,
        random_state=seed,
    )
    return TabMGPRegressor(
        base, n_rollouts=args.rollouts, horizon=args.horizon, block_size=block, random_state=seed
    )


def urn_reference(blocks, horizon: int, n_draws: int = 2000) -> pd.DataFrame:
    """Posterior sd of the mean under the empirical (Bayesian-bootstrap) predictive, per block
    size, relative to block size 1: the blocking error with no model in the way."""
    from skfm.tabular.martingale import predictive_resampling

    def empirical(rows, y, new, rng):  # y of a uniformly drawn row of each rollout's context
        return np.take_along_axis(y, rng.integers(0, y.shape[1], size=new.shape), 1)

    out = {}
    for n in (20, 50, 100):
        y = np.random.default_rng(n).normal(size=n)
        sd = {}
        for block in sorted(blocks, key=lambda b: b != 1):
            rng = np.random.default_rng(0)
            _, targets = predictive_resampling(empirical, y, n_draws, horizon, block, rng)
            sd[f"{block:g}"] = targets.mean(1).std()
        out[f"n={n}"] = {k: v / sd["1"] for k, v in sd.items()}
    return pd.DataFrame(out).T[[f"{b:g}" for b in blocks]]


def timed_fit(model, X, y) -> tuple[float, float]:
    """Wall and CPU seconds (all threads of this process) of ``model.fit(X, y)``."""
    wall, cpu = time.perf_counter(), C.cpu_seconds()
    model.fit(X, y)
    return time.perf_counter() - wall, C.cpu_seconds() - cpu


def time_defaults(args, X, y) -> list[str]:
    """One line per default setting: ``TabMGPRegressor()`` with 1 and with 8 TabSwift members."""
    from skfm import TabSwiftRegressor
    from skfm.tabular.martingale import TabMGPRegressor

    lines = []
    for members, label in ((1, "`TabMGPRegressor()` (base: 1 member)"),
                           (8, "with base `TabSwiftRegressor()` (8 members)")):
        default = TabMGPRegressor(TabSwiftRegressor(n_estimators=members, checkpoint=args.checkpoint))
        seconds, cpu = timed_fit(default, X, y)
        lines.append(f"{label}: **{seconds:.1f} s** per fit ({cpu:.1f} CPU s)")
    return lines


COLUMNS = ["block_size", "seed", "cover95", "width95", "cover80", "width80"]


def coverage_rows(args, blocks, timings) -> pd.DataFrame:
    """One row per (block size, seed): coverage and width of the 95% and 80% intervals.

    Fitted here within ``--coverage-budget`` seconds per block size, or read from the raw CSV
    of an earlier run (``--coverage-from``): the draws depend on the settings and seeds only,
    not on how fast they were made.
    """
    if args.coverage_from:
        raw = C.earlier_rows(args.coverage_from)
        raw["block_size"] = raw["block_size"].map(lambda b: f"{b:g}")
        raw = raw[raw.seed.notna() & raw.block_size.isin([f"{b:g}" for b in blocks])]
        return raw[[*COLUMNS, C.MEASURED_BY]].astype({"seed": int}).reset_index(drop=True)
    records = []
    for block in blocks:
        deadline = time.perf_counter() + (args.coverage_budget or np.inf)
        for seed in range(1001, 1001 + args.seeds):
            if time.perf_counter() + timings[f"{block:g}"]["seconds"] > deadline:
                break
            Xs, ys, theta = cov.synthetic(args.n, args.d, args.error, seed)
            mgp = make(block, seed, args).fit(Xs, ys)
            intervals = {lv: np.stack(mgp.credible_interval(lv)) for lv in cov.LEVELS}
            score = cov.score(intervals, theta)
            records.append({"block_size": f"{block:g}", "seed": seed, **score})
    return pd.DataFrame(records, columns=COLUMNS)


def main(argv=None) -> None:
    from skfm.tabular.martingale import TabMGPRegressor

    args = parse_args(argv)
    blocks = [block_size(b) for b in args.block_sizes.split(",")]
    X, y, _ = cov.synthetic(args.n, args.d, args.error, 1000)
    make(50, 0, args).fit(X, y)  # warm-up: loads the checkpoint, fills caches
    timings = {}
    for block in blocks:  # every timing first, so that later jobs on the machine cannot skew them
        seconds, cpu = timed_fit(make(block, 0, args), X, y)
        timings[f"{block:g}"] = {"seconds": seconds, "cpu seconds": cpu}
        print(f"block {block}: {seconds:.1f}s ({cpu:.1f} cpu s)", file=sys.stderr, flush=True)
    defaults = [] if args.skip_default else time_defaults(args, X, y)
    print("timings done; coverage fits next", file=sys.stderr, flush=True)
    raw = coverage_rows(args, blocks, timings)
    table = pd.DataFrame(timings).T
    table["cpu speed-up vs slowest"] = table["cpu seconds"].max() / table["cpu seconds"]
    coverage = raw.groupby("block_size").agg(
        seeds=("seed", "size"), cover95=("cover95", "mean"), cover80=("cover80", "mean"),
        width95=("width95", "median"),
    )
    table = table.join(coverage)
    table["seeds"] = table["seeds"].fillna(0).astype(int).astype(str)
    times = table[["seconds", "cpu seconds"]]
    raw = raw.merge(times, left_on="block_size", right_index=True, how="right")
    sections = [
        f"Setup: B={args.rollouts} rollouts, N={args.horizon} imputed rows, n={args.n} "
        f"training rows, d={args.d} features ({args.error} errors), TabSwift n_estimators="
        f"{args.n_estimators}, checkpoint `{args.checkpoint}`, {torch.get_num_threads()} torch "
        "threads. Seconds: wall and CPU time (all threads) of one full `fit` (base fit + "
        "rollouts + estimand); CPU time grows less than wall time when other jobs share the "
        "machine (idle torch threads still spin). Coverage and width over `seeds` data sets "
        "(seeds 1001, ...)"
        + (f", reused from an earlier run with the same settings (block sizes "
           f"{C.origins(raw, 'block_size')}; the draws do not depend on the timing)."
           if args.coverage_from else "."),
        C.markdown_table(table, floatfmt=".3f", index_name="block size"),
    ]
    if 1 in blocks:
        sections.append(
            "Blocking error without a model: posterior sd of the mean of y under the empirical "
            f"(Bayesian-bootstrap) predictive, N={args.horizon}, 2000 rollouts, relative to "
            "block size 1 (columns: block size; a block draws its rows from the same context):"
            "\n\n" + C.markdown_table(urn_reference(blocks, args.horizon), floatfmt=".3f")
        )
    if defaults:
        sections.append(
            f"Defaults (B=100, N=250, block_size={TabMGPRegressor().block_size}), same data: "
            + "; ".join(defaults) + "."
        )
    path = C.write_report(args.out, args.name, "TabMGP time per block size", sections, raw)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
