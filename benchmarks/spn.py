"""Benchmark SPNClassifier under strategic manipulation on real and synthetic data.

Data: the strategic-classification sets of Levanon & Rosenfeld (2021) in ``--data`` (credit,
fraud, spam, distress: standardised features, labels +-1, given train and validation splits; the
validation split is the test set here) and ``synthetic``, a setting with known ground truth:
x ~ N(0, 0.25^2 I_6), P(y=+1 | x) = sigmoid(3 w.x / ||w||) for a fixed w; features 4 and 5 are
immutable. Label +1 is the favourable outcome everywhere.

Protocol: for each budget, the test rows best-respond to each deployed model with
``skfm.tabular.strategic.best_response`` (cost ``--cost``, unit weights, every feature
manipulable except in ``synthetic``): the closed form for the two logistic regressions, the
black-box search for the others. Reported per model: accuracy and ROC-AUC on the clean test rows
and on the manipulated ones, and the share of test rows that moved. Models:

- ``TabSwift``: ``TabSwiftClassifier`` fitted on the clean training rows.
- ``SPN``: ``SPNClassifier`` with that TabSwift as base; the rows answer its deployed classifier
  (with ``--n-iter 1``: the TabSwift fitted on clean data, i.e. the same manipulated rows as
  ``TabSwift``) and SPN predicts them against its strategic context.
- ``SPN (rows answer SPN)``: the same fitted SPN, but the rows best-respond to SPN's own
  predictions (a fully transparent deployment).
- ``LR``: ``LogisticRegression()``.
- ``robust LR``: that LR with its threshold shifted by budget x ||w|| (the dual norm of the
  weights of the manipulable features under the cost; ``sqrt(budget)`` for the quadratic cost).

Budget 0 (no manipulation) is always added. Training rows are subsampled (stratified) to
``--max-context`` and test rows to ``--max-test``.
Results: ``<out>/spn.md`` (tables, target check), ``<out>/spn.csv`` (one row per dataset, budget
and model; first line a ``#`` comment, read with ``pd.read_csv(path, skiprows=1)``) and
``<out>/spn.png`` (accuracy against budget).

Example
-------
python benchmarks/spn.py --budgets 0.1,0.2,0.4 --n-estimators 8 --max-context 1000 \
    --max-test 300 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import _common as C
import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import train_test_split

from skfm import TabSwiftClassifier
from skfm._optional import import_matplotlib_pyplot
from skfm.tabular.strategic import SPNClassifier, best_response

DEFAULT_DATA = C.ROOT.parent / "shared" / "data" / "strategic"
REAL = ["credit", "fraud", "spam", "distress"]
MODELS = ["TabSwift", "SPN", "SPN (rows answer SPN)", "LR", "robust LR"]
SYNTHETIC_W = np.array([1.5, -1.0, 1.0, 0.5, 1.0, -0.5])
SYNTHETIC_MUTABLE = [0, 1, 2, 3]


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=DEFAULT_DATA, help="folder with credit/, fraud/, ...")
    p.add_argument("--datasets", default=",".join([*REAL, "synthetic"]), help="comma-separated")
    p.add_argument("--budgets", default="0.1,0.2,0.4", help="comma-separated, in cost units")
    p.add_argument("--cost", default="l2", choices=["l2", "quadratic", "linear"])
    p.add_argument("--n-estimators", type=int, default=8, help="TabSwift ensemble size")
    p.add_argument("--n-iter", type=int, default=1, help="SPN fixed-point iterations")
    p.add_argument("--max-context", type=int, default=1000, help="training rows kept (stratified)")
    p.add_argument("--max-test", type=int, default=300, help="test rows kept (stratified)")
    p.add_argument("--n-jobs", type=int, default=1, help="torch threads for TabSwift")
    p.add_argument("--seed", type=int, default=0)
    C.add_out_argument(p)
    return p.parse_args(argv)


def _subsample(X, y, n, seed):
    if len(y) <= n:
        return X, y
    X, _, y, _ = train_test_split(X, y, train_size=n, stratify=y, random_state=seed)
    return X, y


def load(name: str, data_dir, max_context: int, max_test: int, seed: int):
    """Return ``(X_train, y_train, X_test, y_test, manipulable, bayes)`` for one dataset.

    ``bayes`` is the ground-truth P(y=+1 | x) on the clean test rows (synthetic only, else None).
    """
    if name == "synthetic":
        rng = np.random.default_rng(seed)
        X = 0.25 * rng.standard_normal((max_context + max_test, len(SYNTHETIC_W)))
        p = 1 / (1 + np.exp(-3 * X @ SYNTHETIC_W / np.linalg.norm(SYNTHETIC_W) / 0.25))
        y = np.where(rng.random(len(p)) < p, 1, -1)
        n = max_context
        return X[:n], y[:n], X[n:], y[n:], SYNTHETIC_MUTABLE, p[n:]
    folder = Path(data_dir) / name

    def read(stem):
        return pd.read_csv(folder / f"{stem}.csv", index_col=0).to_numpy(dtype=float)

    X, y = _subsample(read("X"), read("Y").ravel().astype(int), max_context, seed)
    X_test, y_test = _subsample(read("Xval"), read("Yval").ravel().astype(int), max_test, seed)
    return X, y, X_test, y_test, None, None


def robust_lr(lr: LogisticRegression, budget: float, cost: str, manipulable) -> LogisticRegression:
    """``lr`` predicting +1 only where w.x + b >= budget x ||w||_* (cost's dual norm)."""
    w = lr.coef_[0] if manipulable is None else lr.coef_[0, manipulable]
    if cost == "linear":
        margin = budget * np.abs(w).max()
    else:
        margin = (np.sqrt(budget) if cost == "quadratic" else budget) * np.linalg.norm(w)
    shifted = copy.deepcopy(lr)
    shifted.intercept_ = lr.intercept_ - margin
    return shifted


def scores(model, X, y):
    """Accuracy and ROC-AUC (probability of +1)."""
    proba = model.predict_proba(X)[:, list(model.classes_).index(1)]
    return accuracy_score(y, model.predict(X)), roc_auc_score(y, proba)


def run_dataset(name, args, budgets):
    """Evaluate every model at every budget on one dataset; return result rows."""
    X, y, X_test, y_test, manipulable, bayes = load(
        name, args.data, args.max_context, args.max_test, args.seed
    )
    tabswift = TabSwiftClassifier(
        n_estimators=args.n_estimators, n_jobs=args.n_jobs, random_state=args.seed
    ).fit(X, y)
    lr = LogisticRegression().fit(X, y)
    rows = []
    if bayes is not None:
        acc = accuracy_score(y_test, np.where(bayes > 0.5, 1, -1))
        rows.append(_row(name, 0.0, "Bayes (ground truth)", (acc, roc_auc_score(y_test, bayes))))
    for budget in budgets:
        kwargs = {"budget": budget, "cost": args.cost, "manipulable": manipulable,
                  "random_state": args.seed}
        start = time.perf_counter()
        spn = SPNClassifier(tabswift, n_iter=args.n_iter, **kwargs).fit(X, y)
        fit_seconds = time.perf_counter() - start
        # model name: (the model that predicts, the model the test rows answer); for "SPN" the
        # second is spn.deployed_estimator_, exactly what spn.best_response(X_test) answers.
        deployed = {
            "TabSwift": (tabswift, tabswift),
            "SPN": (spn, spn.deployed_estimator_),
            "SPN (rows answer SPN)": (spn, spn),
            "LR": (lr, lr),
            "robust LR": (robust := robust_lr(lr, budget, args.cost, manipulable), robust),
        }
        for model_name, (model, answered) in deployed.items():
            start = time.perf_counter()
            X_moved = best_response(answered, X_test, **kwargs)
            moved = float(np.mean((X_moved != X_test).any(axis=1)))
            seconds = time.perf_counter() - start + (fit_seconds if model_name == "SPN" else 0.0)
            rows.append(
                _row(name, budget, model_name, scores(model, X_test, y_test),
                     scores(model, X_moved, y_test), moved, seconds)
            )
        print(f"{name:<10} budget {budget:<5} " + "  ".join(
            f"{r['model']}={r['accuracy_manipulated']:.3f}" for r in rows[-5:]
        ), flush=True)
    return rows


def _row(dataset, budget, model, clean, manipulated=(np.nan, np.nan), moved=0.0, seconds=0.0):
    return {
        "dataset": dataset, "budget": budget, "model": model,
        "accuracy_clean": clean[0], "roc_auc_clean": clean[1],
        "accuracy_manipulated": manipulated[0], "roc_auc_manipulated": manipulated[1],
        "moved": moved, "seconds": seconds,
    }


def targets(raw: pd.DataFrame) -> list[str]:
    """The issue's two targets, for both ways the rows can answer SPN."""
    acc = raw[raw["budget"] > 0].pivot_table(
        index=["dataset", "budget"], columns="model",
        values=["accuracy_clean", "accuracy_manipulated"],
    )
    lost = (acc["accuracy_clean", "TabSwift"] - acc["accuracy_manipulated", "TabSwift"]).mean()
    real = [d for d in REAL if d in raw["dataset"].unique()]
    table = [
        "| SPN variant | accuracy recovered (mean gain / mean loss) | real datasets where SPN "
        "beats robust LR on manipulated data (mean over budgets) |",
        "|---|---:|---|",
    ]
    for variant in ("SPN", "SPN (rows answer SPN)"):
        gain = (acc["accuracy_manipulated", variant]
                - acc["accuracy_manipulated", "TabSwift"]).mean()
        per_dataset = acc["accuracy_manipulated"].groupby(level="dataset").mean()
        wins = [d for d in real if per_dataset.loc[d, variant] > per_dataset.loc[d, "robust LR"]]
        table.append(
            f"| {variant} | {gain / lost:.2f} (target >= 0.50) | {len(wins)} of {len(real)}: "
            f"{', '.join(wins) or 'none'} (target >= 3) |"
        )
    return [
        "## Targets",
        f"Accuracy TabSwift loses to manipulation, mean over datasets and budgets > 0: {lost:.4f}.",
        "\n".join(table),
    ]


def tables(raw: pd.DataFrame) -> list[str]:
    """Accuracy and ROC-AUC tables, clean and manipulated, per dataset and budget."""
    out = []
    for metric in ("accuracy", "roc_auc"):
        wide = raw.pivot_table(index=["dataset", "budget"], columns="model", sort=False,
                               values=[f"{metric}_clean", f"{metric}_manipulated"])
        table = pd.DataFrame(index=wide.index)
        for model in [m for m in MODELS if m in raw["model"].unique()]:
            if model != "SPN (rows answer SPN)":  # clean scores equal SPN's
                table[f"{model} clean"] = wide[f"{metric}_clean", model]
            table[f"{model} manip."] = wide[f"{metric}_manipulated", model]
        table.index = [f"{d} @ {b:g}" for d, b in table.index]
        title = "Accuracy" if metric == "accuracy" else "ROC-AUC"
        out += [f"## {title} (clean / manipulated test rows)",
                C.markdown_table(table, ".3f", "dataset @ budget")]
    bayes = raw[raw["model"] == "Bayes (ground truth)"]
    if len(bayes):
        acc, auc = bayes[["accuracy_clean", "roc_auc_clean"]].iloc[0]
        out.append(
            f"Synthetic ground truth: the Bayes classifier reaches accuracy {acc:.3f} and ROC-AUC "
            f"{auc:.3f} on the clean test rows - the ceiling for any classifier on manipulated "
            "rows."
        )
    moved = raw.pivot_table(index="budget", columns="model", values="moved").reindex(
        columns=[m for m in MODELS if m in raw["model"].unique()]
    )
    seconds = raw.groupby("model")["seconds"].sum().reindex(moved.columns)
    out += ["## Share of test rows that moved (mean over datasets)",
            C.markdown_table(moved, ".3f", "budget"),
            "Total seconds (best response + scoring; SPN also its fit): "
            + ", ".join(f"{m} {s:.0f}" for m, s in seconds.items()) + "."]
    return out


def plot(raw: pd.DataFrame, path: Path) -> None:
    """Accuracy on manipulated rows against budget per method, one panel per dataset."""
    plt = import_matplotlib_pyplot("Agg")
    datasets = list(dict.fromkeys(raw["dataset"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(3.3 * len(datasets), 3.3), squeeze=False)
    for ax, name in zip(axes[0], datasets, strict=True):
        sub = raw[raw["dataset"] == name]
        for model in MODELS:
            m = sub[sub["model"] == model].sort_values("budget")
            ax.plot(m["budget"], m["accuracy_manipulated"], marker="o", ms=3, label=model)
        bayes = sub[sub["model"] == "Bayes (ground truth)"]
        if len(bayes):
            ax.axhline(bayes["accuracy_clean"].iloc[0], color="k", ls=":", lw=1, label="Bayes")
        ax.set_title(name)
        ax.set_xlabel("budget")
    axes[0, 0].set_ylabel("accuracy on manipulated test rows")
    axes[0, -1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    """Run the benchmark and write the report."""
    args = parse_args(argv)
    budgets = sorted({0.0, *(float(b) for b in args.budgets.split(","))})
    names = args.datasets.split(",")
    print(f"datasets {names}, budgets {budgets}, cost {args.cost}")
    raw = pd.DataFrame([row for name in names for row in run_dataset(name, args, budgets)])
    notes = [
        "Protocol: see the docstring of `benchmarks/spn.py`. Test rows answer each deployed "
        "model with the same `best_response` routine (closed form for the logistic "
        "regressions, black-box search otherwise). `SPN`: rows answer SPN's deployed classifier "
        "(the TabSwift fitted on clean data when n_iter=1), as in a post-deployment shift; "
        "`SPN (rows answer SPN)`: rows answer SPN's own predictions.",
        f"Subsampled: at most {args.max_context} training rows (stratified) and "
        f"{args.max_test} test rows (stratified, from the validation split) per dataset; "
        f"TabSwift n_estimators={args.n_estimators}, SPN n_iter={args.n_iter}, cost "
        f"{args.cost}, seed {args.seed}.",
        "![accuracy against budget](spn.png)",
    ]
    md = C.write_report(args.out, "spn", "SPNClassifier under strategic manipulation",
                        [*notes, *targets(raw), *tables(raw)], raw)
    plot(raw, md.with_suffix(".png"))
    print(f"wrote {md}, {md.with_suffix('.csv')} and {md.with_suffix('.png')}")


if __name__ == "__main__":
    main()
