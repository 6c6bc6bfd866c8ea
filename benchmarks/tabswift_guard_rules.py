"""Which rule should choose TabSwiftRegressor's share in its guard: the one-standard-error rule
the guard ships with, or skfm's shared margin of a clear cross-validated gain.

The guard (``skfm.tabular.guard``) chooses TabSwift's share ``w`` of
``w * tabswift + (1 - w) * ridge`` among ``BLEND_WEIGHTS`` from cross-fitted predictions of the
training rows. This script reproduces its cross-fitting exactly (the guard's own folds,
:func:`~skfm.tabular.guard.cross_fitted` for TabSwift's out-of-fold means and the ridge's
out-of-fold predictions) on every split, lets each rule choose ``w`` from the same numbers, and
scores the chosen blend on the test rows (TabSwift fitted on every training row with
``guard=False``, the ridge refitted on them). Rules:

- ``one_standard_error`` (shipped): the largest share whose out-of-fold mean squared error is
  within one standard error (of its per-row paired difference) of the lowest
  (:func:`~skfm.tabular.guard.one_standard_error_weight`).
- ``clear_gain_z2`` / ``clear_gain_z1``: the rule of SPNClassifier and Mantis
  (:func:`skfm._selection.gain_margin`, per-fold gains, Nadeau-Bengio corrected variance): the
  shares whose per-fold gain over TabSwift alone is clear at ``z`` = 2 (its default) or 1 are
  candidates, the lowest-error candidate is kept, TabSwift alone when none is.
- ``within_margin_z2``: the largest share whose per-fold loss above the lowest-error share's is
  within ``gain_margin`` at ``z`` = 2 (a one-standard-error rule with the corrected variance).
- ``lowest_error``: the share with the lowest out-of-fold error; ``tabswift_alone`` (``w = 1``)
  and ``ridge_alone`` (``w = 0``) for reference.

Data: the regression suite (``regression.py``'s splits: 50/50 ``ShuffleSplit`` with seeds
0..``--splits``-1, ``--n-estimators`` members) scored by test R², and the linear study of
``tabswift_small_n.py`` (d=10, n in ``--ns``, ``--seeds`` seeds, one member) scored by the RMSE
of the predicted mean against the true mean.

Example
-------
python benchmarks/tabswift_guard_rules.py --out docs/benchmarks
"""

from __future__ import annotations

import argparse

import _common as C
import numpy as np
import pandas as pd
from sklearn.model_selection import ShuffleSplit
from tabmgp_coverage import synthetic

from skfm import TabSwiftRegressor
from skfm._backend import draw_seed
from skfm._selection import gain_margin
from skfm.tabular import guard
from skfm.tabular.blend import BLEND_WEIGHTS

SMALL_N_TEST_ROWS = 300


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--splits", type=int, default=5, help="regression-suite splits (seeds 0..)")
    p.add_argument("--n-estimators", type=int, default=8, help="members on the suite")
    p.add_argument("--ns", default="20,50,100", help="training sizes of the linear study")
    p.add_argument("--seeds", type=int, default=30, help="linear-study seeds per size (1001..)")
    C.add_out_argument(p, notes=True)
    p.add_argument("--name", default="tabswift_guard_rules", help="report file stem")
    return p.parse_args(argv)


def _fold_means(errors, folds):
    """Each share's mean error on each fold, shape (len(BLEND_WEIGHTS), n_folds)."""
    return np.stack([errors[:, test].mean(1) for _, test in folds], axis=1)


def _clear_gain(errors, folds, z):
    mse, fold_mse = errors.mean(1), _fold_means(errors, folds)
    clear = [k for k in range(len(BLEND_WEIGHTS) - 1)
             if (gains := fold_mse[-1] - fold_mse[k]).mean() > gain_margin(gains, len(folds), z)]
    return min(clear, key=lambda k: mse[k]) if clear else len(BLEND_WEIGHTS) - 1


def _within_margin(errors, folds, z):
    best, fold_mse = guard.one_standard_error_weight(errors)[0], _fold_means(errors, folds)
    return max(k for k in range(len(BLEND_WEIGHTS)) if k == best or
               (excess := fold_mse[k] - fold_mse[best]).mean() <= gain_margin(excess, len(folds), z))


RULES = {
    "one_standard_error": lambda errors, folds: guard.one_standard_error_weight(errors)[1],
    "clear_gain_z2": lambda errors, folds: _clear_gain(errors, folds, 2.0),
    "clear_gain_z1": lambda errors, folds: _clear_gain(errors, folds, 1.0),
    "within_margin_z2": lambda errors, folds: _within_margin(errors, folds, 2.0),
    "lowest_error": lambda errors, folds: guard.one_standard_error_weight(errors)[0],
    "tabswift_alone": lambda errors, folds: len(BLEND_WEIGHTS) - 1,
    "ridge_alone": lambda errors, folds: 0,
}


def test_means(X, y, X_test, n_estimators, seed) -> dict[str, np.ndarray]:
    """Each rule's chosen share and its blended mean of the test rows."""
    model = TabSwiftRegressor(n_estimators=n_estimators, random_state=seed, guard=False)
    model.fit(X, y)
    folds = guard._folds(len(y), None, draw_seed(model.random_state))  # the guard's own folds
    mean, _ = guard.cross_fitted(model, folds)
    categorical = sorted(model.encoder_.categories_)
    linear = guard._cross_fitted_ridge(categorical, model.X_context_, y, folds)
    ridge = guard._fitted_ridge(categorical, model.X_context_, y)
    if linear is None or ridge is None:
        raise RuntimeError("the ridge cannot fit this table")
    errors = np.stack([(y - (w * mean + (1 - w) * linear)) ** 2 for w in BLEND_WEIGHTS])
    tabswift_test = model.predict(X_test)
    ridge_test = model._on_encoded(model._rows(X_test), ridge.predict)
    chosen = {}
    for name, rule in RULES.items():
        w = float(BLEND_WEIGHTS[rule(errors, folds)])
        chosen[name] = (w, w * tabswift_test + (1 - w) * ridge_test)
    return chosen


def run_suite(args) -> pd.DataFrame:
    rows = []
    for ds in C.load_regression():
        for seed in range(args.splits):
            split = ShuffleSplit(n_splits=1, test_size=0.5, random_state=seed)
            train, test = next(split.split(ds.X))
            y_test = ds.y[test]
            chosen = test_means(ds.X.iloc[train], ds.y[train], ds.X.iloc[test],
                                args.n_estimators, seed)
            for rule, (w, pred) in chosen.items():
                rows.append({"part": "suite", "setting": ds.name, "seed": seed, "rule": rule,
                             "weight": w, "score": 1 - np.mean((y_test - pred) ** 2)
                             / np.var(y_test)})
        print(f"{ds.name} done", flush=True)
    return pd.DataFrame(rows)


def run_small_n(args) -> pd.DataFrame:
    rows = []
    for n in (int(v) for v in args.ns.split(",")):
        for seed in range(1001, 1001 + args.seeds):
            X, y, theta = synthetic(n, 10, "gaussian", seed)
            X_test, _, _ = synthetic(SMALL_N_TEST_ROWS, 10, "gaussian", seed + 5000)
            true_mean = theta[0] + X_test @ theta[1:]
            for rule, (w, pred) in test_means(X, y, X_test, 1, 0).items():
                rows.append({"part": "small_n", "setting": f"n={n}", "seed": seed, "rule": rule,
                             "weight": w, "score": np.sqrt(np.mean((pred - true_mean) ** 2))})
        print(f"n={n} done", flush=True)
    return pd.DataFrame(rows)


def _table(raw: pd.DataFrame, part: str, score: str) -> str:
    rows = raw[raw.part == part]
    table = rows.pivot_table(index="setting", columns="rule", values="score", sort=False)
    table.loc["mean"] = table.mean()
    shares = rows.pivot_table(index="setting", columns="rule", values="weight", sort=False)
    table.loc["mean share w"] = shares.mean()
    return C.markdown_table(table[list(RULES)], floatfmt=".4f", index_name=f"setting ({score})")


def main(argv=None) -> None:
    args = parse_args(argv)
    raw = pd.concat([run_suite(args), run_small_n(args)], ignore_index=True)
    sections = [
        f"Regression suite: {args.splits} splits (50/50), `n_estimators={args.n_estimators}`, "
        "test R² (higher is better). Linear study (d=10, N(0, 1) errors): "
        f"{args.seeds} seeds per size, one member, RMSE of the mean against the true mean "
        "(lower is better; OLS: `tabswift_small_n_guard.md`). The last row of each table is "
        "TabSwift's mean share. Every rule chooses from the same cross-fitted predictions.",
        *C.read_notes(args.notes_file),
        "## Regression suite (test R²)\n\n" + _table(raw, "suite", "R²"),
        "## Few rows, linear function (RMSE of the mean)\n\n" + _table(raw, "small_n", "RMSE"),
    ]
    path = C.write_report(args.out, args.name, "TabSwift's guard: how the share is chosen",
                          sections, raw, args.notes_file)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
