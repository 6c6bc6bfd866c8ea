"""Fine-tuning TabSwift on the training table on a CPU: gain over in-context learning, and seconds.

On OpenML-CC18 tables and small regression tables (one 50/50 split per table, seed 0;
stratified for classification), each table is fitted and predicted by:

- ``in-context``: ``TabSwiftClassifier`` / ``TabSwiftRegressor`` with their defaults (shipped
  checkpoint, 8 members, no fine-tuning);
- ``<mode>@<budget>s``: the same with ``fine_tuning=<mode>`` (``"last"``: registers, head and
  last two blocks; ``"full"``: every weight) and ``time_budget=<budget>``, the other fine-tuning
  parameters at their defaults. The guard keeps the fine-tuned weights only when they beat the
  checkpoint on the held-out validation rows, so a run reports whether they were kept;
- ``hgb``: ``HistGradientBoosting`` (native categoricals), what a user would pick instead.

Scores are test ROC-AUC (binary: positive class; multiclass: one-vs-rest macro) and R²;
seconds are fit + predict wall time at ``--threads`` torch threads.

Example
-------
python benchmarks/studies/tabswift_finetune.py --threads 2 --budgets 10,60 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# ruff: noqa: E402
# benchmarks/ (the shared _common and the suites these studies build on) on the path:
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common as C
import numpy as np
import pandas as pd
from sklearn.metrics import r2_score, roc_auc_score
from sklearn.model_selection import train_test_split

from skfm import TabSwiftClassifier, TabSwiftRegressor

CC18_TABLES = ("tic-tac-toe", "steel-plates-fault", "car", "pc4", "cylinder-bands",
               "credit-g", "diabetes", "cmc")
REGRESSION_TABLES = ("diabetes", "Boston", "CPS1985", "bdims")


TITLE = "TabSwift fine-tuning on the training table, on CPU"


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(C.DEFAULT_CC18), help="OpenML-CC18 folder (index.json)")
    p.add_argument("--datasets", default=",".join(CC18_TABLES), help="CC18 tables, comma-separated")
    p.add_argument("--regression", default=",".join(REGRESSION_TABLES),
                   help="regression tables of benchmarks/_common.py, comma-separated ('' for none)")
    p.add_argument("--budgets", default="10,60", help="time budgets in seconds, comma-separated")
    p.add_argument("--modes", default="last,full", help="fine_tuning modes at the first budget")
    p.add_argument("--long-mode", default="full",
                   help="the one mode run at the budgets after the first")
    p.add_argument("--threads", type=int, default=2, help="torch threads (n_jobs)")
    p.add_argument("--stop-after", type=float, default=None,
                   help="minutes: start no table after this (the report has the finished ones)")
    p.add_argument("--reuse", default=None,
                   help="an earlier tabswift_finetune.csv: its rows of the tables not run now "
                   "join the report (for re-running some tables after a change)")
    p.add_argument("--from-raw", default=None,
                   help="a tabswift_finetune.csv: write the report from its rows, running nothing")
    C.add_out_argument(p, notes=True)
    return p.parse_args(argv)


def score(task: str, model, X_test, y_test) -> float:
    """Test ROC-AUC or R² of a fitted model."""
    if task == "regression":
        return float(r2_score(y_test, model.predict(X_test)))
    proba = model.predict_proba(X_test)
    if proba.shape[1] == 2:
        return float(roc_auc_score(y_test, proba[:, 1]))
    return float(roc_auc_score(y_test, proba, multi_class="ovr", labels=model.classes_))


def runs(args) -> list[tuple[str, dict]]:
    """(name, TabSwift parameters) of every TabSwift run, in-context first."""
    budgets = [float(b) for b in args.budgets.split(",") if b]
    out = [("in-context", {})]
    for i, budget in enumerate(budgets):
        for mode in args.modes.split(",") if i == 0 else [args.long_mode]:
            out.append((f"{mode}@{budget:g}s", {"fine_tuning": mode, "time_budget": budget}))
    return out


def one_table(ds, args) -> list[dict]:
    """Rows of one table: every run's score, seconds and what fine-tuning did."""
    reg = ds.task == "regression"
    X = ds.X if isinstance(ds.X, pd.DataFrame) else C.as_frame(ds.X, ds.categorical,
                                                                 ds.feature_names)
    train, test = train_test_split(np.arange(len(ds.y)), test_size=0.5, random_state=0,
                                   stratify=None if reg else ds.y)
    X_train, X_test, y_train, y_test = X.iloc[train], X.iloc[test], ds.y[train], ds.y[test]
    name = f"{ds.name} (regression)" if reg else ds.name  # sklearn's diabetes, not CC18's
    base = {"dataset": name, "task": ds.task, "train rows": len(train),
            "features": X.shape[1]}
    rows = []
    Estimator = TabSwiftRegressor if reg else TabSwiftClassifier
    for run, params in runs(args):
        model = Estimator(n_jobs=args.threads, **params)
        _, fit_seconds = C.timed(model.fit, X_train, y_train)
        value, predict_seconds = C.timed(score, ds.task, model, X_test, y_test)
        scores = model.validation_scores_ or {}
        rows.append({**base, "model": run, "score": value, "fit s": fit_seconds,
                     "predict s": predict_seconds, "kept": model.fine_tuned_,
                     "epochs": model.n_epochs_,
                     "val in-context": scores.get("in_context", np.nan),
                     "val fine-tuned": scores.get("fine_tuned", np.nan)})
        print(f"{base['dataset']:>22} {run:>12} {value:.4f} fit {fit_seconds:6.1f}s "
              f"kept={model.fine_tuned_} epochs={model.n_epochs_}", file=sys.stderr, flush=True)
    hgb = C.make_baseline("hgb", ds.task, ds.categorical, ds.numeric, 0)
    X_hgb = ds.X if isinstance(ds.X, pd.DataFrame) else pd.DataFrame(ds.X)  # as cc18.py does
    _, fit_seconds = C.timed(hgb.fit, X_hgb.iloc[train], y_train)
    value, predict_seconds = C.timed(score, ds.task, hgb, X_hgb.iloc[test], y_test)
    rows.append({**base, "model": "hgb", "score": value, "fit s": fit_seconds,
                 "predict s": predict_seconds})
    return rows


def with_earlier_rows(raw: pd.DataFrame, path) -> tuple[pd.DataFrame, str]:
    """Add an earlier run's rows of the tables not run now; say where they come from."""
    earlier = C.earlier_rows(path)
    earlier = earlier[~earlier["dataset"].isin(raw["dataset"])]
    note = (f"Rows of {', '.join(dict.fromkeys(earlier['dataset']))} are reused from earlier "
            f"runs ({C.origins(earlier, 'dataset')}); only {', '.join(dict.fromkeys(raw['dataset']))}"
            " ran now.")
    return pd.concat([raw.assign(**{C.MEASURED_BY: ""}), earlier], ignore_index=True), note


def summary(raw: pd.DataFrame) -> list[str]:
    """Report sections: per table, and the mean gain per run against in-context."""
    raw = raw.assign(seconds=raw["fit s"] + raw["predict s"])
    order = list(dict.fromkeys(raw["model"]))
    scores = raw.pivot(index="dataset", columns="model", values="score")[order]
    seconds = raw.pivot(index="dataset", columns="model", values="seconds")[order]
    gain = scores.sub(scores["in-context"], axis=0)
    tuned = [m for m in order if m not in ("in-context", "hgb")]
    kept = raw[raw["model"].isin(tuned)].pivot(index="dataset", columns="model",
                                                values="kept")[tuned]
    task = raw.groupby("dataset")["task"].first()
    sections = []
    for label, mask in (("classification (ROC-AUC)", task != "regression"),
                        ("regression (R²)", task == "regression")):
        names = task.index[mask]
        if not len(names):
            continue
        table = pd.DataFrame({
            "mean score": scores.loc[names].mean(),
            "mean gain vs in-context": gain.loc[names].mean(),
            "tables improved (> +0.001)": (gain.loc[names] > 1e-3).sum(),
            "tables worse (< -0.001)": (gain.loc[names] < -1e-3).sum(),
            "fine-tuning kept": kept.loc[names].astype(int).sum().reindex(order),
            "mean seconds": seconds.loc[names].mean(),
        })
        for column, fmt in zip(table.columns[2:], ("g", "g", "g", ".1f"), strict=True):
            table[column] = [("-" if pd.isna(v) else format(v, fmt)) for v in table[column]]
        sections += [f"## Summary: {label}, {len(names)} tables",
                     C.markdown_table(table, index_name="model")]
    per_table = scores.round(4).astype(str) + " (" + seconds.round(1).astype(str) + " s)"
    for m in tuned:
        per_table[m] += np.where(kept[m].reindex(per_table.index).astype(bool), "", " refused")
    sections += ["## Per table: score (fit + predict seconds); 'refused': the guard kept the "
                 "checkpoint's weights",
                 C.markdown_table(per_table, index_name="dataset")]
    return sections


def main(argv=None):
    """Run the benchmark and write the report."""
    args = parse_args(argv)
    if args.from_raw:
        frame = pd.read_csv(args.from_raw, comment="#")
        print(C.write_report(args.out, "tabswift_finetune", TITLE, summary(frame), frame,
                             args.notes_file))
        return
    classification = C.load_cc18(args.data, names=[n for n in args.datasets.split(",") if n])
    wanted = [n for n in args.regression.split(",") if n]
    regression = [ds for ds in C.load_regression() if ds.name in wanted] if wanted else []
    # two classification tables, then one regression table, ...: --stop-after cuts both kinds
    datasets = []
    for i in range(max(len(classification), 2 * len(regression))):
        datasets += classification[i:i + 1]
        if i % 2 == 1:
            datasets += regression[i // 2:i // 2 + 1]
    raw, start = [], time.perf_counter()
    for ds in datasets:
        if args.stop_after is not None and time.perf_counter() - start > 60 * args.stop_after:
            print(f"--stop-after {args.stop_after:g}: {ds.name} and later tables left out",
                  file=sys.stderr)
            break
        raw += one_table(ds, args)
        frame, notes = pd.DataFrame(raw), []
        if args.reuse:
            frame, note = with_earlier_rows(frame, args.reuse)
            notes.append(note)
        path = C.write_report(args.out, "tabswift_finetune", TITLE, notes + summary(frame),
                              frame, args.notes_file)
    print(path)


if __name__ == "__main__":
    main()
