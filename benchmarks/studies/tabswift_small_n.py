"""How well TabSwiftRegressor's predictive learns a linear function from few rows.

The data of the TabMGP coverage study (``tabmgp_coverage.py``): ``x ~ U(-1, 1)^d`` (``--d``,
default 10), a fixed linear function with intercept and slopes from ``U(-2, 3)``, N(0, 1) errors,
``--ns`` training rows, 300 fresh test rows, seeds 1001, 1002, ... (``--seeds``). TabMGP's
posterior is only as sharp as this predictive: its rollouts impute y from it.

For every checkpoint (``--checkpoints``, ``TabSwiftRegressor(n_estimators=1)``, as in the coverage
study; with ``--unguarded`` also with ``guard=False``, the in-context model alone) and two linear
baselines a user would pick instead (OLS with its exact Student-t prediction interval;
scikit-learn's ``BayesianRidge`` with a normal interval of its predictive standard deviation), per
training size: coverage of the 90% predictive interval on the test rows' y (nominal 0.90), its mean
width (the oracle, knowing the function and the noise: 3.29), and the RMSE of the predicted mean
against the true mean (0 for the oracle).

Example
-------
python benchmarks/studies/tabswift_small_n.py --checkpoints tabswift-v1 tabswift-v2 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# ruff: noqa: E402
# benchmarks/ (the shared _common and the suites these studies build on) on the path:
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common as C
import numpy as np
import pandas as pd
from scipy import stats
from sklearn.linear_model import BayesianRidge
from tabmgp_coverage import ols, synthetic

from skfm import TabSwiftRegressor
from skfm.tabular.base import DEFAULT_REGRESSOR_CHECKPOINT

LEVEL = 0.90
TEST_ROWS = 300


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoints", nargs="+", default=[DEFAULT_REGRESSOR_CHECKPOINT],
                   help="TabSwift checkpoints (names or paths)")
    p.add_argument("--ns", default="20,50,100", help="training sizes")
    p.add_argument("--d", type=int, default=10, help="features")
    p.add_argument("--unguarded", action="store_true",
                   help="also run each checkpoint with guard=False (the in-context model alone)")
    p.add_argument("--seeds", type=int, default=30, help="data sets per size (seeds 1001..)")
    C.add_out_argument(p, notes=True)
    p.add_argument("--name", default="tabswift_small_n", help="report file stem")
    return p.parse_args(argv)


def tabswift_interval(checkpoint, X, y, X_test, guard=True):
    """Mean and the 5% / 95% quantiles of TabSwiftRegressor's predictive."""
    model = TabSwiftRegressor(n_estimators=1, checkpoint=checkpoint, random_state=0, n_jobs=1,
                              guard=guard)
    model.fit(X, y)
    q = model.predict(X_test, output_type="quantiles", quantiles=[0.05, 0.95])
    return model.predict(X_test), q[:, 0], q[:, 1]


def ols_interval(X, y, X_test):
    """OLS mean and its exact Student-t prediction interval."""
    design = np.column_stack([np.ones(len(X)), X])
    test = np.column_stack([np.ones(len(X_test)), X_test])
    coef = ols(X, y)
    dof = len(y) - design.shape[1]
    s2 = np.sum((y - design @ coef) ** 2) / dof
    leverage = np.einsum("ij,jk,ik->i", test, np.linalg.pinv(design.T @ design), test)
    half = stats.t.ppf(0.5 + LEVEL / 2, dof) * np.sqrt(s2 * (1 + leverage))
    mean = test @ coef
    return mean, mean - half, mean + half


def bayesian_ridge_interval(X, y, X_test):
    """BayesianRidge mean and a normal interval of its predictive standard deviation."""
    mean, sd = BayesianRidge().fit(X, y).predict(X_test, return_std=True)
    half = stats.norm.ppf(0.5 + LEVEL / 2) * sd
    return mean, mean - half, mean + half


def run(args) -> pd.DataFrame:
    """One row per (method, n, seed): coverage, width, mean RMSE, seconds."""
    methods = {f"tabswift {ck}": (lambda X, y, T, ck=ck: tabswift_interval(ck, X, y, T))
               for ck in args.checkpoints}
    if args.unguarded:
        methods.update({
            f"tabswift {ck}, guard=False":
                (lambda X, y, T, ck=ck: tabswift_interval(ck, X, y, T, guard=False))
            for ck in args.checkpoints})
    methods.update({"OLS (t interval)": ols_interval, "BayesianRidge": bayesian_ridge_interval})
    rows = []
    for n in (int(v) for v in args.ns.split(",")):
        for seed in range(1001, 1001 + args.seeds):
            X, y, theta = synthetic(n, args.d, "gaussian", seed)
            X_test, y_test, _ = synthetic(TEST_ROWS, args.d, "gaussian", seed + 5000)
            true_mean = theta[0] + X_test @ theta[1:]
            for name, method in methods.items():
                (mean, low, high), seconds = C.timed(method, X, y, X_test)
                rows.append({
                    "method": name, "n": n, "seed": seed, "seconds": seconds,
                    "coverage_90": np.mean((y_test >= low) & (y_test <= high)),
                    "width_90": np.mean(high - low),
                    "mean_rmse": np.sqrt(np.mean((mean - true_mean) ** 2)),
                })
        print(f"n={n} done", flush=True)
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    args = parse_args(argv)
    raw = run(args)
    table = raw.groupby(["n", "method"], sort=False)[["coverage_90", "width_90", "mean_rmse"]].mean()
    table.index = [f"n={n}, {m}" for n, m in table.index]
    sections = [
        f"Synthetic linear regression, d={args.d}, N(0, 1) errors, {args.seeds} seeds per size "
        f"(1001..), {TEST_ROWS} test rows each; TabSwift `n_estimators=1`. Columns: coverage of "
        "the 90% predictive interval (nominal 0.90), its mean width (oracle 3.29), RMSE of the "
        "predicted mean against the true mean (oracle 0); means over seeds.",
        *C.read_notes(args.notes_file),
        "## Predictive at few rows\n\n" + C.markdown_table(table, floatfmt=".3f",
                                                            index_name="size, method"),
    ]
    path = C.write_report(args.out, args.name, "TabSwift: a linear function from few rows",
                          sections, raw, args.notes_file)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
