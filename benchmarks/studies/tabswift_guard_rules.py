"""Which rule should choose TabSwiftRegressor's partner and share in its guard: the
one-standard-error rule the guard ships with, or skfm's shared margin of a clear cross-validated
gain.

The guard (``skfm.tabular.guard``) chooses among TabSwift alone and ``w * tabswift + (1 - w) *
partner`` for its partners (a ridge; a booster from ``MIN_BOOSTED_ROWS`` rows on) and ``w < 1``
in ``BLEND_WEIGHTS``, from cross-fitted predictions of the training rows. This script
reproduces its cross-fitting exactly (the guard's own folds and partners,
:func:`~skfm.tabular.guard.cross_fitted` for TabSwift's out-of-fold means) on every split, lets
each rule choose a candidate from the same numbers, and scores it on the test rows (TabSwift
fitted on every training row with ``guard=False``, the partner refitted on them). Rules:

- ``one_standard_error`` (shipped): the candidate of largest share whose out-of-fold mean
  squared error is within one standard error (of its per-row paired difference) of the lowest
  (:func:`~skfm.tabular.guard.one_standard_error_weight`).
- ``clear_gain_z2`` / ``clear_gain_z1``: the rule of SPNClassifier and Mantis
  (:func:`skfm._selection.gain_margin`, per-fold gains, Nadeau-Bengio corrected variance): the
  candidates whose per-fold gain over TabSwift alone is clear at ``z`` = 2 (its default) or 1
  are eligible, the lowest-error one is kept, TabSwift alone when none is.
- ``within_margin_z2``: the largest share whose per-fold loss above the lowest-error
  candidate's is within ``gain_margin`` at ``z`` = 2 (a one-standard-error rule with the
  corrected variance).
- ``lowest_error``: the lowest out-of-fold error; ``tabswift_alone``, ``linear_alone`` and
  ``boosting_alone`` (a partner at ``w = 0``) for reference.

Data: the regression suite (``regression.py``'s splits: 50/50 ``ShuffleSplit`` with seeds
0..``--splits``-1, ``--n-estimators`` members) scored by test R², and the linear study of
``tabswift_small_n.py`` (d=10, n in ``--ns``, ``--seeds`` seeds, one member) scored by the RMSE
of the predicted mean against the true mean.

Example
-------
python benchmarks/studies/tabswift_guard_rules.py --out docs/benchmarks
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
    """Each candidate's mean error on each fold, shape (n_candidates, n_folds)."""
    return np.stack([errors[:, test].mean(1) for _, test in folds], axis=1)


def _clear_gain(errors, weights, folds, z):
    """The lowest-error candidate among those whose gain over TabSwift alone (candidate 0)
    is clear; TabSwift alone when none is."""
    mse, fold_mse = errors.mean(1), _fold_means(errors, folds)
    clear = [k for k in range(1, len(weights))
             if (gains := fold_mse[0] - fold_mse[k]).mean() > gain_margin(gains, len(folds), z)]
    return min(clear, key=lambda k: mse[k]) if clear else 0


def _within_margin(errors, weights, folds, z):
    """The largest-weight candidate whose loss above the best's is within the margin."""
    best, fold_mse = guard.one_standard_error_weight(errors, weights)[0], _fold_means(errors, folds)
    within = [k for k in range(len(weights)) if k == best or
              (excess := fold_mse[k] - fold_mse[best]).mean() <= gain_margin(excess, len(folds), z)]
    return max(within, key=lambda k: (weights[k], -errors[k].mean()))


RULES = {
    "one_standard_error": lambda e, w, f: guard.one_standard_error_weight(e, w)[1],
    "clear_gain_z2": lambda e, w, f: _clear_gain(e, w, f, 2.0),
    "clear_gain_z1": lambda e, w, f: _clear_gain(e, w, f, 1.0),
    "within_margin_z2": lambda e, w, f: _within_margin(e, w, f, 2.0),
    "lowest_error": lambda e, w, f: guard.one_standard_error_weight(e, w)[0],
    "tabswift_alone": lambda e, w, f: 0,
}


def test_means(X, y, X_test, n_estimators, seed) -> dict[str, tuple]:
    """Each rule's chosen share and partner, and its blended mean of the test rows."""
    model = TabSwiftRegressor(n_estimators=n_estimators, random_state=seed, guard=False)
    model.fit(X, y)
    seed = draw_seed(model.random_state)
    folds = guard._folds(len(y), None, seed)  # the guard's own folds and partners
    mean, _ = guard.cross_fitted(model, folds)
    rows = model._rows(X_test)
    weights, names, blends, tests = [1.0], ["tabswift"], [mean], [model.predict(X_test)]
    for name, make in guard._partners(model, len(y), seed).items():
        out_of_fold = guard._out_of_fold(make, model.X_context_, y, folds, 0)
        fitted = guard._fitted_partner(make(), model.X_context_, y)
        if out_of_fold is None or fitted is None:
            continue
        partner_test = model._on_encoded(rows, fitted.predict)
        for w in BLEND_WEIGHTS[:-1]:
            weights.append(w)
            names.append(name)
            blends.append(w * mean + (1 - w) * out_of_fold)
            tests.append(w * tests[0] + (1 - w) * partner_test)
    errors = np.stack([(y - blend) ** 2 for blend in blends])  # (n_candidates, n)
    weights = np.asarray(weights)
    chosen = {rule: choose(errors, weights, folds) for rule, choose in RULES.items()}
    chosen |= {f"{name}_alone": names.index(name) for name in names[1:]}  # weight 0 first
    return {rule: (weights[k], names[k], tests[k]) for rule, k in chosen.items()}


def run_suite(args) -> pd.DataFrame:
    rows = []
    for ds in C.load_regression():
        for seed in range(args.splits):
            split = ShuffleSplit(n_splits=1, test_size=0.5, random_state=seed)
            train, test = next(split.split(ds.X))
            y_test = ds.y[test]
            chosen = test_means(ds.X.iloc[train], ds.y[train], ds.X.iloc[test],
                                args.n_estimators, seed)
            for rule, (w, partner, pred) in chosen.items():
                rows.append({"part": "suite", "setting": ds.name, "seed": seed, "rule": rule,
                             "weight": w, "partner": partner, "score": 1 - np.mean((y_test - pred) ** 2)
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
            for rule, (w, partner, pred) in test_means(X, y, X_test, 1, 0).items():
                rows.append({"part": "small_n", "setting": f"n={n}", "seed": seed, "rule": rule,
                             "weight": w, "partner": partner, "score": np.sqrt(np.mean((pred - true_mean) ** 2))})
        print(f"n={n} done", flush=True)
    return pd.DataFrame(rows)


def _table(raw: pd.DataFrame, part: str, score: str) -> str:
    rows = raw[raw.part == part]
    table = rows.pivot_table(index="setting", columns="rule", values="score", sort=False)
    table.loc["mean"] = table.mean()
    shares = rows.pivot_table(index="setting", columns="rule", values="weight", sort=False)
    table.loc["mean share w"] = shares.mean()
    columns = [*RULES, *(c for c in table.columns if c not in RULES)]
    return C.markdown_table(table[columns], floatfmt=".4f", index_name=f"setting ({score})")


def main(argv=None) -> None:
    args = parse_args(argv)
    raw = pd.concat([run_suite(args), run_small_n(args)], ignore_index=True)
    sections = [
        f"Regression suite: {args.splits} splits (50/50), `n_estimators={args.n_estimators}`, "
        "test R² (higher is better). Linear study (d=10, N(0, 1) errors): "
        f"{args.seeds} seeds per size, one member, RMSE of the mean against the true mean "
        "(lower is better; OLS: `tabswift_small_n_guard.md`). The last row of each table is "
        "TabSwift's mean share. Every rule chooses from the same cross-fitted predictions; the "
        "shipped rule's column is what the default `TabSwiftRegressor` predicts.",
        *C.read_notes(args.notes_file),
        "## Regression suite (test R²)\n\n" + _table(raw, "suite", "R²"),
        "## Few rows, linear function (RMSE of the mean)\n\n" + _table(raw, "small_n", "RMSE"),
    ]
    path = C.write_report(args.out, args.name, "TabSwift's guard: how the share is chosen",
                          sections, raw, args.notes_file)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
