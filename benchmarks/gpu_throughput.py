"""Prediction throughput of TabSwiftClassifier on the CPU and on a CUDA GPU.

Fits ``TabSwiftClassifier(n_estimators=4)`` on a synthetic context of 1000 rows x 20 features
(``_common.make_data``, seed 0) and times ``predict_proba`` on test sets of 10 000 and 100 000
rows: on the CPU (10 000 rows only, fp32) and on CUDA in fp32 and bf16 (autocast). Each time is
the best of ``--repeats`` calls after one warm-up call on 256 rows, so fitting (the context's KV
cache), kernel selection and CUDA start-up are not counted. Prints a Markdown table of rows/s,
the speed-up over the CPU and the largest probability difference from the CPU's, and writes it
with the command, GPU name and versions to ``<out>/gpu_throughput.md`` (and the rows to
``gpu_throughput.csv``).

Without a CUDA device it prints a message and exits with status 0 (``--cpu-only`` times the CPU
alone, as a smoke test of this script).

Example
-------
python benchmarks/gpu_throughput.py --out docs/benchmarks
python benchmarks/gpu_throughput.py --cpu-only --context-rows 200 --test-rows 500 --cpu-rows 500 \
    --n-estimators 1
"""

from __future__ import annotations

import argparse
import sys
import time

import _common as C
import numpy as np
import pandas as pd
import torch

from skfm import TabSwiftClassifier

WARMUP_ROWS = 256


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n-estimators", type=int, default=4, help="TabSwift ensemble size")
    p.add_argument("--context-rows", type=int, default=1000, help="training (context) rows")
    p.add_argument("--features", type=int, default=20, help="number of features")
    p.add_argument("--test-rows", default="10000,100000", help="comma-separated test set sizes")
    p.add_argument("--cpu-rows", type=int, default=10_000,
                   help="time the CPU only on test sets up to this size")
    p.add_argument("--repeats", type=int, default=3, help="best of this many timed calls")
    C.add_out_argument(p)
    p.add_argument("--cpu-only", action="store_true",
                   help="time the CPU alone (smoke test of this script without a GPU)")
    return p.parse_args(argv)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_predict(clf: TabSwiftClassifier, X_test: np.ndarray, repeats: int):
    """Best wall time of ``predict_proba(X_test)`` over ``repeats`` calls, and its output."""
    clf.predict_proba(X_test[:WARMUP_ROWS])  # kernels, allocator, CUDA context
    best, proba = np.inf, None
    for _ in range(repeats):
        _sync(clf.device)
        start = time.perf_counter()
        proba = clf.predict_proba(X_test)  # ends with a copy to host: synchronised
        best = min(best, time.perf_counter() - start)
    return best, proba


def run(args) -> pd.DataFrame:
    """Time every (device, precision, test size) case; one row per case."""
    sizes = [int(s) for s in args.test_rows.split(",")]
    X, y, X_all, _ = C.make_data(args.context_rows, max(sizes), args.features)
    cases = [("cpu", "fp32")]
    if not args.cpu_only:
        cases += [("cuda", "fp32"), ("cuda", "bf16")]
    rows, reference = [], {}
    for device, precision in cases:
        clf = TabSwiftClassifier(
            n_estimators=args.n_estimators, device=device, inference_precision=precision
        ).fit(X, y)
        for n in sizes:
            if device == "cpu" and n > args.cpu_rows:
                continue
            seconds, proba = time_predict(clf, X_all[:n], args.repeats)
            if device == "cpu":
                reference[n] = proba
            compare = device != "cpu" and n in reference
            diff = np.abs(proba - reference[n]).max() if compare else np.nan
            rows.append({"device": device, "precision": precision, "test rows": n,
                         "seconds": seconds, "rows/s": n / seconds, "max abs Δp vs CPU": diff,
                         "TabSwift share": clf.blend_weight_})
            print(f"{device:>4} {precision} {n:>7} rows: {seconds:8.3f} s, "
                  f"{n / seconds:12,.0f} rows/s", flush=True)
    table = pd.DataFrame(rows)
    cpu = table.loc[table["device"] == "cpu", "rows/s"]
    table.insert(5, "× CPU", table["rows/s"] / cpu.max() if len(cpu) else np.nan)
    return table


def report(args, table: pd.DataFrame) -> list[str]:
    """The sections of the report: setup and the table."""
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "none"
    setup = (
        f"GPU: {gpu}  \nCPU: {torch.get_num_threads()} torch threads  \n"
        f"Model: `TabSwiftClassifier(n_estimators={args.n_estimators})` (shipped checkpoint); "
        f"context {args.context_rows} rows × {args.features} features (`_common.make_data`, "
        f"seed 0); time of `predict_proba` after a warm-up call, best of {args.repeats}. "
        "bf16 is CUDA autocast (the default on CUDA); × CPU is the ratio of rows/s to the CPU's. "
        "TabSwift share: the weight the estimator's guard gave the in-context model against its "
        "linear and boosted partners (``blend_weight_``; at 0 predict runs the partner alone)."
    )
    shown = table.assign(**{
        "seconds": table["seconds"].map(lambda v: f"{v:.3f}"),
        "rows/s": table["rows/s"].map(lambda v: f"{v:,.0f}"),
        "× CPU": table["× CPU"].map(lambda v: f"{v:.1f}"),
        "max abs Δp vs CPU": table["max abs Δp vs CPU"].map(
            lambda v: "-" if np.isnan(v) else f"{v:.1e}"
        ),
    }).set_index("device")
    return [setup, C.markdown_table(shown)]


def main(argv=None) -> int:
    args = parse_args(argv)
    if not args.cpu_only and not torch.cuda.is_available():
        print("No CUDA device (torch.cuda.is_available() is False): skipping the GPU throughput "
              "benchmark. Use --cpu-only to time the CPU alone.")
        return 0
    table = run(args)
    md = C.write_report(args.out, "gpu_throughput",
                        "TabSwiftClassifier prediction throughput: CPU and CUDA",
                        report(args, table), table)
    print()
    print(md.read_text())
    print(f"wrote {md} and {md.with_suffix('.csv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
