"""What TabSwift's guard costs beside the network alone, and what cheaper guards (fewer
members, folds and boosting rounds) would have scored, simulated from its timed parts on the
tables of ``tabswift_pareto.py``.

Measured per table of the suites of ``tabswift_pareto.py`` (``cc18``, ``regression``,
``heldout``; its tables, 50/50 splits of seeds 0..``--splits``-1 and DataFrame features),
``--threads`` threads (``n_jobs`` and ``threadpoolctl``):

- the network alone: ``TabSwiftClassifier`` / ``TabSwiftRegressor`` with ``guard=False``,
  ``n_estimators`` 8 and 4, ``random_state`` the split's seed; its test predictions
  (``predict_proba`` / ``predict``) and the wall seconds of fit + predict;
- TabSwift's out-of-fold predictions of the training rows, for ``k`` in ``FOLDS`` shuffled
  folds (``StratifiedKFold`` when every class has ``k`` rows, else ``KFold``; seed
  ``FOLD_SEED``, where the guard draws one from ``random_state``) and the first ``m`` in
  ``OOF_MEMBERS`` members of the 8-member network reading the other folds as context
  (``_logits_in_context``, :func:`skfm.tabular.guard.cross_fitted`), timed;
- for each ``k``, each partner's out-of-fold predictions, the mean of its fold models' test
  predictions, the test predictions of it refitted on every training row, and their seconds.
  Partners (built here, not by ``guard._partners``, so that the study measures the same
  variants whatever the guard ships): ``linear`` (:func:`skfm.tabular.guard.linear_model`);
  ``boosting_default``, HistGradientBoosting at scikit-learn's defaults (100 rounds at 0.1;
  the guard until 2026-12-07); ``boosting_40``, 40 rounds at 0.25. Both boosters from
  ``guard.MIN_BOOSTED_ROWS`` rows on, with fewer rounds at a higher rate (and a share of the
  columns per split) beyond ``guard.BOOSTER_WORK``
  (:func:`skfm.tabular.guard.booster_schedule`), early-stopped for three classes or more when
  a tenth of a fold's training rows can hold every class.

One record per table and split, ``<out>/tabswift_guard_cost_records/<suite>__<table>__<split>
.pkl`` (``--resume`` keeps those there). A guard rule is then simulated from the records:
:func:`skfm.tabular.guard._choose` on the out-of-fold row losses (log loss, or squared error
in standard deviations of y, as the guard) picks ``w`` and a partner, the test prediction is
``w * network + (1 - w) * partner`` (refitted partner, or the mean of its fold models), scored
by ROC-AUC (``cc18.score``) or R²; its seconds are the network's fit + predict, TabSwift's
out-of-fold predictions, every partner's out-of-fold fits and, when it refits, the chosen
partner's refit. Rules ``n<N>_oof<m>_f<k>_<partners>_<refit|avg>``: ``N`` members fitted, the
first ``m`` of the 8-member network cross-fitted, ``k`` folds, partners ``linear``,
``linear_hgb100`` (with ``boosting_default``) or ``linear_hgb40`` (with ``boosting_40``).
``shipped_2026_12_07`` is ``n8_oof8_f5_linear_hgb100_refit``, the guard until then; the one
shipped after it is ``n8_oof2_f5_linear_hgb40_refit`` (``guard.GUARD_MEMBERS`` = 2,
``guard.BOOSTER_ROUNDS`` = 40). For a 4-member network the first 2 members of the 8-member
network stand in for its own out-of-fold predictions (in score and in seconds).

The report, ``<out>/tabswift_guard_cost.md`` with ``.csv`` (a row per table, split and rule):
per group of ``tabswift_pareto.py`` and rule the mean score, the median ratio of seconds to
HistGradientBoosting's (``boosting_default`` refitted on every training row of the 5-fold
record and predicting the test rows: HistGradientBoosting at the guard's settings, on the
encoded table, timed in the same run), and the median and largest ratio to ``alone4``'s.
``--simulate-only`` writes it from the records without fitting.

Example
-------
python benchmarks/studies/tabswift_guard_cost.py --resume --out runs/guard_cost  # records there
python benchmarks/studies/tabswift_guard_cost.py --simulate-only --out runs/guard_cost \\
    --notes-file docs/benchmarks/notes/tabswift_guard_cost.md  # then copy the .md and .csv
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

# ruff: noqa: E402
# benchmarks/ (the shared _common and the suites these studies build on) on the path:
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common as C
import numpy as np
import pandas as pd
import tabswift_pareto as P
from cc18 import score as classification_scores
from sklearn.metrics import r2_score
from threadpoolctl import threadpool_limits

from skfm.tabular import guard
from skfm.tabular.base import context_limit
from skfm.tabular.blend import _new_booster, stratified_tenths_hold_every_class
from skfm.tabular.losses import row_log_losses

STEM = "tabswift_guard_cost"
RECORDS = f"{STEM}_records"
NETWORKS = (8, 4)  # members of the networks fitted alone
FOLDS = (5, 3, 2)
OOF_MEMBERS = (8, 2, 1)  # the first members of the 8-member network that are cross-fitted
FOLD_SEED = 12345  # folds' and partners' seed
BOOSTERS = {"boosting_default": 100, "boosting_40": 40}  # partner -> rounds (rate 10 / rounds)
HGB = "boosting_default", 5  # the partner and folds whose refit is the HGB reference
PARTNER_TAGS = {("linear",): "linear", ("linear", "boosting_default"): "linear_hgb100",
                ("linear", "boosting_40"): "linear_hgb40"}


@dataclass(frozen=True)
class Rule:
    """A guard: ``network`` members fitted, the first ``oof`` of the 8-member network's
    members cross-fitted on ``folds`` folds, ``partners``, the chosen one refitted on every
    row (``refit``) or its fold models' mean predicting."""

    network: int
    oof: int
    folds: int
    partners: tuple
    refit: bool = True

    @property
    def name(self) -> str:
        """``n<network>_oof<oof>_f<folds>_<partners>_<refit|avg>``."""
        return (f"n{self.network}_oof{self.oof}_f{self.folds}_{PARTNER_TAGS[self.partners]}_"
                f"{'refit' if self.refit else 'avg'}")


LIN, HGB100, HGB40 = ("linear",), ("linear", "boosting_default"), ("linear", "boosting_40")
SHIPPED = "shipped_2026_12_07"
NEW_DEFAULT = Rule(8, 2, 5, HGB40).name
RULES = {SHIPPED: Rule(8, 8, 5, HGB100)} | {r.name: r for r in (
    Rule(8, 2, 5, HGB100), Rule(8, 8, 5, LIN), Rule(8, 2, 5, LIN),
    Rule(8, 2, 3, HGB100, False), Rule(8, 2, 3, LIN, False),
    Rule(4, 2, 5, LIN), Rule(4, 2, 3, HGB100, False), Rule(4, 2, 3, LIN, False),
    Rule(4, 2, 3, HGB100), Rule(4, 2, 3, HGB40, False), Rule(4, 1, 3, HGB40, False),
    Rule(4, 2, 2, HGB100, False), Rule(4, 2, 2, HGB40, False), Rule(4, 8, 2, HGB40, False),
    Rule(4, 2, 2, LIN, False), Rule(4, 1, 2, LIN, False), Rule(4, 2, 3, HGB40),
    Rule(8, 2, 5, HGB40), Rule(8, 8, 3, HGB40))}
ALONE = tuple(f"alone{n}" for n in NETWORKS)


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    P.add_table_arguments(p)
    p.add_argument("--resume", action="store_true",
                   help=f"keep the records already in <out>/{RECORDS}")
    p.add_argument("--simulate-only", action="store_true",
                   help="fit nothing: write the report from the records there")
    C.add_out_argument(p, notes=True)
    return P.check_table_arguments(p, p.parse_args(argv))


def partner_makers(estimator, y: np.ndarray, folds: list, seed: int) -> dict:
    """Makers of the unfitted partners, by name, for the rows ``y`` cross-fitted on ``folds``:
    the linear model and, from ``guard.MIN_BOOSTED_ROWS`` rows on, the two boosters (early
    stopping where the guard's would, :func:`skfm.tabular.blend.stratified_tenths_hold_every_class`)."""
    categorical = sorted(estimator.encoder_.categories_)
    width = estimator.X_context_.shape[1]
    classification = estimator._task == "classification"
    makers = {"linear": lambda: guard.linear_model(categorical, width, classification)}
    if len(y) < guard.MIN_BOOSTED_ROWS:
        return makers
    many = classification and len(estimator.classes_) > 2
    early = True if many and stratified_tenths_hold_every_class(y, folds) else "auto"
    for name, rounds in BOOSTERS.items():
        params = guard.booster_schedule(len(estimator.classes_) if many else 1, width, rounds)
        makers[name] = lambda params=params: _new_booster(estimator, seed, early, **params)
    return makers


def tabswift_oof(estimator, folds: list, n_classes: int, members: int) -> np.ndarray:
    """The out-of-fold predictions (probabilities or means) of the first ``members`` members."""
    if not n_classes:
        return guard.cross_fitted(estimator, folds, members)[0]
    out, n_outputs = np.empty((len(estimator.X_context_), n_classes)), estimator._n_outputs()
    for train, test in folds:
        out[test] = estimator._proba(estimator._logits_in_context(train, test, members),
                                     n_outputs, estimator.members_[:members])
    return out


def _predict(model, X, n_classes: int) -> np.ndarray:
    """Predictions, or probabilities of all ``n_classes`` classes (0 for one unseen)."""
    if not n_classes:
        return model.predict(X)
    out = np.zeros((len(X), n_classes))
    out[:, model.classes_] = model.predict_proba(X)
    return out


def partner_oof(make, X, y, folds: list, n_classes: int, X_test) -> dict | None:
    """A partner's out-of-fold predictions (``oof``), the mean of its fold models' test
    predictions (``test_avg``), those of it refitted on every row (``test_full``) and the
    seconds of both (``t_oof``, ``t_refit``); None where the guard would drop it."""
    def cross_fit():
        out = np.zeros((len(y), n_classes)) if n_classes else np.empty(len(y))
        test_avg = 0.0
        for train, test in folds:
            present = np.unique(y[train]) if n_classes else None
            if n_classes and len(present) == 1:  # as the guard: one class, nothing to learn
                out[test, present[0]] = 1.0
                test_avg = test_avg + np.eye(n_classes)[present[0]] / len(folds)
                continue
            fitted = guard._fitted_partner(make(), X[train], y[train])
            if fitted is None:
                return None
            with np.errstate(over="ignore", invalid="ignore"):
                out[test] = _predict(fitted, X[test], n_classes)
                test_avg = test_avg + _predict(fitted, X_test, n_classes) / len(folds)
        return (out, test_avg) if np.isfinite(out).all() else None

    def refit():
        fitted = guard._fitted_partner(make(), X, y)
        return None if fitted is None else _predict(fitted, X_test, n_classes)

    (found, t_oof), (full, t_refit) = C.timed(cross_fit), C.timed(refit)
    if found is None or full is None:
        return None
    return {"oof": found[0], "test_avg": found[1], "test_full": full, "t_oof": t_oof,
            "t_refit": t_refit}


def measure(suite: str, ds: C.Dataset, seed: int, threads: int) -> dict:
    """The record of one table and split: every part of every rule, timed."""
    train, test = P.split(ds, seed, None)
    regression = ds.task == "regression"
    rec = {"suite": suite, "table": ds.name, "task": ds.task, "split": seed, "n": len(train),
           "threads": threads, "y_test": ds.y[test]}
    model, X = P.make_model("tabswift_alone", ds, seed, threads)
    if not (guard.MIN_GUARD_ROWS <= len(train) <= context_limit(model)
            and (regression or len(train) >= guard.MIN_BOOSTED_ROWS)):
        return {**rec, "skipped": "the guard does not run on this table"}
    X_train, X_test = X.iloc[train], X.iloc[test]

    def fit_predict(model):
        model.fit(X_train, ds.y[train])
        return model.predict(X_test) if regression else model.predict_proba(X_test)

    estimators = {k: P.make_model("tabswift_alone", ds, seed, threads)[0].set_params(
        n_estimators=k) for k in NETWORKS}
    for k, model in estimators.items():
        rec[f"net{k}"], rec[f"t_net{k}"] = C.timed(fit_predict, model)
    est = estimators[8]
    y = ds.y[train] if regression else np.searchsorted(est.classes_, ds.y[train])
    n_classes = 0 if regression else len(est.classes_)
    rec |= {"y_train": y, "classes": None if regression else est.classes_,
            "unit": est.y_scale_ if regression else 1.0}
    X_enc, X_test_enc = est.X_context_, est._on_encoded(est._rows(X_test), lambda a: a)
    for k in FOLDS:
        folds = guard._folds(len(y), None if regression else y, FOLD_SEED, k)
        for m in OOF_MEMBERS:
            rec[f"oof_tab{m}_f{k}"], rec[f"t_oof_tab{m}_f{k}"] = C.timed(
                tabswift_oof, est, folds, n_classes, m)
        for name, make in partner_makers(est, y, folds, FOLD_SEED).items():
            rec[f"{name}_f{k}"] = partner_oof(make, X_enc, y, folds, n_classes, X_test_enc)
    return rec


def score(rec: dict, pred) -> float:
    """ROC-AUC (as ``cc18.py``) or R² of test predictions."""
    if rec["task"] == "regression":
        return r2_score(rec["y_test"], pred)
    return classification_scores(rec["y_test"], np.asarray(pred), np.asarray(rec["classes"]),
                                 rec["task"])[0]


def simulate(rec: dict, rule: Rule) -> dict:
    """A rule's test score, seconds, TabSwift's share and the chosen partner on a record."""
    y, unit = rec["y_train"], rec["unit"]
    if rec["task"] == "regression":
        def loss(p):
            return ((y - p) / unit) ** 2
    else:
        def loss(p):
            return row_log_losses(p, y)
    outs = {p: out for p in rule.partners if (out := rec.get(f"{p}_f{rule.folds}")) is not None}
    tab = f"tab{rule.oof}_f{rule.folds}"
    w, name, _ = guard._choose(rec[f"oof_{tab}"], {p: o["oof"] for p, o in outs.items()}, loss)
    seconds = rec[f"t_net{rule.network}"] + rec[f"t_oof_{tab}"] + sum(
        o["t_oof"] for o in outs.values())
    pred = rec[f"net{rule.network}"]
    if name is not None:
        pred = w * pred + (1 - w) * outs[name]["test_full" if rule.refit else "test_avg"]
        seconds += outs[name]["t_refit"] if rule.refit else 0.0
    return {"score": score(rec, pred), "seconds": seconds, "weight": w, "partner": name or ""}


def rows_of(rec: dict) -> list[dict]:
    """The report's rows of a record: one per rule, the networks alone first."""
    hgb = rec.get(f"{HGB[0]}_f{HGB[1]}")
    base = {k: rec[k] for k in ("suite", "table", "split", "task")} | {
        "n_train": rec["n"], "hgb_seconds": hgb["t_refit"] if hgb else np.nan}
    rows = [{**base, "rule": f"alone{k}", "score": score(rec, rec[f"net{k}"]),
             "seconds": rec[f"t_net{k}"], "weight": 1.0, "partner": ""} for k in NETWORKS]
    return rows + [{**base, "rule": name, **simulate(rec, rule)} for name, rule in RULES.items()]


def collect(args, folder: Path) -> list[dict]:
    """The records of the command's tables and splits: measured, or read from ``folder``."""
    records = []
    for suite in args.suites:
        if args.simulate_only:
            found = [(suite, name) for name in args.names[suite]]
        else:
            found = [(suite, ds) for ds in P.load_tables(suite, args.names[suite], args.data)]
        for _, table in found:
            for seed in range(args.splits):
                name = table if isinstance(table, str) else table.name
                path = folder / f"{suite}__{name}__{seed}.pkl"
                if args.simulate_only and not path.exists():
                    print(f"no record of {suite} {name} split {seed}: left out", flush=True)
                    continue
                if not (args.resume or args.simulate_only):
                    path.unlink(missing_ok=True)
                rec = C.cached(path, partial(measure, suite, table, seed, args.threads))
                records.append(rec)
                if "skipped" in rec:
                    print(f"{suite:<10} {name:<34} {seed} skipped: {rec['skipped']}", flush=True)
                else:
                    print(f"{suite:<10} {name:<34} {seed} alone8 {rec['t_net8']:7.2f} s, "
                          f"alone4 {rec['t_net4']:7.2f} s", flush=True)
    return records


def group_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One group's summary: a row per rule, the per-table means over splits first."""
    per_table = rows.groupby(["rule", "table"], sort=False)[
        ["score", "seconds", "hgb_seconds", "weight"]].mean()
    alone = per_table.xs("alone4", level="rule")["seconds"]
    out = {}
    for rule in [*ALONE, *RULES]:
        part = per_table.xs(rule, level="rule")
        to_hgb, to_alone = part["seconds"] / part["hgb_seconds"], part["seconds"] / alone
        out[rule] = {"tables": str(len(part)), "mean score": f"{part['score'].mean():.4f}",
                     "mean w": f"{part['weight'].mean():.2f}",
                     "median s / hgb": f"{to_hgb.median():.2f}",
                     "median s / alone4": f"{to_alone.median():.2f}",
                     "largest s / alone4": f"{to_alone.max():.2f} ({to_alone.idxmax()})"}
    return pd.DataFrame(out).T


def report(records: list[dict], args, out: Path) -> Path:
    """Write the report and its rows; return the report's path."""
    kept = [rec for rec in records if "skipped" not in rec]
    rows = pd.DataFrame([row for rec in kept for row in rows_of(rec)])
    rows.insert(0, "group", P.group(rows))
    skipped = [f"{rec['table']} split {rec['split']}" for rec in records if "skipped" in rec]
    threads = ", ".join(map(str, sorted({rec["threads"] for rec in kept})))
    sections = [
        f"{args.splits} random 50/50 split(s) per table (seeds 0..), as `tabswift_pareto.py`; "
        f"{threads} thread(s). Score: ROC-AUC (classification) or R² on the test half, "
        "mean over splits, then over tables; `mean w`: TabSwift's mean share. Seconds of a "
        "rule: the network's fit + predict, TabSwift's out-of-fold predictions, every "
        "partner's out-of-fold fits and (`refit`) the chosen partner's refit, summed from "
        "parts timed apart; ratios are per table, then the median or the largest. `hgb`: "
        "HistGradientBoosting at the guard's settings (the `boosting_default` partner fitted "
        "on every training row of the encoded table, predicting the test rows), timed in this "
        f"run. `{SHIPPED}` is the guard of 8 members, 5 folds, the linear model and a booster "
        f"of 100 rounds; `{NEW_DEFAULT}` the one shipped after it (its first 2 members "
        "cross-fitted, a booster of 40 rounds). The script's docstring names every part of "
        "a rule.",
        *C.read_notes(args.notes_file),
    ]
    if skipped:
        sections.append("Left out (the guard does not run there): " + ", ".join(skipped) + ".")
    for name in P.GROUPS:
        part = rows[rows["group"] == name]
        if len(part):
            metric = "R²" if "regression" in name else "ROC-AUC"
            sections += [f"## {name} ({part['table'].nunique()} tables, {metric})",
                         C.markdown_table(group_table(part), index_name="rule")]
    return C.write_report(out, STEM, "TabSwift's guard: what it costs, what cheaper guards score",
                          sections, rows, args.notes_file)


def main(argv=None) -> None:
    """Measure (or read) the records and write the report."""
    args = parse_args(argv)
    out = Path(args.out)
    with threadpool_limits(limits=args.threads):
        records = collect(args, out / RECORDS)
    if not any("skipped" not in rec for rec in records):
        raise SystemExit("no record to simulate")
    md = report(records, args, out)
    print(md.read_text())
    print(f"wrote {md} and {md.with_suffix('.csv')}")


if __name__ == "__main__":
    main()
