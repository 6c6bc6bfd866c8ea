"""Coverage of TabMGP's credible intervals for spread estimands, against the Bayesian bootstrap.

Estimands (one callable, so both come from the same rollouts): ``sd``, the standard deviation
of ``y`` (``np.std``), and ``resid_sd``, the root mean squared residual of the least-squares
fit of ``y`` on the features. Data: the synthetic setup of ``tabmgp_coverage.py``
(``x ~ U(-1, 1)^d``, coefficients drawn once from ``U(-2, 3)``, errors N(0, 1)), so the truths
are known: ``sd* = sqrt(sum(slopes**2) / 3 + 1)`` and ``resid_sd* = 1``.

Methods, each with the same ``B`` rollouts of horizon ``N``:

- ``tabmgp``: ``TabMGPRegressor`` with its default base (one TabSwift member with its guard);
- ``tabmgp_noguard``: the same with ``guard=False`` (draws from the in-context model alone);
- ``bb``: the Bayesian bootstrap (Polya urn over the observed pairs), the estimands on the
  weighted rows.

Besides coverage and width, the report gives the posterior median over the sample value (a
shift of the whole posterior shows as a ratio away from 1) and, for the guarded base, the
cross-conformal ``interval_scale_`` that stretches its predictive spread.

Example (a small run, about 4 CPU minutes on one thread)::

    python benchmarks/tabmgp_spread.py --seeds 20 --n 60 --rollouts 50 --out docs/benchmarks
"""

from __future__ import annotations

import argparse

import _common as C
import numpy as np
import pandas as pd
from tabmgp_coverage import LEVELS, quantile_intervals, synthetic

METHODS = ("tabmgp", "tabmgp_noguard", "bb")
ESTIMANDS = ("sd", "resid_sd")


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=20, help="data sets (seeds 1001..)")
    p.add_argument("--n", type=int, default=60, help="training rows")
    p.add_argument("--d", type=int, default=3, help="features")
    p.add_argument("--rollouts", type=int, default=50, help="posterior draws B")
    p.add_argument("--horizon", type=int, default=250, help="imputed rows N per rollout")
    p.add_argument("--methods", default=",".join(METHODS), help="comma-separated")
    C.add_out_argument(p, notes=True)
    p.add_argument("--name", default="tabmgp_spread", help="report file stem")
    return p.parse_args(argv)


def spreads(X, y, weights=None) -> pd.Series:
    """The spread estimands of (weighted) rows: sd of y and the least-squares residual sd."""
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    mean = np.average(y, weights=w)
    Z = np.column_stack([np.ones(len(y)), X])
    root = np.sqrt(w)
    coef = np.linalg.lstsq(Z * root[:, None], y * root, rcond=None)[0]
    return pd.Series({"sd": np.sqrt(np.average((y - mean) ** 2, weights=w)),
                      "resid_sd": np.sqrt(np.average((y - Z @ coef) ** 2, weights=w))})


def truths(d: int) -> np.ndarray:
    """``sd*`` and ``resid_sd*`` of the synthetic setup (uniform features, unit noise)."""
    slopes = synthetic(2, d, "gaussian", 0)[2][1:]
    return np.array([np.sqrt(np.sum(slopes**2) / 3 + 1), 1.0])


def tabmgp(X, y, seed, args, guard=True) -> tuple[np.ndarray, dict]:
    from skfm import TabMGPRegressor, TabSwiftRegressor

    base = TabSwiftRegressor(n_estimators=1, large_table="subsample", guard=guard, n_jobs=1,
                             random_state=seed)
    mgp = TabMGPRegressor(base, estimand=spreads, n_rollouts=args.rollouts,
                          horizon=args.horizon, random_state=seed).fit(X, y)
    # the base's predictive sd at the training rows (its root mean variance), to set beside
    # the residual sd: a predictive wider than the noise imputes rows more spread than the data
    draws = mgp.estimator_.sample_y(X, n_samples=200, random_state=seed)
    return mgp.posterior_samples_, {"interval_scale": mgp.estimator_.interval_scale_,
                                    "blend_weight": mgp.estimator_.blend_weight_,
                                    "predictive_sd": float(np.sqrt(draws.var(axis=1).mean()))}


def bayesian_bootstrap(X, y, seed, args) -> tuple[np.ndarray, dict]:
    rng = np.random.default_rng(seed)
    draws = [spreads(X, y, 1 + rng.multinomial(args.horizon, rng.dirichlet(np.ones(len(y)))))
             for _ in range(args.rollouts)]
    return np.array(draws), {}


RUN = {"tabmgp": tabmgp, "tabmgp_noguard": lambda *a: tabmgp(*a, guard=False),
       "bb": bayesian_bootstrap}


def run_all(args) -> pd.DataFrame:
    """One row per seed, method and estimand."""
    truth = truths(args.d)
    methods = [m for m in args.methods.split(",") if m]
    records = []
    for seed in range(1001, 1001 + args.seeds):
        X, y, _ = synthetic(args.n, args.d, "gaussian", seed)
        sample = spreads(X, y).to_numpy()
        for method in methods:
            (draws, extra), seconds = C.timed(RUN[method], X, y, seed, args)
            intervals = quantile_intervals(draws)
            for j, estimand in enumerate(ESTIMANDS):
                row = {"seed": seed, "method": method, "estimand": estimand,
                       "truth": truth[j], "sample": sample[j],
                       "median": float(np.median(draws[:, j])), "seconds": seconds, **extra}
                for level in LEVELS:
                    lo, hi = intervals[level][:, j]
                    tag = round(level * 100)
                    row[f"cover{tag}"] = float(lo <= truth[j] <= hi)
                    row[f"width{tag}"] = float(hi - lo)
                records.append(row)
        print(f"seed {seed} done", flush=True)
    return pd.DataFrame(records)


def summary(raw: pd.DataFrame) -> pd.DataFrame:
    """Coverage, median width and posterior median / sample value, per estimand and method."""
    raw = raw.assign(shift=raw["median"] / raw["sample"],
                     predictive_sd=raw.get("predictive_sd", np.nan))  # none with --methods bb
    table = raw.groupby(["estimand", "method"], sort=False).agg(
        seeds=("seed", "nunique"), cover95=("cover95", "mean"), cover80=("cover80", "mean"),
        width95=("width95", "median"), width80=("width80", "median"),
        median_over_sample=("shift", "median"), sample_over_truth=("sample", "median"),
        predictive_sd=("predictive_sd", "median"))
    table["sample_over_truth"] /= raw.groupby(["estimand", "method"], sort=False)["truth"].first()
    table.index = [f"{estimand}, {method}" for estimand, method in table.index]
    table["seeds"] = table["seeds"].astype(str)
    return table


def main(argv=None) -> None:
    args = parse_args(argv)
    raw = run_all(args)
    setup = (f"A small run: {args.seeds} seeds (1001..), n={args.n} rows, d={args.d} features, "
             f"Gaussian errors, B={args.rollouts} rollouts of horizon N={args.horizon} (TabMGP "
             "block size 0.1, its default), one torch thread. Coverage: share of seeds whose "
             f"equal-tailed interval holds the truth (sd* = {truths(args.d)[0]:.3f}, "
             "resid_sd* = 1; Monte Carlo s.e. about sqrt(c(1-c)/seeds), 0.05 at 0.95 and 20 "
             "seeds); width: median over seeds; median_over_sample: median over seeds of the "
             "posterior median divided by the sample value; sample_over_truth: median sample "
             "value over the truth; predictive_sd: median over seeds of the base model's "
             "predictive standard deviation at the training rows (root mean variance of 200 "
             "draws per row; the noise sd is 1).")
    sections = [setup, *C.read_notes(args.notes_file),
                "## Coverage and width\n\n"
                + C.markdown_table(summary(raw), floatfmt=".3f", index_name="estimand, method")]
    guarded = raw[(raw.method == "tabmgp") & (raw.estimand == "sd")]
    if len(guarded):
        sections.append(
            "## The guard's spread stretch\n\n"
            f"`interval_scale_` of the guarded base over the seeds: median "
            f"{guarded.interval_scale.median():.3f}, range {guarded.interval_scale.min():.3f} to "
            f"{guarded.interval_scale.max():.3f}; TabSwift's share `blend_weight_` median "
            f"{guarded.blend_weight.median():.2f}.")
    path = C.write_report(args.out, args.name, "TabMGP coverage of spread estimands", sections,
                          raw, args.notes_file)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
