"""featuretools Deep Feature Synthesis on the relational benchmark data (worker script).

Run by ``rdb_accuracy.py`` and ``rdb_speed.py`` in a subprocess, with a Python whose
pandas featuretools supports (featuretools 1.31 / woodwork 0.31 fail under pandas 3:
woodwork keeps its schema on a DataFrame accessor that pandas 3 no longer caches).
It builds the same tables as ``skfm.relational.datasets`` (loaded from its file, since
skfm itself, with torch, is not installed in that environment), makes an EntitySet with
the same keys and time columns, and runs ``ft.dfs`` with aggregation primitives close
to RDBEncoder's (count, mean, std, min, max, mode, num_unique, time_since_last,
time_since_first), no transform primitives, ``max_depth=2`` and a strict cutoff
(``include_cutoff_time=False``, the same "strictly before" rule as RDBEncoder).

Usage::

    python rdb_featuretools.py --dataset f1 --task driver-dnf --freeze --out DIR
    python rdb_featuretools.py --dataset nyc --task plane-delay --out DIR
    python rdb_featuretools.py --dataset nyc --speed --scale 4 --out DIR

Writes ``DIR/<split>.csv`` (feature matrices in the order of the task rows; datetime
features as days since 1970) or, with ``--speed``, only ``DIR/timing.json``. Every run
writes ``timing.json`` with the wall and CPU seconds spent building the EntitySet and in
``dfs``, the number of features and the peak resident memory of this process.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
import warnings
from pathlib import Path

import _common as C
import pandas as pd


def _load_datasets():
    """``skfm/relational/datasets.py`` as a module, without importing the skfm package."""
    path = Path(__file__).resolve().parents[1] / "skfm" / "relational" / "datasets.py"
    spec = importlib.util.spec_from_file_location("skfm_relational_datasets", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


datasets = _load_datasets()
DEFAULT_F1 = Path(__file__).resolve().parents[2] / "shared" / "data" / "f1"

PRIMITIVES = ["count", "mean", "std", "min", "max", "mode", "num_unique", "time_since_last",
              "time_since_first"]


def entityset(tables: dict[str, pd.DataFrame], schema: dict):
    """An EntitySet with the keys, time columns and categorical columns of `schema`."""
    import featuretools as ft

    es = ft.EntitySet("db")
    for name, (pk, fks, time_col, categorical, ignore) in schema.items():
        frame = tables[name].drop(columns=ignore).copy()
        logical = {c: "Categorical" for c in categorical}
        for column in fks:  # keys as categories: featuretools needs equal key types
            logical[column] = "Categorical"
        logical[pk] = "Categorical"
        for column in frame.columns:
            if frame[column].dtype == object and column not in logical:
                logical[column] = "Categorical"
        es.add_dataframe(dataframe_name=name, dataframe=frame, index=pk, time_index=time_col,
                         logical_types=logical)
    for name, (_, fks, *_rest) in schema.items():
        for column, parent in fks.items():
            es.add_relationship(parent, schema[parent][0], name, column)
    return es


def dfs(es, target: str, key: str, rows: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Feature matrix for `rows` (columns `key`, ``date``), in their order."""
    import featuretools as ft

    cutoff = rows[[key, "date"]].rename(columns={"date": "time"}).drop_duplicates()
    matrix, features = ft.dfs(entityset=es, target_dataframe_name=target,
                              cutoff_time=cutoff, cutoff_time_in_index=True,
                              agg_primitives=PRIMITIVES, trans_primitives=[], max_depth=2,
                              include_cutoff_time=False, n_jobs=1, verbose=False)
    index = pd.MultiIndex.from_frame(rows[[key, "date"]].rename(columns={"date": "time"}))
    matrix.index = matrix.index.set_names([key, "time"])
    return matrix.reindex(index), len(features)


def numeric_times(matrix: pd.DataFrame) -> pd.DataFrame:
    """Datetime features as days since 1970 (CSV-friendly, model-ready)."""
    out = matrix.copy()
    for column in out.columns:
        if pd.api.types.is_datetime64_any_dtype(out[column]):
            out[column] = (out[column] - pd.Timestamp(0)) / pd.Timedelta(days=1)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", choices=["f1", "nyc"], required=True)
    parser.add_argument("--task", default=None)
    parser.add_argument("--f1-data", default=str(DEFAULT_F1))
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--freeze", action="store_true",
                        help="f1 only: features from the database cut at the test timestamp, "
                             "as RelBench's models see it")
    parser.add_argument("--speed", action="store_true",
                        help="nyc only: every plane at every month start, timing only")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    if args.dataset == "f1":
        tables = datasets.load_f1_tables(args.f1_data)
        schema, target, key = datasets.F1_SCHEMA, "drivers", "driverId"
        splits = {s: datasets.f1_task(tables, args.task, s) for s in ("train", "val", "test")}
        if args.freeze:
            tables = datasets.freeze_f1(tables)
    else:
        tables = datasets.load_nycflights_tables(args.scale)
        schema, target, key = datasets.NYC_SCHEMA, "planes", "tailnum"
        if args.speed:
            splits = {"all": datasets.nyc_all_entities(tables)}
        else:
            splits = {s: datasets.nyc_task(tables, s) for s in ("train", "val", "test")}
    load_seconds = time.perf_counter() - start

    start, cpu = time.perf_counter(), C.cpu_seconds()
    es = entityset(tables, schema)
    timing = {"load_seconds": load_seconds,
              "entityset_seconds": time.perf_counter() - start,
              "entityset_cpu_seconds": C.cpu_seconds() - cpu,
              "dfs_seconds": 0.0, "dfs_cpu_seconds": 0.0, "rows": 0}
    for split, rows in splits.items():
        start, cpu = time.perf_counter(), C.cpu_seconds()
        matrix, n_features = dfs(es, target, key, rows)
        timing["dfs_seconds"] += time.perf_counter() - start
        timing["dfs_cpu_seconds"] += C.cpu_seconds() - cpu
        timing["rows"] += len(rows)
        timing["n_features"] = int(matrix.shape[1])
        timing["n_feature_definitions"] = n_features
        if not args.speed:
            numeric_times(matrix).to_csv(out / f"{split}.csv", index=False)
    timing["flights"] = len(tables["flights"]) if "flights" in tables else None
    timing["peak_rss_mb"] = C.peak_rss_mb()
    (out / "timing.json").write_text(json.dumps(timing, indent=1))


if __name__ == "__main__":
    main()
