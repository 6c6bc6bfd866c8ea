"""When TimePEFTForecaster should keep its network's correction: guard rules against the test.

    python benchmarks/studies/timepeft_network_guard.py --out docs/benchmarks

For every series and horizon of the development suite (``timepeft_suite.SERIES``) and of the
held-out series (``timepeft_suite.HELDOUT``), at the forecast origins of ``timepeft_suite.py``
(2, one horizon apart, at the end; the last ``--max-train`` values before the first),
``TimePEFTForecaster(sp=sp, finetune=True)`` is fitted, so that the correction is fine-tuned
on every row, not only where the complexity diagnostics advise it. Recorded per fit: the MSEs
of the combination and of the corrected forecast at each of the forecaster's rolling origins
(what its guard decides on), and both forecasts' MSEs on the test horizon (``predict`` with
``selected_`` set to each). A guard rule is then scored by what it keeps: how often the
network, how often that was right on the test horizon, and the test MSE it adds or saves.
The rules are compared on all fits (``finetune=True``) and on the fits where the diagnostics
advise fine-tuning (what ``finetune="auto"``, the default, sees).

``--raw FILE`` rewrites the report from the per-fit csv of an earlier run without refitting.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

# ruff: noqa: E402
# benchmarks/ (the shared _common and the suites these studies build on) on the path:
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _common as C
import numpy as np
import pandas as pd
from scipy import stats
from timepeft_suite import ALL_SERIES, HELDOUT, add_series_arguments, load

import skfm.timeseries.forecasting.guard as guard_module
from skfm import TimePEFTForecaster

#: t-statistic a rule asks of the mean gain at the rolling origins (None: never keep).
RULES = {
    "one standard error (before 2026-12-04)": lambda t, df: t > 1.0,
    "t-test at 10 %": lambda t, df: t > stats.t.ppf(0.90, df),
    "t-test at 5 % (default)": lambda t, df: t > stats.t.ppf(0.95, df),
    "never": lambda t, df: False,
}


def fit_row(sp: int, train: pd.DataFrame, test: pd.DataFrame, fh) -> dict:
    """One forced fine-tuning fit: the guard's inputs and both forecasts' test MSEs."""
    seen, decide = {}, guard_module.significantly_better

    def record(base, other):
        seen["combination"], seen["network"] = np.asarray(base), np.asarray(other)
        return decide(base, other)

    guard_module.significantly_better = record
    try:
        start = time.perf_counter()
        forecaster = TimePEFTForecaster(sp=sp, finetune=True).fit(train, fh=fh)
        seconds = time.perf_counter() - start
    finally:
        guard_module.significantly_better = decide
    scale = train.std().replace(0, 1).to_numpy(float)
    row = {"advisable": bool(forecaster.complexity_.advisable),
           "temporal": forecaster.temporal_complexity_,
           "multichannel": forecaster.multichannel_complexity_,
           "selected": forecaster.selected_, "seconds": seconds}
    for kind in ("combination", "network"):
        forecaster.selected_ = kind
        error = (forecaster.predict().to_numpy(float) - test.to_numpy(float)) / scale
        row[f"test_{kind}"] = float(np.mean(error ** 2))
        row[f"origins_{kind}"] = " ".join(f"{v:.6g}" for v in seen.get(kind, []))
    return row


def collect(names, n_test_origins: int, max_train: int) -> pd.DataFrame:
    from sktime.forecasting.base import ForecastingHorizon

    rows = []
    for name in names:
        _, sp, horizons = ALL_SERIES[name]
        data = load(name)
        for horizon in horizons:
            fh = ForecastingHorizon(np.arange(1, horizon + 1))
            series = data.iloc[-(max_train + n_test_origins * horizon):]
            for k in range(n_test_origins, 0, -1):
                end = len(series) - k * horizon
                row = {"set": "held-out" if name in HELDOUT else "development", "series": name,
                       "horizon": horizon, "origin": end, "channels": data.shape[1],
                       **fit_row(sp, series.iloc[:end], series.iloc[end:end + horizon], fh)}
                rows.append(row)
                print(f"{name} h{horizon} origin {end}: combination {row['test_combination']:.4f}"
                      f" network {row['test_network']:.4f} ({row['seconds']:.1f} s)", flush=True)
    return pd.DataFrame(rows)


def with_t_values(raw: pd.DataFrame) -> pd.DataFrame:
    """``raw`` with the paired t-statistic of the combination's against the corrected forecast's
    per-origin MSEs (scipy's ``ttest_rel``, as the forecaster's guard computes it) and its
    degrees of freedom; NaN where there were fewer than two origins or no spread."""
    t_values, dfs = [], []
    for base, other in zip(raw["origins_combination"], raw["origins_network"], strict=True):
        base = np.array(base.split(), dtype=float) if isinstance(base, str) else []
        other = np.array(other.split(), dtype=float) if isinstance(other, str) else []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # no spread: NaN
            t_values.append(stats.ttest_rel(base, other).statistic if len(base) > 1 else np.nan)
        dfs.append(len(base) - 1)
    return raw.assign(t=t_values, df=dfs)


def score_rules(fits: pd.DataFrame) -> pd.DataFrame:
    """Per rule and scope: fits where the network is kept, right on the test, MSE effect."""
    rows = []
    for scope, part in [("all fits (finetune=True)", fits),
                        ("advised fits (finetune='auto')", fits[fits["advisable"]])]:
        for rule, keeps in RULES.items():
            kept = part[[bool(keeps(t, df)) if np.isfinite(t) else False
                         for t, df in zip(part["t"], part["df"], strict=True)]]
            chosen = np.where(part.index.isin(kept.index), part["test_network"],
                              part["test_combination"])
            rows.append({
                "scope": scope, "rule": rule, "fits": len(part), "network kept": len(kept),
                "kept and better on the test": int((kept["test_network"]
                                                    < kept["test_combination"]).sum()),
                "mean test MSE": float(np.mean(chosen)),
                "test MSE / combination's (sum over fits)": float(
                    np.sum(chosen) / part["test_combination"].sum()),
            })
    return pd.DataFrame(rows)


def complexity_correlations(fits: pd.DataFrame) -> list[str]:
    """Spearman's rank correlation of each complexity with the forced fine-tuning's test gain,
    ``1 - test_network / test_combination``, over the fits (the issue asks whether the
    diagnostics predict where fine-tuning pays)."""
    gain = 1 - fits["test_network"] / fits["test_combination"].where(
        fits["test_combination"] > 0)
    lines = []
    for scope, part in [("all fits", fits), *((f"{name} fits", group)
                                              for name, group in fits.groupby("set"))]:
        for metric in ("temporal", "multichannel"):
            both = pd.DataFrame({"x": part[metric], "gain": gain[part.index]}).dropna()
            rho, p = stats.spearmanr(both["x"], both["gain"])
            lines.append(f"- {metric} complexity, {scope}: rho = {rho:.2f} "
                         f"(p = {p:.2g}, {len(both)} fits)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_series_arguments(parser)
    parser.add_argument("--raw", default=None, help="per-fit csv of an earlier run: no refitting")
    parser.add_argument("--stem", default="timepeft_network_guard")
    C.add_out_argument(parser, notes=True)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    raw = (pd.read_csv(args.raw, comment="#") if args.raw
           else collect(args.series, args.origins, args.max_train))
    fits = with_t_values(raw)
    summary = score_rules(fits)
    print(summary.to_string())
    counts = ["fits", "network kept", "kept and better on the test"]
    table = summary.set_index(["scope", "rule"]).astype(dict.fromkeys(counts, str))
    table.index = [f"{scope}: {rule}" for scope, rule in table.index]
    close = fits[fits["t"] > 1.0].assign(
        fit=lambda d: d["series"] + " h" + d["horizon"].astype(str) + " @" + d["origin"].astype(str)
    ).set_index("fit")[["set", "advisable", "df", "t", "test_combination", "test_network"]]
    better = (fits["test_network"] < fits["test_combination"]).groupby(fits["advisable"]).mean()
    sections = [
        *C.read_notes(args.notes_file),
        f"Fits: {len(fits)}; the network's correction beat the combination on the test horizon "
        f"in {int((fits['test_network'] < fits['test_combination']).sum())} of them "
        f"(share {better.get(True, np.nan):.2f} where fine-tuning is advised, "
        f"{better.get(False, np.nan):.2f} elsewhere).",
        "## Guard rules", C.markdown_table(table, ".3f"),
        "## Do the complexity diagnostics predict the fine-tuning gain?",
        "Spearman's rank correlation of the complexities with the gain of the corrected "
        "forecast over the combination on the test horizon (1 - MSE ratio), fine-tuning "
        "forced on every fit:", "\n".join(complexity_correlations(fits)),
        "## Fits where the corrected forecast beat the combination at the rolling origins by more "
        "than one standard error", C.markdown_table(close, ".3f"),
    ]
    print(C.write_report(args.out, args.stem, "When TimePEFTForecaster keeps its network's "
                         "correction", sections, raw, args.notes_file))


if __name__ == "__main__":
    main()
