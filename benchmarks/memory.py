"""Peak memory of TabSwift predict and Mantis embedding as the number of rows grows.

Every measurement runs in a fresh Python process, which builds its data, fits the
estimator, records its peak resident set size (``resource.getrusage``'s ``ru_maxrss``)
so far, then predicts (TabSwift) or embeds (Mantis) and records the peak again:

* ``tabswift``: ``TabSwiftClassifier`` (M members) fitted on ``--context`` rows x 20
  features, ``predict_proba`` on N rows x 20 features, for each ``MxN`` of
  ``--tabswift-runs``;
* ``mantis``: ``MantisTimeSeriesClassifier`` fitted on 200 series, ``transform``
  (embeddings) of N univariate series of ``--length`` points.

Both predict in batches (at most 8192 rows for TabSwift, 512 series for Mantis), so the
memory the prediction adds over the data should not grow with N; the input, the
encoded copy and the output do. RDBEncoder's peak on 16x nycflights13 is measured
by ``rdb_speed.py`` (``docs/benchmarks/rdb_speed.md``).

Results go to ``<out>/memory.md`` and ``.csv``.

Example
-------
python benchmarks/memory.py --tabswift-runs 8x10000,8x25000,2x100000,2x250000 \
    --mantis-rows 1000,10000,100000 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import _common as C
import pandas as pd

N_FEATURES = 20


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tabswift-runs", default="8x10000,8x25000,2x100000,2x250000",
                   help="comma-separated MxN: M ensemble members predicting N rows")
    p.add_argument("--mantis-rows", default="1000,10000,100000",
                   help="comma-separated numbers of series to embed")
    p.add_argument("--context", type=int, default=2048, help="TabSwift context rows")
    p.add_argument("--n-estimators", type=int, default=8, help=argparse.SUPPRESS)
    p.add_argument("--length", type=int, default=512, help="points per Mantis series")
    p.add_argument("--threads", type=int, default=1, help="torch threads (n_jobs)")
    p.add_argument("--out", default=C.DEFAULT_OUT, help="output folder")
    p.add_argument("--child", choices=["tabswift", "mantis"], help=argparse.SUPPRESS)
    p.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _child(args) -> dict:
    """Run one measurement in this process and return its figures."""
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    from skfm import MantisTimeSeriesClassifier, TabSwiftClassifier

    rng = np.random.default_rng(0)
    if args.child == "tabswift":
        X_ctx = rng.normal(size=(args.context, N_FEATURES))
        y_ctx = (X_ctx[:, 0] + X_ctx[:, 1] > 0).astype(int)
        est = TabSwiftClassifier(n_estimators=args.n_estimators, n_jobs=args.threads)
        est.fit(X_ctx, y_ctx)
        X = rng.normal(size=(args.rows, N_FEATURES))
        predict = est.predict_proba
    else:
        train = rng.normal(size=(200, 1, args.length)).cumsum(-1)
        est = MantisTimeSeriesClassifier(n_jobs=args.threads).fit(train, np.arange(200) % 2)
        X = rng.normal(size=(args.rows, 1, args.length)).cumsum(-1).astype(np.float32)
        predict = est.transform
    before = _peak_mb()
    start = time.perf_counter()
    out = predict(X)
    seconds = time.perf_counter() - start
    assert np.isfinite(out).all()
    return {
        "task": args.child, "members": args.n_estimators if args.child == "tabswift" else None,
        "rows": args.rows, "input (MB)": X.nbytes / 2**20,
        "peak before predict (MB)": before, "peak (MB)": _peak_mb(),
        "predict (s)": seconds, "rows / s": args.rows / seconds,
    }


def _measure(task: str, members: int, rows: int, args) -> dict:
    command = [sys.executable, __file__, "--child", task, "--rows", str(rows),
               "--context", str(args.context), "--n-estimators", str(members),
               "--length", str(args.length), "--threads", str(args.threads)]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    """Measure every size in its own process and write the report."""
    args = parse_args(argv)
    if args.child:
        print(json.dumps(_child(args)))
        return
    runs = [("tabswift", *map(int, run.split("x"))) for run in args.tabswift_runs.split(",") if run]
    runs += [("mantis", 0, int(rows)) for rows in args.mantis_rows.split(",") if rows]
    records = []
    for task, members, rows in runs:
        record = _measure(task, members, rows, args)
        record["added by predict (MB)"] = record["peak (MB)"] - record["peak before predict (MB)"]
        print(record, flush=True)
        records.append(record)
    raw = pd.DataFrame(records)
    raw["task"] = [f"{task} x{members:.0f}" if task == "tabswift" else task
                   for task, members in zip(raw["task"], raw["members"], strict=True)]
    table = raw.set_index(["task", "rows"])[
        ["input (MB)", "peak before predict (MB)", "peak (MB)", "added by predict (MB)",
         "predict (s)", "rows / s"]
    ]
    table.index = [f"{task} {rows:,}" for task, rows in table.index]
    setup = (
        f"TabSwiftClassifier(n_estimators=M) (tabswift xM) on {args.context} context rows x "
        f"{N_FEATURES} features; MantisTimeSeriesClassifier() fitted on 200 series of "
        f"{args.length} points; torch threads: {args.threads}. Peak = ru_maxrss of the "
        "measuring process."
    )
    C.write_report(args.out, "memory", "Peak memory of predict: TabSwift and Mantis",
                   [setup, C.markdown_table(table, floatfmt=".1f", index_name="run")], raw)


if __name__ == "__main__":
    main()
