"""Encoding time and peak memory of RDBEncoder (DuckDB, Spark local) and featuretools.

Workload: nycflights13 (``skfm.relational.datasets``), every plane at each of the 11 month
starts from February to December 2013 (3,322 x 11 = 36,542 entity rows at scale 1), all
features of depth 2 (planes <- flights -> airlines / airports / weather). ``--scales``
replicates the planes and their flights (x1 has 336,776 flights, x4 1.35 M, x16 5.39 M); airports,
airlines and weather stay shared.

Each (engine, scale) runs in a fresh subprocess, so memory is measured cleanly:

- ``duckdb``: ``RDBEncoder(engine="duckdb")``; *load* is copying the DataFrames into DuckDB;
- ``spark``: the same plan with ``engine="spark"`` on ``local[N]`` (``--spark-threads``);
  *load* is writing the tables to Parquet (by DuckDB) and registering them in Spark;
- ``featuretools``: ``ft.dfs`` as in ``rdb_featuretools.py`` (``--featuretools-python``);
  *load* is building the EntitySet.

*encode* is ``fit`` + ``transform`` (featuretools: ``dfs``); preparing the pandas tables is
not counted for anyone. Peak memory is the peak resident set of the worker process plus,
for Spark, that of its JVM (``VmHWM``). A run that exceeds ``--timeout`` seconds is stopped
and reported as such.

Example
-------
python benchmarks/rdb_speed.py --scales 1,4,16 --engines duckdb,spark,featuretools \
    --featuretools-python /path/to/pandas2-env/bin/python --timeout 1800 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common as C
import pandas as pd

from skfm.relational import datasets

ENGINES = ["duckdb", "spark", "featuretools"]
NOTES = """## Notes

- *load*: DuckDB copies the pandas tables into its own; Spark gets them as Parquet files
  written by DuckDB; featuretools builds its EntitySet. *encode*: ``fit`` (schema checks,
  column profiles) + ``transform`` for RDBEncoder, ``dfs`` for featuretools. Making the pandas
  tables is not counted. The same plan (152 features) runs on DuckDB and Spark;
  featuretools' primitives (count, mean, std, min, max, mode, num_unique, time since
  first/last) give 133 features.
- *total CPU*: user + system seconds of the worker process (all its threads) and, for
  Spark, of its JVM. The machine is shared with other jobs, so wall times swing with the
  load (this run's x1 DuckDB wall time is 2.3x its CPU time); the CPU columns are the
  steadier comparison.
- *peak RSS*: high-water mark of the worker's resident memory (plus the JVM's for Spark),
  including the pandas tables (about 440 MB at x1, 1.7 GB at x16).
"""


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scales", default="1,4,16", help="comma-separated replication factors")
    p.add_argument("--engines", default=",".join(ENGINES), help="comma-separated")
    p.add_argument("--featuretools-python", default=None,
                   help="Python with featuretools and pandas<3 (featuretools skipped if unset)")
    p.add_argument("--spark-threads", type=int, default=2, help="Spark local[N]")
    p.add_argument("--spark-memory", default="8g", help="spark.driver.memory")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    C.add_out_argument(p)
    p.add_argument("--worker", choices=["duckdb", "spark"], help=argparse.SUPPRESS)
    p.add_argument("--scale", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _hwm_mb(pid: int) -> float:
    """Peak resident set (VmHWM) of a live process, in MB; 0 if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def worker(args) -> None:
    """One (engine, scale) measurement; writes a JSON result."""
    from skfm.relational import RDBEncoder

    tables = datasets.load_nycflights_tables(args.scale)
    X = datasets.nyc_all_entities(tables)
    db = datasets.nyc_database(tables)
    data_mb = C.peak_rss_mb()
    spark, jvm = None, []
    start, cpu = time.perf_counter(), C.cpu_seconds()
    if args.worker == "duckdb":
        db.duckdb_connection()
    else:
        from pyspark.sql import SparkSession

        from skfm.relational.engines import SparkRunner

        spark = (SparkSession.builder.master(f"local[{args.spark_threads}]")
                 .appName("skfm-rdb-speed")
                 .config("spark.ui.enabled", "false")
                 .config("spark.driver.memory", args.spark_memory)
                 .config("spark.sql.shuffle.partitions", str(4 * args.spark_threads))
                 .config("spark.sql.session.timeZone", "UTC")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        runner = SparkRunner(db, spark)
        for name in db.tables:
            runner.ref(name)
        import psutil

        jvm = [p.pid for p in psutil.Process().children(recursive=True)]
    load_seconds, load_cpu = time.perf_counter() - start, C.cpu_seconds(jvm) - cpu
    start, cpu = time.perf_counter(), C.cpu_seconds(jvm)
    enc = RDBEncoder(db, "planes", key_column="tailnum", cutoff_column="date", max_depth=2,
                     engine=args.worker)
    features = enc.fit(X).transform(X)
    encode_seconds, encode_cpu = time.perf_counter() - start, C.cpu_seconds(jvm) - cpu
    peak_mb = C.peak_rss_mb()
    jvm_mb = sum(_hwm_mb(pid) for pid in jvm)
    if spark is not None:
        spark.stop()
    result = {"load_seconds": load_seconds, "encode_seconds": encode_seconds,
              "load_cpu_seconds": load_cpu, "encode_cpu_seconds": encode_cpu,
              "rows": int(features.shape[0]), "n_features": int(features.shape[1]),
              "data_rss_mb": data_mb, "peak_rss_mb": peak_mb + jvm_mb, "jvm_peak_mb": jvm_mb,
              "flights": len(tables["flights"])}
    Path(args.result).write_text(json.dumps(result))


def run(engine: str, scale: int, args) -> dict:
    """Run one measurement in a subprocess; a timeout or a crash becomes a row saying so."""
    here = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory(prefix="skfm-speed-") as folder:
        result = Path(folder) / "result.json"
        if engine == "featuretools":
            cmd = [args.featuretools_python, str(here / "rdb_featuretools.py"), "--dataset", "nyc",
                   "--speed", "--scale", str(scale), "--out", folder]
            result = Path(folder) / "timing.json"
        else:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", engine,
                   "--scale", str(scale), "--result", str(result),
                   "--spark-threads", str(args.spark_threads),
                   "--spark-memory", args.spark_memory]
        row = {"engine": engine, "scale": scale}
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, timeout=args.timeout, capture_output=True, text=True)
        except subprocess.TimeoutExpired:
            return {**row, "status": f"timeout > {args.timeout:.0f} s"}
        row["wall_seconds"] = time.perf_counter() - start
        if proc.returncode != 0 or not result.exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            return {**row, "status": f"failed: {tail[0][:120]}"}
        data = json.loads(result.read_text())
    if engine == "featuretools":
        data = {"load_seconds": data["entityset_seconds"], "encode_seconds": data["dfs_seconds"],
                "load_cpu_seconds": data["entityset_cpu_seconds"],
                "encode_cpu_seconds": data["dfs_cpu_seconds"],
                "rows": data["rows"], "n_features": data["n_features"],
                "peak_rss_mb": data["peak_rss_mb"], "flights": data["flights"]}
    return {**row, "status": "ok", **data}


def report(raw: pd.DataFrame) -> list[str]:
    """Markdown sections: one row per run, then growth with scale per engine."""
    table = raw.copy()
    for kind in ("", "_cpu"):
        if f"load{kind}_seconds" in table:
            table[f"total{kind}"] = table[f"load{kind}_seconds"] + table[f"encode{kind}_seconds"]
    ok = table[table["status"] == "ok"]
    ft = ok[ok["engine"] == "featuretools"].set_index("scale")
    for kind, label in (("", "wall"), ("_cpu", "CPU")):
        total = f"total{kind}"
        if total not in table:
            continue
        table[f"featuretools / this ({label})"] = [
            ft.loc[scale, total] / value if engine != "featuretools" and scale in ft.index
            else float("nan")
            for scale, engine, value in zip(table["scale"], table["engine"], table[total],
                                            strict=True)
        ]
    table["run"] = [f"x{s} {e}" for s, e in zip(table["scale"], table["engine"], strict=True)]
    cols = {"flights": "flights", "rows": "entity rows", "n_features": "features",
            "load_seconds": "load (s)", "encode_seconds": "encode (s)", "total": "total (s)",
            "total_cpu": "total CPU (s)", "peak_rss_mb": "peak RSS (MB)",
            "featuretools / this (wall)": "featuretools / this (wall)",
            "featuretools / this (CPU)": "featuretools / this (CPU)", "status": "status"}
    shown = table.set_index("run")[[c for c in cols if c in table]].rename(columns=cols)
    for count in ("flights", "entity rows", "features"):
        if count in shown:
            shown[count] = shown[count].map(lambda v: "-" if pd.isna(v) else f"{int(v):,}")
    growth = []
    for engine in ok["engine"].unique():
        sub = ok[ok["engine"] == engine].set_index("scale")
        if 1 not in sub.index:
            continue
        for scale in sub.index:
            growth.append({"engine": engine, "scale": f"x{scale}",
                           "wall / wall at x1": sub.loc[scale, "total"] / sub.loc[1, "total"],
                           "CPU / CPU at x1": sub.loc[scale, "total_cpu"]
                           / sub.loc[1, "total_cpu"],
                           "peak RSS / at x1": sub.loc[scale, "peak_rss_mb"]
                           / sub.loc[1, "peak_rss_mb"]})
    sections = ["## Time and memory\n\n" + C.markdown_table(shown, floatfmt=".1f",
                                                            index_name="run")]
    if growth:
        sections.append("## Growth with scale\n\n" + C.markdown_table(
            pd.DataFrame(growth).set_index("engine"), floatfmt=".2f"))
    return sections


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return
    engines = args.engines.split(",")
    if "featuretools" in engines and not args.featuretools_python:
        print("--featuretools-python not set: featuretools skipped", file=sys.stderr)
        engines.remove("featuretools")
    rows = []
    for scale in [int(s) for s in args.scales.split(",")]:
        for engine in engines:
            row = run(engine, scale, args)
            print(json.dumps(row), flush=True)
            rows.append(row)
    raw = pd.DataFrame(rows)
    threads = (f"DuckDB default threads (all {os.cpu_count()} CPUs); Spark local"
               f"[{args.spark_threads}], driver memory {args.spark_memory}; featuretools "
               "n_jobs=1.")
    md = C.write_report(args.out, "rdb_speed", "RDBEncoder: encoding speed on nycflights13",
                        [threads, *report(raw), NOTES], raw)
    print(f"wrote {md}")


if __name__ == "__main__":
    main()
