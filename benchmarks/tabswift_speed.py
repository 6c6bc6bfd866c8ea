"""TabSwift inference speed on this machine: context cache, throughput, FLOP/s, early exit.

All figures come from one run on one synthetic table (``--context-rows`` x ``--features``,
binary target with a linear signal), so the ratios compare like with like. The cache and
throughput figures measure the in-context network (``guard=False``): on this linear table
the default's guard gives its logistic regression all the weight, and the network would not
run at all.

- *cache*: ``--repeats`` calls of ``predict_proba`` on ``--batch-rows`` new rows after one
  ``fit``, with the context's keys and values cached (the default) against recomputing them
  for every call (what an in-context learner without a cache does);
- *throughput*: test rows/s of ``predict_proba`` on ``--test-rows`` rows, for one ensemble
  member and for the default eight; full depth and with ``early_exit``;
- *FLOP/s*: the forward pass's floating-point operations counted by
  ``torch.utils.flop_counter`` (attention included, see ``counted_flops``) over the measured time, as a fraction of this machine's fp32
  matrix-multiply throughput measured in the same run (a 1024 x 1024 ``torch.mm``, same threads);
- *against HistGradientBoosting*: fit + predict seconds on the same data, as a ratio, of the
  default (guarded) estimator and of the network alone.

Example
-------
python benchmarks/tabswift_speed.py --threads 2 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import os

import _common as C
import pandas as pd
import torch
from sklearn.ensemble import HistGradientBoostingClassifier
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from skfm import TabSwiftClassifier


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--context-rows", type=int, default=1000)
    p.add_argument("--features", type=int, default=20)
    p.add_argument("--test-rows", type=int, default=10_000)
    p.add_argument("--batch-rows", type=int, default=100, help="rows per call in the cache test")
    p.add_argument("--repeats", type=int, default=20, help="calls in the cache test")
    p.add_argument("--early-exit", type=float, default=0.75, help="agreement for the exit rows")
    p.add_argument("--threads", type=int, default=2, help="torch threads (n_jobs)")
    C.add_out_argument(p)
    return p.parse_args(argv)


def matmul_flops_per_second(n: int = 1024) -> float:
    """This machine's fp32 ``torch.mm`` throughput at the current thread setting."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    return 2 * n**3 / C.best_of(lambda: torch.mm(a, b), repeats=5)


def counted_flops(clf: TabSwiftClassifier, X) -> int:
    """Floating-point operations of one ``predict_proba`` call, as torch counts them.

    Counted with attention on its math backend: torch's counter has no formula for the fused
    CPU attention kernel and counts it as zero (two thirds of the model's work at 1,000 context
    rows), while the math backend runs the same products as ``bmm`` calls it does count.
    """
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        clf.predict_proba(X)
    return counter.get_total_flops()


def cache_rows(args, X, y, X_test) -> list[dict]:
    """Repeated small predictions with the cached context against recomputing it each time."""
    clf = TabSwiftClassifier(guard=False, n_jobs=args.threads).fit(X, y)
    batches = [X_test[i * args.batch_rows:(i + 1) * args.batch_rows] for i in range(args.repeats)]

    def cached():
        for batch in batches:
            clf.predict_proba(batch)

    def recomputed():
        for batch in batches:
            clf._cache.clear()  # forget the context's keys and values
            clf.predict_proba(batch)

    with_cache, without = C.best_of(cached), C.best_of(recomputed)
    return [{"measure": f"{args.repeats} x predict_proba({args.batch_rows} rows), context cached",
             "seconds": with_cache, "ratio": 1.0},
            {"measure": f"{args.repeats} x predict_proba({args.batch_rows} rows), context "
                        "recomputed per call", "seconds": without, "ratio": without / with_cache}]


def throughput_rows(args, X, y, X_test, y_test, peak: float) -> list[dict]:
    rows = []
    for n_estimators in (1, 8):
        for early_exit in (None, args.early_exit):
            clf = TabSwiftClassifier(n_estimators=n_estimators, early_exit=early_exit,
                                     guard=False, n_jobs=args.threads).fit(X, y)
            seconds = C.best_of(lambda clf=clf: clf.predict_proba(X_test))
            flops = counted_flops(clf, X_test)
            accuracy = clf.score(X_test, y_test)
            rows.append({
                "measure": f"predict_proba, n_estimators={n_estimators}, early_exit={early_exit}",
                "seconds": seconds, "rows/s": len(X_test) / seconds,
                "GFLOP": flops / 1e9, "GFLOP/s": flops / seconds / 1e9,
                "fraction of mm peak": flops / seconds / peak,
                "mean layers": float(clf.exit_depth(X_test).mean()), "accuracy": accuracy})
    return rows


def versus_hgb(args, X, y, X_test) -> list[dict]:
    def hgb():
        HistGradientBoostingClassifier(random_state=0).fit(X, y).predict_proba(X_test)

    theirs = C.best_of(hgb)
    rows = [{"measure": "HistGradientBoosting fit + predict_proba", "seconds": theirs,
             "ratio": 1.0}]
    for name, guard in [("default, guarded", True), ("network alone, guard=False", False)]:
        clf = TabSwiftClassifier(guard=guard, n_jobs=args.threads)
        ours = C.best_of(lambda clf=clf: clf.fit(X, y).predict_proba(X_test))
        rows.append({"measure": f"TabSwiftClassifier ({name}; TabSwift's share "
                                f"{clf.blend_weight_:.1f}) fit + predict_proba",
                     "seconds": ours, "ratio": ours / theirs})
    return rows


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    X, y, X_test, y_test = C.make_data(args.context_rows, args.test_rows, args.features)
    peak = matmul_flops_per_second()
    cache = pd.DataFrame(cache_rows(args, X, y, X_test))
    speed = pd.DataFrame(throughput_rows(args, X, y, X_test, y_test, peak))
    hgb = pd.DataFrame(versus_hgb(args, X, y, X_test))
    load = os.getloadavg()[0]
    sections = [
        f"Data: {args.context_rows} context rows x {args.features} features, "
        f"{args.test_rows} test rows; torch threads: {args.threads}; fp32 `torch.mm` peak "
        f"measured in this run: {peak / 1e9:.1f} GFLOP/s; load average at the end: "
        f"{load:.1f} (the machine is shared, each time is the best of 3).",
        "## Context cache", C.markdown_table(cache.set_index("measure"), ".3f"),
        "## Throughput and FLOP/s", C.markdown_table(speed.set_index("measure"), ".3f"),
        "## Against HistGradientBoosting (same data)",
        C.markdown_table(hgb.set_index("measure"), ".3f"),
    ]
    raw = pd.concat([cache, speed, hgb], ignore_index=True)
    md = C.write_report(args.out, "tabswift_speed", "TabSwift inference speed", sections, raw)
    print(open(md).read())


if __name__ == "__main__":
    main()
