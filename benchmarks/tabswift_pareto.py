"""Accuracy against fit + predict seconds: TabSwift's estimators beside the baselines a user
would choose from instead.

Suites (``--suites``): ``cc18``, the 30 OpenML-CC18 tables of ``--data`` as ``cc18.py`` loads
them; ``regression``, the regression suite of ``regression.py`` (scikit-learn's diabetes and
``_common.RDATASETS``); ``heldout``, the 15 classification and 15 regression tables of
``heldout_tables.py`` (reported as two groups, since ROC-AUC and R² do not average). Protocol:
``--splits`` random 50/50 splits per table with seeds 0, 1, ... (``StratifiedShuffleSplit``
for classification, ``ShuffleSplit`` for regression), the same split for every model;
``--max-train-rows`` draws at most that many training rows from the training half (stratified
for classification), the test half stays whole. Models (``--models``):

- ``tabswift``: ``TabSwiftClassifier()`` / ``TabSwiftRegressor()`` at their defaults (the
  guard included); ``tabswift_alone``: the same with ``guard=False`` (the network alone);
  ``tabswift_exit``: ``guard=False, early_exit=True``, the default agreement (0.75) of
  ``docs/benchmarks/tabswift_early_exit.md``;
- ``lr``, ``rf``, ``hgb``, ``xgboost``, ``lightgbm``: ``_common.make_baseline``'s ``lr``
  (``ridge`` on regression tables), ``rf``, ``hgb``, ``xgb`` and ``lgbm``: default
  parameters, one-hot codes for the linear model, ordinal codes for the tree ensembles,
  HistGradientBoosting's native categoricals.

``--threads`` sets TabSwift's torch threads (``n_jobs``), the baselines' ``n_jobs`` and, by
``threadpoolctl``, the OpenMP and BLAS threads of every model. Per (suite, table, split, model)
the script records ROC-AUC (binary: positive-class probability; multiclass: one-vs-rest
macro, as ``cc18.py``) or R², the wall seconds of fit + predict (``predict_proba`` for
classification), the training rows and TabSwift's ``blend_weight_``. With ``--resume`` every
row is appended to ``<out>/tabswift_pareto.rows.csv`` as soon as it is measured and finished
rows are skipped when run again (a failed row is run again), so a long run can be done in
parts (by ``--suites``, ``--tables`` or ``--models``, with ``--no-report``); the report covers
the rows of the suites, tables, splits and models of the command that writes it.

The report, ``<out>/tabswift_pareto.md`` with ``.csv`` (its rows) and ``.png`` (one panel per
suite: mean score against median seconds, log scale): per suite the mean score, the median
seconds, the median per-table ratio of each model's seconds to HistGradientBoosting's (on all
tables, on those of at most 2,000 training rows, on the larger ones) and the largest; and
whether the run meets the speed targets of the default estimator (issue 47).

Example
-------
python benchmarks/tabswift_pareto.py --threads 2 --resume --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import _common as C
import heldout_tables
import numpy as np
import pandas as pd
from cc18 import score as classification_scores
from sklearn.metrics import r2_score
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit
from sklearn.utils import resample
from threadpoolctl import threadpool_limits

from skfm._optional import import_matplotlib_pyplot

STEM = "tabswift_pareto"
SUITES = ("cc18", "regression", "heldout")
GROUPS = ("cc18", "regression", "heldout classification", "heldout regression")  # of the report
TABSWIFT = {"tabswift": {}, "tabswift_alone": {"guard": False},  # name -> parameters
            "tabswift_exit": {"guard": False, "early_exit": True}}
BASELINES = {"lr": "lr", "rf": "rf", "hgb": "hgb", "xgboost": "xgb", "lightgbm": "lgbm"}
MODELS = (*TABSWIFT, *BASELINES)
OPTIONAL = {"xgboost": "xgboost", "lightgbm": "lightgbm"}
THREADED = {"rf", "xgb", "lgbm"}  # baselines whose estimator takes n_jobs
KEY = ["suite", "table", "split", "model"]
COLUMNS = [*KEY, "task", "n_train", "metric", "score", "seconds", "blend_weight", "error"]
SMALL = 2000  # training rows: the speed targets differ at and below this size
TARGETS = {"small": 1.5, "large": 3.0, "alone": 3.0}


def add_table_arguments(parser) -> None:
    """``--suites``, ``--tables``, ``--splits``, ``--threads`` and ``--data``: the tables,
    splits and threads of a run over this script's suites."""
    parser.add_argument("--suites", default=",".join(SUITES), help="comma-separated")
    parser.add_argument("--tables", default=None,
                        help="comma-separated table names (default: every table of the suites)")
    parser.add_argument("--splits", type=int, default=1, help="random 50/50 splits (seeds 0..)")
    parser.add_argument("--threads", type=int, default=2,
                        help="torch threads, baselines' n_jobs and OpenMP/BLAS threads")
    parser.add_argument("--data", default=C.DEFAULT_CC18,
                        help="OpenML-CC18 folder with index.json")


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_table_arguments(p)
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated")
    p.add_argument("--max-train-rows", type=int, default=None,
                   help="draw at most this many training rows from each training half")
    p.add_argument("--resume", action="store_true",
                   help=f"append every row to <out>/{STEM}.rows.csv, skip finished ones")
    p.add_argument("--no-report", action="store_true",
                   help="only run (with --resume: a part of the suites)")
    C.add_out_argument(p, notes=True)
    args = check_table_arguments(p, p.parse_args(argv))
    args.models = C.parse_models(args.models, OPTIONAL)
    unknown_error(p, "models", args.models, MODELS)
    return args


def unknown_error(parser, kind: str, given, known) -> None:
    """A parser error naming the ``given`` values of ``kind`` not among ``known``, if any."""
    if set(given) - set(known):
        parser.error(f"unknown {kind}: {', '.join(sorted(set(given) - set(known)))} "
                     f"(known: {', '.join(known)})")


def check_table_arguments(parser, args):
    """``args`` of :func:`add_table_arguments` checked (a parser error otherwise), with
    ``suites`` as a list and ``names``: the table names of each suite that ``--tables``
    selects."""
    args.suites = [s for s in args.suites.split(",") if s]
    unknown_error(parser, "suites", args.suites, SUITES)
    if args.threads < 1 or args.splits < 1:
        parser.error("--threads and --splits must be at least 1")
    wanted = args.tables.split(",") if args.tables else None
    names = {s: suite_tables(s, args.data) for s in args.suites}
    unknown = set(wanted or ()) - {t for found in names.values() for t in found}
    if unknown:
        parser.error(f"tables in none of the suites {', '.join(args.suites)}: "
                     f"{', '.join(sorted(unknown))}")
    args.names = {s: [t for t in found if wanted is None or t in wanted]
                  for s, found in names.items()}
    return args


def suite_tables(suite: str, data) -> list[str]:
    """The table names of a suite, in its order (nothing loaded)."""
    if suite == "cc18":
        return [entry["name"] for entry in json.loads((Path(data) / "index.json").read_text())]
    if suite == "regression":
        return ["diabetes", *(entry[0] for entry in C.RDATASETS)]
    return [entry[0] for entry in heldout_tables.TABLES]


def load_tables(suite: str, names: list[str], data) -> list[C.Dataset]:
    """The tables `names` of a suite, loaded as the suite's own script loads them."""
    if not names:
        return []
    if suite == "cc18":
        return C.load_cc18(data, names=names)
    if suite == "regression":
        return [ds for ds in C.load_regression() if ds.name in names]
    loaded = [heldout_tables.load(*entry) for entry in heldout_tables.TABLES
              if entry[0] in names]
    return [ds for ds in loaded if ds is not None]


def split(ds: C.Dataset, seed: int, max_train_rows: int | None):
    """Training and test positions of split `seed` (at most `max_train_rows` training rows)."""
    regression = ds.task == "regression"
    splitter = (ShuffleSplit if regression else StratifiedShuffleSplit)(
        n_splits=1, test_size=0.5, random_state=seed)
    train, test = next(splitter.split(ds.X, ds.y))
    if max_train_rows is not None and len(train) > max_train_rows:
        train = resample(train, replace=False, n_samples=max_train_rows, random_state=seed,
                         stratify=None if regression else ds.y[train])
    return train, test


def make_model(name: str, ds: C.Dataset, seed: int, threads: int):
    """Return ``(estimator, X)``: the unfitted model and the form of the features it is given
    (TabSwift a DataFrame with ``category`` columns, the baselines what the suite holds)."""
    if name in TABSWIFT:
        from skfm import TabSwiftClassifier, TabSwiftRegressor

        cls = TabSwiftRegressor if ds.task == "regression" else TabSwiftClassifier
        X = ds.X if isinstance(ds.X, pd.DataFrame) else C.as_frame(
            ds.X, ds.categorical, ds.feature_names)
        return cls(random_state=seed, n_jobs=threads, **TABSWIFT[name]), X
    baseline = "ridge" if name == "lr" and ds.task == "regression" else BASELINES[name]
    model = C.make_baseline(baseline, ds.task, ds.categorical, ds.numeric, seed)
    if baseline in THREADED:  # the estimator is a pipeline's last step
        model[-1].set_params(n_jobs=threads)
    return model, ds.X


def run_one(name: str, suite: str, ds: C.Dataset, seed: int, train, test, threads: int) -> dict:
    """Fit and score one model on one split; return its row (errors are recorded, not raised)."""
    regression = ds.task == "regression"
    row = {"suite": suite, "table": ds.name, "split": seed, "model": name, "task": ds.task,
           "n_train": len(train), "metric": "R²" if regression else "ROC-AUC"}
    model, X = make_model(name, ds, seed, threads)
    take = (lambda idx: X.iloc[idx]) if isinstance(X, pd.DataFrame) else (lambda idx: X[idx])
    X_train, X_test, y_test = take(train), take(test), ds.y[test]

    def fit_predict():
        model.fit(X_train, ds.y[train])
        return model.predict(X_test) if regression else model.predict_proba(X_test)

    try:
        pred, seconds = C.timed(fit_predict)
        score = r2_score(y_test, pred) if regression else classification_scores(
            y_test, np.asarray(pred), np.asarray(model.classes_), ds.task)[0]
    except Exception as exc:  # keep a long run going; the error is recorded in the rows
        print(f"  {name} failed on {ds.name} split {seed}: {exc!r}", flush=True)
        return {**row, "score": np.nan, "seconds": np.nan, "blend_weight": np.nan,
                "error": repr(exc)}
    return {**row, "score": score, "seconds": seconds,
            "blend_weight": getattr(model, "blend_weight_", np.nan), "error": ""}


def earlier(path: Path) -> pd.DataFrame:
    """The rows of the rows file (the last of each key), none when it does not exist."""
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    return pd.read_csv(path).drop_duplicates(KEY, keep="last")


def run(args, rows_path: Path) -> pd.DataFrame:
    """Run every (suite, table, split, model) not finished yet; return all rows."""
    rows = earlier(rows_path) if args.resume else pd.DataFrame(columns=COLUMNS)
    ok = rows[rows["error"].isna() | (rows["error"] == "")]
    finished = set(zip(*(ok[k] for k in KEY), strict=True))
    if args.resume and not rows_path.exists():
        rows_path.parent.mkdir(parents=True, exist_ok=True)
        rows.to_csv(rows_path, index=False)
    new = []
    for suite in args.suites:
        for ds in load_tables(suite, args.names[suite], args.data):
            for seed in range(args.splits):
                todo = [m for m in args.models if (suite, ds.name, seed, m) not in finished]
                if not todo:
                    continue
                train, test = split(ds, seed, args.max_train_rows)
                for name in todo:
                    row = run_one(name, suite, ds, seed, train, test, args.threads)
                    new.append(row)
                    if args.resume:
                        pd.DataFrame([row], columns=COLUMNS).to_csv(
                            rows_path, mode="a", header=False, index=False)
                    print(f"{suite:<10} {ds.name:<34} {seed} {name:<15} "
                          f"{row['score']:.4f} {row['seconds']:8.2f} s", flush=True)
    rows = pd.concat([rows, pd.DataFrame(new, columns=COLUMNS)], ignore_index=True)
    return rows.drop_duplicates(KEY, keep="last").reset_index(drop=True)


def group(rows: pd.DataFrame) -> pd.Series:
    """The report's group of each row: its suite, the held-out suite split by task."""
    task = np.where(rows["task"] == "regression", "regression", "classification")
    return rows["suite"].where(rows["suite"] != "heldout", "heldout " + pd.Series(
        task, index=rows.index))


def per_table(rows: pd.DataFrame):
    """Mean score and seconds per (group, table) and model over splits, and training rows."""
    rows = rows.assign(group=group(rows))
    means = rows.groupby(["group", "table", "model"], sort=False)[["score", "seconds"]].mean()
    n_train = rows.groupby(["group", "table"], sort=False)["n_train"].max()
    return means["score"].unstack("model"), means["seconds"].unstack("model"), n_train


def present(frame) -> list[str]:
    """The groups of `frame`'s (group, table) index, in the report's order."""
    have = set(frame.index.get_level_values("group"))
    return [g for g in GROUPS if g in have]


def ratio_to(seconds: pd.DataFrame, model: str) -> pd.DataFrame:
    """Each model's seconds over `model`'s on the same table (NaN where it did not run)."""
    if model not in seconds.columns:
        return seconds * np.nan
    return seconds.div(seconds[model], axis=0)


def group_table(score, seconds, n_train, models) -> pd.DataFrame:
    """One group's summary table, one row per model."""
    to_hgb = ratio_to(seconds, "hgb")
    small = (n_train <= SMALL).reindex(to_hgb.index)
    out = {}
    for m in models:
        ratio = to_hgb[m].dropna()
        cells = {"tables": int(score[m].notna().sum()), "mean score": score[m].mean(),
                 "median s": seconds[m].median(), "median s / hgb": ratio.median()}
        for label, mask in ((f"≤ {SMALL:,} rows", small), (f"> {SMALL:,} rows", ~small)):
            part = ratio[mask.reindex(ratio.index)]
            cells[f"median s / hgb, {label}"] = part.median() if len(part) else "none"
        cells["largest s / hgb"] = f"{ratio.max():.2f} ({ratio.idxmax()})" if len(ratio) else "-"
        out[m] = cells
    return pd.DataFrame(out).T.astype(object)


def verdict(value: float, target: float) -> str:
    """``"x.xx (yes)"`` or ``"(no)"`` against a target; ``"none"`` for no table."""
    if np.isnan(value):
        return "none"
    return f"{value:.2f} ({'yes' if value <= target else 'no'})"


def speed_targets(seconds: pd.DataFrame, n_train: pd.Series) -> list[str]:
    """The issue's speed targets of the default and, per group and over all, whether met."""
    line = (f"Speed targets of the default (`tabswift`, issue 47): median time at most "
            f"{TARGETS['small']}x HGB's on tables of at most {SMALL:,} training rows, at most "
            f"{TARGETS['large']}x above, and on no table over {TARGETS['alone']}x the network "
            "alone (`tabswift_alone`).")
    if not {"tabswift", "hgb", "tabswift_alone"} <= set(seconds.columns):
        return [line + " Not checked: the run needs tabswift, tabswift_alone and hgb."]
    to_hgb = ratio_to(seconds, "hgb")["tabswift"]
    to_alone = ratio_to(seconds, "tabswift_alone")["tabswift"]
    small = (n_train <= SMALL).reindex(to_hgb.index)
    groups = present(to_hgb)
    table = {}
    for name in [*groups, "all suites"]:
        mask = (to_hgb.index.get_level_values("group") == name) if name in groups else (
            np.ones(len(to_hgb), bool))
        checks = [to_hgb[mask & small].median(), to_hgb[mask & ~small].median(),
                  to_alone[mask].max()]
        cells = [verdict(v, t) for v, t in zip(checks, TARGETS.values(), strict=True)]
        measured = [c for c in cells if c != "none"]
        met = "no" if any(c.endswith("(no)") for c in measured) else "yes" if measured else "-"
        table[name] = [*cells, met]
    columns = [f"default / hgb, ≤ {SMALL:,} rows (median)", f"> {SMALL:,} rows (median)",
               "default / network alone (largest)", "met"]
    frame = pd.DataFrame.from_dict(table, orient="index", columns=columns)
    return [line, C.markdown_table(frame, index_name="suite"),
            "Each cell: the ratio of fit + predict seconds (per table, then the median or the "
            "largest) and whether it meets its target; `none`: no table of that size."]


def plot(score: pd.DataFrame, seconds: pd.DataFrame, models: list[str], path: Path) -> None:
    """One panel per group: mean score against median seconds (log scale), a point per model."""
    plt = import_matplotlib_pyplot("Agg")
    from matplotlib import ticker

    groups = present(score)
    fig, axes = plt.subplots(1, len(groups), figsize=(3.8 * len(groups), 3.6), squeeze=False)
    for ax, name in zip(axes[0], groups, strict=True):
        mean, median = score.loc[name].mean(), seconds.loc[name].median()
        for m in [m for m in models if np.isfinite(mean.get(m, np.nan))]:
            ax.plot(median[m], mean[m], "o", color="C3" if m in TABSWIFT else "C0")
            ax.annotate(m, (median[m], mean[m]), textcoords="offset points", xytext=(4, 3),
                        fontsize=7)
        ax.set_xscale("log")  # at least a decade wide, room for the labels on the right
        low, high = median[mean.notna()].min() / 2, median[mean.notna()].max() * 4
        widen = max(1.0, np.sqrt(10 * low / high))
        ax.set_xlim(low / widen, high * widen)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_title(f"{name} ({len(score.loc[name])} tables)", fontsize=9)
        ax.set_xlabel("median fit + predict seconds")
        ax.set_ylabel("mean R²" if "regression" in name else "mean ROC-AUC")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report(rows: pd.DataFrame, args, out: Path) -> Path:
    """Write the report, its rows and its figure; return the report's path."""
    rows = rows[rows["suite"].isin(args.suites) & rows["model"].isin(args.models)
                & (rows["split"] < args.splits)
                & np.array([t in args.names[s] for s, t in zip(rows["suite"], rows["table"],
                                                                strict=True)], dtype=bool)]
    score, seconds, n_train = per_table(rows)
    models = [m for m in args.models if m in score.columns]
    cap = f"at most {args.max_train_rows:,}" if args.max_train_rows else "all"
    sections = [
        f"{args.splits} random 50/50 split(s) per table (seeds 0..), the same for every model; "
        f"{cap} training rows; {args.threads} thread(s) for every model; load average at the "
        f"end: {os.getloadavg()[0]:.1f}. Score: ROC-AUC (classification) or R² (regression) "
        "on the test half, mean over splits, then over tables; seconds: wall time of fit + "
        "predict, mean over splits, then the median over tables. Ratios to HistGradientBoosting "
        "(hgb) are per table, then the median (`none`: no table of that size).",
        *speed_targets(seconds, n_train),
        f"![mean score against median seconds]({STEM}.png)",
    ]
    for name in present(score):
        metric = "R²" if "regression" in name else "ROC-AUC"
        table = group_table(score.loc[name], seconds.loc[name], n_train.loc[name], models)
        sections += [f"## {name} ({len(score.loc[name])} tables, {metric})",
                     C.markdown_table(table.rename(columns={"mean score": f"mean {metric}"}),
                                      ".3f", index_name="model")]
    failed = rows[rows["error"].notna() & (rows["error"] != "")]
    if len(failed):
        sections.append("Failed (left out of the means): " + ", ".join(
            f"{r.model} on {r.table} split {r.split}" for r in failed.itertuples()) + ".")
    sections += C.read_notes(args.notes_file)
    md = C.write_report(out, STEM, "TabSwift: accuracy against time", sections,
                        rows.reset_index(drop=True), args.notes_file)
    plot(score, seconds, models, md.with_suffix(".png"))
    return md


def main(argv=None):
    """Run the benchmark and write the report."""
    args = parse_args(argv)
    out = Path(args.out)
    print(f"suites {', '.join(args.suites)}: {sum(map(len, args.names.values()))} tables, "
          f"{args.splits} split(s), models: {', '.join(args.models)}", flush=True)
    with threadpool_limits(limits=args.threads):
        rows = run(args, out / f"{STEM}.rows.csv")
    if args.no_report:
        return
    md = report(rows, args, out)
    print(md.read_text())
    print(f"wrote {md}, {md.with_suffix('.csv')} and {md.with_suffix('.png')}")


if __name__ == "__main__":
    main()
