"""TimePEFTForecaster on the long-horizon benchmark (ETTh1, ETTh2) at every test window, beside published tables.

    python benchmarks/timepeft_ltsf.py --threads 2 --out docs/benchmarks

The standard protocol of the long-horizon forecasting papers (Zeng et al. 2023; the
ETDataset convention), on ETTh1 and ETTh2 (``--data``, default ``../shared/data/ett``;
hourly, 7 channels): 12/4/4 months of 30 days for train/validation/test, i.e. training rows
[0, 8640), validation [8640 - L, 11520), test [11520 - L, 14400) with the lookback L = 512
before each split; every channel standardised by the training months' mean and standard
deviation; horizons 96, 192, 336, 720; MSE and MAE on the standardised scale over all 7
channels and every test window (stride 1: 2,880 - h + 1 windows; ``--max-windows N`` keeps N
of them, evenly spread, for quick runs).

Rows: ``timepeft``, the user's call ``TimePEFTForecaster(context_length=512, horizon=h)``
fitted on the training and validation months (rows [0, 11520), standardised), then
``forecast_windows`` over the test windows (it fits nothing per window);
``timepeft_no_network``, the same with ``finetune=False`` (the combination of classical
forecasters without the network); ``seasonal_naive`` (period 24) and ``naive``
(the last value), computed in numpy over the same windows (and checked against sktime's
``NaiveForecaster`` on the first window). Per row: fit and forecast wall time and the
process's peak resident memory after it (rows run cheapest first), and what the forecaster
chose (``sp_``, ``finetuned_``, ``selected_``, ``combination_weights_``).

The report puts the published MSE/MAE of DLinear (Zeng et al. 2023, lookback 336) and
MOMENT-LP (Goswami et al. 2024, lookback 512) beside them (:data:`PUBLISHED`). Writes
``timepeft_ltsf.md`` and ``timepeft_ltsf.csv`` to ``--out``; ``--merge a.csv b.csv`` writes
the report from the raw tables of runs over different datasets or horizons.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import _common as C
import numpy as np
import pandas as pd
import torch
from timepeft import scores, seasonal_naive, standardise

from skfm import TimePEFTForecaster

DEFAULT_DATA = C.ROOT.parent / "shared" / "data" / "ett"
DATASETS = ("ETTh1", "ETTh2")
#: Ends of the training, validation and test months (12/4/4 months of 30 days, hourly).
TRAIN_END, VAL_END, TEST_END = 8640, 11520, 14400
LOOKBACK = 512
HORIZONS = (96, 192, 336, 720)
SEASON = 24
#: The rows, in the order they run (cheapest first, so each peak memory is its own).
MODELS = ("naive", "seasonal_naive", "timepeft_no_network", "timepeft")
#: What each forecaster row adds to the user's ``TimePEFTForecaster(context_length, horizon)``.
FORECASTERS = {"timepeft_no_network": {"finetune": False}, "timepeft": {}}
#: Published test errors at horizons 96, 192, 336, 720 (NaN: not quoted). DLinear: Zeng et al.
#: (2023), lookback 336; MOMENT-LP: Goswami et al. (2024), lookback 512 (see the report);
#: Repeat: Zeng et al.'s last value, a check of the protocol against ``naive``.
PUBLISHED = {
    "DLinear": {
        "ETTh1": {"mse": (0.375, 0.405, 0.439, 0.472), "mae": (0.399, 0.416, 0.443, 0.490)},
        "ETTh2": {"mse": (0.289, 0.383, 0.448, 0.605), "mae": (0.353, 0.418, 0.465, 0.551)},
    },
    "MOMENT-LP": {
        "ETTh1": {"mse": (0.387, 0.410, 0.422, 0.454), "mae": (np.nan,) * 4},
        "ETTh2": {"mse": (0.288, 0.349, 0.369, 0.403), "mae": (np.nan,) * 4},
    },
    "Repeat": {  # Zeng et al.'s last-value baseline: the same forecast as ``naive``
        "ETTh1": {"mse": (1.295, 1.325, 1.323, 1.339), "mae": (0.713, 0.733, 0.744, 0.756)},
        "ETTh2": {"mse": (0.432, 0.534, 0.591, 0.588), "mae": (0.422, 0.473, 0.508, 0.517)},
    },
}
SOURCES = (
    "**Published figures.** DLinear: A. Zeng, M. Chen, L. Zhang, Q. Xu, \"Are Transformers "
    "Effective for Time Series Forecasting?\", AAAI 2023, the multivariate long-term "
    "forecasting table (lookback 336). MOMENT-LP: M. Goswami, K. Szafer, A. Choudhry, Y. Cai, "
    "S. Li, A. Dubrawski, \"MOMENT: A Family of Open Time-series Foundation Models\", ICML 2024, "
    "the long-horizon forecasting table (linear probing, lookback 512). Both MSE rows are "
    "quoted as issue 51 gives them. DLinear's MSE and MAE were checked against a text "
    "conversion of the paper's arXiv version (2205.13504; there the table is Table 2, the issue "
    "cites Table 3): all 16 figures agree, and so do the 16 of its Repeat column (the last "
    "value), quoted for the protocol check. MOMENT-LP's were not verified here, and its MAE is "
    "left blank. The published rows are the papers' own runs (their code keeps the ETDataset "
    "borders and standardisation used here; DLinear's test loader drops the last incomplete "
    "batch, so it scores slightly fewer windows)."
)


def load_ett(data_dir, name: str) -> pd.DataFrame:
    """The first :data:`TEST_END` hourly rows of ``<data_dir>/<name>.csv``, indexed by date."""
    path = Path(data_dir) / f"{name}.csv"
    if not path.is_file():
        raise ValueError(f"{path} not found: give the folder of ETTh1.csv and ETTh2.csv as --data")
    frame = pd.read_csv(path, index_col="date", parse_dates=True)
    if len(frame) < TEST_END:
        raise ValueError(f"{path} has {len(frame)} rows; the protocol needs {TEST_END}")
    frame = frame.iloc[:TEST_END].astype(float)
    frame.index = pd.DatetimeIndex(frame.index, freq="h")
    return frame


def borders(lookback: int = LOOKBACK) -> dict[str, tuple[int, int]]:
    """Row ranges ``[start, end)`` of the splits; validation and test start one lookback early."""
    return {"train": (0, TRAIN_END), "val": (TRAIN_END - lookback, VAL_END),
            "test": (VAL_END - lookback, TEST_END)}


def standardised(frame: pd.DataFrame) -> pd.DataFrame:
    """Every channel minus its training months' mean, over their standard deviation."""
    return pd.DataFrame(standardise(frame.to_numpy(float), TRAIN_END), index=frame.index,
                        columns=frame.columns)


def test_origins(horizon: int, lookback: int = LOOKBACK, max_windows: int | None = None):
    """First forecast row of every test window (stride 1), or ``max_windows`` evenly spread.

    A window's lookback is the ``lookback`` rows before its origin, inside the test split
    (:func:`borders`); its target the ``horizon`` rows from it, before :data:`TEST_END`.
    """
    start, end = borders(lookback)["test"]
    origins = np.arange(start + lookback, end - horizon + 1)
    if max_windows is not None and max_windows < len(origins):
        origins = origins[np.unique(np.linspace(0, len(origins) - 1, max_windows).round()
                                    .astype(int))]
    return origins


def windows_at(data: np.ndarray, origins: np.ndarray, horizon: int, lookback: int = LOOKBACK):
    """``(windows, truth)``: the lookback (n, lookback, C) and target (n, horizon, C) of each origin."""
    return (data[origins[:, None] + np.arange(-lookback, 0)],
            data[origins[:, None] + np.arange(horizon)])


def fit_forecaster(fit_part: pd.DataFrame, windows: np.ndarray, horizon: int, **params) -> dict:
    """Fit ``TimePEFTForecaster(context_length, horizon, **params)`` on ``fit_part``, forecast
    ``windows``; the forecasts, times and what it chose."""
    forecaster = TimePEFTForecaster(context_length=windows.shape[1], horizon=horizon, **params)
    _, fit_s = C.timed(forecaster.fit, fit_part)
    pred, forecast_s = C.timed(forecaster.forecast_windows, windows)
    weights = ", ".join(f"{name} {w:.2f}" for name, w in forecaster.combination_weights_.items()
                        if w > 0)
    return {"pred": pred, "fit_s": fit_s, "forecast_s": forecast_s, "sp": forecaster.sp_,
            "finetuned": forecaster.finetuned_, "selected": forecaster.selected_,
            "weights": weights, "epochs": forecaster.n_epochs_,
            "finetune_s": forecaster.fit_seconds_}


def run(args) -> pd.DataFrame:
    rows, partial = [], Path(args.out) / f"{args.stem}.partial.csv"
    for name in args.datasets:
        data = standardised(load_ett(args.data, name))
        fit_part, values = data.iloc[:VAL_END], data.to_numpy()
        for horizon in args.horizons:
            origins = test_origins(horizon, LOOKBACK, args.max_windows)
            windows, truth = windows_at(values, origins, horizon)
            total = len(test_origins(horizon))
            for model in args.models:
                if model in FORECASTERS:
                    out = fit_forecaster(fit_part, windows, horizon, **FORECASTERS[model])
                else:
                    period = SEASON if model == "seasonal_naive" else 1
                    pred, seconds = C.timed(seasonal_naive, values, origins, horizon, period)
                    out = {"pred": pred, "fit_s": 0.0, "forecast_s": seconds}
                row = {"dataset": name, "horizon": horizon, "model": model,
                       "windows": len(origins), "windows_total": total,
                       **scores(out.pop("pred"), truth), **out,
                       "peak_rss_mb": C.peak_rss_mb()}
                rows.append(row)
                print(f"{name} h{horizon} {model:<20} mse {row['mse']:.4f} mae {row['mae']:.4f} "
                      f"fit {row['fit_s']:.1f}s forecast {row['forecast_s']:.1f}s "
                      f"peak {row['peak_rss_mb']:.0f} MB", flush=True)
                pd.DataFrame(rows).to_csv(partial, index=False)
    return pd.DataFrame(rows)


def published(metric: str) -> pd.DataFrame:
    """The published ``metric`` per ``"<dataset> h<horizon>"`` (rows) and model (columns)."""
    return pd.DataFrame({
        f"{model} (published)": {f"{name} h{h}": value for name, table in tables.items()
                                 for h, value in zip(HORIZONS, table[metric], strict=True)}
        for model, tables in PUBLISHED.items()})


def side_by_side(raw: pd.DataFrame, metric: str) -> pd.DataFrame:
    """skfm's ``metric`` per row and model, with the published columns beside it."""
    table = raw.pivot_table(index=["dataset", "horizon"], columns="model", values=metric)
    table = table[[m for m in MODELS[::-1] if m in table]]
    table.index = [f"{d} h{h}" for d, h in table.index]
    table = table.join(published(metric), how="left")
    table.loc["mean"] = table.mean()
    return table


def verdict(raw: pd.DataFrame) -> list[str]:
    """The issue's checks on the rows measured: the default against the published MSEs, the
    ablation's mean MSE against the default's, and where the network was weighted."""
    mse = side_by_side(raw, "mse").drop(index="mean")
    lines = []
    if "naive" in mse:
        gap = (mse["naive"] - mse["Repeat (published)"]).abs()
        lines.append(f"- Protocol check: `naive` against Zeng et al.'s Repeat (the same "
                     f"forecast), largest MSE difference {gap.max():.3f} ({gap.idxmax()}).")
    if "timepeft" in mse:
        for model in ("DLinear", "MOMENT-LP"):
            col = mse[f"{model} (published)"].dropna()
            wins = int((mse.loc[col.index, "timepeft"] <= col).sum())
            lines.append(f"- Default MSE at or below {model}'s published figure: {wins} of "
                         f"{len(col)} rows.")
    if {"timepeft", "timepeft_no_network"} <= set(mse):
        gap = mse["timepeft_no_network"].mean() / mse["timepeft"].mean() - 1
        lines.append(f"- Without the network (`finetune=False`) the mean MSE over the "
                     f"{len(mse)} rows is {gap:+.1%} relative to the default's.")
    default = raw[raw.model == "timepeft"]
    if len(default):
        weighted = default.weights.fillna("").str.contains("network")
        lines.append(f"- The default fine-tuned the network on {int(default.finetuned.sum())} "
                     f"of {len(default)} rows and weighted it in the combination "
                     f"(`combination_weights_[\"network\"]`) on {int(weighted.sum())}.")
    return lines or ["- No forecaster row was run."]


def report(raw: pd.DataFrame, args) -> Path:
    counts = raw.groupby("horizon")[["windows", "windows_total"]].first()
    subset = bool((counts.windows < counts.windows_total).any())
    windows = ", ".join(f"h{h}: {int(r.windows):,}" + (f" of {int(r.windows_total):,}"
                                                       if r.windows < r.windows_total else "")
                        for h, r in counts.iterrows())
    sections = [
        f"ETTh1 and ETTh2, 12/4/4 months (training rows [0, {TRAIN_END}), validation "
        f"[{TRAIN_END} - {LOOKBACK}, {VAL_END}), test [{VAL_END} - {LOOKBACK}, {TEST_END})), "
        "every channel standardised by the training months' mean and standard deviation, "
        f"lookback {LOOKBACK}; MSE and MAE on that scale over the 7 channels, every step and "
        f"the test windows ({windows} per dataset"
        + ("; **a subset, evenly spread: not the full protocol**" if subset else
           ", every window: stride 1") + "). "
        f"`timepeft`: `TimePEFTForecaster(context_length={LOOKBACK}, horizon=h)` fitted on the "
        f"training and validation months (rows [0, {VAL_END})), then `forecast_windows` over "
        "the test windows; `timepeft_no_network`: the same with `finetune=False`; "
        f"`seasonal_naive` (period {SEASON}) and `naive` (the last value) in numpy over the "
        "same windows. Torch threads: " + str(args.threads) + ".",
        *C.read_notes(args.notes_file),
    ]
    for metric in ("mse", "mae"):
        sections += [f"## Test {metric.upper()} (standardised)",
                     C.markdown_table(side_by_side(raw, metric), floatfmt=".3f")]
    sections += ["## Against the published figures", "\n".join(verdict(raw))]
    cost = raw.set_index(["dataset", "horizon", "model"])[
        ["windows", "fit_s", "forecast_s", "peak_rss_mb"]]
    cost.index = [f"{d} h{h} {m}" for d, h, m in cost.index]
    cost.columns = ["windows", "fit (s)", "forecast (s)", "peak RSS (MB)"]
    sections += ["## Cost", "Wall time of `fit` and of `forecast_windows` over every window "
                 "scored; peak RSS: the process's peak resident memory after the row (rows run "
                 "cheapest first, so a row's peak includes its data and the earlier rows').",
                 C.markdown_table(cost.astype({"windows": str}), floatfmt=".1f")]
    chose = raw[raw.model.isin(list(FORECASTERS))]
    if len(chose):
        chose = chose.set_index(["dataset", "horizon", "model"])[
            ["sp", "finetuned", "selected", "epochs", "weights"]].astype({"sp": int, "epochs": int})
        chose.index = [f"{d} h{h} {m}" for d, h, m in chose.index]
        chose.columns = ["sp_", "finetuned_", "selected_", "epochs", "combination_weights_"]
        sections += ["## What the forecaster chose", C.markdown_table(chose.astype(str))]
    sections.append(SOURCES)
    return C.write_report(args.out, args.stem, "TimePEFTForecaster on the long-horizon "
                          "benchmark (ETTh1, ETTh2)", sections, raw, args.notes_file)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA),
                        help="folder with ETTh1.csv and ETTh2.csv")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--horizons", nargs="+", type=int, default=list(HORIZONS),
                        choices=HORIZONS)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--max-windows", type=int, default=None,
                        help="score this many test windows per horizon, evenly spread "
                             "(default: every window, the protocol)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--merge", nargs="+", default=None,
                        help="write the report from the raw csv files of earlier runs")
    parser.add_argument("--stem", default="timepeft_ltsf", help="output file stem")
    C.add_out_argument(parser, notes=True)
    args = parser.parse_args()
    if args.max_windows is not None and args.max_windows < 1:
        parser.error("--max-windows must be a positive number of windows")
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=FutureWarning)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.merge:
        raw = pd.concat([pd.read_csv(path, comment="#") for path in args.merge],
                        ignore_index=True)
    else:
        raw = run(args)
    print(report(raw, args))


if __name__ == "__main__":
    main()
