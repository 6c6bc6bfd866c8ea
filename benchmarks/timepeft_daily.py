"""TimePEFTForecaster against the seasonal naive one period ahead on sub-daily series with a daily cycle.

    python benchmarks/timepeft_daily.py --threads 2 --out docs/benchmarks

Issue 51's second goal: on sub-daily series with a daily cycle the default must be within 5%
of the seasonal naive's MSE one period ahead, or better. The series: R's half-hourly
``taylor`` (forecast package; electricity demand, 12 weeks) one day ahead (48 steps), and the
hourly ETTh1 and ETTh2 (all 7 channels; ``--data``, default ``../shared/data/ett``) one
day ahead (24 steps). Test origins: the last ``--days`` days (of ``taylor``, of the ETT test
months: rows before 14,400), each forecast by ``TimePEFTForecaster()`` fitted on the values
before it (at most ``--max-train`` of them), at its defaults but the horizon; the seasonal naive
repeats the last day. Errors in units of each channel's standard deviation over the values
fitted; the rows of a series are averaged over its days. A third column, the naive of the
same hour one week before, shows how much of the error a weekly cycle holds.

Writes ``timepeft_daily.md`` and ``timepeft_daily.csv`` (one row per series and day, with
what the default chose) to ``--out``.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import _common as C
import numpy as np
import pandas as pd
import torch
from timepeft_ltsf import DEFAULT_DATA, load_ett

from skfm import TimePEFTForecaster

WEEK_DAYS = 7


def load_series(name: str, ett_dir) -> tuple[pd.DataFrame, int]:
    """``(values, steps a day)`` of a series; the ETT frames end with their test months."""
    if name == "taylor":
        frame = C.load_rdataset("forecast", "taylor")[["x"]].astype(float)
        return frame.reset_index(drop=True), 48
    return load_ett(ett_dir, name), 24


def run(args) -> pd.DataFrame:
    rows = []
    for name in args.series:
        frame, period = load_series(name, args.data)
        values = frame.to_numpy()
        for day in range(args.days, 0, -1):
            end = len(values) - day * period
            train = frame.iloc[max(0, end - args.max_train):end]
            truth, scale = values[end:end + period], train.to_numpy().std(0)
            forecaster = TimePEFTForecaster(horizon=period)
            _, seconds = C.timed(forecaster.fit, train, fh=np.arange(1, period + 1))
            forecasts = {
                "timepeft": forecaster.predict().to_numpy().reshape(period, -1),
                "seasonal_naive": values[end - period:end],
                "weekly_naive": values[end - WEEK_DAYS * period:end - (WEEK_DAYS - 1) * period],
            }
            row = {"series": name, "day": day, "origin": end, "horizon": period,
                   **{model: float(np.mean(((f - truth) / scale) ** 2))
                      for model, f in forecasts.items()},
                   "fit_s": seconds, "context_length_": forecaster.context_length_,
                   "sp_": forecaster.sp_, "combined": "+".join(forecaster.combination_weights_)}
            linear = forecaster.combination_parameters_.get("linear")
            row["linear_lookback"] = 0 if linear is None else len(linear["coef"])
            rows.append(row)
            print(f"{name} day -{day}: timepeft {row['timepeft']:.4f} seasonal naive "
                  f"{row['seasonal_naive']:.4f} ({row['combined']}, linear lookback "
                  f"{row['linear_lookback']}) {seconds:.1f}s", flush=True)
    return pd.DataFrame(rows)


def report(raw: pd.DataFrame, args) -> Path:
    summary = raw.groupby("series", sort=False)[
        ["timepeft", "seasonal_naive", "weekly_naive", "fit_s"]].mean()
    summary.insert(2, "timepeft / seasonal naive", summary.timepeft / summary.seasonal_naive)
    summary["within 5% or better"] = np.where(summary["timepeft / seasonal naive"] <= 1.05,
                                              "yes", "no")
    days = raw.set_index(["series", "day"])[
        ["timepeft", "seasonal_naive", "weekly_naive", "sp_", "context_length_",
         "linear_lookback", "combined"]]
    days.index = [f"{s} day -{d}" for s, d in days.index]
    sections = [
        f"The last {args.days} days of each series, one day ahead (taylor 48 half-hours, "
        f"ETTh1/ETTh2 24 hours, all channels), `TimePEFTForecaster(horizon=period)` fitted on "
        f"at most {args.max_train:,} values before each origin; MSE in units of each "
        "channel's standard deviation over those values, mean over the days. Torch threads: "
        f"{args.threads}.",
        *C.read_notes(args.notes_file),
        "## One day ahead, mean over the days",
        C.markdown_table(summary, floatfmt=".4f"),
        "## Every day, and what the default combined",
        C.markdown_table(days.astype({"sp_": int, "context_length_": int,
                                      "linear_lookback": int}), floatfmt=".4f"),
    ]
    return C.write_report(args.out, "timepeft_daily", "TimePEFTForecaster on daily cycles, "
                          "one day ahead", sections, raw, args.notes_file)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--series", nargs="+", default=["taylor", "ETTh1", "ETTh2"],
                        choices=["taylor", "ETTh1", "ETTh2"])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--days", type=int, default=7, help="test days per series")
    parser.add_argument("--max-train", type=int, default=3000,
                        help="values fitted before each origin, at most")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--merge", default=None, help="write the report from this raw csv")
    C.add_out_argument(parser, notes=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    raw = pd.read_csv(args.merge, comment="#") if args.merge else run(args)
    print(report(raw, args))


if __name__ == "__main__":
    main()
