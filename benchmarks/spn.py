"""Benchmark SPNClassifier when people game it: real and synthetic data, two costs, mis-set budget.

Data: the strategic-classification sets of Levanon & Rosenfeld (2021) in ``--data`` (credit,
fraud, spam, distress: standardised features, labels +-1, given train and validation splits; the
validation split is the test set here) and ``synthetic``, a setting with known ground truth:
x ~ N(0, 0.25^2 I_6), P(y=+1 | x) = sigmoid(3 w.x / ||w||) for a fixed w; features 4 and 5 are
immutable. Label +1 is the favourable outcome everywhere.

Protocol: for each seed, cost (``--costs``) and budget, every model is fitted on the clean
training rows and deployed; the test rows then best-respond to *that* model with
``skfm.tabular.strategic.best_response`` (unit weights, every feature manipulable except in
``synthetic``; the closed form for the two logistic regressions, the black-box search for the
others) and the model predicts their moved rows. The models that know a budget (SPN, robust LR)
are given the budget of the row; the rows then answer with that budget (``true budget =
assumed``) and with ``--misset`` times it (an unknown-to-the-model larger budget). Reported per
model: accuracy and ROC-AUC on the clean test rows and on the moved ones, the share of test
rows that moved. Models:

- ``TabSwift``: ``TabSwiftClassifier`` fitted on the clean training rows; rows game it.
- ``SPN``: ``SPNClassifier`` with its defaults (``method="stackelberg"``, ``base="auto"``) on
  that TabSwift; rows game SPN itself. Its guard deploys, per fit, the TabSwift rule or the
  strategic-robust logistic regression (``selected_``, reported per set and seed).
- ``SPN (TabSwift rule)``: ``SPNClassifier(base="estimator")``, the TabSwift threshold rule
  alone (the same object as ``SPN`` where its guard chose that rule); rows game it.
- ``LR``: ``LogisticRegression()``.
- ``robust LR``: that LR with its threshold shifted by budget x ||w|| (the dual norm of the
  weights of the manipulable features under the cost; ``sqrt(budget)`` for the quadratic cost),
  the strategic-robust linear classifier for a known cost.

Budget 0 (no manipulation) is always added. Training rows are subsampled (stratified, per
seed) to ``--max-context`` and test rows to ``--max-test``; the seed also sets TabSwift's
ensemble and the search's random directions (and draws ``synthetic``).
Results: ``<out>/spn.md`` (targets, tables), ``<out>/spn.csv`` (one row per seed, cost,
dataset, budget, true budget and model; first line a ``#`` comment, read with
``pd.read_csv(path, skiprows=1)``) and ``<out>/spn.png`` (accuracy against budget).

Example
-------
The shipped report (27 minutes on 2 idle threads; TabSwift keeps at most 2,048 context rows
per member, so more training rows would only reach the logistic regressions)::

    python benchmarks/spn.py --costs l2,quadratic --seeds 0,1,2 --max-context 2000 \
        --max-test 800 --n-estimators 2 --n-jobs 2 --time-budget 2100 --out docs/benchmarks
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
SPN_RULE = "SPN (TabSwift rule)"
MODELS = ["TabSwift", "SPN", SPN_RULE, "LR", "robust LR"]
SYNTHETIC_W = np.array([1.5, -1.0, 1.0, 0.5, 1.0, -0.5])
SYNTHETIC_MUTABLE = [0, 1, 2, 3]
TARGET_RECOVERED = 0.6


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=DEFAULT_DATA, help="folder with credit/, fraud/, ...")
    p.add_argument("--datasets", default=",".join([*REAL, "synthetic"]), help="comma-separated")
    p.add_argument("--budgets", default="0.1,0.2,0.4", help="comma-separated, in cost units")
    p.add_argument("--costs", default="l2,quadratic", help="comma-separated: l2, quadratic, linear")
    p.add_argument("--misset", type=float, default=1.25,
                   help="true budget / assumed budget of the mis-set rows (1 to skip)")
    p.add_argument("--seeds", default="0,1,2", help="comma-separated")
    p.add_argument("--n-estimators", type=int, default=1, help="TabSwift ensemble size")
    p.add_argument("--max-context", type=int, default=1000, help="training rows kept (stratified)")
    p.add_argument("--max-test", type=int, default=500, help="test rows kept (stratified)")
    p.add_argument("--n-jobs", type=int, default=1, help="torch threads for TabSwift")
    p.add_argument("--time-budget", type=float, default=None,
                   help="seconds: start no further seed once the next would end past it")
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


def run_dataset(name, seed, args, costs, budgets):
    """Evaluate every model at every cost, budget and true budget on one dataset; return rows."""
    X, y, X_test, y_test, manipulable, bayes = load(
        name, args.data, args.max_context, args.max_test, seed
    )
    tabswift = TabSwiftClassifier(
        n_estimators=args.n_estimators, n_jobs=args.n_jobs, random_state=seed
    ).fit(X, y)
    lr = LogisticRegression().fit(X, y)
    base = {"dataset": name, "seed": seed, "n_context": len(y), "n_test": len(y_test)}
    rows = []
    if bayes is not None:
        acc = accuracy_score(y_test, np.where(bayes > 0.5, 1, -1))
        rows.append({**base, "budget": 0.0, "true_budget": 0.0, "model": "Bayes (ground truth)",
                     "accuracy_clean": acc, "roc_auc_clean": roc_auc_score(y_test, bayes)})
    clean = {"TabSwift": scores(tabswift, X_test, y_test), "LR": scores(lr, X_test, y_test)}
    for cost in costs:
        for budget in budgets:
            kwargs = {"cost": cost, "manipulable": manipulable, "random_state": seed}
            start = time.perf_counter()
            spn = SPNClassifier(tabswift, budget=budget, **kwargs).fit(X, y)
            fit_seconds = {"SPN": time.perf_counter() - start}
            start = time.perf_counter()
            rule = spn
            if spn.selected_ != "estimator":
                rule = SPNClassifier(tabswift, budget=budget, base="estimator", **kwargs).fit(X, y)
            fit_seconds[SPN_RULE] = time.perf_counter() - start
            models = {"TabSwift": tabswift, "SPN": spn, SPN_RULE: rule, "LR": lr,
                      "robust LR": robust_lr(lr, budget, cost, manipulable)}
            for m in ("SPN", SPN_RULE, "robust LR"):
                clean[m] = scores(models[m], X_test, y_test)
            for true_budget in sorted({budget, budget * args.misset}):
                for model_name, model in models.items():
                    start = time.perf_counter()
                    X_moved = best_response(model, X_test, budget=true_budget, **kwargs)
                    acc, auc = scores(model, X_moved, y_test)
                    seconds = time.perf_counter() - start
                    rows.append({
                        **base, "cost": cost, "budget": budget, "true_budget": true_budget,
                        "model": model_name, "accuracy_clean": clean[model_name][0],
                        "roc_auc_clean": clean[model_name][1], "accuracy_manipulated": acc,
                        "roc_auc_manipulated": auc,
                        "moved": float(np.mean((X_moved != X_test).any(axis=1))),
                        "seconds": seconds + (fit_seconds.get(model_name, 0.0)
                                              if true_budget == budget else 0.0),
                        "threshold": getattr(model, "threshold_", np.nan),
                        "selected": getattr(model, "selected_", ""),
                        **{f"validation_{rule_name}": spn.validation_scores_.get(rule_name, np.nan)
                           for rule_name in ("logistic", "estimator") if model_name == "SPN"},
                    })
                print(f"seed {seed} {name:<10} {cost:<9} budget {budget:<5} true {true_budget:<6.3g} "
                      + "  ".join(f"{r['model']}={r['accuracy_manipulated']:.3f}"
                                  for r in rows[-len(models):]), flush=True)
    return rows


def _accuracy(raw, misset: bool):
    """Mean over seeds of accuracy and ROC-AUC per (cost, dataset, budget) and model."""
    sub = raw[(raw["budget"] > 0) & raw["model"].isin(MODELS)]
    sub = sub[(sub["true_budget"] > sub["budget"]) == misset]
    return sub.pivot_table(index=["cost", "dataset", "budget"], columns="model",
                           values=["accuracy_clean", "accuracy_manipulated",
                                   "roc_auc_manipulated"])


def target_rows(raw, misset: bool) -> list[list[str]]:
    """Per cost (and both together): accuracy recovered and wins over the robust LR, of SPN
    (its defaults) and of its TabSwift rule alone."""
    wide = _accuracy(raw, misset)
    out = []
    for cost in [*wide.index.unique("cost"), "both"]:
        acc = wide if cost == "both" else wide.xs(cost, level="cost", drop_level=False)
        clean, gamed = acc["accuracy_clean"], acc["accuracy_manipulated"]
        lost = (clean["TabSwift"] - gamed["TabSwift"]).mean()
        per = acc.groupby(level="dataset").mean()
        real = [d for d in REAL if d in per.index]
        row = [cost, f"{lost:.4f}"]
        for model in ("SPN", SPN_RULE):
            gain = (gamed[model] - gamed["TabSwift"]).mean()
            acc_wins = [d for d in real if per.loc[d, ("accuracy_manipulated", model)]
                        >= per.loc[d, ("accuracy_manipulated", "robust LR")]]
            auc_wins = [d for d in real if per.loc[d, ("roc_auc_manipulated", model)]
                        > per.loc[d, ("roc_auc_manipulated", "robust LR")]]
            row += [f"{gain / lost:.2f}",
                    f"{len(acc_wins)} of {len(real)}: {', '.join(acc_wins) or 'none'}",
                    f"{len(auc_wins)} of {len(real)}: {', '.join(auc_wins) or 'none'}"]
        out.append(row)
    return out


def choices(raw: pd.DataFrame) -> list[str]:
    """The rule SPN's guard deployed per cost, dataset and seed, and the held-out accuracies
    it chose by."""
    sub = raw[(raw["model"] == "SPN") & (raw["budget"] > 0)
              & (raw["true_budget"] == raw["budget"])].sort_values("budget")
    letter = sub.assign(rule=sub["selected"].map({"logistic": "L", "estimator": "T"}))
    chosen = letter.pivot_table(index=["cost", "dataset"], columns="seed", values="rule",
                                aggfunc="".join)
    chosen.columns = [f"seed {c}" for c in chosen.columns]
    chosen.index = [f"{c} / {d}" for c, d in chosen.index]
    held_out = sub.pivot_table(index=["cost", "dataset"],
                               values=["validation_logistic", "validation_estimator"])
    held_out.index = [f"{c} / {d}" for c, d in held_out.index]
    chosen["held-out accuracy, logistic rule"] = held_out["validation_logistic"]
    chosen["held-out accuracy, TabSwift rule"] = held_out["validation_estimator"]
    budgets = ", ".join(f"{b:g}" for b in sorted(sub["budget"].unique()))
    return ["## The rule SPN's guard deployed",
            f"Per seed, one letter per budget ({budgets}): L = the strategic-robust logistic "
            "regression, T = the TabSwift rule. The held-out accuracies are those of "
            "`validation_scores_` (context rows that game each rule, 5 folds), mean over "
            "budgets and seeds.",
            C.markdown_table(chosen, ".3f", "cost / dataset")]


def targets(raw: pd.DataFrame, misset: float) -> list[str]:
    """The issue's targets: rows game SPN with the budget it assumes, then a larger one."""
    head = ["cost", "accuracy TabSwift loses (mean)",
            f"share SPN recovers (target >= {TARGET_RECOVERED})",
            "real sets: SPN accuracy >= robust LR (target >= 3)",
            "real sets: SPN ROC-AUC > robust LR",
            "TabSwift rule alone: share recovered", "TabSwift rule: accuracy >= robust LR",
            "TabSwift rule: ROC-AUC > robust LR"]
    sections = ["## Targets: rows game SPN itself"]
    for title, mis in [("True budget = the budget SPN and the robust LR assume.", False),
                       (f"Mis-set budget: the rows have {misset:g} x the budget SPN and the robust "
                        "LR assume; TabSwift's loss is at the rows' budget.", True)]:
        if mis and not (raw["true_budget"] > raw["budget"]).any():
            continue
        table = pd.DataFrame(target_rows(raw, mis), columns=head).set_index("cost")
        sections += [title, C.markdown_table(table, index_name="cost")]
    zero = raw[(raw["budget"] == 0) & raw["model"].isin(["TabSwift", "SPN"])]
    gap = zero.pivot_table(index=["cost", "dataset", "seed"], columns="model",
                           values="accuracy_clean")
    lost = (gap["TabSwift"] - gap["SPN"]).max()
    sections.append(f"Clean accuracy SPN loses at budget 0 (largest over sets, seeds, costs): "
                    f"{lost:.4f} (target <= 0.01).")
    return sections


def tables(raw: pd.DataFrame) -> list[str]:
    """Accuracy and ROC-AUC per dataset and budget (mean over seeds), per cost; the mis-set
    table; the share of rows that moved and the seconds."""
    out = []
    for mis in (False, True):
        wide = _accuracy(raw, mis)
        if wide.empty:
            continue
        for metric in ("accuracy", "roc_auc"):
            if mis and metric == "roc_auc":
                continue
            table = pd.DataFrame(index=wide.index)
            for model in MODELS:
                if metric == "accuracy" and not mis:
                    table[f"{model} clean"] = wide["accuracy_clean", model]
                table[f"{model} gamed"] = wide[f"{metric}_manipulated", model]
            table.index = [f"{c} / {d} @ {b:g}" for c, d, b in table.index]
            title = "Accuracy" if metric == "accuracy" else "ROC-AUC"
            if mis:
                title = "Accuracy with a mis-set budget (rows have the larger budget)"
            out += [f"## {title} (mean over seeds; clean / gamed test rows)",
                    C.markdown_table(table, ".3f", "cost / dataset @ assumed budget")]
    bayes = raw[raw["model"] == "Bayes (ground truth)"]
    if len(bayes):
        acc, auc = bayes[["accuracy_clean", "roc_auc_clean"]].mean()
        out.append(
            f"Synthetic ground truth: the Bayes classifier reaches accuracy {acc:.3f} and ROC-AUC "
            f"{auc:.3f} on the clean test rows (mean over seeds) - the ceiling for any classifier "
            "on gamed rows."
        )
    models = raw[raw["model"].isin(MODELS)]
    moved = models.pivot_table(index=["cost", "true_budget"], columns="model",
                               values="moved").reindex(columns=MODELS)
    moved.index = [f"{c} @ {b:g}" for c, b in moved.index]
    seconds = models.groupby("model")["seconds"].sum().reindex(MODELS)
    threshold = raw[raw["model"] == SPN_RULE].pivot_table(index=["cost", "budget"],
                                                          columns="dataset", values="threshold")
    threshold.index = [f"{c} @ {b:g}" for c, b in threshold.index]
    out += ["## Share of test rows that moved (mean over datasets and seeds)",
            C.markdown_table(moved, ".3f", "cost @ true budget"),
            "## The TabSwift rule's threshold (`threshold_`, mean over seeds)",
            C.markdown_table(threshold, ".3f", "cost @ budget"),
            "Total seconds (best response + scoring; SPN also its fit): "
            + ", ".join(f"{m} {s:.0f}" for m, s in seconds.items()) + "."]
    return out


def plot(raw: pd.DataFrame, path: Path) -> None:
    """Accuracy on gamed rows against budget per model (first cost, true budget = assumed)."""
    plt = import_matplotlib_pyplot("Agg")
    cost = raw["cost"].dropna().iloc[0]
    sub = raw[(raw["cost"] == cost) & (raw["true_budget"] == raw["budget"])]
    datasets = list(dict.fromkeys(sub["dataset"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(3.3 * len(datasets), 3.3), squeeze=False)
    for ax, name in zip(axes[0], datasets, strict=True):
        data = sub[sub["dataset"] == name]
        for model in MODELS:
            m = data[data["model"] == model].groupby("budget")["accuracy_manipulated"].mean()
            ax.plot(m.index, m.to_numpy(), marker="o", ms=3, label=model)
        bayes = raw[(raw["dataset"] == name) & (raw["model"] == "Bayes (ground truth)")]
        if len(bayes):
            ax.axhline(bayes["accuracy_clean"].mean(), color="k", ls=":", lw=1, label="Bayes")
        ax.set_title(name)
        ax.set_xlabel(f"budget ({cost} cost)")
    axes[0, 0].set_ylabel("accuracy when rows game the model")
    axes[0, -1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    """Run the benchmark and write the report."""
    args = parse_args(argv)
    budgets = sorted({0.0, *(float(b) for b in args.budgets.split(","))})
    costs = args.costs.split(",")
    names = args.datasets.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"datasets {names}, budgets {budgets}, costs {costs}, seeds {seeds}")
    rows, start, done = [], time.perf_counter(), []
    for seed in seeds:
        elapsed = time.perf_counter() - start
        if args.time_budget and done and elapsed * (len(done) + 1) / len(done) > args.time_budget:
            print(f"time budget: stopping after seeds {done} ({elapsed:.0f} s)")
            break
        rows += [row for name in names for row in run_dataset(name, seed, args, costs, budgets)]
        done.append(seed)
    raw = pd.DataFrame(rows)
    sizes = raw.groupby("dataset")[["n_context", "n_test"]].first()
    notes = [
        "Protocol: see the docstring of `benchmarks/spn.py`. The test rows game each deployed "
        "model itself - SPN included - with the same `best_response` routine (closed form for "
        "the logistic regressions, black-box search otherwise): the equilibrium case, where SPN "
        "is the published model people answer.",
        "Rows per dataset (training context / test): " + ", ".join(
            f"{d} {r.n_context} / {r.n_test}" for d, r in sizes.iterrows())
        + f" (at most {args.max_context} / {args.max_test}, stratified, drawn per seed); "
        f"TabSwift n_estimators={args.n_estimators}; seeds {','.join(map(str, done))} (asked "
        f"{args.seeds}); costs {args.costs}; {time.perf_counter() - start:.0f} s in all.",
        "![accuracy against budget](spn.png)",
    ]
    md = C.write_report(args.out, "spn", "SPNClassifier when people game it",
                        [*notes, *targets(raw, args.misset), *choices(raw), *tables(raw)],
                        raw)
    plot(raw, md.with_suffix(".png"))
    print(f"wrote {md}, {md.with_suffix('.csv')} and {md.with_suffix('.png')}")


if __name__ == "__main__":
    main()
