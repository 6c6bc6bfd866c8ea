"""Rows/s of TabSwift batch inference over a Dask array against the number of Dask workers.

A ``TabSwiftClassifier`` (8 members) is fitted on ``--context-rows`` rows x 20 features, then
``skfm.batch.predict_partitions`` predicts ``--rows`` rows in ``--partitions`` partitions on a
``dask.distributed.LocalCluster`` of 1, 2, ... worker processes with one thread each, against
the plain in-memory ``predict_proba`` with the same total number of torch threads. The report
goes to ``<out>/dask_scaling.md`` and ``.csv``.

Example
-------
python benchmarks/dask_scaling.py --workers 1,2 --rows 20000 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import time

import _common as C
import dask.array as da
import distributed
import numpy as np
import pandas as pd

from skfm import TabSwiftClassifier
from skfm.batch import predict_partitions


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", default="1,2", help="worker counts")
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--context-rows", type=int, default=1000)
    p.add_argument("--partitions", type=int, default=8)
    C.add_out_argument(p)
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    X, y, X_test, _ = C.make_data(args.context_rows, args.rows, 20)
    rows = []
    for workers in (int(w) for w in args.workers.split(",")):
        clf = TabSwiftClassifier(n_jobs=workers).fit(X, y)
        start = time.perf_counter()
        expected = clf.predict_proba(X_test)
        in_memory = time.perf_counter() - start
        clf.set_params(n_jobs=1)
        chunks = (-(-len(X_test) // args.partitions), X_test.shape[1])
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            client.run(lambda: __import__("skfm"))  # warm the workers' imports
            lazy = predict_partitions(clf, da.from_array(X_test, chunks=chunks), "predict_proba")
            start = time.perf_counter()
            result = client.compute(lazy).result()
            on_dask = time.perf_counter() - start
        rows.append({"workers": workers, "rows": len(X_test), "partitions": args.partitions,
                     "dask seconds": on_dask, "dask rows/s": len(X_test) / on_dask,
                     "in-memory seconds (same threads)": in_memory,
                     "in-memory rows/s": len(X_test) / in_memory,
                     "max abs difference": float(np.abs(result - expected).max())})
        print(rows[-1], flush=True)
    raw = pd.DataFrame(rows)
    intro = (f"TabSwiftClassifier (8 members) fitted on {args.context_rows} rows x 20 features; "
             f"{args.rows} rows predicted in {args.partitions} partitions on a LocalCluster of "
             "worker processes (1 thread each), against in-memory `predict_proba` with as many "
             "torch threads. The machine has 2 cores and is shared.")
    md = C.write_report(args.out, "dask_scaling", "Batch inference on Dask: rows/s against workers",
                        [intro, C.markdown_table(raw.set_index("workers"), ".4g")], raw)
    print(open(md).read())


if __name__ == "__main__":
    main()
