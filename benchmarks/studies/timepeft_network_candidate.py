"""The fine-tuned network's own forecast as one more candidate of TimePEFTForecaster's combination.

    python benchmarks/studies/timepeft_network_candidate.py --out docs/benchmarks

Until 2026-12-07 the default forecaster added the network's correction to its combination only
where a t-test at its rolling origins said the corrected forecast was better, which it never was
on the suites (``timepeft_network_guard.md``); since then it makes the network a candidate on
long series only, and the ``default`` rule here is that. This screen asked whether the network
could instead join the combination as a candidate like the others on these short series: it is then averaged in wherever its own forecast is
among the two best at the rolling origins. For every series and horizon of both suites, at
their 2 test origins, ``TimePEFTForecaster(sp=sp, finetune=True)`` is fitted (the network
fine-tuned on the values before the first rolling origin, as the forecaster does); the
candidates are refitted at its rolling origins and on the whole training part, and the
network forecasts from the same windows. Rules: the default combination (the forecaster's
``predict``), the combination's rule over the candidates with the network among them, and the
network alone. The forecasts are cached (``--cache``), so the rules are scored without
refitting; collecting takes about 4 minutes on 2 threads.
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
from timepeft_combination import _origin_mse
from timepeft_suite import ALL_SERIES, HELDOUT, add_series_arguments, load

from skfm import TimePEFTForecaster
from skfm.timeseries.forecasting.combination import (
    CANDIDATES,
    candidate_forecasts,
    combination_weights,
    rolling_origins,
)

RULES = ("default", "network as a candidate", "network alone", "seasonal naive")


def fit_record(sp: int, train: pd.DataFrame, test: pd.DataFrame, horizon: int) -> dict:
    """One fit: every candidate's and the network's forecasts at the rolling origins and after
    the training part, and the default forecaster's own forecast."""
    start = time.perf_counter()
    forecaster = TimePEFTForecaster(sp=sp, finetune=True).fit(
        train, fh=np.arange(1, horizon + 1))
    values, length = train.to_numpy(float), forecaster.context_length_
    origins = rolling_origins(len(values), horizon, forecaster.n_origins,
                              max(length + horizon, 3 * forecaster.sp_))

    def network(ends):  # (len(ends), C, H)
        windows = np.stack([values[end - length:end].T for end in ends]).astype(np.float32)
        return forecaster._forecast(windows, "network")

    inner = [candidate_forecasts(values[:o], CANDIDATES, forecaster.sp_, horizon)
             for o in origins]
    for forecasts, forecast in zip(inner, network(origins) if len(origins) else [],
                                   strict=True):
        forecasts["network"] = forecast
    final = candidate_forecasts(values, CANDIDATES, forecaster.sp_, horizon)
    final["network"] = network([len(values)])[0]
    forecaster.selected_ = "combination"  # the default's forecast on these series
    final["default"] = forecaster.predict().to_numpy(float).T
    return {"inner": inner, "forecasts": final, "std": forecaster.series_std_[:, None],
            "inner_truth": (np.stack([values[o:o + horizon].T for o in origins])
                            if len(origins) else None),
            "truth": test.to_numpy(float).T,
            "scale": train.std().replace(0, 1).to_numpy(float)[:, None],
            "advisable": bool(forecaster.complexity_.advisable),
            "seconds": time.perf_counter() - start}


def collect(names, n_test_origins: int, max_train: int) -> list[dict]:
    records = []
    for name in names:
        _, sp, horizons = ALL_SERIES[name]
        data = load(name)
        for horizon in horizons:
            series = data.iloc[-(max_train + n_test_origins * horizon):]
            for k in range(n_test_origins, 0, -1):
                end = len(series) - k * horizon
                record = fit_record(sp, series.iloc[:end], series.iloc[end:end + horizon],
                                    horizon)
                record.update(series=name, horizon=horizon, origin=end, sp=sp,
                              set="held-out" if name in HELDOUT else "development")
                records.append(record)
                print(f"{name} h{horizon} origin {end}: {record['seconds']:.1f} s", flush=True)
    return records


def score(records) -> pd.DataFrame:
    """Test MSE (standardised) of every rule per fit, and whether the network was averaged in."""
    rows = []
    for r in records:
        errors = {}  # per rolling origin, for what forecast at every one of them
        if r["inner"]:
            for name in set.intersection(*(set(f) for f in r["inner"])):
                errors[name] = _origin_mse(np.stack([f[name] for f in r["inner"]]),
                                           r["inner_truth"], r["std"])
        forecasts = r["forecasts"]
        weights = combination_weights(errors) if errors else {"default": 1.0}
        named = {"default": forecasts["default"],
                 "network as a candidate": sum(w * forecasts[n] for n, w in weights.items()),
                 "network alone": forecasts["network"],
                 "seasonal naive": forecasts["seasonal_naive" if r["sp"] > 1 else "naive"]}
        for rule, forecast in named.items():
            rows.append({"set": r["set"], "series": r["series"], "horizon": r["horizon"],
                         "origin": r["origin"], "advisable": r["advisable"],
                         "network averaged in": "network" in weights, "model": rule,
                         "mse": float(np.mean(((forecast - r["truth"]) / r["scale"]) ** 2))})
    return pd.DataFrame(rows)


def summarise(per_fit: pd.DataFrame) -> pd.DataFrame:
    per = per_fit.groupby(["set", "series", "horizon", "model"]).mse.mean().unstack("model")
    out = {}
    for name, table in per.groupby("set"):
        sn, rules = table["seasonal naive"], list(RULES[:3])
        ratio = table[rules].div(table["default"], axis=0).replace([np.inf], np.nan)
        out[name] = pd.DataFrame({
            "mean rank": C.mean_rank(table[rules], higher_is_better=False),
            "mean MSE": table[rules].mean(),
            "geometric mean MSE / default's": np.exp(np.log(ratio.clip(lower=1e-9)).mean()),
            "rows > 1.05 x seasonal naive": table[rules].gt(1.05 * sn, axis=0).sum(),
            "rows": len(table)})
    return pd.concat(out, names=["set", "rule"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_series_arguments(parser)
    parser.add_argument("--cache", default="runs/timepeft_network_candidate.pkl",
                        help="the fits' forecasts: read if it exists, else written")
    C.add_out_argument(parser, notes=True)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    records = C.cached(args.cache, lambda: collect(args.series, args.origins, args.max_train))
    per_fit = score(records)
    summary = summarise(per_fit)
    print(summary.to_string())
    counts = ["rows > 1.05 x seasonal naive", "rows"]
    table = summary.astype(dict.fromkeys(counts, int)).astype(dict.fromkeys(counts, str))
    table.index = [f"{name}: {rule}" for name, rule in table.index]
    averaged = per_fit[per_fit.model == "default"]["network averaged in"]
    sections = [*C.read_notes(args.notes_file),
                f"The network was averaged in at {int(averaged.sum())} of {len(averaged)} fits.",
                "## Rules", C.markdown_table(table, ".3f")]
    for name, part in per_fit.groupby("set"):
        wide = part.pivot_table(index=["series", "horizon"], columns="model", values="mse")
        wide.index = [f"{s} h{h}" for s, h in wide.index]
        sections += [f"## MSE per series, {name} set (standardised, mean of the origins)",
                     C.markdown_table(wide[list(RULES)])]
    print(C.write_report(args.out, "timepeft_network_candidate",
                         "The network's forecast as a candidate of the combination",
                         sections, per_fit, args.notes_file))


if __name__ == "__main__":
    main()
