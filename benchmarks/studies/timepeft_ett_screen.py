"""Quick screens of TimePEFTForecaster's network on ETTh1/ETTh2 (lookback 512, 300 test windows).

    python benchmarks/studies/timepeft_ett_screen.py network --dataset ETTh2 --horizon 336
    python benchmarks/studies/timepeft_ett_screen.py parts --dataset ETTh2 --horizon 336
    python benchmarks/studies/timepeft_ett_screen.py network --dataset ETTh2 --horizon 336 \\
        --adapter lora --epochs 10 --stride auto --max-windows 0

The protocol of ``timepeft_ltsf.py`` (standardised by the training months, fitted on the
training and validation months), scored on ``--max-windows`` test windows evenly spread, for
minutes-long screens rather than reports (``--max-windows 0``: every test window).
``network``: the network alone (``base=None``, ``--adapter``, ``--epochs`` at window stride
``--stride``, ``--checkpoint``), its test MSE and validation loss. ``parts``: the default
forecaster; its candidates' MSEs where its guard scored them (``validation_scores_``) and, on the
test windows, the default, the fine-tuned network alone, the direct linear map alone and their
equal mean. ``stretch``: the default forecaster, every candidate's and its network's MSE
where its guard scored them (on these long series every ``h // 8``-th window of the stretch its
rolling origins span, each fitted once before it, as ``forecast_windows`` forecasts), every
candidate's test MSE, and the test MSE of the combination those scores weigh, with and without
the network (:func:`stretch_scores`). ``bound``: the default forecaster, the test MSE of its
combination without the network (the ablation: the weights its guard gives the other
candidates), of the network alone, and the lowest test MSE of any blend ``(1 - w) * ablation +
w * network`` (w in steps of 0.01, chosen on the test windows themselves: a bound, in
hindsight, on what any rule that adds this network to the combination could gain).
One csv row per run is appended to ``<out>/timepeft_ett_screen.csv``.
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
import torch
from timepeft_ltsf import (
    DATASETS,
    DEFAULT_DATA,
    VAL_END,
    load_ett,
    standardised,
    test_origins,
    windows_at,
)

from skfm import TimePEFTForecaster
from skfm.timeseries.forecasting.batched import batched_forecasts, window_parameters
from skfm.timeseries.forecasting.combination import (
    CANDIDATES,
    candidate_forecasts,
    combination_weights,
)
from skfm.timeseries.forecasting.direct import direct_linear_forecast


def _mse(forecast: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean((forecast - truth) ** 2))


def _stride(text: str) -> int | str:
    return text if text == "auto" else int(text)


def _every_candidate(values: np.ndarray, windows: np.ndarray, sp: int, horizon: int,
                     n_jobs: int) -> dict[str, np.ndarray]:
    """Every candidate fitted once on ``values``, forecasting after ``windows`` (n, C, H)."""
    fitted = {}
    candidate_forecasts(values, CANDIDATES, sp, horizon, n_jobs, fitted,
                        lookbacks=(windows.shape[1],))
    parameters = {name: window_parameters(name, f, values, sp) for name, f in fitted.items()}
    forecasts = batched_forecasts(windows, parameters, sp, horizon)
    return {name: f for name, f in forecasts.items() if np.isfinite(f).all()}


def _on_test(forecaster, seen: np.ndarray, windows: np.ndarray,
             threads: int) -> dict[str, np.ndarray]:
    """The test forecasts (n, H, C) of every candidate fitted on ``seen`` and of the network
    where the forecaster fine-tuned it."""
    on_test = _every_candidate(seen, windows, forecaster.sp_, forecaster.horizon_, threads)
    if forecaster.finetuned_:
        on_test["network"] = forecaster._network_windows(windows)
    return {name: f.transpose(0, 2, 1) for name, f in on_test.items()}


def _guard_weights(forecaster, network: bool) -> dict[str, float]:
    """The combination's weights from the guard's scores (``validation_scores_``), with or
    without the network among the candidates."""
    return combination_weights({name: np.array([score])
                                for name, score in forecaster.validation_scores_.items()
                                if name != "combination" and (network or name != "network")})


def _weighted(weights: dict[str, float], forecasts: dict[str, np.ndarray]) -> np.ndarray:
    return sum(w * forecasts[name] for name, w in weights.items())


def stretch_scores(forecaster, seen: np.ndarray, windows: np.ndarray, truth: np.ndarray,
                   threads: int) -> dict:
    """Every candidate's and the network's MSE on the stretch of the rolling origins, as the
    guard scored them (``validation_scores_``: on these long series every ``h // 8``-th window,
    each candidate fitted once before it, in units of each channel's standard deviation), the
    test MSE of every candidate (fitted on ``seen``), and of the combination weighted by those
    scores, with and without the network."""
    on_test = _on_test(forecaster, seen, windows, threads)
    row = {f"stretch_{name}": score for name, score in forecaster.validation_scores_.items()
           if name != "combination"}
    row.update({f"test_{name}": _mse(f, truth) for name, f in on_test.items()})
    for label, network in (("", True), ("_without_network", False)):
        weights = _guard_weights(forecaster, network)
        row[f"stretch_weights{label}"] = weights
        row[f"test_stretch_weighted{label}"] = _mse(_weighted(weights, on_test), truth)
    return row


def hindsight_bound(forecaster, seen: np.ndarray, windows: np.ndarray,
                    truth: np.ndarray, threads: int) -> dict:
    """The ablation (the combination re-weighted without the network, from the guard's
    scores), the network alone, and the best blend of the two on the test windows."""
    on_test = _on_test(forecaster, seen, windows, threads)
    weights = _guard_weights(forecaster, network=False)
    ablation = _weighted(weights, on_test)
    row = {"ablation_weights": weights, "test_ablation": _mse(ablation, truth)}
    if "network" not in on_test:
        return row
    network = on_test["network"]
    blends = {float(w): _mse((1 - w) * ablation + w * network, truth)
              for w in np.round(np.linspace(0, 1, 101), 2)}
    best = min(blends, key=blends.get)
    return {**row, "test_network": _mse(network, truth), "bound_weight": best,
            "test_bound": blends[best]}


def screen(args) -> dict:
    frame = standardised(load_ett(args.data, args.dataset))
    windows, truth = windows_at(frame.to_numpy(), test_origins(
        args.horizon, max_windows=args.max_windows or None), args.horizon)
    params = {"context_length": 512, "horizon": args.horizon, "n_jobs": args.threads,
              "checkpoint": args.checkpoint}
    if args.mode == "network":
        params.update(base=None, adapter=args.adapter, max_epochs=args.epochs,
                      window_stride=args.stride)
    forecaster = TimePEFTForecaster(**params)
    start = time.perf_counter()
    forecaster.fit(frame.iloc[:VAL_END])
    row = {"mode": args.mode, "dataset": args.dataset, "horizon": args.horizon,
           "checkpoint": args.checkpoint, "fit_s": time.perf_counter() - start,
           "test_mse": _mse(forecaster.forecast_windows(windows), truth),
           "validation_loss": forecaster.validation_loss_}
    if args.mode == "network":
        return {**row, "adapter": args.adapter, "epochs": forecaster.n_epochs_}
    if args.mode == "bound":
        return {**row, "weights": forecaster.combination_weights_, **hindsight_bound(
            forecaster, frame.iloc[:VAL_END].to_numpy(), windows, truth, args.threads)}
    if args.mode == "stretch":
        return {**row, "weights": forecaster.combination_weights_, **stretch_scores(
            forecaster, frame.iloc[:VAL_END].to_numpy(), windows, truth, args.threads)}
    row.update({f"origins_{name}": score for name, score in forecaster.validation_scores_.items()},
               weights=forecaster.combination_weights_)
    linear = forecaster.combination_parameters_.get("linear")
    if forecaster.finetuned_ and linear is not None:
        network = forecaster._network_windows(windows).transpose(0, 2, 1)
        mapped = direct_linear_forecast(windows, linear).transpose(0, 2, 1)
        row.update(test_network=_mse(network, truth), test_linear=_mse(mapped, truth),
                   test_mean_network_linear=_mse((network + mapped) / 2, truth))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("network", "parts", "stretch", "bound"))
    parser.add_argument("--dataset", choices=DATASETS, default="ETTh1")
    parser.add_argument("--horizon", type=int, default=96)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--checkpoint", default="timepeft-backbone-v2")
    parser.add_argument("--adapter", default="linear_probe")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--stride", type=_stride, default=8,
                        help="window stride of fine-tuning, or 'auto' (the forecaster's default)")
    parser.add_argument("--max-windows", type=int, default=300,
                        help="test windows evenly spread; 0: every test window")
    parser.add_argument("--threads", type=int, default=2)
    C.add_out_argument(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    row = screen(args)
    print(row)
    path = Path(args.out) / "timepeft_ett_screen.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([row]).to_csv(path, mode="a", header=not path.exists(), index=False)


if __name__ == "__main__":
    main()
