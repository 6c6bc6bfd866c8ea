"""Rules for TimePEFTForecaster's forecast combination, screened on the candidates' forecasts.

    python benchmarks/studies/timepeft_combination.py --out docs/benchmarks

For every series and horizon of the development suite (``timepeft_suite.SERIES``) and of the
held-out series (``timepeft_suite.HELDOUT``), at the forecast origins of
``timepeft_suite.py`` (2, one horizon apart, at the end; the last ``--max-train`` values before
the first), the candidates of the combination (``CANDIDATES``) are fitted as
``TimePEFTForecaster(sp=sp)`` fits them: at its rolling origins (same lookback, same rule for where they start) and on the
whole training part. Each rule turns the candidates' MSEs at the rolling origins into weights;
its forecast is the weighted mean of the candidates' forecasts at the test origin. The
network's correction is left out (the forecaster keeps it rarely: one origin of 44 in the suite).
The candidates' forecasts are cached (``--cache``), so rules are compared without refitting.

The rules read the last 4 rolling origins, as the forecaster does by default. With
``--rolling-origins 12 --more-origins 8,12`` the candidates are also measured at more
origins and the default rule and its seasonal-naive guard are scored on the last 8 and 12 too.
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
from timepeft_suite import ALL_SERIES, HELDOUT, add_series_arguments, load

from skfm._selection import beats_with_margin
from skfm.timeseries.forecasting.base import auto_context_length
from skfm.timeseries.forecasting.combination import (
    CANDIDATES,
    candidate_forecasts,
    combination_weights,
    rolling_origins,
)
from skfm.timeseries.forecasting.loading import DEFAULT_CHECKPOINT, backbone_config

N_ORIGINS = 4  # TimePEFTForecaster's default n_origins


def _inverse_mse(errors: dict[str, np.ndarray], names) -> dict[str, float]:
    inverse = {name: 1.0 / max(float(np.mean(errors[name])), 1e-12) for name in names}
    total = sum(inverse.values())
    return {name: value / total for name, value in inverse.items()}


def _best(errors, k):
    return sorted(errors, key=lambda name: float(np.mean(errors[name])))[:k]


def _equal(errors, k):
    return dict.fromkeys(_best(errors, k), 1 / min(k, len(errors)))


def _pool(errors, ratio):
    """The best two, the second only while its MSE is below ``ratio`` times the best's."""
    best, *others = _best(errors, 2)
    pool = [best, *(n for n in others if np.mean(errors[n]) < ratio * np.mean(errors[best]))]
    return {n: 1 / len(pool) for n in pool}


DEFAULT = "default (top2, within 3x the best)"
#: The default, replaced by the seasonal naive unless it beats it by one standard error.
GUARDED = "default, else the seasonal naive (1 SE)"
#: The default's rule applied to each channel on its own rolling-origin errors.
PER_CHANNEL = "default per channel"
#: rule name -> weights from each candidate's MSE per rolling origin.
RULES = {
    DEFAULT: combination_weights,
    "default without the VAR": lambda e: combination_weights(
        {n: v for n, v in e.items() if n != "var"}),
    "top2 equal (before 2026-12-03)": lambda e: _equal(e, 2),
    "top2 within 1.5x the best": lambda e: _pool(e, 1.5),
    "top2 within 2x the best": lambda e: _pool(e, 2.0),
    "top2 inverse-MSE": lambda e: _inverse_mse(e, _best(e, 2)),
    "top3 equal": lambda e: _equal(e, 3),
    "top3 inverse-MSE": lambda e: _inverse_mse(e, _best(e, 3)),
    "all inverse-MSE": lambda e: _inverse_mse(e, list(e)),
    "best only": lambda e: {_best(e, 1)[0]: 1.0},
}


def candidates_at(values: np.ndarray, sp: int, horizon: int, n_origins: int = N_ORIGINS) -> dict:
    """The candidates' MSEs at up to ``n_origins`` rolling origins and their forecasts from
    the end."""
    config = backbone_config(DEFAULT_CHECKPOINT)
    length = auto_context_length(sp, len(values), horizon, config.patch_len, config.max_context)
    origins = rolling_origins(len(values), horizon, n_origins, max(length + horizon, 3 * sp))
    std = np.where(values.std(0) > 0, values.std(0), 1.0)[:, None]
    at_origins = [candidate_forecasts(values[:o], CANDIDATES, sp, horizon) for o in origins]
    inner = {name: np.stack([f[name] for f in at_origins]) for name in CANDIDATES
             if at_origins and all(name in f for f in at_origins)}  # (O, C, H) each
    truths = np.stack([values[o:o + horizon].T for o in origins]) if len(origins) else None
    return {"errors": {name: _origin_mse(f, truths, std) for name, f in inner.items()},
            "inner": inner, "inner_truth": truths, "std": std,
            "forecasts": candidate_forecasts(values, CANDIDATES, sp, horizon)}


def last_origins(record: dict, k: int) -> dict:
    """``record`` as if the candidates had been measured at its last ``k`` rolling origins."""
    truth = record["inner_truth"]
    return {**record, "errors": {n: e[-k:] for n, e in record["errors"].items()},
            "inner": {n: f[-k:] for n, f in record["inner"].items()},
            "inner_truth": None if truth is None else truth[-k:]}


def _origin_mse(forecasts, truths, std):
    return np.mean(((forecasts - truths) / std) ** 2, axis=(1, 2))


def guarded_by_seasonal_naive(record, weights):
    """``weights``, or the seasonal naive alone unless the weighted mean beats it by one
    standard error at the rolling origins (as the forecaster's guard keeps its correction)."""
    naive = "seasonal_naive" if record["sp"] > 1 else "naive"
    if naive not in record["errors"] or naive in weights and len(weights) == 1:
        return weights
    combined = sum(w * record["inner"][n] for n, w in weights.items())
    errors = _origin_mse(combined, record["inner_truth"], record["std"])
    return weights if beats_with_margin(record["errors"][naive], errors) else {naive: 1.0}


def per_channel_weights(record) -> dict[str, np.ndarray]:
    """The default rule per channel: weights (C, 1) per candidate, from each channel's own
    MSEs at the rolling origins (0 where a channel does not average that candidate)."""
    n_channels = record["inner_truth"].shape[1]
    weights = {name: np.zeros((n_channels, 1)) for name in record["inner"]}
    for c in range(n_channels):
        errors = {name: _origin_mse(f[:, c:c + 1], record["inner_truth"][:, c:c + 1],
                                    record["std"][c:c + 1]) for name, f in record["inner"].items()}
        for name, weight in combination_weights(errors).items():
            weights[name][c] = weight
    return {name: weight for name, weight in weights.items() if weight.any()}


def collect(names, args) -> list[dict]:
    records = []
    for name in names:
        _, sp, horizons = ALL_SERIES[name]
        data = load(name)
        for horizon in horizons:
            series = data.iloc[-(args.max_train + args.origins * horizon):]
            for k in range(args.origins, 0, -1):
                end = len(series) - k * horizon
                train, test = series.iloc[:end], series.iloc[end:end + horizon]
                start = time.perf_counter()
                record = candidates_at(train.to_numpy(float), sp, horizon,
                                       args.rolling_origins)
                record.update(series=name, horizon=horizon, origin=end, sp=sp,
                              heldout=name in HELDOUT, truth=test.to_numpy(float).T,
                              scale=train.std().replace(0, 1).to_numpy(float)[:, None],
                              seconds=time.perf_counter() - start)
                records.append(record)
                print(f"{name} h{horizon} origin {end}: {len(record['errors'])} candidates "
                      f"measured, {record['seconds']:.1f}s", flush=True)
    return records


def score(records, more_origins=()) -> pd.DataFrame:
    """MSE (standardised) of every rule and candidate per series, horizon and origin; the
    default and its guard also on the last ``k`` rolling origins for ``k`` in ``more_origins``."""
    rows = []
    for full in records:
        r = last_origins(full, N_ORIGINS)
        fallback = {"seasonal_naive" if r["sp"] > 1 else "naive": 1.0}
        named = {rule: (weigh(r["errors"]) if r["errors"] else fallback)
                 for rule, weigh in RULES.items()}
        named[GUARDED] = guarded_by_seasonal_naive(r, named[DEFAULT]) if r["errors"] else fallback
        named[PER_CHANNEL] = per_channel_weights(r) if r["errors"] else fallback
        for k in more_origins:
            rk = last_origins(full, k)
            weights = combination_weights(rk["errors"]) if rk["errors"] else fallback
            named[f"default, {k} rolling origins"] = weights
            named[f"{GUARDED}, {k} rolling origins"] = (
                guarded_by_seasonal_naive(rk, weights) if rk["errors"] else fallback)
        named.update({f"candidate {n}": {n: 1.0} for n in CANDIDATES if n in r["forecasts"]})
        # the suite's seasonal naive: NaiveForecaster(sp=sp), the naive where sp is 1
        named["seasonal naive"] = {"seasonal_naive" if r["sp"] > 1 else "naive": 1.0}
        for model, weights in named.items():
            forecast = sum(w * r["forecasts"][n] for n, w in weights.items())
            mse = float(np.mean(((forecast - r["truth"]) / r["scale"]) ** 2))
            rows.append({"set": "held-out" if r["heldout"] else "development",
                         "series": r["series"], "horizon": r["horizon"], "origin": r["origin"],
                         "model": model, "mse": mse})
    return pd.DataFrame(rows)


def summarise(per_origin: pd.DataFrame) -> pd.DataFrame:
    per = per_origin.groupby(["set", "series", "horizon", "model"]).mse.mean().reset_index()
    out = {}
    for name, part in per.groupby("set"):
        table = part.pivot_table(index=["series", "horizon"], columns="model", values="mse")
        sn = table["seasonal naive"]
        rules = [*(r for r in [*RULES, GUARDED, PER_CHANNEL] if r in table),
                 *(r for r in table if "rolling origins" in r)]
        ratio = table[rules].div(sn, axis=0).replace([np.inf], np.nan)
        out[name] = pd.DataFrame({
            "mean rank among rules": C.mean_rank(table[rules], higher_is_better=False),
            "mean MSE": table[rules].mean(),
            "geometric mean MSE / seasonal naive": np.exp(np.log(ratio.clip(lower=1e-9)).mean()),
            "rows > 1.05 x seasonal naive": (table[rules].gt(1.05 * sn, axis=0)).sum(),
            "rows": len(table),
        })
    return pd.concat(out, names=["set", "rule"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_series_arguments(parser)
    parser.add_argument("--rolling-origins", type=int, default=N_ORIGINS,
                        help="rolling origins the candidates are measured at when collecting")
    parser.add_argument("--more-origins", default="",
                        help="comma-separated counts of rolling origins (at most "
                             "--rolling-origins of the cache) to score the default rule on too")
    parser.add_argument("--cache", default="runs/timepeft_combination.pkl",
                        help="the candidates' forecasts: read if it exists, else written")
    parser.add_argument("--stem", default="timepeft_combination")
    C.add_out_argument(parser, notes=True)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    records = C.cached(args.cache, lambda: collect(args.series, args))
    per_origin = score(records, [int(k) for k in filter(None, args.more_origins.split(","))])
    summary = summarise(per_origin)
    print(summary.to_string())
    counts = ["rows > 1.05 x seasonal naive", "rows"]
    table = summary.astype(dict.fromkeys(counts, int)).astype(dict.fromkeys(counts, str))
    table.index = [f"{name}: {rule}" for name, rule in table.index]
    sections = [*C.read_notes(args.notes_file), "## Rules", C.markdown_table(table, ".3f")]
    for name, part in per_origin.groupby("set"):
        table = part.pivot_table(index=["series", "horizon"], columns="model", values="mse")
        table.index = [f"{s} h{h}" for s, h in table.index]
        sections += [f"## MSE per series, {name} set (standardised, mean of the origins)",
                     C.markdown_table(table)]
    title = "Rules for TimePEFTForecaster's combination" + (
        ", on more rolling origins" if args.more_origins else "")
    print(C.write_report(args.out, args.stem, title,
                         sections, per_origin, args.notes_file))


if __name__ == "__main__":
    main()
