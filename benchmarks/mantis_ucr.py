"""Mantis on UCR/UEA datasets, against MiniRocket, MultiRocket and raw baselines.

    .venv/bin/python benchmarks/mantis_ucr.py --suite dev --threads 2 --resume \
        --out docs/benchmarks

Official train/test splits. ``--suite sktime``: the 8 sets that ship inside the sktime wheel
(ArrowHead, GunPoint, ItalyPowerDemand, OSULeaf, ACSF1, BasicMotions (6 channels),
JapaneseVowels (12 channels, lengths 7-29) and PLAID (lengths 100-1344)). ``--suite dev``:
those 8 and the 30 UCR/UEA sets of ``--data`` (``../shared/data/ucr``: one ``.npz`` each with
``X_train``, ``X_test`` (n, channels, length), ``y_train``, ``y_test``, listed in
``index.json``), 38 sets. Models (``--models``):

- ``default``: ``MantisTimeSeriesClassifier()`` as shipped: late fusion of the
  temperature-scaled probabilities of Mantis + LR and MiniRocket + ridge, Mantis's weight (0 to
  0.5) chosen by out-of-fold log loss (the report counts the sets where it is above 0);
  ``late_no_mantis``: the same with Mantis's weight fixed at 0 (``fusion_weight=0``: MiniRocket +
  ridge with temperature-scaled probabilities, the ablation without Mantis); ``pick``:
  ``fusion="minirocket"``, the embeddings beside the MiniRocket features and the head picked by
  cross-validation (the default until 0.6; the report counts the heads it chose);
- ``mantis``: frozen embeddings (checkpoint's default layer, CLS ⊕ mean) + StandardScaler +
  LogisticRegression (``fusion=None``); ``mantis_rf``: the same embeddings + RandomForest(200);
  ``mantis_layer``: embeddings from ``--probe-layer`` + LR; ``mantis_se``: self-ensembling
  over lengths 256, 512, 768, 1024 + LR;
- ``mantis_head`` / ``mantis_full``: head-only / full fine-tuning as the estimator's defaults
  do it (BatchNorm + Linear head from a linear probe, 10 epochs at small learning rates on all
  training series; ``--epochs`` sets ``max_epochs``, ``--fine-tune-params`` any other
  parameter, for screens of the recipe);
- ``random``: the same architecture at random initialisation + LR (``fusion=None``);
- ``minirocket`` / ``multirocket``: sktime MiniRocketMultivariate / MultiRocketMultivariate +
  StandardScaler + RidgeClassifierCV (their usual head);
- ``rf_raw`` / ``lr_raw`` / ``knn_raw``: RandomForest(200), StandardScaler + LogisticRegression
  and 1-NN (Euclidean) on the raw series, channels concatenated.

Log loss and top-label ECE (15 equal-width confidence bins) are reported for every model with
``predict_proba`` (not for the Rockets' ridge, which has none). Raw baselines and the Rockets see every series linearly resized to the longest training
length (at least 9, MiniRocket's minimum; only the ragged sets change), as the default
classifier's MiniRocket does. Times are fit + predict seconds relative to MiniRocket, measured
in the same run. ``--resume`` keeps every finished (dataset, model) row in ``<name>.rows.csv``
beside the report and skips it when run again, so a long suite can run in parts (by
``--datasets`` or ``--models``) and one last call writes the report from all rows.
``--memory DATASET`` only measures the peak resident memory of the default classifier's fit +
predict on that dataset (run it in a fresh process) and stores it for the report.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import _common as C
import numpy as np
import pandas as pd
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression, RidgeClassifierCV
from sklearn.metrics import log_loss
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skfm._backend import threads
from skfm.timeseries import MantisTimeSeriesClassifier
from skfm.timeseries._panel import resize_panel
from skfm.timeseries.mantis.embedding import embed_panel
from skfm.timeseries.mantis.fusion import MINIROCKET_MIN_LENGTH
from skfm.timeseries.mantis.loading import load_model

SKTIME_SETS = {
    "ArrowHead": "load_arrow_head",
    "GunPoint": "load_gunpoint",
    "ItalyPowerDemand": "load_italy_power_demand",
    "OSULeaf": "load_osuleaf",
    "ACSF1": "load_acsf1",
    "BasicMotions": "load_basic_motions",
    "JapaneseVowels": "load_japanese_vowels",
    "PLAID": "load_plaid",
}
DEFAULT_DATA = C.ROOT.parent / "shared" / "data" / "ucr"
MODELS = ["default", "late_no_mantis", "pick", "mantis", "mantis_rf", "mantis_layer", "mantis_se", "mantis_head",
          "mantis_full", "random", "minirocket", "multirocket", "rf_raw", "lr_raw", "knn_raw"]
RAW_MODELS = ("minirocket", "multirocket", "rf_raw", "lr_raw", "knn_raw")
LABELS = {
    "default": "default (late fusion, Mantis + MiniRocket)",
    "late_no_mantis": "default without Mantis (weight 0)",
    "pick": "Mantis ⊕ MiniRocket, head picked by CV", "mantis": "Mantis frozen + LR",
    "mantis_rf": "Mantis frozen + RF", "mantis_layer": "Mantis layer {layer} + LR",
    "mantis_se": "Mantis self-ensemble + LR", "mantis_head": "Mantis head fine-tuned",
    "mantis_full": "Mantis fully fine-tuned", "random": "random-init Mantis + LR",
    "minirocket": "MiniRocket + ridge", "multirocket": "MultiRocket + ridge",
    "rf_raw": "RF on raw", "lr_raw": "LR on raw", "knn_raw": "1-NN on raw",
}


def suite(name: str, data: Path) -> list[str]:
    """Dataset names of a suite: the sktime sets, then those in ``data/index.json``."""
    names = list(SKTIME_SETS)
    if name == "dev":
        names += [entry["name"] for entry in json.loads((data / "index.json").read_text())[
            "datasets"]]
    return names


def load(name: str, data: Path):
    """(X_train, y_train, X_test, y_test); X a 3-D array or a list of (C, T_i) arrays."""
    if name not in SKTIME_SETS:
        arrays = np.load(data / f"{name}.npz")
        return [arrays[key] for key in ("X_train", "y_train", "X_test", "y_test")]
    import sktime.datasets

    loader = getattr(sktime.datasets, SKTIME_SETS[name])
    out = []
    for split in ("train", "test"):
        try:
            X, y = loader(split=split, return_type="numpy3D")
        except ValueError:  # unequal lengths: nested frame -> list of (C, T_i) arrays
            frame, y = loader(split=split)
            X = [np.stack([np.asarray(cell, dtype=float) for cell in row])
                 for row in frame.itertuples(index=False)]
        out += [X, np.asarray(y)]
    return out


def raw_features(X_train, X_test) -> tuple[np.ndarray, np.ndarray]:
    """Series resized to the longest training length (at least MiniRocket's minimum)."""
    length = max(MINIROCKET_MIN_LENGTH, max(s.shape[-1] for s in X_train))
    return resize_panel(X_train, length), resize_panel(X_test, length)


def make_model(key: str, args, n_jobs: int):
    common = {"checkpoint": args.checkpoint, "device": args.device, "n_jobs": n_jobs,
              "fusion": None}
    if key == "default":
        return MantisTimeSeriesClassifier(checkpoint=args.checkpoint, device=args.device,
                                          n_jobs=n_jobs)
    if key == "late_no_mantis":
        return MantisTimeSeriesClassifier(**{**common, "fusion": "late", "fusion_weight": 0.0})
    if key == "pick":
        return MantisTimeSeriesClassifier(**{**common, "fusion": "minirocket"})
    if key == "mantis":
        return MantisTimeSeriesClassifier(**common)
    if key == "mantis_rf":
        return MantisTimeSeriesClassifier(head="random_forest", **common)
    if key == "mantis_layer":
        return MantisTimeSeriesClassifier(layer=args.probe_layer, **common)
    if key == "mantis_se":
        return MantisTimeSeriesClassifier(ensemble_lengths=(256, 512, 768, 1024), **common)
    if key in ("mantis_head", "mantis_full"):
        mode = key.removeprefix("mantis_")
        tuning = json.loads(args.fine_tune_params)
        if args.epochs is not None:
            tuning["max_epochs"] = args.epochs
        return MantisTimeSeriesClassifier(fine_tuning=mode, **tuning, **common)
    if key == "random":
        return MantisTimeSeriesClassifier(**{**common, "checkpoint": args.random})
    raise ValueError(key)


def run_raw(key: str, X_train, y_train, X_test, n_jobs: int):
    """Predictions on ``X_test`` and the fitted model, or None for a Rocket (its ridge has no
    probabilities)."""
    if key in ("minirocket", "multirocket"):
        from sktime.transformations.panel.rocket import (
            MiniRocketMultivariate,
            MultiRocketMultivariate,
        )

        if key == "multirocket":  # its compiled kernels take float64 only
            X_train, X_test = X_train.astype(np.float64), X_test.astype(np.float64)
        kind = MiniRocketMultivariate if key == "minirocket" else MultiRocketMultivariate
        rocket = kind(random_state=0, n_jobs=n_jobs)
        Z_train = rocket.fit_transform(X_train)
        ridge = make_pipeline(StandardScaler(), RidgeClassifierCV(alphas=np.logspace(-3, 3, 10)))
        return ridge.fit(Z_train, y_train).predict(rocket.transform(X_test)), None
    flat_train, flat_test = X_train.reshape(len(X_train), -1), X_test.reshape(len(X_test), -1)
    model = {
        "rf_raw": RandomForestClassifier(n_estimators=200, random_state=0, n_jobs=n_jobs),
        "lr_raw": make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
        "knn_raw": KNeighborsClassifier(n_neighbors=1),
    }[key]
    model.fit(flat_train, y_train)
    return model.predict_proba(flat_test), model


def calibration(y_test, proba: np.ndarray, classes: np.ndarray, n_bins: int = 15) -> dict:
    """Log loss and top-label expected calibration error (``n_bins`` equal-width bins)."""
    confidence, correct = proba.max(1), classes[proba.argmax(1)] == np.asarray(y_test)
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    ece = sum(abs(correct[bins == b].mean() - confidence[bins == b].mean()) * np.mean(bins == b)
              for b in np.unique(bins))
    return {"log_loss": float(log_loss(y_test, proba, labels=classes)), "ece": float(ece)}


def throughput(checkpoint: str, device: str, n: int = 512) -> float:
    """Series per second embedded at length 512 (one channel), after one warm-up batch."""
    from skfm._backend import resolve_device, resolve_precision

    dev = resolve_device(device)
    model, _ = load_model(checkpoint, dev)
    X = np.random.default_rng(0).normal(size=(n, 1, 512)).astype(np.float32)
    dtype = resolve_precision(dev, "auto")
    embed_panel(model, X[:64], None, "combined", dev, dtype)
    start = time.perf_counter()
    embed_panel(model, X, None, "combined", dev, dtype)
    return n / (time.perf_counter() - start)


def warm_up_numba(n_jobs: int) -> None:
    """Compile (or load from numba's cache) the Rockets once, so no model's time includes it."""
    from sktime.transformations.panel.rocket import MiniRocketMultivariate, MultiRocketMultivariate

    X = np.random.default_rng(0).normal(size=(4, 2, 16))
    for kind, dtype in ((MiniRocketMultivariate, np.float32), (MultiRocketMultivariate, np.float64)):
        kind(random_state=0, n_jobs=n_jobs).fit(X.astype(dtype)).transform(X.astype(dtype))


def measure_memory(name: str, args) -> dict:
    """Peak RSS (MB) of this process around one default fit + predict of `name`."""
    X_train, y_train, X_test, _ = load(name, Path(args.data))
    warm_up_numba(args.threads)
    before = C.peak_rss_mb()
    with threads(args.threads):
        make_model("default", args, args.threads).fit(X_train, y_train).predict(X_test)
    n_series = sum(s.shape[0] for s in list(X_train) + list(X_test))
    return {"dataset": name, "series_x_channels": n_series, "peak_rss_mb": C.peak_rss_mb(),
            "peak_rss_before_mb": before}


def report(rows: pd.DataFrame, args, extra: dict) -> list[str]:
    """Markdown sections: accuracy table, means, ranks, time ratios, speed, memory."""
    names = [d for d in suite(args.suite, Path(args.data)) if d in set(rows["dataset"])]
    acc = rows.pivot(index="dataset", columns="model", values="accuracy")
    acc = acc.loc[names, [m for m in MODELS if m in acc.columns]]
    seconds = rows.pivot(index="dataset", columns="model", values="seconds").loc[acc.index,
                                                                               acc.columns]
    label = {k: LABELS[k].format(layer=args.probe_layer) for k in acc.columns}
    full = [m for m in acc.columns if acc[m].notna().all()]
    partial = [m for m in acc.columns if m not in full]
    complete = acc[full]  # means, ranks and times: the models that ran on every set
    lines = [
        f"Checkpoint `{args.checkpoint}`, {args.threads} torch threads, device {args.device}. "
        f"Accuracy on the official test splits, seed 0 everywhere; {len(acc)} datasets. "
        "Best per row in bold; `-`: not run (the means, ranks and times are over the models "
        "that ran on every set; a model run on a subset is compared on that subset below).", "",
        "| dataset | " + " | ".join(label[m] for m in acc.columns) + " |",
        "|---|" + "---|" * len(acc.columns),
    ]
    for name, row in acc.iterrows():
        best = row.max()
        cells = ["-" if np.isnan(v) else f"**{v:.3f}**" if v == best else f"{v:.3f}"
                 for v in row]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| **mean** | " + " | ".join(
        f"**{complete[m].mean():.3f}**" if m in full else "-" for m in acc.columns) + " |")
    ranks = C.mean_rank(complete)
    lines.append("| mean rank | " + " | ".join(
        f"{ranks[m]:.2f}" if m in full else "-" for m in acc.columns) + " |")
    if "minirocket" in seconds.columns:
        ratio = seconds[full].sum() / seconds["minirocket"].sum()
        lines.append("| time / MiniRocket | " + " | ".join(
            f"{ratio[m]:.2f}" if m in full else "-" for m in acc.columns) + " |")
    for m in partial:
        sets = acc.index[acc[m].notna()]
        others = [k for k in ("default", "mantis", "minirocket") if k in full]
        time_ratio = seconds.loc[sets, m].sum() / seconds.loc[sets, "minirocket"].sum() if (
            "minirocket" in full) else float("nan")
        lines += ["", f"{label[m]} on {len(sets)} sets ({', '.join(sets)}): mean "
                      f"**{acc.loc[sets, m].mean():.3f}**; on the same sets "
                      + ", ".join(f"{label[k]} {acc.loc[sets, k].mean():.3f}" for k in others)
                      + f"; time / MiniRocket on these sets {time_ratio:.2f}."]
    for m in [k for k in ("default", "pick") if "minirocket" in full and k in full]:
        gap = complete[m] - complete["minirocket"]
        lines += ["", f"{label[m]} against MiniRocket + ridge: {int((gap > 0).sum())} wins, "
                      f"{int((gap == 0).sum())} ties, {int((gap < 0).sum())} losses"
                      + (f"; largest loss {-gap.min():.3f} ({gap.idxmin()})" if gap.min() < 0
                         else "")
                      + f"; sets more than 2 points below: {int((gap < -0.02 - 1e-9).sum())}."]
    lines += calibration_lines(rows, complete.index, label) + late_fusion_lines(rows, complete)
    picks = rows.loc[rows["model"] == "pick", "selected"].dropna().value_counts() if (
        "selected" in rows.columns) else pd.Series(dtype=int)
    if len(picks):
        lines += ["", f"Head {label['pick']} chose: " + ", ".join(
            f"{k} on {v} sets" for k, v in picks.items()) + "."]
    if "minirocket" in seconds.columns:
        lines += ["", f"MiniRocket + ridge took {seconds.loc[complete.index, 'minirocket'].sum():.0f}"
                      " s of fit + predict over these sets (the unit of the time ratios)."]
    if extra.get("throughput"):
        lines += ["", f"Embedding throughput at length 512, one channel, {args.threads} torch "
                      f"threads: **{extra['throughput']:.0f} series/s**."]
    if extra.get("memory"):
        mem = extra["memory"]
        lines += ["", f"Peak resident memory of one default fit + predict on {mem['dataset']} "
                      f"({mem['series_x_channels']} series × channels, the most of the suite), "
                      f"in a fresh process: **{mem['peak_rss_mb']:.0f} MB** "
                      f"({mem['peak_rss_before_mb']:.0f} MB after the imports and data)."]
    if extra.get("epoch_seconds"):
        lines += ["", "Fine-tuning seconds per epoch: " + ", ".join(
            f"{k} {v:.2f}" for k, v in sorted(extra["epoch_seconds"].items())) + "."]
    return ["\n".join(lines)]


def calibration_lines(rows: pd.DataFrame, names, label: dict) -> list[str]:
    """Mean log loss and ECE of the models with probabilities on every set of ``names``."""
    if "log_loss" not in rows.columns:
        return []
    kept = rows[rows["dataset"].isin(names)]
    groups = dict(list(kept.groupby("model")))
    means = {m: groups[m][["log_loss", "ece"]].mean() for m in MODELS
             if m in groups and groups[m]["log_loss"].notna().sum() == len(names)}
    if not means:
        return []
    return ["", f"Calibration on the official test splits ({len(names)} sets; models with "
                "probabilities): mean log loss and mean top-label ECE (15 bins).", "",
            "| model | log loss | ECE |", "|---|---|---|"] + [
        f"| {label[m]} | {v['log_loss']:.4f} | {v['ece']:.4f} |"
        for m, v in means.items()]


def late_fusion_lines(rows: pd.DataFrame, complete: pd.DataFrame) -> list[str]:
    """Where the default gave Mantis weight, what removing Mantis costs, and per set the weight
    and the default's accuracy minus MiniRocket + ridge's."""
    if "default" not in complete.columns or "fusion_weight" not in rows.columns:
        return []
    weight = rows[rows["model"] == "default"].set_index("dataset")["fusion_weight"].astype(float)
    weight = weight.loc[complete.index]
    lines = ["", f"Mantis's weight in the default (out-of-fold log loss, 0..0.5 by 0.1): above "
                 f"0 on {int((weight > 0).sum())} of {len(weight)} sets, mean {weight.mean():.2f}, "
                 f"median {weight.median():.2f}."]
    if "late_no_mantis" in complete.columns:
        cost = complete["default"].mean() - complete["late_no_mantis"].mean()
        lines += ["", f"Ablation: the default without Mantis (weight 0) scores "
                      f"{complete['late_no_mantis'].mean():.3f}; removing Mantis costs "
                      f"{100 * cost:+.2f} points of mean accuracy."]
    if "minirocket" in complete.columns:
        gap = 100 * (complete["default"] - complete["minirocket"])
        lines += ["", "Per set, Mantis's weight in the default and the default's accuracy minus "
                      "MiniRocket + ridge's (points):", "",
                  "| dataset | Mantis's weight | default - MiniRocket |", "|---|---|---|"]
        lines += [f"| {name} | {weight[name]:.1f} | {gap[name]:+.1f} |" for name in complete.index]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default="mantis-v3")
    parser.add_argument("--random", default="random:base",
                        help="the random-initialisation baseline of the same architecture")
    parser.add_argument("--suite", choices=["sktime", "dev"], default="sktime")
    parser.add_argument("--data", default=str(DEFAULT_DATA),
                        help="folder of the extra UCR/UEA .npz sets (--suite dev)")
    parser.add_argument("--datasets", default=None, help="comma-separated subset of the suite")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--epochs", type=int, default=None,
                        help="fine-tuning max_epochs (default: the estimator's)")
    parser.add_argument("--fine-tune-params", default="{}", metavar="JSON",
                        help="more parameters of the fine-tuned models, e.g. "
                             "'{\"learning_rate\": 1e-2, \"validation_fraction\": 0.1}'")
    parser.add_argument("--probe-layer", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--resume", action="store_true",
                        help="keep finished rows in <name>.rows.csv and skip them when run again")
    parser.add_argument("--memory", default=None, metavar="DATASET",
                        help="only measure the default classifier's peak memory on DATASET")
    parser.add_argument("--no-report", action="store_true",
                        help="only run (with --resume: a part of the suite)")
    C.add_out_argument(parser, notes=True)
    parser.add_argument("--name", default="mantis_ucr", help="report file stem")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows_path, extra_path = out / f"{args.name}.rows.csv", out / f"{args.name}.extra.json"
    extra = json.loads(extra_path.read_text()) if args.resume and extra_path.exists() else {}
    torch.set_num_threads(args.threads)
    if args.memory:
        extra["memory"] = measure_memory(args.memory, args)
        extra_path.write_text(json.dumps(extra, indent=1))
        print(extra["memory"])
        return
    models = args.models.split(",")
    datasets = args.datasets.split(",") if args.datasets else suite(args.suite, Path(args.data))
    done = pd.read_csv(rows_path) if args.resume and rows_path.exists() else pd.DataFrame(
        columns=["dataset", "model", "accuracy", "seconds", "selected", "fusion_weight",
                 "log_loss", "ece"])
    finished = set(zip(done["dataset"], done["model"], strict=True))
    epoch_seconds = extra.setdefault("epoch_seconds", {})
    warm_up_numba(args.threads)
    with threads(args.threads):
        for name in datasets:
            todo = [key for key in models if (name, key) not in finished]
            if not todo:
                continue
            X_train, y_train, X_test, y_test = load(name, Path(args.data))
            raw = raw_features(X_train, X_test)
            for key in todo:
                start = time.perf_counter()
                if key in RAW_MODELS:
                    pred, model = run_raw(key, raw[0], y_train, raw[1], args.threads)
                else:
                    model = make_model(key, args, args.threads).fit(X_train, y_train)
                    pred = model.predict_proba(X_test)  # predict is its argmax
                    if key in ("mantis_head", "mantis_full"):
                        epoch_seconds[f"{name}/{key}"] = (time.perf_counter() - start) / max(
                            model.n_epochs_, 1)
                seconds = time.perf_counter() - start
                scores = {}
                if model is not None:  # pred holds the probabilities
                    scores = calibration(y_test, pred, model.classes_)
                    pred = model.classes_[pred.argmax(1)]
                accuracy = float(np.mean(np.asarray(pred) == np.asarray(y_test)))
                row = pd.DataFrame([{"dataset": name, "model": key, "accuracy": accuracy,
                                     "seconds": seconds,
                                     "selected": getattr(model, "selected_", None),
                                     "fusion_weight": getattr(model, "fusion_weight_", None),
                                     **scores}])
                done = pd.concat([done, row], ignore_index=True) if len(done) else row
                if args.resume:
                    done.to_csv(rows_path, index=False)
                    extra_path.write_text(json.dumps(extra, indent=1))
                print(f"{name:<28} {key:<14} acc {accuracy:.3f}  log loss "
                      f"{scores.get('log_loss', float('nan')):.3f}  {seconds:7.1f} s", flush=True)
        if not args.no_report and "throughput" not in extra:  # --resume keeps a measured one
            extra["throughput"] = throughput(args.checkpoint, args.device)
    if args.resume:
        extra_path.write_text(json.dumps(extra, indent=1))
    if args.no_report:
        return
    where = "UCR/UEA sets" if args.suite == "dev" else "the UCR/UEA sets shipped in sktime"
    title = f"Mantis on {len(set(done['dataset']))} {where} ({args.checkpoint})"
    sections = report(done, args, extra) + C.read_notes(args.notes_file)
    md = C.write_report(out, args.name, title, sections, done, notes_file=args.notes_file)
    print(md.read_text())


if __name__ == "__main__":
    main()
