"""Peak memory of TabSwift and Mantis predict_proba as the number of rows grows.

Every measurement runs in a fresh Python process, which builds its data, fits the
estimator, creates the rows to predict, resets the kernel's peak resident set size
(``/proc/self/clear_refs``, Linux), predicts, and reads
the peak back (``VmHWM`` in ``/proc/self/status``):

* ``tabswift``: ``TabSwiftClassifier`` (M members) fitted on ``--context`` rows x 20
  features, ``predict_proba`` on N rows x 20 features, for each ``MxN`` of
  ``--tabswift-runs``;
* ``mantis``: ``MantisTimeSeriesClassifier()`` (its default late fusion: a logistic regression
  on the embeddings and a ridge on 9,996 MiniRocket features, their probabilities multiplied)
  fitted on 200 series, ``predict_proba`` on N univariate series of
  ``--length`` points.

Both predict in batches (TabSwift on CPU: 4096 rows x members, at least 1024 rows;
Mantis: chunks of 4096 series, embedded 512 at a time); a batch (a chunk) is encoded, run
and reduced to its probabilities before the next, so what predict adds over the resident estimator and data should not
grow with N but for the output. RDBEncoder's peak on 16x nycflights13 is measured by ``rdb_speed.py``
(``docs/benchmarks/rdb_speed.md``).

Results go to ``<out>/memory.md`` and ``.csv``.

Example
-------
python benchmarks/memory.py --tabswift-runs 8x10000,8x50000,1x100000,1x250000,1x1000000 \
    --context 1000 --mantis-rows 1000,10000,100000 --out docs/benchmarks

``--reuse docs/benchmarks/memory.csv`` keeps an earlier run's rows for the sizes not
measured again (the report's command line says so).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import _common as C
import pandas as pd

N_FEATURES = 20
STATUS = Path("/proc/self/status")


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tabswift-runs", default="8x10000,8x50000,1x100000,1x250000,1x1000000",
                   help="comma-separated MxN: M ensemble members predicting N rows")
    p.add_argument("--mantis-rows", default="1000,10000",
                   help="comma-separated numbers of series to embed")
    p.add_argument("--context", type=int, default=1000, help="TabSwift context rows")
    p.add_argument("--n-estimators", type=int, default=8, help=argparse.SUPPRESS)
    p.add_argument("--length", type=int, default=512, help="points per Mantis series")
    p.add_argument("--mantis-dtype", default="float64", choices=["float32", "float64"],
                   help="dtype of the Mantis input panel (numpy's default: float64)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (n_jobs)")
    p.add_argument("--reuse", default=None,
                   help="memory.csv of an earlier run: its rows for sizes not measured now are kept")
    C.add_out_argument(p)
    p.add_argument("--child", choices=["tabswift", "mantis"], help=argparse.SUPPRESS)
    p.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _memory_mb() -> dict[str, float]:
    """Resident set size now (``VmRSS``) and its peak (``VmHWM``), in MB."""
    fields = dict(line.split(":", 1) for line in STATUS.read_text().splitlines())
    return {key: int(fields[key].split()[0]) / 1024 for key in ("VmRSS", "VmHWM")}  # kB


def _reset_peak() -> None:
    """Set the peak resident set size to the current one (Linux 4.0+)."""
    Path("/proc/self/clear_refs").write_text("5")


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
        X = rng.normal(size=(args.rows, 1, args.length)).cumsum(-1).astype(args.mantis_dtype)
        predict = est.predict_proba
    _reset_peak()
    before = _memory_mb()["VmRSS"]
    start = time.perf_counter()
    out = predict(X)
    seconds = time.perf_counter() - start
    peak = _memory_mb()["VmHWM"]
    assert np.isfinite(out).all()
    return {
        "task": args.child, "members": args.n_estimators if args.child == "tabswift" else None,
        "rows": args.rows, "input (MB)": X.nbytes / 2**20, "output (MB)": out.nbytes / 2**20,
        "RSS before predict (MB)": before, "peak during predict (MB)": peak,
        "added by predict (MB)": peak - before,
        "predict (s)": seconds, "rows / s": args.rows / seconds,
    }


def _measure(task: str, members: int, rows: int, args) -> dict:
    command = [sys.executable, __file__, "--child", task, "--rows", str(rows),
               "--context", str(args.context), "--n-estimators", str(members),
               "--length", str(args.length), "--threads", str(args.threads),
               "--mantis-dtype", args.mantis_dtype]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _spread(raw: pd.DataFrame) -> list[str]:
    """For every task measured at several sizes: the range of what predict adds."""
    lines = []
    for task, group in raw.groupby("task", sort=False):
        if group["rows"].nunique() < 2:
            continue
        group = group.sort_values("rows")
        added, last = group["added by predict (MB)"], group.iloc[-1]
        lines.append(
            f"- **{task}**: from {group['rows'].iloc[0]:,} to {last['rows']:,} rows, predict "
            f"adds {added.min():.0f} to {added.max():.0f} MB (at {last['rows']:,} rows "
            f"{last['added by predict (MB)']:.0f} MB, of which the output is "
            f"{last['output (MB)']:.1f} MB)."
        )
    return lines


READING = """\
What predict adds is its peak resident set size minus the resident size just before it
(the fitted estimator and the input are resident already). TabSwift encodes, runs and
reduces every batch (on CPU 4096 rows x members, at least 1024) to its probabilities
before the next, so what it adds is the working set of one batch, which grows with the members (each member's
view of the rows of the batch, its attention over the context, its logits: compare x8
with x1) but not with the rows, plus the output, the only part that grows with the rows
(the batches' outputs are joined at the end: for an instant the output is there twice).
The figure moves by some tens of MB between sizes and between runs: glibc's allocator
keeps the freed buffers of a batch in its heap, and how they fragment sets the peak.
Mantis checks the panel where it lies (no copy: a float64 panel is cast to float32 one
chunk at a time; before this was so, 100,000 float64 series added 413 MB), then takes
chunks of 4096 series through resizing, embedding (batches of at most 512), MiniRocket's
transform and the head, so its resized copies, activations and the 10,252 features a
series has by default exist for one chunk at a time: what predict adds stays near 1.3 GB
from 10,000 to 100,000 series, most of it one chunk's MiniRocket features (4096 x 9,996,
float64 for the head). ``transform``, which returns every feature, added 910 MB at 10,000
series and 7,979 MB at 100,000 in a run of this script the same day (2026-12-02);
``predict_proba`` built that whole matrix, and a float64 copy of it, before it was chunked.
rows / s
is measured on the machine above, which may have been running other jobs. RDBEncoder's
peak memory on 16x nycflights13 is in [rdb_speed.md](rdb_speed.md)."""


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
        print(record, flush=True)
        records.append(record)
    raw = pd.DataFrame(records)
    raw["task"] = [f"{task} x{members:.0f}" if task == "tabswift" else task
                   for task, members in zip(raw["task"], raw["members"], strict=True)]
    raw[C.MEASURED_BY] = ""
    reused = ""
    if args.reuse:  # earlier figures for the sizes not measured in this run
        old = C.earlier_rows(args.reuse)
        measured = set(zip(raw["task"], raw["rows"], strict=True))
        kept = old[[pair not in measured for pair in zip(old["task"], old["rows"], strict=True)]]
        raw = pd.concat([kept, raw], ignore_index=True)
        reused = (" Rows not measured by this command are reused from earlier runs: "
                  f"{C.origins(kept, 'task')}.")
    table = raw.set_index(["task", "rows"])[
        ["input (MB)", "output (MB)", "RSS before predict (MB)", "peak during predict (MB)",
         "added by predict (MB)", "predict (s)", "rows / s"]
    ]
    table.index = [f"{task} {rows:,}" for task, rows in table.index]
    setup = (
        f"TabSwiftClassifier(n_estimators=M) (tabswift xM) on {args.context} context rows x "
        f"{N_FEATURES} features; MantisTimeSeriesClassifier() (default: late fusion of Mantis and "
        f"MiniRocket) fitted on 200 series of "
        f"{args.length} points, predicting on {args.mantis_dtype} input; torch threads: "
        f"{args.threads}. Peak = VmHWM of the measuring process, reset just before predict."
        + reused
    )
    C.write_report(args.out, "memory", "Peak memory of predict: TabSwift and Mantis",
                   [setup, C.markdown_table(table, floatfmt=".1f", index_name="run"),
                    "## Reading the figures", READING, "\n".join(_spread(raw))], raw)


if __name__ == "__main__":
    main()
