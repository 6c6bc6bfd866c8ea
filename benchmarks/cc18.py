"""Benchmark TabSwiftClassifier against common baselines on OpenML-CC18 datasets.

Protocol (as in the TabPFN v1 paper): for each dataset, ``--splits`` stratified 50/50 train/test
splits with seeds 0, 1, ...; ROC-AUC (binary: positive-class probability; multiclass: one-vs-rest
macro), accuracy and fit+predict wall time per model. Results go to
``<out>/tabswift_cc18.md`` (tables) and ``<out>/tabswift_cc18.csv`` (one row per dataset, split
and model; its first line is a ``#`` comment describing the run, so read it with
``pd.read_csv(path, skiprows=1)``). Model ``tabswift_alone`` is the in-context model without
the guard of tables the context holds (``guard=False``, ``skfm.tabular.guard``).

Example
-------
python benchmarks/cc18.py --data ../shared/data/openml_cc18 --splits 5 \
    --models tabswift,lr,rf,hgb,xgb,lgbm --n-estimators 4 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import _common as C
import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import StratifiedShuffleSplit

from skfm.tabular.base import DEFAULT_CLASSIFIER_CHECKPOINT

OPTIONAL = {"xgb": "xgboost", "lgbm": "lightgbm"}
BASELINES = {"lr", "rf", "hgb", "xgb", "lgbm"}
TABSWIFT = {"tabswift": {}, "tabswift_alone": {"guard": False}}  # name -> parameters


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=C.DEFAULT_CC18, help="folder with index.json")
    p.add_argument("--splits", type=int, default=5, help="number of 50/50 splits (seeds 0..)")
    p.add_argument("--models", default="tabswift,lr,rf,hgb,xgb,lgbm", help="comma-separated")
    p.add_argument("--n-estimators", type=int, default=8, help="TabSwift ensemble size")
    p.add_argument("--checkpoint", default=DEFAULT_CLASSIFIER_CHECKPOINT,
                   help="TabSwift checkpoint name or path; random:small for the same "
                   "architecture without pretraining")
    p.add_argument("--max-datasets", type=int, default=None, help="only the first N datasets")
    p.add_argument("--datasets", default=None, help="comma-separated names (default: all)")
    C.add_out_argument(p)
    p.add_argument(
        "--card", default=None, help="checkpoint card (.json) to record the summary in"
    )
    p.add_argument(
        "--reuse", default=None,
        help="an earlier tabswift_cc18.csv: its rows of models not run now join the report "
        "(for re-running TabSwift alone after a change; scores are deterministic per seed, "
        "times then come from two runs)",
    )
    return p.parse_args(argv)


def make_model(name: str, ds: C.Dataset, seed: int, n_estimators: int, checkpoint: str):
    """Return ``(estimator, X)``: the model and the form of the features it is given."""
    if name in TABSWIFT:
        from skfm import TabSwiftClassifier

        model = TabSwiftClassifier(
            n_estimators=n_estimators, checkpoint=checkpoint, random_state=seed, **TABSWIFT[name]
        )
        return model, C.as_frame(ds.X, ds.categorical, ds.feature_names)
    if name not in BASELINES:
        raise ValueError(f"unknown model {name!r}")
    return C.make_baseline(name, ds.task, ds.categorical, ds.numeric, seed), ds.X


def score(y_true, proba, classes, task):
    """ROC-AUC (one-vs-rest macro for multiclass) and accuracy from predicted probabilities."""
    if task == "binary":
        auc = roc_auc_score(y_true, proba[:, 1])
    else:
        auc = roc_auc_score(y_true, proba, multi_class="ovr", labels=classes)
    return auc, accuracy_score(y_true, classes[np.argmax(proba, axis=1)])


def run_one(name, ds, seed, train, test, n_estimators, checkpoint):
    """Fit and evaluate one model on one split; return a result row (dict)."""
    row = {"dataset": ds.name, "task": ds.task, "split": seed, "model": name}
    model, X = make_model(name, ds, seed, n_estimators, checkpoint)
    take = (lambda idx: X.iloc[idx]) if isinstance(X, pd.DataFrame) else (lambda idx: X[idx])
    try:
        _, fit_time = C.timed(model.fit, take(train), ds.y[train])
        proba, pred_time = C.timed(model.predict_proba, take(test))
        auc, acc = score(ds.y[test], np.asarray(proba), np.asarray(model.classes_), ds.task)
    except Exception as exc:  # keep a long run going; the error is recorded in the CSV
        print(f"  {name} failed on {ds.name} split {seed}: {exc!r}", file=sys.stderr)
        return {**row, "roc_auc": np.nan, "accuracy": np.nan, "error": repr(exc)}
    return {
        **row,
        "roc_auc": auc,
        "accuracy": acc,
        "fit_time": fit_time,
        "predict_time": pred_time,
        "total_time": fit_time + pred_time,
        "error": "",
    }


def summarize(raw: pd.DataFrame, models: list[str]) -> list[str]:
    """Build the Markdown sections: per-dataset ROC-AUC and a summary table."""
    auc = raw.pivot_table(index="dataset", columns="model", values="roc_auc", sort=False)
    auc = auc.reindex(columns=models)
    acc = raw.pivot_table(index="dataset", columns="model", values="accuracy")
    acc = acc.reindex(columns=models)
    task = raw.groupby("dataset")["task"].first()
    binary, multi = task.index[task == "binary"], task.index[task == "multiclass"]
    summary = pd.DataFrame(
        {
            "mean ROC-AUC": auc.mean(),
            "mean accuracy": acc.mean(),
            "mean rank (ROC-AUC)": C.mean_rank(auc),
            f"mean ROC-AUC, binary ({len(binary)})": auc.loc[binary].mean(),
            f"mean ROC-AUC, multiclass ({len(multi)})": auc.loc[multi].mean(),
        }
    ).T
    times = C.time_summary(raw.dropna(subset=["roc_auc"]), models).T
    summary = pd.concat([summary, times])
    n_splits = raw["split"].nunique()
    return [
        f"## Summary ({len(auc)} datasets, {n_splits} splits each)",
        C.markdown_table(summary, ".3f", index_name="metric"),
        "Rank 1 is best. Time is fit + predict_proba over all datasets and splits.",
        "## Mean ROC-AUC per dataset",
        C.markdown_table(pd.concat([task, auc], axis=1), ".4f"),
    ]


def main(argv=None):
    """Run the benchmark and write the report."""
    args = parse_args(argv)
    models = C.parse_models(args.models, OPTIONAL)
    if "tabswift" in models:
        from skfm import TabSwiftClassifier  # noqa: F401  (fail fast if it is missing)
    names = args.datasets.split(",") if args.datasets else None
    datasets = C.load_cc18(args.data, args.max_datasets, names)
    print(f"{len(datasets)} datasets, {args.splits} splits, models: {', '.join(models)}")
    rows = []
    for ds in datasets:
        for seed in range(args.splits):
            sss = StratifiedShuffleSplit(n_splits=1, test_size=0.5, random_state=seed)
            train, test = next(sss.split(ds.X, ds.y))
            for name in models:
                rows.append(
                    run_one(name, ds, seed, train, test, args.n_estimators, args.checkpoint)
                )
        done = pd.DataFrame([r for r in rows if r["dataset"] == ds.name])
        means = done.groupby("model", sort=False)["roc_auc"].mean()
        print(f"{ds.name:<34} " + "  ".join(f"{m}={v:.4f}" for m, v in means.items()))
    raw = pd.DataFrame(rows)
    sections = summarize(raw, models)
    if args.reuse:
        raw, models, note = C.reuse_rows(args.reuse, raw, models)
        sections = [note, *summarize(raw, models)]
    md = C.write_report(args.out, "tabswift_cc18", "TabSwift on OpenML-CC18", sections, raw)
    print(f"wrote {md} and {md.with_suffix('.csv')}")
    if args.card:
        record_in_card(Path(args.card), raw, args)


def record_in_card(card_path: Path, raw: pd.DataFrame, args) -> None:
    """Store mean ROC-AUC/accuracy per model and the command in the card's ``evaluation``.

    The sha256 in the card covers the weights file only, so the card stays valid.
    """
    card = json.loads(card_path.read_text())
    means = raw.groupby("model")[["roc_auc", "accuracy"]].mean().round(4)
    card.setdefault("evaluation", {})["openml_cc18"] = {
        "datasets": int(raw["dataset"].nunique()),
        "splits": args.splits,
        "n_estimators": args.n_estimators,
        "mean_roc_auc": means["roc_auc"].to_dict(),
        "mean_accuracy": means["accuracy"].to_dict(),
        "command": C.run_header().splitlines()[0],
    }
    card_path.write_text(json.dumps(card, indent=2) + "\n")
    print(f"recorded the summary in {card_path}")


if __name__ == "__main__":
    main()
