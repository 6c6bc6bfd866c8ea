"""TabSwift's per-sample early exit and anytime depth on OpenML-CC18: layers used against ROC-AUC.

For each dataset and split (the protocol of ``cc18.py``: stratified 50/50, seeds 0, 1, ...),
one ``TabSwiftClassifier`` is fitted, then the same fitted model predicts the test rows at full
depth, with ``early_exit`` at each agreement of ``--thresholds`` (a row leaves once its class
probabilities moved by at most ``1 - agreement`` in total variation over each of two consecutive
layers; the decision is per row) and with
``max_layers`` at each depth of ``--max-layers`` (anytime mode). For each setting the table gives
the mean number of layers used (averaged over rows and ensemble members), its cut against full
depth, the mean ROC-AUC and its change against full depth, and the predict time as a ratio to full
depth. Results go to ``<out>/tabswift_early_exit.md``, ``.csv`` and ``.png`` (ROC-AUC against
mean depth).

Example
-------
python benchmarks/studies/early_exit.py --splits 5 --n-estimators 8 --out docs/benchmarks
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
import pandas as pd
from cc18 import score
from sklearn.model_selection import StratifiedShuffleSplit

from skfm import TabSwiftClassifier
from skfm._optional import import_matplotlib_pyplot
from skfm.tabular.base import DEFAULT_CLASSIFIER_CHECKPOINT, DEFAULT_EXIT_AGREEMENT

FULL = "full depth"


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=C.DEFAULT_CC18, help="folder with index.json")
    p.add_argument("--splits", type=int, default=5, help="number of 50/50 splits")
    p.add_argument("--first-seed", type=int, default=0,
                   help="seed of the first split (a later range validates a chosen threshold)")
    p.add_argument("--n-estimators", type=int, default=8, help="TabSwift ensemble size")
    p.add_argument("--checkpoint", default=DEFAULT_CLASSIFIER_CHECKPOINT, help="TabSwift checkpoint")
    p.add_argument("--thresholds", default="0.95,0.9,0.85,0.8,0.75,0.7,0.6",
                   help=f"early_exit agreements ({DEFAULT_EXIT_AGREEMENT} is the default of "
                        "early_exit=True)")
    p.add_argument("--max-layers", default="2,4", help="max_layers values (anytime mode)")
    p.add_argument("--datasets", default=None, help="comma-separated names (default: all)")
    C.add_out_argument(p)
    return p.parse_args(argv)


def settings(args) -> dict[str, dict]:
    """Setting name -> the estimator parameters it changes."""
    out = {FULL: {"early_exit": None, "max_layers": None}}
    for t in (float(v) for v in args.thresholds.split(",") if v):
        out[f"early_exit={t:g}"] = {"early_exit": t, "max_layers": None}
    for layers in (int(v) for v in args.max_layers.split(",") if v):
        out[f"max_layers={layers}"] = {"early_exit": None, "max_layers": layers}
    return out


def run_split(ds: C.Dataset, seed: int, args) -> list[dict]:
    """Fit once on one split and score every setting; one row per setting."""
    X = C.as_frame(ds.X, ds.categorical, ds.feature_names)
    sss = StratifiedShuffleSplit(n_splits=1, test_size=0.5, random_state=seed)
    train, test = next(sss.split(ds.X, ds.y))
    clf = TabSwiftClassifier(n_estimators=args.n_estimators, checkpoint=args.checkpoint,
                             random_state=seed).fit(X.iloc[train], ds.y[train])
    rows = []
    for name, params in settings(args).items():
        clf.set_params(**params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            proba, seconds = C.timed(clf.predict_proba, X.iloc[test])
            depth = clf.exit_depth(X.iloc[test])
        auc, acc = score(ds.y[test], proba, clf.classes_, ds.task)
        rows.append({"dataset": ds.name, "task": ds.task, "split": seed, "setting": name,
                     "roc_auc": auc, "accuracy": acc, "mean_depth": float(depth.mean()),
                     "predict_time": seconds})
    return rows


def summarize(raw: pd.DataFrame, n_layers: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Summary per setting, and the per-dataset ROC-AUC table."""
    per_dataset = raw.groupby(["setting", "dataset"], sort=False)[
        ["roc_auc", "mean_depth", "predict_time"]].mean()
    by_setting = per_dataset.groupby("setting", sort=False).agg(
        {"roc_auc": "mean", "mean_depth": "mean", "predict_time": "sum"})
    full = by_setting.loc[FULL]
    auc_change = per_dataset["roc_auc"].unstack(0).sub(
        per_dataset["roc_auc"].unstack(0)[FULL], axis=0)
    summary = pd.DataFrame({
        "mean layers": by_setting["mean_depth"],
        "depth cut": 1 - by_setting["mean_depth"] / n_layers,
        "mean ROC-AUC": by_setting["roc_auc"],
        "ROC-AUC change": by_setting["roc_auc"] - full["roc_auc"],
        "worst dataset change": auc_change.min().reindex(by_setting.index),
        "predict time / full": by_setting["predict_time"] / full["predict_time"],
    })
    return summary, per_dataset["roc_auc"].unstack(0)


def plot(summary: pd.DataFrame, path: Path) -> None:
    plt = import_matplotlib_pyplot("Agg")
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for kind, marker in (("early_exit", "o"), ("max_layers", "s")):
        part = summary[summary.index.str.startswith(kind)]
        ax.plot(part["mean layers"], part["mean ROC-AUC"], marker=marker, label=kind)
        for name, row in part.iterrows():
            ax.annotate(name.split("=")[1], (row["mean layers"], row["mean ROC-AUC"]),
                        textcoords="offset points", xytext=(4, 4), fontsize=8)
    full = summary.loc[FULL]
    ax.plot([full["mean layers"]], [full["mean ROC-AUC"]], "k*", ms=10, label=FULL)
    ax.set_xlabel("mean layers used per row")
    ax.set_ylabel("mean ROC-AUC (CC18)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> None:
    args = parse_args(argv)
    names = args.datasets.split(",") if args.datasets else None
    datasets = C.load_cc18(args.data, names=names)
    rows = []
    for ds in datasets:
        for seed in range(args.first_seed, args.first_seed + args.splits):
            rows += run_split(ds, seed, args)
        done = pd.DataFrame([r for r in rows if r["dataset"] == ds.name])
        means = done.groupby("setting", sort=False)[["roc_auc", "mean_depth"]].mean()
        print(f"{ds.name:<34} " + "  ".join(
            f"{s}: {r.roc_auc:.4f}/{r.mean_depth:.1f}" for s, r in means.iterrows()), flush=True)
    raw = pd.DataFrame(rows)
    n_layers = int(raw.loc[raw["setting"] == FULL, "mean_depth"].max())
    summary, per_dataset = summarize(raw, n_layers)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot(summary, out / "tabswift_early_exit.png")
    sections = [
        f"Checkpoint `{args.checkpoint}` ({n_layers} layers), `n_estimators="
        f"{args.n_estimators}`; {len(datasets)} datasets x {args.splits} splits (seeds "
        f"{args.first_seed}..{args.first_seed + args.splits - 1}). One fit per "
        "split; every setting predicts the same test rows with the same fitted model.",
        "## Summary",
        C.markdown_table(summary, ".4f", index_name="setting"),
        "*mean layers*: layers each test row went through, averaged over rows, members and "
        "datasets. *ROC-AUC change*: mean over datasets of the change against full depth; "
        "*worst dataset change*: the largest drop on one dataset. *predict time / full*: "
        "summed predict_proba time against full depth (the early exit evaluates the head after "
        "every layer and regathers the rows still running; on CC18's small test sets its cut in "
        "layers is only partly a cut in time — see `tabswift_speed.md` for a 10,000-row batch).",
        "![ROC-AUC against mean depth](tabswift_early_exit.png)",
        "## Mean ROC-AUC per dataset",
        C.markdown_table(per_dataset, ".4f", index_name="dataset"),
    ]
    md = C.write_report(out, "tabswift_early_exit", "TabSwift: early exit and anytime depth",
                        sections, raw)
    print(f"wrote {md}")


if __name__ == "__main__":
    main()
