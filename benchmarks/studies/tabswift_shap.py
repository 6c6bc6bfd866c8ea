"""Seconds per row of SHAP values for TabSwiftClassifier, with and without its context cache.

On OpenML-CC18 tables (a stratified 50/50 split, seed 0; the positive-class probability of
binary tasks is explained), one model-agnostic explainer, ``shap.PermutationExplainer`` over a
``shap.maskers.Independent`` masker of ``--background`` training rows with ``--permutations``
antithetic permutations per row (``max_evals = permutations * (2 * n_features + 1)``), explains
the first ``--rows`` test rows (the models take turns row by row) of:

- ``TabSwiftClassifier()`` (shipped checkpoint, its default 8 members): the keys and values of
  the context rows are cached by ``fit`` and every call of the explainer reuses them;
- the same fitted model with its cache cleared before every call of the explainer, so that each
  call recomputes the context (what an in-context learner pays without a cache);
- ``HistGradientBoostingClassifier`` (native categoricals), the model a user would pick instead,
  with the same explainer, and with ``shap.TreeExplainer`` (path-dependent, in log-odds).

It also times single ``predict_proba`` calls on 1,000 test rows (drawn with replacement) with a
warm and a cold cache, checks that base value + SHAP values equals the model output, and, as a
sanity check, compares each model's mean |SHAP| ranking of the features with scikit-learn's
``permutation_importance`` (ROC-AUC on the test half): Spearman correlation and shared features
among the top 5.

Example
-------
python benchmarks/studies/tabswift_shap.py --datasets credit-g,diabetes --threads 2 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# ruff: noqa: E402
# benchmarks/ (the shared _common and the suites these studies build on) on the path:
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common as C
import numpy as np
import pandas as pd
import shap
import torch
from scipy.stats import spearmanr
from sklearn.inspection import permutation_importance
from sklearn.model_selection import train_test_split

from skfm import TabSwiftClassifier

TOP = 5  # features compared between rankings


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(C.DEFAULT_CC18), help="OpenML-CC18 folder (index.json)")
    p.add_argument("--datasets", default="credit-g,diabetes", help="comma-separated, binary")
    p.add_argument("--rows", type=int, default=20, help="test rows explained per model")
    p.add_argument("--background", type=int, default=50, help="training rows of the masker")
    p.add_argument("--permutations", type=int, default=3, help="antithetic permutations per row")
    p.add_argument("--importance-repeats", type=int, default=5,
                   help="n_repeats of permutation_importance")
    p.add_argument("--threads", type=int, default=2, help="torch threads (n_jobs)")
    C.add_out_argument(p)
    return p.parse_args(argv)


class Counted:
    """``predict_proba(X)[:, 1]`` of a model, counting calls and rows; ``cold=True`` clears a
    TabSwift model's context cache before every call."""

    def __init__(self, model, cold: bool = False):
        self.model, self.cold, self.calls, self.rows = model, cold, 0, 0

    def __call__(self, X):
        if self.cold:
            self.model._cache.clear()  # forget the context's keys and values
        self.calls += 1
        self.rows += len(X)
        return self.model.predict_proba(X)[:, 1]


def explain(models: dict[str, Counted], background, X, args) -> dict[str, dict]:
    """SHAP values of each model on the rows of ``X`` with the permutation explainer, timed.

    The models take turns row by row, each with the same permutations (seed 0 for every row),
    so that a change of load on the shared machine hits them alike.
    """
    max_evals = args.permutations * (2 * X.shape[1] + 1)
    masker = shap.maskers.Independent(background)
    for f in models.values():  # untimed: shap compiles its masking code with numba on first use
        shap.PermutationExplainer(f, masker, seed=0)(X.iloc[:1], max_evals=max_evals, silent=True)
        f.calls = f.rows = 0
    values = {name: [] for name in models}
    base_values = {name: [] for name in models}
    seconds = dict.fromkeys(models, 0.0)
    for i in range(len(X)):
        for name, f in models.items():
            explainer = shap.PermutationExplainer(f, masker, seed=0)
            explanation, took = C.timed(explainer, X.iloc[i:i + 1], max_evals=max_evals,
                                        silent=True)
            seconds[name] += took
            values[name].append(explanation.values[0])
            base_values[name].append(explanation.base_values[0])
    runs = {}
    for name, f in models.items():
        shap_values = np.array(values[name])
        output = f.model.predict_proba(X)[:, 1]
        runs[name] = {"values": shap_values, "seconds": seconds[name], "calls": f.calls,
                      "rows": f.rows, "max_evals": max_evals,
                      "additivity": np.abs(np.array(base_values[name]) + shap_values.sum(1)
                                           - output).max()}
    return runs


def ranking_agreement(shap_values, importance) -> tuple[float, int]:
    """Spearman correlation of mean |SHAP| with ``importance``, and shared top features."""
    mean_abs = np.abs(shap_values).mean(0)
    shared = set(np.argsort(-mean_abs)[:TOP]) & set(np.argsort(-importance)[:TOP])
    return float(spearmanr(mean_abs, importance).statistic), len(shared)


def one_dataset(ds, args) -> tuple[list[dict], list[dict], pd.DataFrame]:
    """Timing rows, agreement rows and the top features of one dataset."""
    frame = C.as_frame(ds.X, ds.categorical, ds.feature_names)  # category dtype: TabSwift
    floats = pd.DataFrame(ds.X, columns=ds.feature_names)  # what shap's masker hands back
    train, test = train_test_split(np.arange(len(ds.y)), test_size=0.5, stratify=ds.y,
                                   random_state=0)
    y_train, y_test = ds.y[train], ds.y[test]
    background = shap.utils.sample(floats.iloc[train], args.background, random_state=0)
    X_explain = floats.iloc[test[:args.rows]]

    tabswift, fit_seconds = C.timed(
        TabSwiftClassifier(n_jobs=args.threads).fit, frame.iloc[train], y_train)
    hgb = C.make_baseline("hgb", ds.task, ds.categorical, ds.numeric, 0)
    hgb.fit(floats.iloc[train], y_train)

    batch = floats.iloc[test].sample(1000, replace=True, random_state=0)

    def cold():
        tabswift._cache.clear()
        tabswift.predict_proba(batch)

    warm_call = C.best_of(lambda: tabswift.predict_proba(batch))
    cold_call = C.best_of(cold)
    tabswift.predict_proba(batch[:1])  # the cache is back before the explainer runs

    runs = explain({"TabSwift, context cached": Counted(tabswift),
                    "TabSwift, context recomputed per call": Counted(tabswift, cold=True),
                    "HistGradientBoosting": Counted(hgb)}, background, X_explain, args)
    cached = runs["TabSwift, context cached"]
    same = np.abs(runs["TabSwift, context recomputed per call"]["values"] - cached["values"]).max()
    tree, tree_seconds = C.timed(shap.TreeExplainer(hgb), X_explain)
    tree_gap = np.abs(tree.base_values + tree.values.sum(1) - hgb.decision_function(X_explain))

    base = {"dataset": ds.name, "train rows": len(train), "features": ds.X.shape[1],
            "explained rows": len(X_explain), "background": len(background)}
    timing = [{**base, "measure": "predict_proba(1,000 rows), context cached",
               "seconds": warm_call, "seconds per row": np.nan, "model calls": 1,
               "model rows per explained row": np.nan, "additivity error": np.nan},
              {**base, "measure": "predict_proba(1,000 rows), context recomputed",
               "seconds": cold_call, "seconds per row": np.nan, "model calls": 1,
               "model rows per explained row": np.nan, "additivity error": np.nan},
              {**base, "measure": "TabSwift fit", "seconds": fit_seconds,
               "seconds per row": np.nan, "model calls": np.nan,
               "model rows per explained row": np.nan, "additivity error": np.nan}]
    for name, run in runs.items():
        timing.append({**base, "measure": f"{name}: PermutationExplainer "
                                          f"(max_evals={run['max_evals']})",
                       "seconds": run["seconds"], "seconds per row": run["seconds"] / len(X_explain),
                       "model calls": run["calls"],
                       "model rows per explained row": run["rows"] / len(X_explain),
                       "additivity error": run["additivity"]})
    timing.append({**base, "measure": "HistGradientBoosting: TreeExplainer (log-odds)",
                   "seconds": tree_seconds, "seconds per row": tree_seconds / len(X_explain),
                   "model calls": np.nan, "model rows per explained row": np.nan,
                   "additivity error": tree_gap.max()})
    print(f"{ds.name}: SHAP values with and without the cache differ by at most {same:.2e}",
          flush=True)

    importance = {}
    for name, model, X in [("TabSwift", tabswift, frame), ("HistGradientBoosting", hgb, floats)]:
        importance[name] = permutation_importance(
            model, X.iloc[test], y_test, scoring="roc_auc", n_repeats=args.importance_repeats,
            random_state=0).importances_mean
    agreement = []
    pairs = [("TabSwift SHAP vs TabSwift permutation importance", cached["values"],
              importance["TabSwift"]),
             ("HistGradientBoosting SHAP vs its permutation importance",
              runs["HistGradientBoosting"]["values"], importance["HistGradientBoosting"]),
             ("TabSwift SHAP vs HistGradientBoosting SHAP", cached["values"],
              np.abs(runs["HistGradientBoosting"]["values"]).mean(0))]
    for name, values, reference in pairs:
        rho, shared = ranking_agreement(values, reference)
        agreement.append({"dataset": ds.name, "comparison": name, "Spearman": rho,
                          f"shared top {TOP}": shared})
    names = np.array(ds.feature_names)
    top = pd.DataFrame({
        "TabSwift mean abs SHAP": names[np.argsort(-np.abs(cached["values"]).mean(0))[:TOP]],
        "TabSwift permutation importance": names[np.argsort(-importance["TabSwift"])[:TOP]],
        "HGB mean abs SHAP": names[np.argsort(
            -np.abs(runs["HistGradientBoosting"]["values"]).mean(0))[:TOP]],
    }, index=pd.RangeIndex(1, TOP + 1, name="rank"))
    return timing, agreement, top


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    datasets = C.load_cc18(args.data, names=args.datasets.split(","))
    timing, agreement, tops = [], [], []
    for ds in datasets:
        start = time.perf_counter()
        t, a, top = one_dataset(ds, args)
        timing += t
        agreement += a
        tops += [f"**{ds.name}**: the {TOP} features ranked first", C.markdown_table(top)]
        print(f"{ds.name}: {time.perf_counter() - start:.0f} s", flush=True)
    timing, agreement = pd.DataFrame(timing), pd.DataFrame(agreement)
    load = os.getloadavg()[0]
    shown = ["dataset", "measure", "seconds", "seconds per row", "model calls",
             "model rows per explained row", "additivity error"]
    sections = [
        f"Data: {', '.join(f'{ds.name} ({len(ds.y)} rows x {ds.X.shape[1]} features)' for ds in datasets)}"
        f" from OpenML-CC18, one stratified 50/50 split (seed 0); the first {args.rows} test rows "
        f"are explained, with a background of {args.background} training rows and "
        f"{args.permutations} antithetic permutations per row (max_evals = "
        f"{args.permutations} x (2 x features + 1)). shap {shap.__version__}; torch threads: "
        f"{args.threads}; load average at the end: {load:.1f} (the machine is shared; "
        "predict_proba times are the best of 3; the explainers take turns row by row, each "
        "row with the same permutations, and their times are the sums over the rows).",
        "## Seconds per explained row",
        C.markdown_table(timing[shown].set_index("dataset"), ".4g"),
        "*context cached*: the fitted model as it is (`fit` computed the keys and values of the "
        "context rows once). *context recomputed per call*: the same model with its cache "
        "cleared before every call of the explainer, as an in-context learner without a cache "
        "runs. *model rows per explained row*: the rows the explainer passed to `predict_proba`, "
        "at most max_evals x background rows (it skips background rows that masking leaves "
        "equal to the explained row). *additivity error*: the largest |base value + sum of SHAP "
        "values - model output| over the explained rows (probability of the positive class; "
        "log-odds for TreeExplainer). shap's TreeExplainer does not handle the native "
        "categorical splits of HistGradientBoosting (shap issue #3436): on a table with "
        "categorical features its values do not add up to the model's output.",
        f"## Sanity check: rankings of the features (Spearman over all features, shared top {TOP})",
        C.markdown_table(agreement.set_index("dataset"), ".3f"),
        *tops,
    ]
    raw = pd.concat([timing, agreement], ignore_index=True)
    md = C.write_report(args.out, "tabswift_shap", "TabSwift: SHAP values with the cached context",
                        sections, raw)
    print(open(md).read())


if __name__ == "__main__":
    main()
