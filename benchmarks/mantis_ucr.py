"""Mantis on the UCR/UEA datasets that ship inside sktime, against MiniRocket and raw baselines.

    .venv/bin/python benchmarks/mantis_ucr.py --checkpoint mantis-v2 --threads 2 \
        --out docs/benchmarks

Official train/test splits of ArrowHead, GunPoint, ItalyPowerDemand, OSULeaf, ACSF1,
BasicMotions (6 channels), JapaneseVowels (12 channels, lengths 7-29) and PLAID (lengths
100-1344), all loaded offline from the sktime wheel. Models (``--models``):

- ``mantis``: frozen embeddings (checkpoint's default layer, CLS ⊕ mean) + StandardScaler +
  LogisticRegression, the estimator's default;
- ``mantis_rf``: the same embeddings + RandomForest(200);
- ``mantis_layer``: embeddings from ``--probe-layer`` (an intermediate block) + LR;
- ``mantis_se``: self-ensembling over lengths 256, 512, 768, 1024 + LR;
- ``mantis_fusion``: embeddings ⊕ MiniRocket features + LR;
- ``mantis_head`` / ``mantis_full``: head-only / full fine-tuning (BatchNorm + Linear, early
  stopping on 10 % of the training set, at most ``--epochs`` epochs);
- ``random``: the same architecture at random initialisation + LR (the release gate);
- ``minirocket``: sktime MiniRocketMultivariate + RidgeClassifierCV (its usual head);
- ``rf_raw`` / ``lr_raw`` / ``knn_raw``: RandomForest(200), StandardScaler + LogisticRegression
  and 1-NN (Euclidean) on the raw series, channels concatenated.

Raw baselines and MiniRocket see every series linearly resized to the dataset's longest
length (only the two ragged datasets change). Times are fit + predict seconds relative to
MiniRocket, measured in the same run; the embedding throughput at length 512 is absolute, with
the hardware named. Writes ``mantis_ucr.md`` and ``mantis_ucr.csv`` to ``--out``.
``--reuse CSV`` (repeatable) fills in the models not run now from an earlier run's csv (e.g.
the baselines, which do not depend on the checkpoint); the report names them, and their times
come from that run.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import _common as C
import numpy as np
import pandas as pd
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression, RidgeClassifierCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skfm._backend import threads
from skfm.timeseries import MantisTimeSeriesClassifier
from skfm.timeseries._panel import resize_panel
from skfm.timeseries.mantis.embedding import embed_panel
from skfm.timeseries.mantis.loading import load_model

DATASETS = {
    "ArrowHead": "load_arrow_head",
    "GunPoint": "load_gunpoint",
    "ItalyPowerDemand": "load_italy_power_demand",
    "OSULeaf": "load_osuleaf",
    "ACSF1": "load_acsf1",
    "BasicMotions": "load_basic_motions",
    "JapaneseVowels": "load_japanese_vowels",
    "PLAID": "load_plaid",
}
MODELS = ["mantis", "mantis_rf", "mantis_layer", "mantis_se", "mantis_fusion", "mantis_head",
          "mantis_full", "random", "minirocket", "rf_raw", "lr_raw", "knn_raw"]
LABELS = {
    "mantis": "Mantis frozen + LR", "mantis_rf": "Mantis frozen + RF",
    "mantis_layer": "Mantis layer {layer} + LR", "mantis_se": "Mantis self-ensemble + LR",
    "mantis_fusion": "Mantis ⊕ MiniRocket + LR", "mantis_head": "Mantis head fine-tuned",
    "mantis_full": "Mantis fully fine-tuned", "random": "random-init Mantis + LR",
    "minirocket": "MiniRocket + ridge", "rf_raw": "RF on raw", "lr_raw": "LR on raw",
    "knn_raw": "1-NN on raw",
}
# Published Mantis means (reference notes §1.6); none of them is per dataset for these sets.
PUBLISHED = [
    ("Mantis-8M frozen + RF, 159 datasets (paper figure)", 0.7816),
    ("Mantis-8M fine-tuned, 131 datasets (paper figure)", 0.8408),
    ("Mantis+ frozen, UCR-128 (MantisV2 report)", 0.8283),
    ("SE-Mantis+ (self-ensembling), UCR-128", 0.8369),
    ("MantisV2 & TiConvNext fusion, UCR-128", 0.8494),
    ("MantisV2 fine-tuned, UCR-128", 0.85),
]


def load(name: str):
    """(X_train, y_train, X_test, y_test); X a 3-D array or a list of (C, T_i) arrays."""
    import sktime.datasets

    loader = getattr(sktime.datasets, DATASETS[name])
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
    """Series resized to the longest length in the data, as (n, C, T) arrays."""
    length = max(s.shape[-1] for s in list(X_train) + list(X_test))
    return resize_panel(X_train, length), resize_panel(X_test, length)


def make_model(key: str, args, n_jobs: int):
    common = {"checkpoint": args.checkpoint, "device": args.device, "n_jobs": n_jobs}
    if key == "mantis":
        return MantisTimeSeriesClassifier(**common)
    if key == "mantis_rf":
        return MantisTimeSeriesClassifier(head="random_forest", **common)
    if key == "mantis_layer":
        return MantisTimeSeriesClassifier(layer=args.probe_layer, **common)
    if key == "mantis_se":
        return MantisTimeSeriesClassifier(ensemble_lengths=(256, 512, 768, 1024), **common)
    if key == "mantis_fusion":
        return MantisTimeSeriesClassifier(fusion="minirocket", **common)
    if key in ("mantis_head", "mantis_full"):
        mode = key.removeprefix("mantis_")
        return MantisTimeSeriesClassifier(fine_tuning=mode, max_epochs=args.epochs, **common)
    if key == "random":
        return MantisTimeSeriesClassifier(**{**common, "checkpoint": args.random})
    raise ValueError(key)


def run_raw(key: str, X_train, y_train, X_test, n_jobs: int) -> np.ndarray:
    if key == "minirocket":
        from sktime.transformations.panel.rocket import MiniRocketMultivariate

        rocket = MiniRocketMultivariate(random_state=0, n_jobs=n_jobs)
        Z_train = rocket.fit_transform(X_train)
        ridge = make_pipeline(StandardScaler(), RidgeClassifierCV(alphas=np.logspace(-3, 3, 10)))
        return ridge.fit(Z_train, y_train).predict(rocket.transform(X_test))
    flat_train, flat_test = X_train.reshape(len(X_train), -1), X_test.reshape(len(X_test), -1)
    model = {
        "rf_raw": RandomForestClassifier(n_estimators=200, random_state=0, n_jobs=n_jobs),
        "lr_raw": make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
        "knn_raw": KNeighborsClassifier(n_neighbors=1),
    }[key]
    return model.fit(flat_train, y_train).predict(flat_test)


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


def write_report(rows: list[dict], args, command: str, extra: dict) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rows)
    frame.to_csv(out / f"{args.name}.csv", index=False)
    acc = frame.pivot(index="dataset", columns="model", values="accuracy")
    acc = acc.loc[[d for d in DATASETS if d in acc.index], [m for m in MODELS if m in acc.columns]]
    seconds = frame.pivot(index="dataset", columns="model", values="seconds").loc[acc.index,
                                                                                acc.columns]
    label = {k: LABELS[k].format(layer=args.probe_layer) for k in acc.columns}
    lines = [
        f"# Mantis on the UCR/UEA sets shipped in sktime ({args.checkpoint})", "",
        "```bash", command, "```", "",
        f"Hardware: {extra['hardware']}. Accuracy on the official test splits "
        f"(seed 0 everywhere).", "",
        "| dataset | " + " | ".join(label[m] for m in acc.columns) + " |",
        "|---|" + "---|" * len(acc.columns),
    ]
    for name, row in acc.iterrows():
        best = row.max()
        cells = [f"**{v:.3f}**" if v == best else f"{v:.3f}" for v in row]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| **mean** | " + " | ".join(f"**{v:.3f}**" for v in acc.mean()) + " |")
    if "minirocket" in seconds.columns:
        ratio = seconds.sum() / seconds["minirocket"].sum()
        lines.append("| time / MiniRocket | " + " | ".join(f"{v:.2f}" for v in ratio) + " |")
    if extra.get("reused"):
        lines += ["", "Rows of " + ", ".join(f"`{m}`" for m in extra["reused"]) + " come from "
                  + ", ".join(f"`{Path(c).name}`" for c in args.reuse) + " (an earlier run of "
                  "this script on the same machine); their times were measured in that run."]
    lines += ["", f"Embedding throughput at length 512, one channel: "
                  f"**{extra['throughput']:.0f} series/s** ({extra['hardware']}).", ""]
    if extra.get("epoch_seconds"):
        lines += ["Fine-tuning seconds per epoch: " + ", ".join(
            f"{k} {v:.2f}" for k, v in extra["epoch_seconds"].items()) + ".", ""]
    lines += ["## Published Mantis figures (mean accuracy; other dataset collections)", "",
              "| result | mean accuracy |", "|---|---|"]
    lines += [f"| {name} | {value:.4f} |" for name, value in PUBLISHED]
    lines += ["", "The reference notes hold no per-dataset Mantis numbers for these eight sets; "
                  "the published means cover 128-159 UCR/UEA datasets and an 8M-parameter model "
                  "pretrained for 100 epochs on GPUs, so they are context, not a like-for-like "
                  "comparison.", ""]
    (out / f"{args.name}.md").write_text("\n".join(lines))
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default="mantis-v2")
    parser.add_argument("--random", default="random:small",
                        help="the random-initialisation baseline of the same architecture")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--epochs", type=int, default=10, help="fine-tuning epochs at most")
    parser.add_argument("--probe-layer", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    C.add_out_argument(parser)
    parser.add_argument("--name", default="mantis_ucr", help="report file stem")
    parser.add_argument("--reuse", action="append", default=[],
                        help="csv of an earlier run: its rows fill in the models not run now")
    args = parser.parse_args(argv)
    command = C.command_line(None if argv is None else [__file__, *argv])
    models = args.models.split(",")
    rows, epoch_seconds = [], {}
    torch.set_num_threads(args.threads)
    with threads(args.threads):
        for name in args.datasets.split(","):
            X_train, y_train, X_test, y_test = load(name)
            raw = raw_features(X_train, X_test)
            for key in models:
                start = time.perf_counter()
                if key in ("minirocket", "rf_raw", "lr_raw", "knn_raw"):
                    pred = run_raw(key, raw[0], y_train, raw[1], args.threads)
                else:
                    model = make_model(key, args, args.threads).fit(X_train, y_train)
                    pred = model.predict(X_test)
                    if key in ("mantis_head", "mantis_full"):
                        epoch_seconds[f"{name}/{key}"] = (time.perf_counter() - start) / max(
                            model.n_epochs_, 1)
                seconds = time.perf_counter() - start
                accuracy = float(np.mean(pred == y_test))
                rows.append({"dataset": name, "model": key, "accuracy": accuracy,
                             "seconds": seconds})
                print(f"{name:<18} {key:<14} acc {accuracy:.3f}  {seconds:7.1f} s", flush=True)
        speed = throughput(args.checkpoint, args.device)
    reused = [row for path in args.reuse for row in pd.read_csv(path).to_dict("records")
              if row["model"] not in models and row["dataset"] in args.datasets.split(",")]
    rows += reused
    hardware = (f"{platform.machine()} CPU, {args.threads} torch threads, torch {torch.__version__}"
                if args.device == "cpu" else args.device)
    write_report(rows, args, command, {"hardware": hardware, "throughput": speed,
                                       "epoch_seconds": epoch_seconds,
                                       "reused": sorted({row["model"] for row in reused})})


if __name__ == "__main__":
    main()
